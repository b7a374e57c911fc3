//! Amazon Bedrock's streamed answers through the binary (design §4.13):
//! `converse-stream`'s binary event-stream messages, framed here (with a
//! CRC32 of the test's own), from a loopback fake: text printed as it
//! comes (a byte per write, and held mid-stream), a tool use assembled
//! from its pieces, the usage from `metadata`; a bad CRC, a declared
//! length over the cap, exceptions (retried or not by their type), and
//! streams cut short are each an error, never a hang or a panic.

use super::*;
use serde_json::{Value, json};
use std::io::Read;
use std::time::{Duration, Instant};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const TYPE: &str = "application/vnd.amazon.eventstream";

/// `axe` with AWS's keys, its region and the fake's URL.
fn axe(home: &Home, server: &FakeServer) -> Command {
    let mut cmd = home.axe();
    cmd.env("AWS_ACCESS_KEY_ID", "AKIDTESTSTREAM0001")
        .env("AWS_SECRET_ACCESS_KEY", "stream-secret-0123456789abcdef")
        .env("AWS_REGION", "us-west-2")
        .env("AXE_BEDROCK_BASE_URL", &server.url);
    cmd
}

fn home_with(extra: &str) -> Home {
    let home = Home::fast_retries();
    home.named_agent(
        "a",
        &format!("bedrock/{MODEL}"),
        &format!("stream = true\n{extra}"),
    );
    home
}

/// The CRC-32 of zlib, bit by bit (the binary's is table-driven).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One event-stream message of string headers and a payload.
fn message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = (16 + h.len() + payload.len()) as u32;
    let mut m = total.to_be_bytes().to_vec();
    m.extend_from_slice(&(h.len() as u32).to_be_bytes());
    m.extend_from_slice(&crc32(&m).to_be_bytes());
    m.extend_from_slice(&h);
    m.extend_from_slice(payload);
    m.extend_from_slice(&crc32(&m).to_be_bytes());
    m
}

