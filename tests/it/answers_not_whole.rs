//! Answers that are not what they seem (design chapter 5, §4.5):
//! refusals, answers cut off at the output limit or by a content filter,
//! tool calls in a cut-off response, a model that calls a tool it was not
//! given, and parameters a model rejects. Each through the real binary, on every wire where the
//! case exists, at top level and inside a sub-agent.

use crate::common::*;

use serde_json::{Value, json};

/// `lead` (on `parent`) delegates once to `w` (on `p`), whose answer is
/// `w_answer`, then echoes the tool result it got back.
fn echo_tree(home: &Home, parent: P, p: P, w_answer: String) -> FakeServer {
    home.named_agent("lead", parent.model(), "sub_agents = [\"w\"]\n");
    home.named_agent("w", p.model(), "");
    FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => {
            let got = req.tool_result_texts().join(" | ");
            Reply::Json(200, parent.text(&format!("echo: {got}")))
        }
        "lead" => Reply::Json(
            200,
            parent.tool_calls(&[("c1", "call_agent", delegate("w", "go"))]),
        ),
        _ => Reply::Json(200, w_answer.clone()),
    })
}

/// The other provider, for the parent of a sub-agent on `p`.
fn parent_of(p: P) -> P {
    p.other()
}

// ---------------------------------------------------------------------------
// Refusals.
// ---------------------------------------------------------------------------

/// A refusal on `p`, and the text axe is to report for it.
fn refusal(p: P) -> Option<(String, &'static str)> {
    match p {
        P::OpenAi => {
            let mut v: Value = serde_json::from_str(&p.text("")).unwrap();
            v["choices"][0]["message"]["content"] = Value::Null;
            v["choices"][0]["message"]["refusal"] = "I can't help with that.".into();
            Some((
                v.to_string(),
                "openai: the model refused to answer: I can't help with that.",
            ))
        }
        P::Anthropic => {
            // Whatever partial text came before the refusal is not an answer.
            let mut v: Value = serde_json::from_str(&p.text("Sure, the first step is")).unwrap();
            v["stop_reason"] = "refusal".into();
            Some((
                v.to_string(),
                "anthropic: the model refused to answer (stop_reason \"refusal\")",
            ))
        }
        P::Ollama => None,
        P::Responses => {
            let refused = json!([{"type": "message", "id": "msg_1", "role": "assistant",
                "status": "completed", "content": [{"type": "refusal",
                "refusal": "I can't help with that."}]}]);
            Some((
                responses_answer(refused, 5, 2, 0).to_string(),
                "openai: the model refused to answer: I can't help with that.",
            ))
        }
    }
}

#[test]
fn a_refusal_at_top_level_is_an_error_not_an_answer() {
    for p in [P::OpenAi, P::Anthropic, P::Responses] {
        let (body, want) = refusal(p).unwrap();
        let home = Home::fast_retries();
        home.named_agent("solo", p.model(), "");
        let server = FakeServer::json(200, &body);
        let b = home.run_bounded(&every_wire(&server), &["run", "solo"], HUNG);
        assert_eq!(code(&b.output), 1, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "", "{p:?}: no answer is printed");
        assert_eq!(stderr(&b.output), format!("axe: {want}\n"), "{p:?}");
    }
}

#[test]
fn a_refusal_with_a_reason_says_why() {
    let home = Home::fast_retries();
    home.named_agent("solo", P::Anthropic.model(), "");
    let mut v: Value = serde_json::from_str(&P::Anthropic.text("")).unwrap();
    v["stop_reason"] = "refusal".into();
    v["stop_details"] = json!({"type": "refusal", "category": "cyber", "explanation": null});
    let server = FakeServer::json(200, &v.to_string());
    let b = home.run_bounded(&every_wire(&server), &["run", "solo"], HUNG);
    assert_eq!(code(&b.output), 1);
    assert_eq!(
        stderr(&b.output),
        "axe: anthropic: the model refused to answer (stop_reason \"refusal\"): cyber\n"
    );
}

