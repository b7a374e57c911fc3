//! The Responses wire's turns: a tool loop whose reasoning items go back
//! as they came, streamed and whole; a schema sent as `text.format` and
//! repaired; a retried 429; a sub-agent on the same wire; a turn budget.

use super::*;

const SCHEMA: &str = "[output]\nschema = { type = \"object\", properties = { verdict = { type = \"string\" } }, required = [\"verdict\"] }\n";

/// An agent `a` on `openai/o3-pro` with `read_file` in a workdir holding
/// `notes.txt`, and `extra` in its file.
fn tool_home(extra: &str) -> Home {
    let home = Home::new();
    let work = home.dir.path().join("w");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "hi there\n").unwrap();
    home.named_agent(
        "a",
        "openai/o3-pro",
        &format!(
            "tools = [\"read_file\"]\nworkdir = {:?}\n{extra}",
            work.to_str().unwrap()
        ),
    );
    home
}

/// The second request of a tool loop on `read_file`: the reasoning item
/// first, exactly as it came, then the call, then its output.
#[track_caller]
fn assert_sent_back(second: &Recorded, reasoning_id: &str) {
    let input = second.input();
    assert_eq!(input[0], json!({"role": "user", "content": "hi"}));
    let want = reasoning_item(
        reasoning_id,
        input[1]["summary"][0]["text"].as_str().unwrap(),
    );
    assert_eq!(input[1], want, "the reasoning item as it came: {input:?}");
    assert_eq!(input[2]["type"], "function_call", "{input:?}");
    assert_eq!(input[2]["call_id"], "call_1");
    assert_eq!(input[2]["arguments"], "{\"path\":\"notes.txt\"}");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], "call_1");
    assert!(input[3]["output"].as_str().unwrap().contains("hi there"));
}

fn read_notes() -> [Call<'static>; 1] {
    [("call_1", "read_file", json!({"path": "notes.txt"}))]
}

#[test]
fn a_tool_loop_sends_the_reasoning_items_back_with_the_calls() {
    let server = FakeServer::tool_loop(
        responses_calls(&read_notes(), 20, 8),
        responses_text_of("the notes say hi", 30, 5),
    );
    let home = tool_home("");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "the notes say hi\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let first = reqs[0].json();
    assert_eq!(
        first["tools"][0],
        json!({"type": "function", "name": "read_file",
            "description": first["tools"][0]["description"],
            "parameters": first["tools"][0]["parameters"], "strict": false}),
        "flat, and not strict"
    );
    assert_eq!(first["tool_choice"], "auto");
    assert_sent_back(&reqs[1], "rs_calls");
}

#[test]
fn a_streamed_tool_loop_reads_the_events_and_sends_the_reasoning_back() {
    let server = FakeServer::route(|req| {
        let body = if req.has_tool_results() {
            responses_stream(&["the notes ", "say hi"], &[], 30, 5)
        } else {
            responses_stream(&[], &read_notes(), 20, 8)
        };
        P::Responses.stream_steps(vec![Step::bytes(&body, 7)])
    });
    let home = tool_home("stream = true\n");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "the notes say hi\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].json()["stream"], true);
    assert_sent_back(&reqs[1], "rs_stream");
}

#[test]
fn a_schema_goes_as_text_format_and_a_wrong_answer_is_repaired() {
    let server = FakeServer::start(vec![
        Reply::Json(200, responses_text_of("not json", 3, 2)),
        Reply::Json(200, responses_text_of("{\"verdict\": \"fine\"}", 3, 2)),
    ]);
    let home = Home::new();
    home.named_agent("a", "openai/o3-pro", SCHEMA);
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"verdict\":\"fine\"}\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "one repair");
    let format = &reqs[0].json()["text"]["format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    assert_eq!(format["name"], "answer");
    assert_eq!(format["schema"]["required"], json!(["verdict"]));
    // The repair carries the wrong answer back as the assistant's turn.
    let input = reqs[1].input();
    assert!(
        input
            .iter()
            .any(|i| i["role"] == "assistant" && i["content"] == "not json"),
        "{input:?}"
    );
}

#[test]
fn a_429_is_retried_and_a_sub_agent_on_the_same_wire_answers_its_parent() {
    let limited = json!({"error": {"message": "Rate limit reached", "type": "requests",
        "param": null, "code": "rate_limit_exceeded"}});
    let first = std::sync::atomic::AtomicBool::new(true);
    let server = FakeServer::route(move |req| {
        let n = first.swap(false, std::sync::atomic::Ordering::SeqCst);
        match (req.who().as_str(), req.has_tool_results()) {
            _ if n => Reply::Json(429, limited.to_string()),
            ("lead", false) => Reply::Json(
                200,
                responses_calls(&[("c1", "call_agent", delegate("w", "look"))], 5, 2),
            ),
            ("lead", true) => {
                Reply::Json(200, responses_text_of(&req.tool_result_texts()[0], 5, 2))
            }
            _ => Reply::Json(200, responses_text_of("seen by w", 5, 2)),
        }
    });
    let home = Home::fast_retries();
    home.named_agent("lead", "openai/o3-pro", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/o3-pro", "");
    let out = home
        .axe_on(&[(P::Responses, &server)])
        .args(["run", "lead", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "seen by w\n");
    assert_eq!(server.requests().len(), 4, "the 429 retried once");
}

#[test]
fn the_turn_budget_stops_a_tool_loop_on_this_wire() {
    let server = FakeServer::json(200, &responses_calls(&read_notes(), 5, 2));
    let home = tool_home("");
    let out = run(&home, &server, &["--max-turns", "2"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
}

/// A stream that fails with `code` before any text.
fn failed_stream(code: &str) -> Reply {
    let failed = json!({"type": "response.failed", "sequence_number": 1, "response": {
        "id": "resp_f", "object": "response", "status": "failed",
        "error": {"code": code, "message": "it failed"}}});
    let body = sse(&[(Some("response.failed"), failed)]);
    P::Responses.stream_steps(vec![Step::bytes(&body, 64)])
}

#[test]
fn a_failed_stream_is_retried_when_its_code_says_so_and_not_when_the_prompt_is_refused() {
    let server = FakeServer::start(vec![
        failed_stream("rate_limit_exceeded"),
        P::Responses.stream_steps(vec![Step::bytes(
            &responses_stream(&["after ", "the limit"], &[], 5, 2),
            9,
        )]),
    ]);
    let home = Home::fast_retries();
    home.named_agent("a", "openai/o3-pro", "stream = true\n");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "after the limit\n");
    assert_eq!(server.requests().len(), 2);

    let server = FakeServer::start(vec![failed_stream("invalid_prompt")]);
    let out = run(&home, &server, &[]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("bad request (an error event in the stream): it failed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a refused prompt is not sent again"
    );
}

#[test]
fn openai_on_the_responses_api_still_needs_its_key() {
    let server = FakeServer::json(200, &responses_text_of("never", 1, 1));
    let home = Home::new();
    home.config("[providers.openai]\napi = \"responses\"\n");
    home.plain_agent("a", "openai/gpt-4o");
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    assert!(server.requests().is_empty());
}
