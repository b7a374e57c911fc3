//! What a run says of the model's reasoning (design §4.15): its reasoning
//! tokens in `--json` (the agent's, the tree's, each agent's), `--verbose`
//! and the trace, priced once as the output they are part of; and its
//! thinking text never the answer, shown by `--verbose` and in the trace
//! with `--trace-bodies` only.

use super::*;

use serde_json::{Value, json};

/// An OpenAI answer `text` whose usage has `completion` output tokens,
/// `reasoning` of them reasoning, and a total of `total`.
fn reasoned(text: &str, completion: u64, reasoning: u64, total: u64) -> String {
    let mut v: Value = serde_json::from_str(&openai_text(text, 10, completion)).unwrap();
    v["usage"] = json!({
        "prompt_tokens": 10, "completion_tokens": completion, "total_tokens": total,
        "completion_tokens_details": {"reasoning_tokens": reasoning}
    });
    v.to_string()
}

/// `--json` of `thinker` on `openai/house` ($1 a million input tokens,
/// $10 output) answering `answer`.
fn json_of(answer: &str) -> Value {
    let server = FakeServer::json(200, answer);
    let home = thinker("openai/house", "reasoning_effort = \"high\"");
    home.config("[prices.\"openai/house\"]\ninput = 1\noutput = 10\n");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "thinker", "--json", "-p", "go"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn reasoning_tokens_are_in_json_and_priced_once_as_the_output_they_are_part_of() {
    // OpenAI's usage: completion_tokens includes the reasoning.
    let v = json_of(&reasoned("42", 100, 64, 110));
    assert_eq!(v["output_tokens"], 100, "{v}");
    assert_eq!(v["reasoning_tokens"], 64, "{v}");
    assert_eq!(v["total_reasoning_tokens"], 64, "{v}");
    assert_eq!(v["agents"][0]["reasoning_tokens"], 64, "{v}");
    // 10 input at $1/M and 100 output at $10/M, not 164.
    assert_eq!(v["cost_usd"], 0.00101, "{v}");
    assert_eq!(v["content"], "42");
}

#[test]
fn reasoning_a_compatible_server_leaves_out_of_completion_tokens_is_output_too() {
    // Gemini's compatible endpoint: total = prompt + completion + reasoning.
    let v = json_of(&reasoned("42", 36, 64, 110));
    assert_eq!(v["output_tokens"], 100, "{v}");
    assert_eq!(v["reasoning_tokens"], 64, "{v}");
    assert_eq!(v["cost_usd"], 0.00101, "{v}");
    // A model that did not reason: nothing added, 0 said.
    let v = json_of(&reasoned("42", 36, 0, 46));
    assert_eq!(v["output_tokens"], 36, "{v}");
    assert_eq!(v["reasoning_tokens"], 0, "{v}");
}

#[test]
fn a_sub_agents_reasoning_tokens_are_in_the_trees_total() {
    let server = FakeServer::route(|req| {
        let reply = match (req.who().as_str(), req.has_tool_results()) {
            ("lead", false) => {
                openai_tool_calls(&[("c1", "call_agent", delegate("worker", "w"))], 5, 2)
            }
            ("lead", true) => reasoned("done", 20, 8, 30),
            _ => reasoned("worked", 50, 40, 60),
        };
        Reply::Json(200, reply)
    });
    let home = Home::new();
    home.named_agent("lead", "openai/o4-mini", "sub_agents = [\"worker\"]\n");
    home.named_agent("worker", "openai/o4-mini", "");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--json", "-p", "go"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["reasoning_tokens"], 8, "{v}");
    assert_eq!(v["total_reasoning_tokens"], 48, "{v}");
}

/// An Ollama answer `text` with `thinking`.
fn ollama_thought(text: &str, thinking: &str) -> String {
    let mut v: Value = serde_json::from_str(&ollama_text(text, 5, 9)).unwrap();
    v["message"]["thinking"] = json!(thinking);
    v.to_string()
}

/// An Anthropic answer `text` after a thinking block.
fn anthropic_thought(text: &str, thinking: &str) -> String {
    let mut v: Value = serde_json::from_str(&anthropic_text(text, 5, 9)).unwrap();
    v["content"] = json!([
        {"type": "thinking", "thinking": thinking, "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": text}
    ]);
    v.to_string()
}

/// An OpenAI-compatible server's answer `text` with `reasoning_content`.
fn compatible_thought(text: &str, thinking: &str) -> String {
    let mut v: Value = serde_json::from_str(&openai_text(text, 5, 9)).unwrap();
    v["choices"][0]["message"]["reasoning_content"] = json!(thinking);
    v.to_string()
}

const THOUGHT: &str = "Let me think: six times seven. PRIVATE-THOUGHT";

#[test]
fn thinking_is_never_the_answer_and_verbose_shows_it_on_every_wire() {
    let cases = [
        (P::Ollama, "ollama/qwen3:8b", ollama_thought("42", THOUGHT)),
        (
            P::Anthropic,
            "anthropic/claude-sonnet-4-5",
            anthropic_thought("42", THOUGHT),
        ),
        (
            P::OpenAi,
            "openai/deepseek-reasoner",
            compatible_thought("42", THOUGHT),
        ),
    ];
    for (p, model, answer) in cases {
        let server = FakeServer::json(200, &answer);
        let home = thinker(model, "thinking_budget = 2048");
        for args in [&["-v"][..], &["--json"], &[]] {
            let mut all = vec!["run", "thinker", "-p", "six times seven?"];
            all.extend_from_slice(args);
            let out = home.run_on(&[(p, &server)], &all);
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert!(
                !stdout(&out).contains("PRIVATE-THOUGHT"),
                "{p:?} {args:?}: {}",
                stdout(&out)
            );
            let shown = stderr(&out).contains(&format!("[turn 1] Thinking: {THOUGHT}"));
            assert_eq!(shown, args == ["-v"], "{p:?} {args:?}: {}", stderr(&out));
            if args.is_empty() {
                assert_eq!(stdout(&out), "42\n");
            }
        }
    }
}

#[test]
fn streamed_thinking_is_never_printed_as_the_answer() {
    let ollama = [
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": "", "thinking": "Let me think: "}, "done": false}),
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": "", "thinking": "PRIVATE-THOUGHT"}, "done": false}),
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": "42"}, "done": false}),
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 9}),
    ];
    let body: String = ollama.iter().map(|l| format!("{l}\n")).collect();
    let server = FakeServer::start(vec![P::Ollama.streamed(&body)]);
    let home = thinker("ollama/qwen3:8b", "reasoning_effort = \"low\"");
    let out = home.run_on(
        &[(P::Ollama, &server)],
        &["run", "thinker", "--stream", "-v", "-p", "go"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
    assert!(
        stderr(&out).contains("Thinking: Let me think: PRIVATE-THOUGHT"),
        "{}",
        stderr(&out)
    );
    let chunk = |delta: Value| json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let openai = sse(&[
        (
            None,
            chunk(json!({"role": "assistant", "content": null, "reasoning_content": "PRIVATE-"})),
        ),
        (
            None,
            chunk(json!({"content": "", "reasoning_content": "THOUGHT"})),
        ),
        (
            None,
            chunk(json!({"content": "42", "reasoning_content": null})),
        ),
        (
            None,
            json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ),
    ]) + "data: [DONE]\n\n";
    let server = FakeServer::start(vec![P::OpenAi.streamed(&openai)]);
    let home = thinker("openai/deepseek-reasoner", "reasoning_effort = \"low\"");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "thinker", "--stream", "-v", "-p", "go"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
    assert!(
        stderr(&out).contains("Thinking: PRIVATE-THOUGHT"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn verbose_and_the_trace_count_reasoning_tokens_and_only_trace_bodies_hold_the_thinking() {
    let mut answer: Value = serde_json::from_str(&reasoned("42", 100, 64, 110)).unwrap();
    answer["choices"][0]["message"]["reasoning_content"] = json!(THOUGHT);
    let server = FakeServer::json(200, &answer.to_string());
    let home = thinker("openai/o4-mini", "reasoning_effort = \"high\"");
    let trace = home.dir.path().join("t.jsonl");
    let bodies = home.dir.path().join("b.jsonl");
    let t = trace.to_str().unwrap();
    let b = bodies.to_str().unwrap();
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "thinker", "-v", "-p", "go", "--trace", t],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Tokens:   10 input, 100 output (64 reasoning)\n"),
        "{}",
        stderr(&out)
    );
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "thinker", "-p", "go", "--trace", b, "--trace-bodies"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let response = |path| {
        trace_events(path)
            .into_iter()
            .find(|e| e["event"] == "response")
            .unwrap()
    };
    let plain = response(&trace);
    assert_eq!(plain["reasoning_tokens"], 64, "{plain}");
    assert!(plain.get("thinking").is_none(), "{plain}");
    let full = response(&bodies);
    assert_eq!(full["reasoning_tokens"], 64, "{full}");
    assert_eq!(full["thinking"], THOUGHT, "{full}");
    assert_eq!(full["content"], "42", "{full}");
    let end = trace_events(&trace)
        .into_iter()
        .find(|e| e["event"] == "run_end")
        .unwrap();
    assert_eq!(end["reasoning_tokens"], 64, "{end}");
    assert_eq!(end["total_reasoning_tokens"], 64, "{end}");
}