#[test]
fn a_sub_agents_refusal_is_its_error_result() {
    for p in [P::OpenAi, P::Anthropic, P::Responses] {
        let (body, want) = refusal(p).unwrap();
        let home = Home::fast_retries();
        let server = echo_tree(&home, parent_of(p), p, body);
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(
            stdout(&b.output),
            format!(
                "echo: Error: sub-agent \"w\" failed - {}. You may retry or proceed without this result.\n",
                want.trim_end_matches('.')
            ),
            "{p:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Answers cut off or filtered.
// ---------------------------------------------------------------------------

/// Every way each wire says an answer is incomplete, and what axe says.
fn cut_cases() -> Vec<(P, &'static str, &'static str)> {
    vec![
        (P::OpenAi, "length", "cut off at the output limit"),
        (
            P::OpenAi,
            "content_filter",
            "stopped by the provider's content filter",
        ),
        (P::Anthropic, "max_tokens", "cut off at the output limit"),
        (
            P::Anthropic,
            "model_context_window_exceeded",
            "cut off: the context window is full",
        ),
        (P::Ollama, "length", "cut off at the output limit"),
        (
            P::Responses,
            "max_output_tokens",
            "cut off at the output limit",
        ),
        (
            P::Responses,
            "content_filter",
            "stopped by the provider's content filter",
        ),
    ]
}

#[test]
fn an_answer_cut_off_at_top_level_is_printed_with_a_warning() {
    for (p, reason, what) in cut_cases() {
        let home = Home::fast_retries();
        home.named_agent("solo", p.model(), "");
        let server = FakeServer::json(200, &p.text_stopped("The first half", reason));
        let b = home.run_bounded(&every_wire(&server), &["run", "solo"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?} {reason}");
        assert_eq!(stdout(&b.output), "The first half\n");
        assert_eq!(
            stderr(&b.output),
            format!("axe: warning: the answer was {what} (stop reason \"{reason}\")\n"),
            "{p:?} {reason}"
        );
        // --quiet means no warnings; --json carries the stop reason.
        let b = home.run_bounded(
            &every_wire(&server),
            &["run", "solo", "--quiet", "--json"],
            HUNG,
        );
        assert_eq!(stderr(&b.output), "", "{p:?} {reason}");
        let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
        assert_eq!(out["stop_reason"], reason);
    }
}

#[test]
fn a_sub_agents_cut_off_answer_reaches_its_parent_with_a_marker() {
    for (p, reason, what) in cut_cases() {
        let home = Home::fast_retries();
        let server = echo_tree(
            &home,
            parent_of(p),
            p,
            p.text_stopped("The first half", reason),
        );
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?} {reason}: {}", stderr(&b.output));
        assert_eq!(
            stdout(&b.output),
            format!(
                "echo: The first half\n[incomplete: the answer was {what} (stop reason \"{reason}\")]\n"
            ),
            "{p:?} {reason}"
        );
    }
}

/// A server where `lead`'s first response makes `calls` and is cut off for
/// `reason`, `lead`'s next one echoes the results it got, and `w` answers.
fn cut_off_calls(p: P, reason: &'static str, calls: &[Call]) -> FakeServer {
    let first = {
        let mut v: Value = serde_json::from_str(&p.tool_calls(calls)).unwrap();
        match p {
            P::Anthropic => v["stop_reason"] = reason.into(),
            P::OpenAi => v["choices"][0]["finish_reason"] = reason.into(),
            P::Ollama => v["done_reason"] = reason.into(),
            P::Responses => {
                v["status"] = "incomplete".into();
                v["incomplete_details"] = json!({"reason": reason});
            }
        }
        v.to_string()
    };
    FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => {
            let got = req.tool_result_texts().join(" | ");
            Reply::Json(200, p.text(&format!("echo: {got}")))
        }
        "lead" => Reply::Json(200, first.clone()),
        _ => Reply::Json(200, p.text("w ran")),
    })
}

#[test]
fn tool_calls_in_a_cut_off_response_are_not_run() {
    for (p, reason, _) in cut_cases() {
        let home = Home::fast_retries();
        home.named_agent("lead", p.model(), "sub_agents = [\"w\"]\n");
        home.named_agent("w", p.model(), "");
        let calls = [("c1", "call_agent", delegate("w", "half a ta"))];
        let server = cut_off_calls(p, reason, &calls);
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?} {reason}: {}", stderr(&b.output));
        let who: Vec<String> = server.requests().iter().map(|r| r.who()).collect();
        assert_eq!(who, ["lead", "lead"], "{p:?} {reason}: w must not run");
        assert_eq!(
            stdout(&b.output),
            format!(
                "echo: call_agent error: not run: the response that made this call was cut off (stop reason \"{reason}\"), so the call may be incomplete\n"
            ),
            "{p:?} {reason}"
        );
    }
}

