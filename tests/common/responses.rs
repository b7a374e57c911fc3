//! OpenAI's Responses API as its reference documents it and the `openai`
//! package types it (`Response`, `ResponseStreamEvent`): whole answers
//! with their reasoning items, text and `function_call` items, their
//! stream of events, and what axe sent read back (`instructions`, `input`
//! items).

use serde_json::{Value, json};

use super::server::Recorded;
use super::streams::sse;
use super::wire::Call;

/// The encrypted content of the fake's reasoning item (opaque to axe).
pub const ENCRYPTED: &str = "gAAAAABo-opaque-reasoning-0123456789";

/// A whole Response with `output` items, every field the `openai`
/// package's `Response` requires; `reasoning` tokens among the output's.
pub fn responses_answer(output: Value, input: u64, out: u64, reasoning: u64) -> Value {
    json!({
        "id": "resp_68af0001", "object": "response", "created_at": 1_756_000_000,
        "status": "completed", "error": null, "incomplete_details": null,
        "instructions": null, "metadata": {}, "model": "o3-pro-2025-06-10",
        "output": output, "parallel_tool_calls": true, "temperature": 1.0,
        "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "usage": {"input_tokens": input,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input + out}
    })
}

/// A reasoning item with its summary and encrypted content, as a request
/// with `include: ["reasoning.encrypted_content"]` gets it.
pub fn reasoning_item(id: &str, summary: &str) -> Value {
    json!({"type": "reasoning", "id": id, "encrypted_content": format!("{ENCRYPTED}-{id}"),
        "summary": [{"type": "summary_text", "text": summary}]})
}

/// An output message of `text`.
pub fn output_message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_68af0001", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// A `function_call` item for each call (arguments a JSON text).
pub fn function_calls(calls: &[Call]) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": id,
                "name": name, "arguments": args.to_string(), "status": "completed"})
        })
        .collect()
}

/// A Responses text answer after a reasoning item (input, output tokens).
pub fn responses_text_of(text: &str, input: u64, out: u64) -> String {
    let output = json!([
        reasoning_item("rs_text", "Answering."),
        output_message(text)
    ]);
    responses_answer(output, input, out, 1).to_string()
}

/// A Responses answer that calls `calls` after a reasoning item.
pub fn responses_calls(calls: &[Call], input: u64, out: u64) -> String {
    let mut output = vec![reasoning_item("rs_calls", "I should call a tool.")];
    output.extend(function_calls(calls));
    responses_answer(json!(output), input, out, 1).to_string()
}

/// A Responses stream: created, a reasoning item, `pieces` of text as
/// `response.output_text.delta`s, each call's arguments in two
/// `response.function_call_arguments.delta`s, then `response.completed`
/// with the whole response; a keep-alive comment first.
pub fn responses_stream(pieces: &[&str], calls: &[Call], input: u64, out: u64) -> String {
    let text: String = pieces.concat();
    let mut output = vec![reasoning_item("rs_stream", "Streaming.")];
    if !text.is_empty() {
        output.push(output_message(&text));
    }
    output.extend(function_calls(calls));
    let whole = responses_answer(json!(output), input, out, 1);
    let mut pending = whole.clone();
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    pending["usage"] = Value::Null;
    let mut events = vec![json!({"type": "response.created", "response": pending})];
    for (i, item) in output.iter().enumerate() {
        let mut added = item.clone();
        if item["type"] == "function_call" {
            added["arguments"] = json!("");
            added["status"] = json!("in_progress");
        }
        if item["type"] == "message" {
            added["content"] = json!([]);
            added["status"] = json!("in_progress");
        }
        events
            .push(json!({"type": "response.output_item.added", "output_index": i, "item": added}));
        let id = item["id"].as_str().unwrap_or("");
        if item["type"] == "message" {
            for p in pieces {
                events.push(json!({"type": "response.output_text.delta", "item_id": id,
                    "output_index": i, "content_index": 0, "delta": p, "logprobs": []}));
            }
        }
        if item["type"] == "function_call" {
            let args = item["arguments"].as_str().unwrap_or("");
            let mid = args.len() / 2;
            for half in [&args[..mid], &args[mid..]] {
                events.push(json!({"type": "response.function_call_arguments.delta",
                    "item_id": id, "output_index": i, "delta": half}));
            }
        }
        events.push(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    events.push(json!({"type": "response.completed", "response": whole}));
    for (n, e) in events.iter_mut().enumerate() {
        e["sequence_number"] = json!(n);
    }
    let names: Vec<String> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect();
    // Each event under its own name, as the API sends them.
    let named: Vec<(Option<&str>, Value)> =
        names.iter().map(|n| Some(n.as_str())).zip(events).collect();
    let s = sse(&named);
    format!(": keep-alive\n\n{s}")
}

impl Recorded {
    /// The `input` items of a Responses API request.
    pub fn input(&self) -> Vec<Value> {
        self.json()["input"].as_array().cloned().unwrap_or_default()
    }

    /// Its `function_call_output` items, in order.
    pub fn function_call_outputs(&self) -> Vec<Value> {
        self.input()
            .into_iter()
            .filter(|i| i["type"] == "function_call_output")
            .collect()
    }
}
