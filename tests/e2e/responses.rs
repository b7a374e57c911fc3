//! The demo's model through llama.cpp's server's `/v1/responses` (issue
//! 39): a provider table with `api = "responses"` at the server, the
//! read_file agent of `tools.rs`; the real model's `function_call` item
//! run and its result sent back as a `function_call_output` with the same
//! `call_id`, after the call as it came; the answer from the file.

use super::*;

const NOTES: &str =
    "Project codename: BLUE HERON\nRelease date: 14 March 2031\nOwner: Marta Kowalczyk\n";

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_responses_tool_read_file() {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    home.config(&format!(
        "[providers.llama]\napi = \"responses\"\nbase_url = \"{}\"\n",
        proxy.url()
    ));
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), NOTES).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/e2e/agents/reader.toml");
    let mut agent: toml::Table = toml::from_str(&std::fs::read_to_string(fixture).unwrap())
        .expect("the fixture agent is TOML");
    agent.insert("model".into(), format!("llama/{}", local_model()).into());
    agent.insert("workdir".into(), work.display().to_string().into());
    let cast = Cast::write(
        &home,
        &[("reader".into(), toml::to_string(&agent).unwrap())],
    );
    let (_, report) = run_json(
        &home,
        &proxy,
        "reader",
        &["-p", "What is the project codename in notes.txt?"],
    );
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert!(log.len() >= 2, "a call and an answer: {log:?}");
    for e in &log {
        assert_eq!(e.request.path, "/v1/responses");
        assert_eq!(e.status, 200, "{}", e.response);
    }
    let first = log[0].request.json();
    assert_eq!(first["store"], false, "{first}");
    assert_eq!(first["tools"][0]["name"], "read_file", "{first}");
    let answered = log[0].response_json();
    let call = answered["output"]
        .as_array()
        .and_then(|o| o.iter().find(|i| i["type"] == "function_call"))
        .unwrap_or_else(|| panic!("the model did not call read_file: {answered}"))
        .clone();
    assert_eq!(call["name"], "read_file");
    let input = log[1].request.json()["input"].clone();
    let items = input.as_array().unwrap();
    let sent_call = items.iter().position(|i| i["type"] == "function_call");
    let output = items
        .iter()
        .position(|i| i["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("no function_call_output: {input}"));
    assert!(sent_call.is_some_and(|c| c < output), "{input}");
    assert_eq!(items[output]["call_id"], call["call_id"], "{input}");
    assert!(
        items[output]["output"]
            .as_str()
            .unwrap()
            .contains("Project codename: BLUE HERON"),
        "{input}"
    );
    let content = report["content"].as_str().unwrap_or("");
    assert!(content.to_uppercase().contains("BLUE HERON"), "{report}");
}
