//! The three wire formats' streamed answers as the APIs send them: OpenAI's
//! `chat.completion.chunk` events and Anthropic's message events as
//! server-sent events, Ollama's objects one per line; and the replies that
//! send them a piece at a time ([`Step`]s, played by the fake server).

use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use super::responses::responses_stream;
use super::server::Reply;
use super::wire::{Call, P};

/// One step of a [`Reply::Stream`].
#[derive(Debug, Clone)]
pub enum Step {
    /// These bytes, one chunk per `piece` bytes (1: a byte per write).
    Bytes { bytes: Vec<u8>, piece: usize },
    /// Nothing sent for a while.
    Sleep(Duration),
    /// Nothing sent until the file exists (at most 20 s): the test says
    /// when the stream goes on.
    WaitFor(std::path::PathBuf),
    /// These bytes (a keep-alive) every 100 ms, until the client hangs up
    /// (at most a minute): a stream that never ends.
    Forever(String),
    /// The connection closed where the stream is, with no last chunk.
    Cut,
}

impl Step {
    /// `text` in chunks of `piece` bytes.
    pub fn bytes(text: &str, piece: usize) -> Step {
        Step::Bytes {
            bytes: text.as_bytes().to_vec(),
            piece,
        }
    }
}

/// A chunked 200 answer, step by step; false when the connection is to
/// be closed.
pub(super) fn stream(out: &mut std::net::TcpStream, content_type: &str, steps: &[Step]) -> bool {
    use std::io::Write;
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    if out.write_all(head.as_bytes()).is_err() {
        return false;
    }
    let chunk = |out: &mut std::net::TcpStream, bytes: &[u8]| {
        let mut c = format!("{:x}\r\n", bytes.len()).into_bytes();
        c.extend_from_slice(bytes);
        c.extend_from_slice(b"\r\n");
        out.write_all(&c).and_then(|()| out.flush()).is_ok()
    };
    for step in steps {
        match step {
            Step::Bytes { bytes, piece } => {
                for part in bytes.chunks((*piece).max(1)) {
                    if !chunk(out, part) {
                        return false;
                    }
                }
            }
            Step::Sleep(d) => thread::sleep(*d),
            Step::WaitFor(path) => {
                let until = std::time::Instant::now() + Duration::from_secs(20);
                while !path.exists() && std::time::Instant::now() < until {
                    thread::sleep(Duration::from_millis(10));
                }
            }
            Step::Forever(keep_alive) => {
                let until = std::time::Instant::now() + Duration::from_secs(60);
                while std::time::Instant::now() < until {
                    if !chunk(out, keep_alive.as_bytes()) {
                        return false;
                    }
                    thread::sleep(Duration::from_millis(100));
                }
                return false;
            }
            Step::Cut => {
                let _ = out.shutdown(std::net::Shutdown::Both);
                return false;
            }
        }
    }
    out.write_all(b"0\r\n\r\n")
        .and_then(|()| out.flush())
        .is_ok()
}

impl P {
    /// The content type the API streams in.
    pub fn stream_type(self) -> &'static str {
        match self {
            P::Ollama => "application/x-ndjson",
            _ => "text/event-stream",
        }
    }

    /// A streamed text answer whose text comes in `pieces`, with a
    /// keep-alive comment and an event type no API has yet among them
    /// (what a client must let be), and the usage last.
    pub fn stream_text(self, pieces: &[&str], input: u64, output: u64) -> String {
        match self {
            P::OpenAi => openai_stream(pieces, &[], "stop", input, output),
            P::Anthropic => anthropic_stream(pieces, &[], "end_turn", input, output),
            P::Ollama => ollama_stream(pieces, &[], input, output),
            P::Responses => responses_stream(pieces, &[], input, output),
        }
    }

    /// A streamed answer with `text` that calls `calls`.
    pub fn stream_calls(self, text: &str, calls: &[Call]) -> String {
        let pieces: Vec<&str> = if text.is_empty() { vec![] } else { vec![text] };
        match self {
            P::OpenAi => openai_stream(&pieces, calls, "tool_calls", 5, 2),
            P::Anthropic => anthropic_stream(&pieces, calls, "tool_use", 5, 2),
            P::Ollama => ollama_stream(&pieces, calls, 5, 2),
            P::Responses => responses_stream(&pieces, calls, 5, 2),
        }
    }

    /// `body` streamed a byte per write.
    pub fn streamed(self, body: &str) -> Reply {
        self.stream_steps(vec![Step::bytes(body, 1)])
    }

    /// A streamed answer in `steps`.
    pub fn stream_steps(self, steps: Vec<Step>) -> Reply {
        Reply::Stream {
            content_type: self.stream_type().into(),
            steps,
        }
    }
}