/// An event as Bedrock sends one: its type, JSON payload (with the `p`
/// padding Bedrock adds).
pub(crate) fn event(kind: &str, mut payload: Value) -> Vec<u8> {
    payload["p"] = json!("abcdefghij");
    message(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, text: &str) -> Vec<u8> {
    message(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({"message": text}).to_string().as_bytes(),
    )
}

fn text_delta(index: u64, text: &str) -> Vec<u8> {
    event(
        "contentBlockDelta",
        json!({"contentBlockIndex": index, "delta": {"text": text}}),
    )
}

/// `messageStop` with `reason`, then `metadata` with the usage.
pub(crate) fn ending(reason: &str, input: u64, output: u64) -> Vec<u8> {
    let mut out = event("messageStop", json!({"stopReason": reason}));
    out.extend(event(
        "metadata",
        json!({"usage": {"inputTokens": input, "outputTokens": output,
            "totalTokens": input + output}, "metrics": {"latencyMs": 90}}),
    ));
    out
}

/// A whole streamed answer of `pieces` of text.
fn text_stream(pieces: &[&str], input: u64, output: u64) -> Vec<u8> {
    let mut out = event("messageStart", json!({"role": "assistant"}));
    for p in pieces {
        out.extend(text_delta(0, p));
    }
    out.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    out.extend(ending("end_turn", input, output));
    out
}

pub(crate) fn streamed(steps: Vec<Step>) -> Reply {
    Reply::Stream {
        content_type: TYPE.into(),
        steps,
    }
}

pub(crate) fn bytes(b: &[u8], piece: usize) -> Step {
    Step::Bytes {
        bytes: b.to_vec(),
        piece,
    }
}

#[test]
fn text_is_read_from_converse_stream_a_byte_per_write_with_its_usage() {
    let body = text_stream(&["Héllo, ", "wörld ✓"], 11, 7);
    let server = FakeServer::start(vec![
        streamed(vec![bytes(&body, 1)]),
        streamed(vec![bytes(&body, 5)]),
    ]);
    let home = home_with("");
    let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "Héllo, wörld ✓\n");
    let b = run_bounded(
        axe(&home, &server).args(["run", "a", "-p", "hi", "--json"]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let v: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    assert_eq!(v["content"], "Héllo, wörld ✓", "{v}");
    assert_eq!(
        (v["input_tokens"].as_u64(), v["output_tokens"].as_u64()),
        (Some(11), Some(7))
    );
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!(req.header("accept"), Some(TYPE));
    assert!(
        req.header("authorization")
            .unwrap()
            .contains("/us-west-2/bedrock/")
    );
    // The same body as `converse`'s: the endpoint says it is a stream.
    assert!(req.json().get("stream").is_none(), "{}", req.body);
}

#[test]
fn the_first_words_reach_stdout_before_the_stream_ends() {
    let dir = TempDir::new("bedrock-go");
    let go = dir.path().join("go");
    let mut first = event("messageStart", json!({"role": "assistant"}));
    first.extend(text_delta(0, "First words."));
    let mut rest = text_delta(0, " The rest.");
    rest.extend(ending("end_turn", 5, 2));
    let server = FakeServer::start(vec![streamed(vec![
        bytes(&first, 7),
        Step::WaitFor(go.clone()),
        bytes(&rest, 7),
    ])]);
    let home = home_with("");
    let mut child = axe(&home, &server)
        .args(["run", "a", "-p", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let started = Instant::now();
    let (mut seen, mut buf) = (Vec::new(), [0u8; 256]);
    // Held by the server until `go` exists: the text must come first.
    while !String::from_utf8_lossy(&seen).contains("First words.") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nothing printed yet"
        );
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "stdout closed with {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    fs::write(&go, "").unwrap();
    out.read_to_end(&mut seen).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(String::from_utf8_lossy(&seen), "First words. The rest.\n");
}

#[test]
fn a_tool_use_is_assembled_from_its_pieces_and_goes_round() {
    let mut call = event("messageStart", json!({"role": "assistant"}));
    call.extend(text_delta(0, "Let me check."));
    call.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    call.extend(event(
        "contentBlockStart",
        json!({"contentBlockIndex": 1, "start": {"toolUse":
            {"toolUseId": "tooluse_s1", "name": "read_file"}}}),
    ));
    for piece in ["{\"pa", "th\": \"notes", ".txt\"}"] {
        call.extend(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": piece}}}),
        ));
    }
    call.extend(event("contentBlockStop", json!({"contentBlockIndex": 1})));
    call.extend(ending("tool_use", 20, 9));
    let server = FakeServer::start(vec![
        streamed(vec![bytes(&call, 3)]),
        streamed(vec![bytes(
            &text_stream(&["the notes ", "say hi"], 40, 6),
            3,
        )]),
    ]);
    let home = Home::fast_retries();
    let work = home.dir.path().join("w");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("notes.txt"), "hi there\n").unwrap();
    home.named_agent(
        "a",
        &format!("bedrock/{MODEL}"),
        &format!(
            "stream = true\ntools = [\"read_file\"]\nworkdir = {:?}\n",
            work.to_str().unwrap()
        ),
    );
    let b = run_bounded(
        axe(&home, &server).args(["run", "a", "-p", "read", "--json"]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let v: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    assert_eq!(v["content"], "the notes say hi", "{v}");
    assert_eq!(v["input_tokens"], 60, "{v}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let second = reqs[1].json();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1]["content"],
        json!([{"text": "Let me check."}, {"toolUse": {"toolUseId": "tooluse_s1",
            "name": "read_file", "input": {"path": "notes.txt"}}}])
    );
    let result = &msgs[2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_s1");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi there"),
        "{result}"
    );
}

#[test]
fn a_bad_crc_is_an_invalid_response_and_a_long_frame_is_refused_at_once() {
    let mut body = text_stream(&["never shown"], 1, 1);
    // The last byte of the first message's CRC.
    let first = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
    body[first - 1] ^= 0xff;
    let server = FakeServer::start(vec![streamed(vec![bytes(&body, 64)])]);
    let home = home_with("");
    let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert!(
        stderr(&b.output).contains("CRC does not match"),
        "{}",
        stderr(&b.output)
    );
    assert_eq!(stdout(&b.output), "");
    // A prelude declaring 1 GiB, then bytes forever: refused on the
    // prelude, not buffered or waited for.
    let mut prelude = (1u32 << 30).to_be_bytes().to_vec();
    prelude.extend_from_slice(&0u32.to_be_bytes());
    prelude.extend_from_slice(&crc32(&prelude).to_be_bytes());
    let server = FakeServer::start(vec![streamed(vec![
        bytes(&prelude, 12),
        Step::Forever("xxxxxxxx".into()),
    ])]);
    let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert!(
        stderr(&b.output).contains("event-stream message of 1073741824 bytes"),
        "{}",
        stderr(&b.output)
    );
    assert!(b.took < Duration::from_secs(10), "{:?}", b.took);
}

#[test]
fn a_throttling_exception_is_retried_and_a_validation_exception_is_not() {
    let mut throttled = event("messageStart", json!({"role": "assistant"}));
    throttled.extend(exception(
        "throttlingException",
        "Too many tokens, please wait.",
    ));
    let server = FakeServer::start(vec![
        streamed(vec![bytes(&throttled, 64)]),
        streamed(vec![bytes(&text_stream(&["after the wait"], 1, 1), 64)]),
    ]);
    let home = home_with("");
    let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "after the wait\n");
    assert_eq!(server.requests().len(), 2);
    let invalid = exception("validationException", "The model returned an invalid tool.");
    let server = FakeServer::start(vec![streamed(vec![bytes(&invalid, 64)])]);
    let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
    assert_eq!(code(&b.output), 1, "{}", stderr(&b.output));
    let err = stderr(&b.output);
    assert!(
        err.contains(
            "bad request (an error event in the stream): The model returned an invalid tool."
        ),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_stream_cut_in_a_message_or_before_its_metadata_is_not_an_answer() {
    let whole = text_stream(&["cut"], 1, 1);
    let metadata_at = whole.len()
        - event(
            "metadata",
            json!({"usage": {"inputTokens": 1,
        "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 90}}),
        )
        .len();
    for (end, says) in [
        (
            whole.len() - 5,
            "the stream ended in the middle of an event-stream message",
        ),
        (metadata_at, "the stream ended before its metadata"),
    ] {
        let server = FakeServer::start(vec![streamed(vec![bytes(&whole[..end], 64)])]);
        let home = home_with("");
        let b = run_bounded(axe(&home, &server).args(["run", "a", "-p", "hi"]), HUNG);
        assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
        assert!(stderr(&b.output).contains(says), "{}", stderr(&b.output));
        // The text already printed stays; the failure is final.
        assert_eq!(stdout(&b.output), "cut\n");
        assert_eq!(server.requests().len(), 1);
    }
}
