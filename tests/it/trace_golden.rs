//! The trace's exact bytes (design §7.2), held still while the code that
//! writes it moves: one fixed run through the real binary against a fake
//! provider — a lead delegating, one call after another, to sub-agents that
//! are retried, adjusted, refused, denied, paused, repaired, out of repairs
//! and out of budget — is compared line by line, field by field, with
//! `tests/golden/`, only the clock (`ts`, `duration_ms`, `delay_ms`), the
//! run id, the server's port and the temp directory masked. Once with the
//! messages (`--trace-bodies`), once without.
//!
//! And the ways a conversation ends without an answer each leave the same
//! `error` event, the turn limit included.
//!
//! `AXE_BLESS_GOLDEN=1 cargo test --test it trace_golden` rewrites the golden
//! files from the binary: only for a change to the trace that is meant.

use crate::common::*;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

const OPENAI_KEY: &str = "sk-test-golden-openai-0123456789";
const ANTHROPIC_KEY: &str = "sk-ant-test-golden-0123456789";

const OPENAI: &str = "openai/gpt-4o";
const ANTHROPIC: &str = "anthropic/claude-sonnet-4-5";

/// What every agent with an output schema here promises.
const SCHEMA: &str = "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }\n";

/// The sub-agents `lead` calls, in call order, each once.
const SUBS: [&str; 8] = [
    "worker", "broken", "refuser", "shaper", "stubborn", "budgeted", "warm", "pauser",
];

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The agents of the golden run.
fn agents(home: &Home) {
    let subs = SUBS.map(|s| format!("\"{s}\"")).join(", ");
    home.named_agent(
        "lead",
        OPENAI,
        &format!("sub_agents = [{subs}]\n[sub_agents_config]\nparallel = false\n"),
    );
    // Retries in milliseconds, not the default half second.
    home.named_agent(
        "worker",
        OPENAI,
        "[retry]\ninitial_delay_ms = 1\nmax_delay_ms = 2\n",
    );
    home.named_agent("broken", ANTHROPIC, "");
    home.named_agent("refuser", OPENAI, "");
    home.named_agent("shaper", ANTHROPIC, SCHEMA);
    home.named_agent("stubborn", OPENAI, &format!("{SCHEMA}max_repairs = 0\n"));
    home.named_agent(
        "budgeted",
        OPENAI,
        "sub_agents = [\"worker\"]\n[budget]\nmax_turns = 1\n",
    );
    home.named_agent("warm", OPENAI, "[params]\ntemperature = 0.3\n");
    home.named_agent("pauser", ANTHROPIC, "");
}

/// An OpenAI answer that refuses.
fn openai_refusal() -> String {
    let mut v: Value = serde_json::from_str(&openai_text("", 4, 1)).unwrap();
    v["choices"][0]["message"]["content"] = Value::Null;
    v["choices"][0]["message"]["refusal"] = "I can't help with that.".into();
    v.to_string()
}

/// An Anthropic turn the server paused.
fn anthropic_paused() -> String {
    json!({
        "id": "msg_paused",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Looking. "},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "axe"}}
        ],
        "stop_reason": "pause_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 6, "output_tokens": 2}
    })
    .to_string()
}

/// The provider of the golden run: each agent's script, by how many
/// requests that agent has sent.
fn server() -> FakeServer {
    let sent: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    FakeServer::route(move |req| {
        let who = req.who();
        let n = {
            let mut sent = sent.lock().unwrap();
            let n = sent.entry(who.clone()).or_insert(0);
            *n += 1;
            *n
        };
        match (who.as_str(), n) {
            ("lead", 1) => {
                let calls: Vec<(String, Value)> = SUBS
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (format!("call_{i}"), delegate(s, &format!("job for {s}"))))
                    .collect();
                let calls: Vec<Call> = calls
                    .iter()
                    .map(|(id, args)| (id.as_str(), "call_agent", args.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 30, 12))
            }
            ("lead", _) => Reply::Json(200, openai_text("All eight reported.", 90, 7)),
            ("worker", 1) => Reply::Json(
                503,
                json!({"error": {"message": "overloaded", "type": "server_error"}}).to_string(),
            ),
            ("worker", _) => Reply::Json(200, openai_text("worked", 8, 3)),
            ("broken", _) => Reply::Json(
                401,
                json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}).to_string(),
            ),
            ("refuser", _) => Reply::Json(200, openai_refusal()),
            ("shaper", 1) => Reply::Json(200, anthropic_text("n is one", 7, 3)),
            ("shaper", _) => Reply::Json(200, anthropic_text("{\"n\": 1}", 15, 4)),
            ("stubborn", _) => Reply::Json(200, openai_text("{\"n\": \"one\"}", 7, 5)),
            ("budgeted", _) => Reply::Json(
                200,
                openai_tool_calls(&[("call_g", "ghost", json!({"q": "boo"}))], 9, 4),
            ),
            ("warm", 1) => Reply::Json(
                400,
                json!({"error": {"message": "Unsupported value: 'temperature' does not support 0.3 with this model. Only the default (1) value is supported.", "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}).to_string(),
            ),
            ("warm", _) => Reply::Json(200, openai_text("warm enough", 5, 2)),
            ("pauser", 1) => Reply::Json(200, anthropic_paused()),
            ("pauser", _) => Reply::Json(200, anthropic_text("Found it.", 11, 3)),
            _ => Reply::Json(500, "{}".into()),
        }
    })
}