/// Server-sent events: each with its `event:` line when it has a name.
pub fn sse(events: &[(Option<&str>, Value)]) -> String {
    let mut s = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            s.push_str(&format!("event: {name}\n"));
        }
        s.push_str(&format!("data: {data}\n\n"));
    }
    s
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({
        "id": "chatcmpl-abc123", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null
    })
}

/// An OpenAI stream: the role, `pieces` of content, each call's fragments
/// interleaved with the next one's (id, type and name first, then the
/// arguments in two halves), the finish reason, the usage chunk, `[DONE]`.
pub fn openai_stream(
    pieces: &[&str],
    calls: &[Call],
    finish: &str,
    input: u64,
    output: u64,
) -> String {
    let mut events = vec![(
        None,
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ),
    )];
    for p in pieces {
        events.push((None, chunk(json!({"content": p}), Value::Null)));
    }
    let halves: Vec<(String, String)> = calls
        .iter()
        .map(|(_, _, args)| {
            let text = args.to_string();
            let mid = text.len() / 2;
            (text[..mid].to_string(), text[mid..].to_string())
        })
        .collect();
    for (i, (id, name, _)) in calls.iter().enumerate() {
        let first = json!([{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]);
        events.push((None, chunk(json!({"tool_calls": first}), Value::Null)));
    }
    for half in 0..2 {
        for (i, h) in halves.iter().enumerate() {
            let part = if half == 0 { &h.0 } else { &h.1 };
            let frag = json!([{"index": i, "function": {"arguments": part}}]);
            events.push((None, chunk(json!({"tool_calls": frag}), Value::Null)));
        }
    }
    events.push((None, chunk(json!({}), json!(finish))));
    let mut usage = chunk(json!({}), Value::Null);
    usage["choices"] = json!([]);
    usage["usage"] = json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output});
    events.push((None, usage));
    let mut s = sse(&events);
    // A comment, and the end.
    s.insert_str(0, ": keep-alive\n\n");
    s.push_str("data: [DONE]\n\n");
    s
}

/// An Anthropic stream: `message_start`, a text block of `pieces`, a
/// `tool_use` block per call (its input JSON in two halves), `ping` and an
/// event type of the future among them, `message_delta` with the stop
/// reason and the output tokens, `message_stop`.
pub fn anthropic_stream(
    pieces: &[&str],
    calls: &[Call],
    stop: &str,
    input: u64,
    output: u64,
) -> String {
    let mut events = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {
            "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
        }}),
    )];
    let mut index = 0;
    if !pieces.is_empty() {
        events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
        events.push((Some("ping"), json!({"type": "ping"})));
        for p in pieces {
            events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})));
        }
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ));
        index = 1;
    }
    events.push((
        Some("future_event"),
        json!({"type": "future_event", "x": 1}),
    ));
    for (id, name, args) in calls {
        events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        let text = args.to_string();
        let mid = text.len() / 2;
        for part in ["", &text[..mid], &text[mid..]] {
            events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})));
        }
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    let mut s = sse(&events);
    s.insert_str(0, ": keep-alive\r\n\r\n");
    s
}

/// An Anthropic stream that fails with an `error` event of `kind` after
/// `pieces` of text.
pub fn anthropic_error_stream(pieces: &[&str], kind: &str, message: &str) -> String {
    let whole = anthropic_stream(pieces, &[], "end_turn", 5, 2);
    let cut = whole
        .find("event: content_block_stop")
        .or_else(|| whole.find("event: message_delta"))
        .unwrap_or(whole.len());
    let error = sse(&[(
        Some("error"),
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )]);
    format!("{}{error}", &whole[..cut])
}

/// An Ollama stream: a line per piece, the calls (whole, as Ollama sends
/// them) in one line, and the `done` line with the counts.
pub fn ollama_stream(pieces: &[&str], calls: &[Call], input: u64, output: u64) -> String {
    let line = |message: Value, done: bool| {
        let mut l = json!({"model": "llama3.1", "created_at": "2026-11-23T10:00:00.000000Z", "message": message, "done": done});
        if done {
            l["done_reason"] = json!("stop");
            l["total_duration"] = json!(1_000_000);
            l["prompt_eval_count"] = json!(input);
            l["eval_count"] = json!(output);
        }
        format!("{l}\n")
    };
    let mut s = String::new();
    for p in pieces {
        s.push_str(&line(json!({"role": "assistant", "content": p}), false));
    }
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(_, name, args)| json!({"function": {"name": name, "arguments": args}}))
            .collect();
        s.push_str(&line(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
            false,
        ));
    }
    s.push_str(&line(json!({"role": "assistant", "content": ""}), true));
    s
}
