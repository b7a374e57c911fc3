//! A real MCP host nobody here wrote, driven by the real model, delegating to
//! an axe agent through `axe mcp serve` (issue 35): Simon Willison's `llm`
//! CLI with the `llm-tools-mcp` plugin (PyPI, pinned in scripts/e2e.sh),
//! its model the llama.cpp server (through the recording proxy), its MCP
//! server `axe mcp serve --agent oracle` over stdio. The oracle's own
//! provider is the harness's fake, whose answer carries a code word made up
//! at run time: the host can only learn it by calling the tool.

use super::*;

/// The host: `llm` in the venv scripts/e2e.sh installs (`AXE_E2E_LLM`).
fn host_llm() -> String {
    let llm = require("AXE_E2E_LLM");
    assert!(
        Path::new(&llm).is_file(),
        "AXE_E2E_LLM={llm} is not a file: scripts/e2e.sh installs llm into .demo/host"
    );
    llm
}

/// The agent served: one tool, `oracle`, whose description tells the model
/// when to call it.
const ORACLE: &str = r#"name = "oracle"
description = "Knows today's secret code word. Ask it for the code word."
model = "openai/gpt-4o"
system_prompt = "You are oracle."
"#;

/// The host's configuration in `dir`: its model (llm's
/// `extra-openai-models.yaml`, an OpenAI-compatible server at `api_base`
/// that takes tools) and its MCP server (`llm-tools-mcp`'s `mcp.json`):
/// axe with `home`'s environment, its OpenAI provider the `fake`.
fn host_config(dir: &Path, api_base: &str, home: &Home, fake: &FakeServer) {
    let models = format!(
        "- model_id: axe-e2e-host\n  model_name: {}\n  api_base: {api_base}\n  supports_tools: true\n",
        local_model()
    );
    std::fs::write(dir.join("extra-openai-models.yaml"), models).unwrap();
    let home_dir = home.dir.path().display().to_string();
    let mcp = json!({"mcpServers": {"axe": {
        "command": env!("CARGO_BIN_EXE_axe"),
        "args": ["mcp", "serve", "--agent", "oracle", "--timeout", "60"],
        "env": {
            "XDG_CONFIG_HOME": home_dir,
            "HOME": home_dir,
            "XDG_STATE_HOME": format!("{home_dir}/state"),
            "AXE_OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": OPENAI_KEY,
        },
    }}});
    std::fs::write(dir.join("mcp.json"), mcp.to_string()).unwrap();
}

/// The host model's calls of `oracle` and the tool results it was sent
/// back, over the whole conversation.
fn oracle_traffic(log: &[Exchange]) -> (usize, Vec<String>) {
    let calls = log
        .iter()
        .flat_map(|e| Format::OpenAi.calls(&e.response_json()))
        .filter(|c| c.name == "oracle")
        .count();
    let last = log.last().expect("the host sent no request to its model");
    let results = Format::OpenAi
        .messages(&last.request.json())
        .iter()
        .flat_map(|m| Format::OpenAi.results_in_message(m))
        .map(|(_, text)| text)
        .collect();
    (calls, results)
}

/// `llm -T MCP` asked for the code word: the host's model is offered the
/// `oracle` tool (axe's schema: `task` required), calls it; axe runs the
/// agent once per call (the fake's requests, the run log); the tool result
/// the host sends back to its model carries the code word; the host's
/// answer on stdout ends with its model's last message and carries it too.
#[test]
#[ignore = "needs a real server and the host: make e2e"]
fn llm_host_delegates_to_an_axe_agent() {
    let llm = host_llm();
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let word = format!("KUMQUAT-{}", 1000 + std::process::id() % 9000);
    let fake = FakeServer::json(
        200,
        &openai_text(&format!("The code word is {word}."), 9, 7),
    );
    let home = Home::new();
    home.agent("oracle", ORACLE);
    let host = TempDir::new("llm-host");
    host_config(host.path(), &format!("{}/v1", proxy.url()), &home, &fake);

    let mut cmd = home.command(&llm);
    cmd.env("LLM_USER_PATH", host.path())
        .env("LLM_TOOLS_MCP_CONFIG_DIR", host.path())
        .env("LLM_TOOLS_MCP_FULL_ERRORS", "1")
        // At temperature 0 the model's choice to call the tool is the same
        // every run: the word it cannot know comes only in the result.
        .args(["-m", "axe-e2e-host", "-T", "MCP", "--no-stream", "--td"])
        .args(["-o", "temperature", "0"])
        .arg("What is today's secret code word? Ask the oracle tool, then tell me the code word.");
    let run = run_within(&mut cmd, Duration::from_secs(600));
    let (out, err) = (stdout(&run.output), stderr(&run.output));
    assert!(!run.killed, "llm hung\nstderr:\n{err}");
    assert_eq!(
        code(&run.output),
        0,
        "llm failed\nstderr:\n{err}\nstdout:\n{out}"
    );
    let log = proxy.exchanges();
    assert!(log.iter().all(|e| e.status == 200), "{log:?}");

    let offered = &log[0].request.json()["tools"];
    let tool = offered
        .as_array()
        .and_then(|t| t.iter().find(|t| t["function"]["name"] == "oracle"))
        .unwrap_or_else(|| panic!("the host did not offer axe's oracle tool: {offered}"));
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["task"]),
        "{tool}"
    );
    assert!(!log[0].request.body.contains(&word), "the word leaked");

    let (calls, results) = oracle_traffic(&log);
    assert!(
        calls > 0,
        "the host's model never called oracle\nstdout:\n{out}\nstderr:\n{err}"
    );
    let asked = fake.requests();
    assert_eq!(asked.len(), calls, "one run of the agent per call");
    assert!(asked.iter().all(|r| r.system_prompt() == "You are oracle."));
    let runs = home.run_log();
    assert_eq!(runs.len(), calls, "{runs:?}");
    assert!(
        runs.iter()
            .all(|r| r["agent"] == "oracle" && r["exit"] == 0),
        "{runs:?}"
    );
    assert!(
        results.iter().any(|r| r.contains(&word)),
        "no tool result carried the agent's answer: {results:?}"
    );

    let last = Format::OpenAi.content(&log.last().unwrap().response_json());
    assert!(
        !last.trim().is_empty() && out.trim_end().ends_with(last.trim()),
        "the host's answer ends with its model's last message {last:?}: {out:?}"
    );
    assert!(
        out.contains(&word),
        "the host's answer lacks {word}: {out:?}"
    );
    eprintln!(
        "  {calls} call(s) of oracle in {} turn(s), {} ms; answer: {:?}",
        log.len(),
        run.took.as_millis(),
        out.trim()
    );
}
