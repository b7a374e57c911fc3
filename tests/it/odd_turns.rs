//! Turns of kinds axe does not run itself (design §3.8, §5.5): an OpenAI `custom`
//! tool call, which gets an error result while the conversation goes on,
//! and an Anthropic `pause_turn`, sent back so the model finishes its turn.
//! Through the real binary against the fake providers, in the APIs' own
//! JSON.

use crate::common::*;

use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// OpenAI custom tool calls.
// ---------------------------------------------------------------------------

/// A custom tool call as the Chat Completions API returns it in
/// `message.tool_calls`: free-form `input` text, no `function`.
fn custom_call(id: &str, name: &str, input: &str) -> Value {
    json!({"id": id, "type": "custom", "custom": {"name": name, "input": input}})
}

/// An OpenAI response whose message has `content` and these `tool_calls`.
fn openai_calls(content: Value, calls: Vec<Value>) -> String {
    json!({
        "id": "chatcmpl-custom",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-5",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "tool_calls": calls, "refusal": null},
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    })
    .to_string()
}

#[test]
fn a_custom_tool_call_gets_an_error_result_and_the_conversation_goes_on() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-5", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-5", "");
    let custom = custom_call("call_c1", "code_exec", "print('hi')");
    let function = json!({
        "id": "call_f1",
        "type": "function",
        "function": {"name": "call_agent", "arguments": delegate("w", "go").to_string()}
    });
    let first = openai_calls(Value::Null, vec![custom.clone(), function.clone()]);
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, openai_text("lead done", 1, 1)),
        "lead" => Reply::Json(200, first.clone()),
        _ => Reply::Json(200, openai_text("w did it", 1, 1)),
    });
    let b = home.run_bounded(
        &[(P::OpenAi, &server), (P::Anthropic, &server)],
        &["run", "lead"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "lead done\n");
    assert_eq!(stderr(&b.output), "");
    let follow_up = server
        .requests()
        .into_iter()
        .filter(|r| r.who() == "lead" && r.has_tool_results())
        .collect::<Vec<_>>();
    assert_eq!(follow_up.len(), 1);
    let messages = follow_up[0].messages();
    // The custom call goes back exactly as it came, beside the function call.
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["tool_calls"], json!([custom, function]));
    // Each call has its result, in call order: the custom one an error.
    let results = follow_up[0].tool_messages();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_call_id"], "call_c1");
    assert_eq!(
        results[0]["content"],
        "Unknown tool: \"code_exec\" (a \"custom\" tool call; the only tool here is the function \"call_agent\")"
    );
    assert_eq!(results[1]["tool_call_id"], "call_f1");
    assert_eq!(results[1]["content"], "w did it");
}

#[test]
fn a_custom_tool_calls_result_names_the_tools_the_agent_was_offered() {
    // It said "the only tool here is the function call_agent" whatever the
    // agent was offered.
    for (lead, offered) in [
        (
            "tools = [\"read_file\"]\n",
            "the only tool here is the function \"read_file\"",
        ),
        (
            "sub_agents = [\"w\"]\ntools = [\"read_file\", \"list_directory\"]\n",
            "the tools here are the functions \"call_agent\", \"read_file\" and \"list_directory\"",
        ),
    ] {
        let home = Home::new();
        home.named_agent("lead", "openai/gpt-5", lead);
        home.named_agent("w", "openai/gpt-5", "");
        let first = openai_calls(
            Value::Null,
            vec![custom_call("call_c1", "code_exec", "print('hi')")],
        );
        let server = FakeServer::tool_loop(first, openai_text("lead done", 1, 1));
        let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{lead}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "lead done\n", "{lead}");
        let follow_up = server
            .requests()
            .into_iter()
            .find(|r| r.has_tool_results())
            .unwrap();
        assert_eq!(
            follow_up.tool_messages()[0]["content"],
            format!("Unknown tool: \"code_exec\" (a \"custom\" tool call; {offered})"),
            "{lead}"
        );
    }
}

#[test]
fn a_custom_tool_call_to_an_agent_without_sub_agents_leaves_its_text_the_answer() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-5", "");
    let server = FakeServer::json(
        200,
        &openai_calls(
            "Here is the plan.".into(),
            vec![custom_call("call_c1", "shell", "ls -la")],
        ),
    );
    let b = home.run_bounded(
        &[(P::OpenAi, &server), (P::Anthropic, &server)],
        &["run", "solo", "--json"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    assert_eq!(out["content"], "Here is the plan.");
    assert_eq!(out["tool_calls"], 0, "nothing was run");
    assert_eq!(server.requests().len(), 1, "one request, as without tools");
}

// ---------------------------------------------------------------------------
// Anthropic pause_turn.
// ---------------------------------------------------------------------------

/// A turn the server paused: some text and a server tool call still under
/// way, `stop_reason` `pause_turn`.
fn paused(text: &str, query: &str) -> (String, Value) {
    let content = json!([
        {"type": "text", "text": text},
        {"type": "server_tool_use", "id": format!("srvtoolu_{query}"), "name": "web_search", "input": {"query": query}}
    ]);
    let body = json!({
        "id": "msg_paused",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "pause_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    (body.to_string(), content)
}

#[test]
fn a_paused_turn_is_sent_back_and_the_answer_is_the_whole_turn() {
    let home = Home::new();
    home.named_agent("solo", "anthropic/claude-sonnet-4-5", "");
    let (first, first_blocks) = paused("Let me look. ", "axe");
    let (second, second_blocks) = paused("Still looking. ", "axe release");
    let server = FakeServer::start(vec![
        Reply::Json(200, first),
        Reply::Json(200, second),
        Reply::Json(200, anthropic_text("It is 0.2.", 10, 5)),
    ]);
    let b = home.run_bounded(
        &[(P::OpenAi, &server), (P::Anthropic, &server)],
        &["run", "solo", "-p", "Which axe?"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(
        stdout(&b.output),
        "Let me look. Still looking. It is 0.2.\n"
    );
    assert_eq!(stderr(&b.output), "");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Each continuation carries the paused content exactly as it came; the
    // prompt-cache mark goes on the user's message, never on those blocks.
    let user = json!({"role": "user", "content": [
        {"type": "text", "text": "Which axe?", "cache_control": {"type": "ephemeral"}}
    ]});
    assert_eq!(
        requests[1].messages(),
        vec![
            user.clone(),
            json!({"role": "assistant", "content": first_blocks})
        ]
    );
    assert_eq!(
        requests[2].messages(),
        vec![
            user,
            json!({"role": "assistant", "content": first_blocks}),
            json!({"role": "assistant", "content": second_blocks})
        ]
    );
}

#[test]
fn a_paused_turn_is_a_turn_of_the_budget() {
    let home = Home::new();
    home.named_agent("solo", "anthropic/claude-sonnet-4-5", "");
    let (first, _) = paused("Let me look. ", "axe");
    let server = FakeServer::start(vec![
        Reply::Json(200, first),
        Reply::Json(200, anthropic_text("never sent", 10, 5)),
    ]);
    let b = home.run_bounded(
        &[(P::OpenAi, &server), (P::Anthropic, &server)],
        &["run", "solo", "--max-turns", "1"],
        HUNG,
    );
    assert_eq!(code(&b.output), 4, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        "axe: turn budget exceeded (used 1 of 1)\n"
    );
    assert_eq!(stdout(&b.output), "");
    assert_eq!(server.requests().len(), 1);
}
