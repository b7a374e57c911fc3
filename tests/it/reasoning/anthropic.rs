//! Anthropic's extended thinking across tool turns (design §4.15): each
//! answer's `thinking` and `redacted_thinking` blocks go back first in that
//! assistant turn, exactly as they came (signatures and all), in every
//! request after it. The fake refuses, with the API's 400, a request that
//! drops, reorders or alters one, or that sends a temperature beside
//! thinking; the same when the answers are streamed (the blocks assembled
//! from `thinking_delta` and `signature_delta`).

use super::*;

use serde_json::{Value, json};

fn thinking(text: &str, signature: &str) -> Value {
    json!({"type": "thinking", "thinking": text, "signature": signature})
}

/// The three answers of the loop: thinking and a call, redacted thinking,
/// thinking and a second call, then thinking and the answer.
fn answers() -> [Vec<Value>; 3] {
    let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "list_directory", "input": {"path": "."}});
    [
        vec![
            thinking(
                "The user wants the files. I will list them.",
                "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
            ),
            call("toolu_1"),
        ],
        vec![
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}),
            thinking(
                "One file. Listing again to be sure.",
                "ErUBCkYIBRgCIkB2m1+1Pz0d",
            ),
            call("toolu_2"),
        ],
        vec![
            thinking(
                "Still one file: notes.txt. THE-THINKING-WORDS",
                "EpYCCkYIBRgCKkA8",
            ),
            json!({"type": "text", "text": "There is one file: notes.txt."}),
        ],
    ]
}

fn message(content: &[Value], stop: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 30}
    })
}

/// The API's refusal of a request that breaks the rules of thinking.
fn refusal(why: &str) -> Reply {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}});
    Reply::Json(400, body.to_string())
}

/// What the API says of `body`, sent after `turns` answers: None when it
/// takes it; the reason it refuses it else.
fn check(body: &Value, turns: usize) -> Option<String> {
    if body.get("temperature").is_some() {
        return Some("temperature may not be set when thinking is enabled".into());
    }
    if body["thinking"] != json!({"type": "enabled", "budget_tokens": 2048}) {
        return Some(format!("thinking: {}", body["thinking"]));
    }
    let assistants: Vec<&Value> = body["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    if assistants.len() != turns {
        return Some(format!("{} assistant turns, not {turns}", assistants.len()));
    }
    let answers = answers();
    for (i, m) in assistants.iter().enumerate() {
        let sent = m["content"].as_array().cloned().unwrap_or_default();
        let want: Vec<&Value> = answers[i]
            .iter()
            .filter(|b| b["type"] != "text" && b["type"] != "tool_use")
            .collect();
        for (j, block) in want.iter().enumerate() {
            if sent.get(j) != Some(*block) {
                return Some(format!(
                    "messages.{}.content.{j}: expected the thinking block unchanged, found {:?}",
                    2 * i + 1,
                    sent.get(j)
                ));
            }
        }
    }
    None
}

/// A fake of the Messages API that answers [`answers`] in turn, each
/// `stream`ed when asked, refusing what the API refuses.
fn fake() -> FakeServer {
    FakeServer::route(|req| {
        let body = req.json();
        let turns = body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        if let Some(why) = check(&body, turns) {
            return refusal(&why);
        }
        let stop = if turns < 2 { "tool_use" } else { "end_turn" };
        let answer = message(&answers()[turns.min(2)], stop);
        if body["stream"] == true {
            P::Anthropic.streamed(&stream_of(&answer))
        } else {
            Reply::Json(200, answer.to_string())
        }
    })
}

/// `answer` as the API streams it: a thinking block's text in two
/// `thinking_delta`s and its signature in a `signature_delta`, a redacted
/// block whole in its start, text in a `text_delta`, a call's input in
/// `input_json_delta`s.
fn stream_of(answer: &Value) -> String {
    let mut start = answer.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut events = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": start}),
    )];
    for (i, b) in answer["content"].as_array().unwrap().iter().enumerate() {
        let delta = |d: Value| {
            (
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            )
        };
        let mut begin = b.clone();
        let mut deltas = Vec::new();
        match b["type"].as_str().unwrap() {
            "thinking" => {
                let t = b["thinking"].as_str().unwrap();
                let mid = t.len() / 2;
                begin = json!({"type": "thinking", "thinking": ""});
                deltas.push(delta(
                    json!({"type": "thinking_delta", "thinking": &t[..mid]}),
                ));
                deltas.push(delta(
                    json!({"type": "thinking_delta", "thinking": &t[mid..]}),
                ));
                deltas.push(delta(
                    json!({"type": "signature_delta", "signature": b["signature"]}),
                ));
            }
            "text" => {
                begin["text"] = json!("");
                deltas.push(delta(json!({"type": "text_delta", "text": b["text"]})));
            }
            "tool_use" => {
                begin["input"] = json!({});
                let input = b["input"].to_string();
                deltas.push(delta(
                    json!({"type": "input_json_delta", "partial_json": input}),
                ));
            }
            _ => {}
        }
        events.push((
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": i, "content_block": begin}),
        ));
        events.extend(deltas);
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": null}, "usage": {"output_tokens": 30}})));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse(&events)
}

/// Runs `lister` (Anthropic, thinking on, a temperature it must not send,
/// `list_directory` in a workdir of one file) on `server` with `args` more.
fn run(server: &FakeServer, args: &[&str]) -> std::process::Output {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\n").unwrap();
    home.agent(
        "lister",
        &format!(
            "name = \"lister\"\nmodel = \"anthropic/claude-sonnet-4-5\"\nworkdir = \"{}\"\n\
             tools = [\"list_directory\"]\n\n[params]\ntemperature = 0.7\nthinking_budget = 2048\n",
            work.display()
        ),
    );
    let mut all = vec!["run", "lister", "-p", "what files are there?"];
    all.extend_from_slice(args);
    home.run_on(&[(P::Anthropic, server)], &all)
}

#[test]
fn thinking_blocks_go_back_unchanged_across_two_tool_turns() {
    let server = fake();
    let out = run(&server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "There is one file: notes.txt.\n");
    assert_eq!(server.requests().len(), 3);
    // The last request carries both earlier turns' blocks, first in each.
    let last = server.requests()[2].json();
    let turns: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(turns[0]["content"][0], answers()[0][0]);
    assert_eq!(turns[1]["content"][0], answers()[1][0]);
    assert_eq!(turns[1]["content"][1], answers()[1][1]);
    assert_eq!(turns[1]["content"][2]["type"], "tool_use");
}

#[test]
fn streamed_thinking_is_assembled_and_goes_back_unchanged_across_two_tool_turns() {
    let server = fake();
    let out = run(&server, &["--stream"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "There is one file: notes.txt.\n");
    assert_eq!(server.requests().len(), 3);
    assert!(!stdout(&out).contains("THE-THINKING-WORDS"));
}

#[test]
fn the_fake_refuses_a_request_that_drops_a_thinking_block() {
    // The fake's own check, on what a client that drops the blocks sends:
    // the test above would fail against such a client.
    let dropped = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "what files are there?"},
            {"role": "assistant", "content": [answers()[0][1]]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "notes.txt"}]}
        ]
    });
    assert!(check(&dropped, 1).is_some());
    let mut altered = dropped.clone();
    let mut block = answers()[0][0].clone();
    block["thinking"] = json!("something else");
    altered["messages"][1]["content"] = json!([block, answers()[0][1]]);
    assert!(check(&altered, 1).is_some());
    let mut kept = dropped;
    kept["messages"][1]["content"] = json!(answers()[0]);
    assert_eq!(check(&kept, 1), None);
}
