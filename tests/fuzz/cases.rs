//! What the HTTP fuzzer serves: a realistic response for a wire, its head and body mutated,
//! framed by content-length or chunked coding, valid or not.

use super::hints::hint_seeds;
use super::http::{Answer, DEADLINE, HOLD_DEADLINE, KEY};
use super::*;

/// Fragments that make a response head interesting.
pub(crate) const HEAD_TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b":",
    b" ",
    b"\t",
    b"\r\n ",
    b"\0",
    b"\xff",
    b"\xc3\xa9",
    b"HTTP/1.1 ",
    b"200",
    b"429",
    b"503",
    b"chunked",
    b"content-length: ",
    b"transfer-encoding: chunked\r\n",
    b"retry-after: ",
    b"retry-after-ms: ",
    b"x-should-retry: true\r\n",
    b"connection: keep-alive\r\n",
    b"0\r\n\r\n",
    b"\r\n\r\n",
    b"99999999999999999999",
    b"1e30",
];

/// One mutant of `input` as bytes: 1 to 4 edits (any byte set, delete,
/// insert a token, duplicate a slice, truncate).
pub(crate) fn mutate_bytes(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut s = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(s.len() + 1);
        match rng.below(5) {
            0 if i < s.len() => s[i] = rng.next() as u8,
            1 => {
                let end = (i + 1 + rng.below(16)).min(s.len());
                s.drain(i.min(end)..end);
            }
            2 => {
                let token = *rng.pick(HEAD_TOKENS);
                s.splice(i..i, token.iter().copied());
            }
            3 => {
                let j = rng.below(s.len() + 1);
                let piece = s[i.min(j)..i.max(j)].to_vec();
                let at = rng.below(s.len() + 1);
                s.splice(at..at, piece);
            }
            _ => s.truncate(i),
        }
    }
    s
}

/// What a case is made from, drawn once per run.
pub(crate) struct Pools {
    /// Response bodies per [`Wire`] (in `Wire::ALL` order): fixtures, the
    /// documented shapes, error bodies of every provider, HTML, nothing.
    pub(crate) bodies: [Vec<String>; 3],
    /// `Retry-After` and `retry-after-ms` values.
    pub(crate) hints: Vec<String>,
}

pub(crate) fn pools() -> Pools {
    let errors = {
        let mut e = fixtures("openai_error");
        e.extend(
            [
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
                r#"{"error":"model 'llama3.1' not found, try pulling it first"}"#,
                r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#,
                r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}"#,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"temperature: not supported for this model"}}"#,
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
                "upstream connect error or disconnect/reset before headers",
                "",
            ]
            .map(String::from),
        );
        // An error that echoes the key: it must come back redacted.
        e.push(format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
        ));
        e
    };
    let answers = [
        r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"fine"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"fine","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
        r#"{"model":"llama3.1","created_at":"2026-11-23T10:00:00.000000Z","message":{"role":"assistant","content":"fine"},"done_reason":"stop","done":true,"prompt_eval_count":1,"eval_count":1}"#,
    ];
    let bodies = [("anthropic_", 0), ("openai_", 1), ("ollama_", 2)].map(|(prefix, i)| {
        let mut b = fixtures(prefix);
        // The plain answer weighs as much as all the fixtures together.
        for _ in 0..b.len() {
            b.push(answers[i].to_string());
        }
        b.extend(errors.iter().cloned());
        b
    });
    Pools {
        bodies,
        hints: hint_seeds(),
    }
}

pub(crate) const STATUSES: &[u16] = &[
    200, 200, 200, 200, 201, 204, 206, 299, 100, 101, 103, 199, 300, 301, 302, 304, 307, 308, 399,
    400, 400, 401, 403, 404, 408, 409, 413, 422, 429, 429, 429, 499, 500, 500, 502, 503, 503, 504,
    529, 529, 599, 600, 999, 0,
];

pub(crate) const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "text/html",
    "text/plain",
    "text/event-stream",
    "application/x-ndjson",
    "",
    "application/json; charset=latin1",
];