/// Runs the golden run, `extra` added to its arguments; the trace's text.
fn golden_run(extra: &[&str]) -> String {
    let home = Home::new();
    agents(&home);
    let server = server();
    let trace = home.dir.path().join("trace.jsonl");
    let mut args = vec!["run", "lead", "--trace", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let b = run_within(
        home.axe()
            .env("AXE_OPENAI_BASE_URL", &server.url)
            .env("AXE_ANTHROPIC_BASE_URL", &server.url)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .args(&args),
        Duration::from_secs(60),
    );
    assert!(!b.killed, "the golden run hung");
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "All eight reported.\n");
    let text = std::fs::read_to_string(&trace).expect("the trace is written");
    let home_dir = home.dir.path().to_str().unwrap().to_string();
    mask(
        &text
            .replace(&server.url, "http://SERVER")
            .replace(&home_dir, "HOME"),
    )
}

/// `text` with every `"key":<value>` of `key` written `"key":<with>`. Keys
/// inside a string value are escaped (`\"key\":`), so only fields match.
fn mask_field(text: &str, key: &str, with: &str) -> String {
    let needle = format!("\"{key}\":");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        let value_at = at + needle.len();
        out.push_str(&rest[..value_at]);
        out.push_str(with);
        let value = &rest[value_at..];
        let len = if let Some(s) = value.strip_prefix('"') {
            s.find('"').map_or(value.len(), |end| end + 2)
        } else {
            value
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                .unwrap_or(value.len())
        };
        rest = &value[len..];
    }
    out.push_str(rest);
    out
}

/// The trace with the clock and the run id masked.
fn mask(text: &str) -> String {
    let text = mask_field(text, "ts", "\"TS\"");
    let text = mask_field(&text, "run_id", "\"RUN\"");
    let text = mask_field(&text, "duration_ms", "0");
    mask_field(&text, "delay_ms", "0")
}