#[test]
fn a_cut_off_responses_calls_are_each_answered_as_the_tool_they_name() {
    // Each call's result said "call_agent error: not run", whatever its
    // tool: here a built-in one beside call_agent.
    for (p, reason, _) in cut_cases() {
        let home = Home::fast_retries();
        let lead = "sub_agents = [\"w\"]\ntools = [\"read_file\"]\n";
        home.named_agent("lead", p.model(), lead);
        home.named_agent("w", p.model(), "");
        let calls = [
            ("c1", "call_agent", delegate("w", "half a ta")),
            ("c2", "read_file", json!({"path": "notes.txt"})),
        ];
        let server = cut_off_calls(p, reason, &calls);
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?} {reason}: {}", stderr(&b.output));
        let why = format!(
            "not run: the response that made this call was cut off (stop reason \"{reason}\"), so the call may be incomplete"
        );
        assert_eq!(
            stdout(&b.output),
            format!("echo: call_agent error: {why} | Error: tool \"read_file\" {why}\n"),
            "{p:?} {reason}"
        );
    }
}

// ---------------------------------------------------------------------------
// A tool call the model was not given.
// ---------------------------------------------------------------------------

#[test]
fn a_call_made_past_the_depth_limit_is_answered_and_the_follow_up_is_valid() {
    for p in WIRES {
        let home = Home::fast_retries();
        // lead's max_depth 1: mid runs at the limit with no tools, but its
        // model calls call_agent anyway.
        home.named_agent(
            "lead",
            p.model(),
            "sub_agents = [\"mid\"]\n[sub_agents_config]\nmax_depth = 1\n",
        );
        home.named_agent("mid", p.model(), "sub_agents = [\"leaf\"]\n");
        home.named_agent("leaf", p.model(), "");
        let server = FakeServer::route(move |req| match req.who().as_str() {
            "lead" if req.has_tool_results() => Reply::Json(200, p.text("lead done")),
            "lead" => Reply::Json(
                200,
                p.tool_calls(&[("c1", "call_agent", delegate("mid", "go"))]),
            ),
            "mid" if req.has_tool_results() => Reply::Json(200, p.text("mid done")),
            "mid" => Reply::Json(
                200,
                p.tool_calls(&[("m1", "call_agent", delegate("leaf", "deeper"))]),
            ),
            _ => Reply::Json(200, p.text("leaf ran")),
        });
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        let mid = server
            .requests()
            .into_iter()
            .filter(|r| r.who() == "mid")
            .collect::<Vec<_>>();
        assert_eq!(mid.len(), 2, "{p:?}");
        assert!(
            mid[0].json().get("tools").is_none(),
            "{p:?}: no tools at the limit"
        );
        assert_eq!(
            mid[1].tool_result_texts(),
            ["call_agent error: maximum sub-agent depth (1) reached"],
            "{p:?}"
        );
        let follow_up = mid[1].json();
        match p {
            // The API needs the tools that tool_use blocks name; tool_choice
            // none keeps the model from calling again.
            P::Anthropic => {
                assert_eq!(follow_up["tools"][0]["name"], "call_agent", "{follow_up}");
                assert_eq!(follow_up["tool_choice"], json!({"type": "none"}));
            }
            P::OpenAi => {
                assert_eq!(follow_up["tools"][0]["function"]["name"], "call_agent");
                assert_eq!(follow_up["tool_choice"], "none");
            }
            // Ollama has no tool_choice: the tools stay out.
            P::Ollama => assert!(follow_up.get("tools").is_none(), "{follow_up}"),
            P::Responses => {
                assert_eq!(follow_up["tools"][0]["name"], "call_agent", "{follow_up}");
                assert_eq!(follow_up["tool_choice"], "none");
            }
        }
        assert!(server.requests().iter().all(|r| r.who() != "leaf"));
    }
}

