//! Tool-call faults: calls the model under test makes, raw as each wire carries them, and the results the next request must carry.

use super::*;

/// A tool call as a wire carries it; `None` leaves the key out.
pub(crate) struct RawCall {
    pub(crate) id: Option<String>,
    pub(crate) name: &'static str,
    pub(crate) args: Option<Value>,
}

/// `p`'s answer carrying `calls` exactly as given (arguments as they are:
/// a wire-format string for OpenAI is the caller's to make).
pub(crate) fn raw_tool_calls(p: P, calls: &[RawCall]) -> String {
    let mut wire: Vec<Value> = Vec::new();
    for c in calls {
        let mut v = match p {
            P::Anthropic => json!({"type": "tool_use", "name": c.name}),
            P::OpenAi => json!({"type": "function", "function": {"name": c.name}}),
            P::Ollama => json!({"function": {"name": c.name}}),
            P::Responses => unreachable!("runs on PROVIDERS"),
        };
        if let (Some(id), true) = (&c.id, p.has_ids()) {
            v["id"] = json!(id);
        }
        if let Some(args) = &c.args {
            match p {
                P::Anthropic => v["input"] = args.clone(),
                P::OpenAi | P::Ollama => v["function"]["arguments"] = args.clone(),
                P::Responses => unreachable!("runs on PROVIDERS"),
            }
        }
        wire.push(v);
    }
    match p {
        P::Anthropic => json!({
            "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": wire, "stop_reason": "tool_use",
            "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 2}
        }),
        P::OpenAi => json!({
            "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
                "role": "assistant", "content": null, "tool_calls": wire, "refusal": null
            }}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        }),
        P::Ollama => json!({
            "model": "llama3.1", "created_at": "2026-11-23T10:00:00.000000Z",
            "message": {"role": "assistant", "content": "", "tool_calls": wire},
            "done_reason": "stop", "done": true, "prompt_eval_count": 5, "eval_count": 2
        }),
        P::Responses => unreachable!("runs on PROVIDERS"),
    }
    .to_string()
}

/// One expected tool result: the call's id, the content, whether an error.
pub(crate) type Want = (String, String, bool);

/// A response full of tool calls and the results axe must send back.
pub(crate) struct ToolFault {
    /// The first answer of the agent under test.
    pub(crate) first: String,
    /// Its second request's tool results, in call order.
    pub(crate) want: Vec<Want>,
}

/// The server of the agent under test (`under`) and its `helper`, both on
/// `p`: `under` first answers `first`, then echoes its tool results;
/// `helper` answers `helper did <task>`.
pub(crate) fn tool_server(p: P, under: &'static str, first: String) -> FakeServer {
    FakeServer::route(move |req| match req.who().as_str() {
        who if who == under && req.has_tool_results() => Reply::Json(200, p.text(&echo(p, req))),
        who if who == under => Reply::Json(200, first.clone()),
        "helper" => {
            let message = req.first_user_text();
            let task = message.strip_prefix("Task: ").unwrap_or(&message);
            Reply::Json(200, p.text(&format!("helper did {task}")))
        }
        other => Reply::Json(500, format!("{{\"error\":\"unexpected agent {other}\"}}")),
    })
}

/// Checks the second request of the agent under test: one result per call,
/// in call order, with the ids the history carries.
#[track_caller]
pub(crate) fn assert_results(p: P, second: &Recorded, want: &[Want]) {
    let got = results(p, second);
    let want: Vec<Res> = want
        .iter()
        .map(|(id, content, error)| Res {
            id: p.has_ids().then(|| id.clone()),
            content: content.clone(),
            is_error: (p == P::Anthropic).then_some(*error),
        })
        .collect();
    assert_eq!(got.len(), want.len(), "number of tool results");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "tool result {i} of {}: got {:?}, want {:?}",
            got.len(),
            got[i],
            want[i]
        );
    }
    // Each result answers the call of the same id in the history sent back.
    let history = history_call_ids(p, second);
    assert_eq!(history.len(), want.len(), "calls in the history");
    if p.has_ids() {
        let ids: Vec<String> = want.iter().filter_map(|r| r.id.clone()).collect();
        assert_eq!(history, ids, "history ids");
    }
}

pub(crate) fn joined(want: &[Want]) -> String {
    want.iter()
        .map(|(_, c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Runs `fault(p)` for every provider at both levels.
pub(crate) fn tool_matrix(case: &str, fault: impl Fn(P) -> ToolFault + Sync) {
    matrix(case, |p, level| {
        let fault = fault(p);
        let home = Home::fast_retries();
        home.named_agent("helper", p.model(), "");
        let under = match level {
            Level::Top => "a",
            Level::Sub => "s",
        };
        home.named_agent(under, p.model(), "sub_agents = [\"helper\"]\n");
        let server = tool_server(p, under, fault.first);
        let (out, lead) = match level {
            Level::Top => {
                let out = home
                    .run_bounded(
                        &[(p, &server)],
                        &["run", "a", "-p", "hi", "--timeout", TIMEOUT],
                        FAULT_HUNG,
                    )
                    .output;
                (out, None)
            }
            Level::Sub => {
                let parent = p.other();
                // The echo of 1,000 results is longer than the default
                // max_result_chars; this case is about the calls, not the cut.
                home.named_agent(
                    "lead",
                    parent.model(),
                    "sub_agents = [\"s\"]\n[sub_agents_config]\nmax_result_chars = 1000000\n",
                );
                let lead = lead_server(parent);
                let out = home
                    .run_bounded(
                        &[(parent, &lead), (p, &server)],
                        &["run", "lead", "-p", "hi", "--timeout", TIMEOUT],
                        FAULT_HUNG,
                    )
                    .output;
                (out, Some((parent, lead)))
            }
        };
        assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
        assert_eq!(stderr(&out), "");
        let sent = server.sent_by(under);
        assert_eq!(sent.len(), 2, "requests of {under}");
        assert_results(p, &sent[1], &fault.want);
        let answer = joined(&fault.want);
        if let Some((parent, lead)) = lead {
            // The sub-agent went on and answered; its answer is a plain result.
            let result = lead_result(parent, &lead, &out);
            assert_ne!(result.is_error, Some(true), "{result:?}");
            assert_same_text(&result.content, &answer, "the sub-agent's answer");
        } else {
            assert_same_text(&stdout(&out), &format!("{answer}\n"), "stdout: the echo");
        }
    });
}

pub(crate) const AGENT_REQUIRED: &str = "call_agent error: \"agent\" argument is required";

// ---------------------------------------------------------------------------
// Rate limits.
// ---------------------------------------------------------------------------