/// Compares `got` with the golden file `name`: the same number of lines,
/// each the same event with the same fields, then the same bytes.
fn compare(name: &str, got: &str) {
    let path = golden(name);
    if std::env::var_os("AXE_BLESS_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let (want_lines, got_lines): (Vec<&str>, Vec<&str>) =
        (want.lines().collect(), got.lines().collect());
    for (i, (w, g)) in want_lines.iter().zip(&got_lines).enumerate() {
        let w: Value = serde_json::from_str(w).unwrap();
        let g: Value = serde_json::from_str(g).unwrap_or_else(|e| panic!("line {i}: {e}: {g}"));
        let (w, g) = (w.as_object().unwrap(), g.as_object().unwrap());
        for (key, value) in w {
            assert_eq!(
                g.get(key),
                Some(value),
                "{name} line {}: field {key:?} of {}",
                i + 1,
                w["event"]
            );
        }
        let extra: Vec<&String> = g.keys().filter(|k| !w.contains_key(*k)).collect();
        assert!(
            extra.is_empty(),
            "{name} line {}: new fields {extra:?}",
            i + 1
        );
    }
    assert_eq!(
        got_lines.len(),
        want_lines.len(),
        "{name}: the number of lines\n{got}"
    );
    // Field order and number formatting too.
    for (i, (w, g)) in want_lines.iter().zip(&got_lines).enumerate() {
        assert_eq!(g, w, "{name} line {}: the bytes", i + 1);
    }
    assert!(got.ends_with('\n'));
}

#[test]
fn the_trace_of_the_golden_run_is_unchanged() {
    let got = golden_run(&[]);
    // What the run is for: every kind of event, from every kind of exit.
    for event in [
        "run_start",
        "request",
        "response",
        "tool_call",
        "tool_result",
        "retry",
        "repair",
        "error",
        "run_end",
    ] {
        assert!(
            got.contains(&format!("\"event\":\"{event}\"")),
            "no {event}"
        );
    }
    for kind in ["Auth", "refusal", "output", "budget"] {
        assert!(got.contains(&format!("\"kind\":\"{kind}\"")), "no {kind}");
    }
    compare("trace.jsonl", &got);
}

#[test]
fn the_trace_of_the_golden_run_with_bodies_is_unchanged() {
    let got = golden_run(&["--trace-bodies"]);
    assert!(got.contains("\"body\":{"));
    assert!(got.contains("\"calls\":[{"));
    compare("trace_bodies.jsonl", &got);
}

// ---------------------------------------------------------------------------
// Every way out of the loop leaves an `error` event.
// ---------------------------------------------------------------------------

/// Runs `lead` against `server` with a trace; its exit code, stderr and
/// the trace's events.
fn traced_run(home: &Home, server: &FakeServer) -> (i32, String, Vec<Value>) {
    let trace = home.dir.path().join("exit.jsonl");
    let b = run_within(
        home.axe()
            .env("AXE_OPENAI_BASE_URL", &server.url)
            .env("AXE_ANTHROPIC_BASE_URL", &server.url)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .args(["run", "lead", "--trace", trace.to_str().unwrap()]),
        Duration::from_secs(120),
    );
    assert!(!b.killed, "the run hung");
    let events = std::fs::read_to_string(&trace)
        .expect("the trace is written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (code(&b.output), stderr(&b.output), events)
}

/// The lead's last two events: an `error` on turn 50 for the turn limit,
/// then its `run_end` with the same error.
#[track_caller]
fn assert_turn_limit_traced(code: i32, stderr: &str, events: &[Value]) {
    const LIMIT: &str = "agent exceeded maximum conversation turns (50)";
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr, format!("axe: {LIMIT}\n"));
    let lead: Vec<&Value> = events.iter().filter(|e| e["path"] == "lead").collect();
    let [.., error, end] = lead.as_slice() else {
        panic!("too few events: {events:?}")
    };
    assert_eq!(error["event"], "error", "{error}");
    assert_eq!(error["turn"], 50);
    assert_eq!(error["kind"], "turns");
    assert_eq!(error["error"], LIMIT);
    assert_eq!(error.as_object().unwrap().len(), 9, "{error}");
    assert_eq!(end["event"], "run_end");
    assert_eq!(end["ok"], false);
    assert_eq!(end["error"], LIMIT);
    let errors = events.iter().filter(|e| e["event"] == "error").count();
    assert_eq!(errors, 1, "one error event, the lead's");
}

#[test]
fn the_turn_limit_with_calls_pending_leaves_an_error_event() {
    let home = Home::new();
    home.named_agent("lead", OPENAI, "sub_agents = [\"a\"]\n");
    home.named_agent("a", OPENAI, "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("call_1", "call_agent", delegate("a", "x"))], 1, 1),
        ),
        _ => Reply::Json(200, openai_text("sure", 1, 1)),
    });
    let (code, stderr, events) = traced_run(&home, &server);
    assert_turn_limit_traced(code, &stderr, &events);
}

#[test]
fn the_turn_limit_reached_by_a_paused_turn_leaves_an_error_event() {
    let home = Home::new();
    home.named_agent("lead", ANTHROPIC, "");
    let server = FakeServer::json(200, &anthropic_paused());
    let (code, stderr, events) = traced_run(&home, &server);
    assert_turn_limit_traced(code, &stderr, &events);
}

#[test]
fn the_turn_limit_reached_by_a_repair_leaves_an_error_event() {
    let home = Home::new();
    home.named_agent(
        "lead",
        OPENAI,
        &format!("sub_agents = [\"a\"]\n{SCHEMA}max_repairs = 2\n"),
    );
    home.named_agent("a", OPENAI, "");
    let sent = Mutex::new(0);
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" => {
            let mut sent = sent.lock().unwrap();
            *sent += 1;
            // Tools for 49 turns; the 50th answers out of shape.
            if *sent < 50 {
                Reply::Json(
                    200,
                    openai_tool_calls(&[("call_1", "call_agent", delegate("a", "x"))], 1, 1),
                )
            } else {
                Reply::Json(200, openai_text("no shape", 1, 1))
            }
        }
        _ => Reply::Json(200, openai_text("sure", 1, 1)),
    });
    let (code, stderr, events) = traced_run(&home, &server);
    assert_turn_limit_traced(code, &stderr, &events);
}