/// One case: a response for `kind` and how the server serves it.
pub(crate) struct Case {
    pub(crate) answer: Answer,
    pub(crate) deadline: Duration,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<u32>,
}

/// The headers of a case after the retry hints, drawn in that order:
/// `x-should-retry`, `location`, `connection` and now and then an odd one.
fn other_headers(rng: &mut Rng, headers: &mut Vec<(String, String)>) {
    if rng.one_in(4) {
        let v = ["true", "false", " true", "TRUE", "1", "", "true, false"];
        headers.push(("x-should-retry".into(), rng.pick(&v).to_string()));
    }
    if rng.one_in(8) {
        let v = [
            "https://api.example.com/v1/messages",
            "/login",
            "",
            "http://user:pw@127.0.0.1:1/x",
            "\u{e9}",
        ];
        headers.push(("location".into(), rng.pick(&v).to_string()));
    }
    match rng.below(16) {
        0 => headers.push(("connection".into(), "keep-alive".into())),
        1 => {}
        _ => headers.push(("connection".into(), "close".into())),
    }
    if rng.one_in(16) {
        match rng.below(6) {
            0 => headers.push(("x-long".into(), "a".repeat(40 * 1024))),
            1 => headers.push(("x-folded".into(), "a\r\n b".into())),
            2 => headers.push(("no colon here".into(), String::new())),
            3 => headers.push((String::new(), "empty name".into())),
            4 => headers.push(("x-many".into(), "1, 2, 3".repeat(2000))),
            _ => {
                // Many headers.
                for i in 0..rng.below(200) {
                    headers.push((format!("x-h{i}"), i.to_string()));
                }
            }
        }
    }
}

