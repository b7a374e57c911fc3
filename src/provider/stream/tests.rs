//! The decoders on each wire's documented streams (`fixtures/streams/`, which
//! the fuzzer mutates too): split at every byte they give what they give
//! whole, and what the same answer sent whole gives.

use super::*;
use crate::provider::{Cut, anthropic, ollama, openai};

/// Feeds `chunks` in order; the text handed out, and the answer.
fn run(kind: Wire, chunks: &[&[u8]]) -> (String, Result<Response, StreamError>) {
    let mut d = Decoder::new(kind);
    let mut printed = String::new();
    for c in chunks {
        if let Err(e) = d.feed(c, &mut |t| printed.push_str(t)) {
            return (printed, Err(e));
        }
    }
    (printed, d.finish())
}

fn whole(kind: Wire, s: &str) -> (String, Result<Response, StreamError>) {
    run(kind, &[s.as_bytes()])
}

/// Every split of `s` in two (and one byte at a time) gives the whole's answer.
fn same_at_every_split(kind: Wire, s: &str) -> Response {
    let (text, want) = whole(kind, s);
    let want = want.expect("the whole stream is an answer");
    let b = s.as_bytes();
    for i in 0..=b.len() {
        let (t, got) = run(kind, &[&b[..i], &b[i..]]);
        assert_eq!(got.as_ref(), Ok(&want), "split at {i}");
        assert_eq!(t, text, "split at {i}");
    }
    let bytes: Vec<&[u8]> = b.chunks(1).collect();
    assert_eq!(run(kind, &bytes).1, Ok(want.clone()));
    want
}

const OPENAI_TEXT: &str = include_str!("../../../fixtures/streams/openai_text.sse");