// ---------------------------------------------------------------------------
// Parameters a model rejects.
// ---------------------------------------------------------------------------

/// OpenAI's 400 for a parameter a model does not take, as the API sends it.
fn openai_unsupported(param: &str, message: &str) -> Reply {
    Reply::Json(
        400,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": "unsupported_parameter"}})
            .to_string(),
    )
}

#[test]
fn an_openai_model_that_rejects_max_tokens_gets_max_completion_tokens() {
    let home = Home::fast_retries();
    home.named_agent("solo", "openai/o4-mini", "[params]\nmax_tokens = 300\n");
    let server = FakeServer::route(|req| {
        if req.json().get("max_tokens").is_some() {
            openai_unsupported(
                "max_tokens",
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            )
        } else {
            Reply::Json(200, openai_text("reasoned", 1, 1))
        }
    });
    let b = home.run_bounded(&every_wire(&server), &["run", "solo"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "reasoned\n");
    assert_eq!(stderr(&b.output), "");
    let sent: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["max_tokens"], 300);
    assert_eq!(sent[1]["max_completion_tokens"], 300);
    assert!(sent[1].get("max_tokens").is_none());
}

#[test]
fn a_model_that_rejects_temperature_is_sent_none_and_the_user_is_told() {
    for p in [P::OpenAi, P::Anthropic] {
        let home = Home::fast_retries();
        // Two turns, and a sub-agent on the same model with a temperature
        // of its own: every request after the first is sent without it
        // at once, for the whole run.
        home.named_agent(
            "lead",
            p.model(),
            "sub_agents = [\"w\"]\n[params]\ntemperature = 0.2\n",
        );
        home.named_agent("w", p.model(), "[params]\ntemperature = 0.5\n");
        let rejection = match p {
            P::OpenAi => Reply::Json(
                400,
                json!({"error": {"message": "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.", "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}).to_string(),
            ),
            _ => Reply::Json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "`temperature` is deprecated for this model."}}).to_string(),
            ),
        };
        let server = FakeServer::route(move |req| {
            if req.json().get("temperature").is_some() {
                return rejection.clone();
            }
            match req.who().as_str() {
                "lead" if req.has_tool_results() => Reply::Json(200, p.text("lead done")),
                "lead" => Reply::Json(
                    200,
                    p.tool_calls(&[("c1", "call_agent", delegate("w", "go"))]),
                ),
                _ => Reply::Json(200, p.text("w done")),
            }
        });
        let b = home.run_bounded(&every_wire(&server), &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "lead done\n");
        assert_eq!(
            stderr(&b.output),
            format!(
                "axe: warning: {}: model {:?} does not accept temperature; it was sent without it\n",
                p.name(),
                p.model().split_once('/').unwrap().1
            ),
            "{p:?}: one warning, however many requests"
        );
        let lead: Vec<Value> = server
            .requests()
            .iter()
            .filter(|r| r.who() == "lead")
            .map(|r| r.json())
            .collect();
        assert_eq!(
            lead.len(),
            3,
            "{p:?}: refused, then sent without, then the next turn"
        );
        assert_eq!(lead[0]["temperature"], 0.2);
        assert!(lead[1].get("temperature").is_none());
        assert!(lead[2].get("temperature").is_none(), "{p:?}: remembered");
        let carried: Vec<String> = server
            .requests()
            .iter()
            .filter(|r| r.json().get("temperature").is_some())
            .map(|r| r.who())
            .collect();
        assert_eq!(
            carried,
            ["lead"],
            "{p:?}: only the first request of the run"
        );
    }
}

#[test]
fn a_bad_request_about_something_else_is_not_resent() {
    let home = Home::fast_retries();
    home.named_agent("solo", "openai/gpt-4o", "[params]\ntemperature = 0.2\n");
    let server = FakeServer::start(vec![Reply::Json(
        400,
        json!({"error": {"message": "Invalid 'messages[0].content': string too long.", "type": "invalid_request_error", "param": "messages[0].content", "code": "string_above_max_length"}}).to_string(),
    )]);
    let b = home.run_bounded(&every_wire(&server), &["run", "solo"], HUNG);
    assert_eq!(code(&b.output), 1);
    assert_eq!(server.requests().len(), 1);
}