pub(crate) fn http_case(rng: &mut Rng, kind: Wire, pools: &Pools) -> Case {
    let status = if rng.one_in(2) {
        200
    } else {
        *rng.pick(STATUSES)
    };
    let mut head = match rng.below(48) {
        0 => format!("HTTP/1.0 {status} Whatever\r\n"),
        1 => format!("HTTP/1.1 {status}\r\n"),
        2 => format!("HTTP/1.1 {status} \r\n"),
        3 => format!("HTTP/1.1 {status:04} OK\r\n"),
        4 => format!("http/1.1 {status} OK\r\n"),
        5 => format!("HTTP/2 {status}\r\n"),
        _ => format!("HTTP/1.1 {status} Reason\r\n"),
    };
    if rng.one_in(32) {
        head.insert_str(0, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    let mut headers: Vec<(String, String)> = Vec::new();

    // The body, then how it is framed.
    let seed = rng.pick(&pools.bodies[Wire::ALL.iter().position(|k| *k == kind).unwrap_or(0)]);
    let body = if rng.one_in(3) {
        mutate(rng, seed).into_bytes()
    } else {
        seed.clone().into_bytes()
    };
    let body = frame(rng, body, &mut headers);

    if !rng.one_in(8) {
        headers.push(("content-type".into(), rng.pick(CONTENT_TYPES).to_string()));
    }
    // The retry hints. A pair that would make the client really sleep (more
    // than 5 ms, less than the deadline) is kept one time in 1024 only: the
    // parsers are fuzzed above, and sleeping would take the run's time.
    let hint = |rng: &mut Rng, odds: usize| -> Option<String> {
        if !rng.one_in(odds) {
            return None;
        }
        let v = rng.pick(&pools.hints).clone();
        Some(if rng.one_in(2) {
            mutate_with(rng, &v, HEADER_TOKENS)
        } else {
            v
        })
    };
    let after = hint(rng, 2);
    let after_ms = hint(rng, 4);
    // (A hint that makes retry_hint panic is kept: the call will find it.)
    let wait =
        catch_unwind(|| retry_hint(after_ms.as_deref(), after.as_deref(), SystemTime::now()));
    let sleeps =
        wait.is_ok_and(|w| w.is_some_and(|w| w > Duration::from_millis(5) && w < DEADLINE));
    if !sleeps || rng.one_in(1024) {
        let name = |rng: &mut Rng, n: &str| match rng.below(8) {
            0 => n.to_ascii_uppercase(),
            1 => n[..1].to_ascii_uppercase() + &n[1..],
            _ => n.to_string(),
        };
        if let Some(v) = after {
            headers.push((name(rng, "retry-after"), v));
        }
        if let Some(v) = after_ms {
            headers.push((name(rng, "retry-after-ms"), v));
        }
    }
    other_headers(rng, &mut headers);
    // Shuffle the headers (Fisher-Yates).
    for i in (1..headers.len()).rev() {
        headers.swap(i, rng.below(i + 1));
    }
    for (name, value) in &headers {
        if name.is_empty() || value.is_empty() && name.contains(' ') {
            head.push_str(&format!("{name}{value}\r\n"));
        } else {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("\r\n");
    let head = if rng.one_in(8) {
        mutate_bytes(rng, head.as_bytes())
    } else {
        head.into_bytes()
    };
    let hold = rng.one_in(512);
    let mut bytes = head;
    bytes.extend_from_slice(&body);
    Case {
        answer: Answer {
            bytes,
            pieces: if rng.one_in(16) { 2 + rng.below(4) } else { 1 },
            hold,
        },
        deadline: if hold { HOLD_DEADLINE } else { DEADLINE },
        temperature: rng.one_in(2).then_some(0.5),
        max_tokens: rng.one_in(2).then_some(64),
    }
}

/// Frames `body`: an exact content-length mostly, else a wrong, missing,
/// duplicated or unparsable one, or chunked transfer coding, valid or not.
pub(crate) fn frame(rng: &mut Rng, body: Vec<u8>, headers: &mut Vec<(String, String)>) -> Vec<u8> {
    let len = body.len();
    let mut length = |v: String| headers.push(("content-length".into(), v));
    match rng.below(16) {
        0..=7 => length(len.to_string()),
        8 => length((len + 1 + rng.below(1024)).to_string()),
        9 => length(len.saturating_sub(1 + rng.below(64)).to_string()),
        10 => {
            let v = [
                "99999999999999999999",
                "18446744073709551615",
                "18446744073709551616",
                "-1",
                "abc",
                "+5",
                "0x10",
                "1e3",
                "",
            ];
            length(rng.pick(&v).to_string());
        }
        11 => {
            length(len.to_string());
            length((len + rng.below(3)).to_string());
        }
        12 => {}
        _ => {
            headers.push((
                "transfer-encoding".into(),
                rng.pick(&[
                    "chunked",
                    "chunked",
                    "Chunked",
                    "gzip, chunked",
                    "identity",
                    "chunked, chunked",
                ])
                .to_string(),
            ));
            if rng.one_in(8) {
                headers.push(("content-length".into(), len.to_string()));
            }
            return chunked(rng, &body);
        }
    }
    body
}

/// `body` in chunked transfer coding: random chunk sizes, sometimes upper
/// case hex, extensions and trailers; one time in four a size, the end or
/// a line ending is wrong.
pub(crate) fn chunked(rng: &mut Rng, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    let broken = rng.one_in(4);
    while !rest.is_empty() {
        let n = (1 + rng.below(512)).min(rest.len());
        let size = match rng.below(if broken { 8 } else { 64 }) {
            0 if broken => "ffffffffffffffffffff".to_string(),
            1 if broken => format!("{:x}", n + 1 + rng.below(100)),
            2 if broken => "-1".to_string(),
            3 => format!("{n:X}"),
            4 => format!("{n:x};name=value"),
            5 => format!("{n:08x}"),
            _ => format!("{n:x}"),
        };
        out.extend_from_slice(size.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(if broken && rng.one_in(8) {
            b"\n"
        } else {
            b"\r\n"
        });
        rest = &rest[n..];
    }
    match rng.below(if broken { 3 } else { 8 }) {
        0 if broken => {}
        1 if broken => out.extend_from_slice(b"0\r\n"),
        2 => out.extend_from_slice(b"0\r\nx-should-retry: true\r\nretry-after: 1e30\r\n\r\n"),
        _ => out.extend_from_slice(b"0\r\n\r\n"),
    }
    out
}