#[test]
fn an_openai_text_stream_prints_its_text_and_reads_its_usage_last() {
    let r = same_at_every_split(Wire::OpenAi, OPENAI_TEXT);
    assert_eq!(whole(Wire::OpenAi, OPENAI_TEXT).0, "Héllo wörld ✓");
    assert_eq!(r.content, "Héllo wörld ✓");
    assert_eq!(
        (r.input_tokens, r.output_tokens, r.cache_read_tokens),
        (12, 5, 4)
    );
    assert_eq!(r.stop_reason, "stop");
    let sent_whole = openai::parse(r#"{"id":"c1","model":"gpt-4o","choices":[{"message":{"content":"Héllo wörld ✓"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#).unwrap();
    assert_eq!(r, sent_whole);
    assert_eq!((r.id.as_str(), r.model.as_str()), ("c1", "gpt-4o"));
}

const OPENAI_TWO_CALLS: &str = include_str!("../../../fixtures/streams/openai_two_calls.sse");

#[test]
fn openai_call_fragments_interleaved_are_assembled_with_their_text_byte_for_byte() {
    let r = same_at_every_split(Wire::OpenAi, OPENAI_TWO_CALLS);
    assert_eq!(r.tool_calls.len(), 2);
    let (a, b) = (&r.tool_calls[0], &r.tool_calls[1]);
    assert_eq!((a.id.as_str(), b.id.as_str()), ("call_a", "call_b"));
    assert_eq!(
        a.wire_arguments,
        serde_json::json!("{\"agent\": \"a\", \"task\": \"x\"}")
    );
    assert_eq!(
        b.wire_arguments,
        serde_json::json!("{\"agent\":\"b\",\"task\":\"y\"}")
    );
    assert_eq!(a.arguments["task"], "x");
    assert_eq!(b.arguments["agent"], "b");
    assert_eq!(r.stop_reason, "tool_calls");
    assert_eq!((r.input_tokens, r.output_tokens), (30, 20));
}

#[test]
fn openai_refusals_cut_answers_errors_and_short_streams_mean_what_they_mean_whole() {
    let refusal = "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"I can't\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\" help.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let r = whole(Wire::OpenAi, refusal).1.unwrap();
    assert_eq!(
        r.declined.as_deref(),
        Some("the model refused to answer: I can't help.")
    );
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abc\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
    assert_eq!(
        whole(Wire::OpenAi, cut).1.unwrap().cut,
        Some(Cut::OutputLimit)
    );
    let error = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\ndata: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n";
    let (printed, got) = whole(Wire::OpenAi, error);
    assert_eq!(printed, "ab");
    match got {
        Err(StreamError::Failed(d)) => {
            assert_eq!(d.message, "The server had an error");
            assert_eq!(d.error_type.as_deref(), Some("server_error"));
        }
        other => panic!("{other:?}"),
    }
    let (_, short) = whole(Wire::OpenAi, &OPENAI_TEXT.replace("data: [DONE]\n\n", ""));
    assert_eq!(
        short,
        Err(StreamError::Invalid(
            "the stream ended before [DONE]".into()
        ))
    );
    let (_, garbage) = whole(Wire::OpenAi, "data: {nope\n\n");
    assert!(
        matches!(garbage, Err(StreamError::Invalid(_))),
        "{garbage:?}"
    );
}

const ANTHROPIC_TOOL: &str = include_str!("../../../fixtures/streams/anthropic_text_and_tool.sse");

#[test]
fn an_anthropic_stream_with_text_and_a_tool_call_is_the_message_sent_whole() {
    let r = same_at_every_split(Wire::Anthropic, ANTHROPIC_TOOL);
    assert_eq!(whole(Wire::Anthropic, ANTHROPIC_TOOL).0, "Let me ask ✓");
    let sent_whole = anthropic::parse(r#"{"id":"msg_1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me ask ✓"},{"type":"tool_use","id":"toolu_1","name":"call_agent","input":{"agent":"helper","task":3}}],"stop_reason":"tool_use","usage":{"input_tokens":25,"cache_creation_input_tokens":7,"cache_read_input_tokens":100,"output_tokens":42}}"#).unwrap();
    assert_eq!(r, sent_whole);
    assert_eq!(
        r.tool_calls[0].wire_arguments,
        serde_json::json!({"agent": "helper", "task": 3})
    );
    assert_eq!(
        (r.input_tokens, r.output_tokens, r.cache_read_tokens),
        (132, 42, 100)
    );
}

#[test]
fn anthropic_error_events_refusals_and_short_streams_mean_what_they_mean_whole() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Sure\"}}\n\n";
    let overloaded = format!(
        "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let (printed, got) = whole(Wire::Anthropic, &overloaded);
    assert_eq!(printed, "Sure");
    match got {
        Err(StreamError::Failed(d)) => {
            assert_eq!(d.error_type.as_deref(), Some("overloaded_error"));
        }
        other => panic!("{other:?}"),
    }
    let refused = format!(
        "{start}event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"refusal\"}},\"usage\":{{\"output_tokens\":2}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    let r = whole(Wire::Anthropic, &refused).1.unwrap();
    assert_eq!(
        r.declined.as_deref(),
        Some("the model refused to answer (stop_reason \"refusal\")")
    );
    let (_, short) = whole(Wire::Anthropic, start);
    assert_eq!(
        short,
        Err(StreamError::Invalid(
            "the stream ended before message_stop".into()
        ))
    );
}

const OLLAMA: &str = include_str!("../../../fixtures/streams/ollama_text_and_tool.ndjson");

#[test]
fn an_ollama_stream_is_the_answer_sent_whole() {
    let r = same_at_every_split(Wire::Ollama, OLLAMA);
    assert_eq!(whole(Wire::Ollama, OLLAMA).0, "Bonjour ✓");
    let sent_whole = ollama::parse(r#"{"model":"llama3.2","message":{"role":"assistant","content":"Bonjour ✓","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a.txt"}}}]},"done":true,"done_reason":"stop","prompt_eval_count":26,"eval_count":8}"#).unwrap();
    assert_eq!(r, sent_whole);
    // The last line needs no newline.
    assert!(whole(Wire::Ollama, OLLAMA.trim_end()).1.is_ok());
    let short = OLLAMA.lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(matches!(
        whole(Wire::Ollama, &short).1,
        Err(StreamError::Invalid(_))
    ));
    let error = "{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"error\":\"model runner has unexpectedly stopped\"}\n";
    match whole(Wire::Ollama, error).1 {
        Err(StreamError::Failed(d)) => {
            assert_eq!(d.message, "model runner has unexpectedly stopped");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn one_enormous_event_or_line_is_an_error_not_a_growing_buffer() {
    for kind in Wire::ALL {
        let mut d = Decoder::new(kind);
        let piece = vec![b'x'; 1 << 20];
        let mut failed = None;
        for _ in 0..5 {
            if let Err(e) = d.feed(&piece, &mut |_| {}) {
                failed = Some(e);
                break;
            }
        }
        assert!(
            matches!(&failed, Some(StreamError::Invalid(m)) if m.contains("larger than 4 MiB")),
            "{kind:?}: {failed:?}"
        );
    }
}

#[test]
fn a_stream_over_the_body_limit_is_an_error_however_small_its_events() {
    let mut d = Decoder::new(Wire::OpenAi);
    let comments = ": keep-alive\n\n".repeat(64 * 1024);
    let mut fed = 0u64;
    let failed = loop {
        match d.feed(comments.as_bytes(), &mut |_| {}) {
            Ok(_) => fed += comments.len() as u64,
            Err(e) => break e,
        }
        assert!(fed <= MAX_BODY_BYTES, "fed {fed} bytes");
    };
    assert_eq!(
        failed,
        StreamError::Invalid("stream larger than 32 MiB".into())
    );
}

/// The events built from `data` lines, each in an SSE frame.
fn sse(data: &[&str]) -> String {
    data.iter().map(|d| format!("data: {d}\n\n")).collect()
}

#[test]
fn openai_text_chunks_that_carry_more_than_text_lose_none_of_it() {
    let stream = sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a\u00e9\n"},"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":null},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"b","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"c","refusal":"no"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"d"},"finish_reason":"length"}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":""}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        "[DONE]",
    ]);
    let (printed, r) = whole(Wire::OpenAi, &stream);
    let r = r.unwrap();
    assert_eq!(printed, "aé\nbcd");
    assert_eq!(r.tool_calls.len(), 1);
    assert!(r.declined.unwrap().ends_with(": no"));
    assert_eq!((r.input_tokens, r.output_tokens), (3, 4));
    assert_eq!(r.stop_reason, "length");
    let error =
        sse(&[r#"{"choices":[{"index":0,"delta":{"content":"x"}}],"error":{"message":"boom"}}"#]);
    assert!(matches!(
        whole(Wire::OpenAi, &error).1,
        Err(StreamError::Failed(_))
    ));
}

/// Text chunks of one shape (`shape.rs`) are read by their bytes: the
/// same text, and a chunk like them but for a field that is no hole (a
/// finish reason, a refusal) or with a hole that is not JSON is read in
/// full, as it would be alone.
#[test]
fn openai_text_chunks_of_one_shape_mean_what_each_means_alone() {
    let chunk = |content: &str, finish: &str, obfuscation: &str| {
        format!(
            r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":{content}}},"finish_reason":{finish}}}],"obfuscation":{obfuscation}}}"#
        )
    };
    let events = [
        chunk(r#""a""#, "null", r#""xy""#),
        chunk(r#""b\n\u00e9""#, "null", r#""q\"rs""#),
        chunk(r#""""#, "null", r#""""#),
        chunk(r#""c""#, "null", "null"),
        chunk(r#""d""#, r#""length""#, r#""xy""#),
        chunk(r#""e""#, "null", r#""x""#),
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"f","refusal":"no"},"finish_reason":null}],"obfuscation":"xy"}"#.into(),
        r#"{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#.into(),
        "[DONE]".into(),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let stream = sse(&events);
    let r = same_at_every_split(Wire::OpenAi, &stream);
    assert_eq!(whole(Wire::OpenAi, &stream).0, "ab\nécdef");
    assert_eq!(r.stop_reason, "length");
    assert!(r.declined.unwrap().ends_with(": no"));
    assert_eq!((r.input_tokens, r.output_tokens), (3, 4));
    // A hole that is no JSON string is no text: the event is not JSON.
    let broken = sse(&[
        &chunk(r#""a""#, "null", r#""xy""#),
        &chunk(r#""b\x""#, "null", r#""xy""#),
    ]);
    let (printed, r) = whole(Wire::OpenAi, &broken);
    assert_eq!(printed, "a");
    assert!(matches!(r, Err(StreamError::Invalid(e)) if e.contains("not JSON")));
}

#[test]
fn anthropic_text_deltas_print_only_for_text_blocks_that_began() {
    let stream = format!(
        "{}{}",
        r#"data: {"type":"message_start","message":{"content":[],"usage":{"input_tokens":2}}}

data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hidden"}}

data: {"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"orphan"}}

data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

"#,
        sse(&[
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"sh\u00f6wn"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","text":"no","citation":{"cited_text":"c"}}}"#,
            r#"{"type":"message_delta","index":1,"delta":{"type":"text_delta","text":"no","stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ])
    );
    let (printed, r) = whole(Wire::Anthropic, &stream);
    let r = r.unwrap();
    assert_eq!(printed, "shöwn");
    assert_eq!(r.content, "shöwn");
    assert_eq!(r.stop_reason, "end_turn");
    assert_eq!((r.input_tokens, r.output_tokens), (2, 5));
}

#[test]
fn ollama_text_lines_that_end_call_or_fail_are_read_whole() {
    let lines = [
        r#"{"message":{"role":"assistant","content":"a"},"done":false}"#,
        r#"{"message":{"role":"assistant","content":"b","tool_calls":[{"function":{"name":"f","arguments":{}}}]},"done":false}"#,
        r#"{"message":{"role":"assistant","content":"c"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}"#,
        r#"{"message":{"role":"assistant","content":"after"},"done":false}"#,
    ];
    let (printed, r) = whole(Wire::Ollama, &format!("{}\n", lines.join("\n")));
    let r = r.unwrap();
    assert_eq!(printed, "abc");
    assert_eq!(r.content, "abc");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!((r.input_tokens, r.output_tokens), (3, 4));
    let error = "{\"message\":{\"content\":\"x\"},\"error\":\"boom\"}\n";
    assert!(matches!(
        whole(Wire::Ollama, error).1,
        Err(StreamError::Failed(_))
    ));
}

/// Anthropic's text deltas, Ollama's lines and the Responses API's text
/// deltas of one shape (`shape.rs`), some with a field that changes every
/// event (the time, the sequence number), give their text; one like them
/// but of another block, done, or of another type, is read in full.
#[test]
fn text_events_of_one_shape_mean_what_each_means_alone_on_every_wire() {
    let delta = |index: u32, text: &str| {
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}"#
        )
    };
    let start = |index: u32, kind: &str| {
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"{kind}","{kind}":""}}}}"#
        )
    };
    let events = [
        r#"{"type":"message_start","message":{"id":"m1","model":"c","content":[],"usage":{"input_tokens":2}}}"#.to_string(),
        start(0, "text"),
        delta(0, "a"),
        delta(0, r"b\n"),
        start(1, "thinking"),
        delta(1, "hidden"),
        delta(0, "c"),
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#.into(),
        r#"{"type":"message_stop"}"#.into(),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let r = same_at_every_split(Wire::Anthropic, &sse(&events));
    assert_eq!(whole(Wire::Anthropic, &sse(&events)).0, "ab\nc");
    assert_eq!(r.content, "ab\nc");

    let line = |at: &str, content: &str, done: &str| {
        format!(
            r#"{{"model":"m","created_at":"{at}","message":{{"role":"assistant","content":"{content}"}},"done":{done}}}"#
        )
    };
    let lines = [
        line("2025-01-01T00:00:00.1Z", "a", "false"),
        line("2025-01-01T00:00:00.22Z", r"b\n", "false"),
        line("2025-01-01T00:00:00.333Z", "c", "false"),
        line("2025-01-01T00:00:00.4Z", "d", "true"),
        line("2025-01-01T00:00:00.5Z", "after", "false"),
    ];
    let (printed, r) = whole(Wire::Ollama, &format!("{}\n", lines.join("\n")));
    assert_eq!(printed, "ab\ncd");
    assert_eq!(r.unwrap().content, "ab\ncd");

    let delta = |seq: u32, kind: &str, text: &str| {
        format!(
            r#"{{"type":"response.{kind}.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"{text}","sequence_number":{seq},"obfuscation":"o{seq}"}}"#
        )
    };
    let completed = r#"{"type":"response.completed","response":{"id":"r","model":"m","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi there\n"}]}],"usage":{"input_tokens":1,"output_tokens":2}}}"#;
    let events = [
        delta(1, "output_text", "Hi"),
        delta(2, "output_text", " there"),
        delta(10, "reasoning_text", "hidden"),
        delta(11, "output_text", r"\n"),
        completed.to_string(),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let stream = sse(&events);
    let (printed, r) = whole(Wire::Responses, &stream);
    assert_eq!(printed, "Hi there\n");
    assert_eq!(r.unwrap().content, "Hi there\n");
    let cut = sse(&[
        &delta(1, "output_text", "a"),
        &delta(2, "output_text", "b\\"),
    ]);
    assert!(matches!(
        whole(Wire::Responses, &cut).1,
        Err(StreamError::Invalid(_))
    ));
}
