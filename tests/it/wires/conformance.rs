//! axe's request bodies against the vendors' own SDK types (issue 40): a
//! matrix of agents (plain, with parameters, built-in tools, sub-agents,
//! one at the depth limit, `parallel = false`, an `[output]` schema,
//! streamed, MCP tools whose schemas say what real servers' do, the prompt
//! cache, attachments: an image and a text file, the kinds every wire
//! takes) run on each wire against a fake model, every body it got written
//! down, and `conformance.py` (in the venv scripts/conformance_deps.sh
//! makes) checks each with the pinned `openai`, `anthropic` and `ollama`
//! packages' types, extras forbidden (the Responses API's with `openai`'s
//! `ResponseCreateParams`, and the fake's answers and stream events on it
//! with its `Response` and `ResponseStreamEvent`), and that it refuses
//! every mutated body.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;

/// What a wire's type refuses that axe sends on purpose: (wire, the
/// error, why). Each must still be met, so the list stays true.
const KNOWN: [(&str, &str, &str); 2] = [
    (
        "anthropic",
        "temperature: Extra inputs are not permitted",
        "the anthropic package 2.x has no temperature (its newest models refuse one); axe sends \
         the agent's and drops it after the model's 400 (design §4.4)",
    ),
    (
        "ollama",
        "messages.1.images.0: Input should be a valid dictionary or instance of Image",
        "the ollama package's Image is a model of its own that it serializes to what the API \
         takes, a base64 string (Ollama's /api/chat: `images`, base64-encoded); axe sends that \
         string (design §4.16)",
    ),
];

/// The Python of the venv with the three packages, or None (the skip said,
/// a failure of `make test`).
fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/conformance/venv/bin/python");
    if p.is_file() {
        return Some(p);
    }
    missing(
        "the request bodies against the vendors' SDK types",
        "the openai, anthropic and ollama packages are not installed in target/conformance \
         (bash scripts/conformance_deps.sh)",
    );
    None
}

/// One agent of the matrix: its name, what its file adds, and whether it
/// streams.
struct Case {
    name: &'static str,
    extra: String,
    calls: Vec<(&'static str, &'static str, Value)>,
    stream: bool,
}

fn cases(work: &str) -> Vec<Case> {
    let case = |name, extra: &str, calls, stream| Case {
        name,
        extra: extra.to_string(),
        calls,
        stream,
    };
    let delegate = || vec![("c1", "call_agent", json!({"agent": "w", "task": "t"}))];
    let tools = format!("workdir = {work:?}\ntools = [\"list_directory\", \"read_file\"]\n");
    let list = || vec![("c1", "list_directory", json!({}))];
    let lookup = json!({"query": "axe", "limit": 3});
    vec![
        case("plain", "", vec![], false),
        case(
            "params",
            "[params]\ntemperature = 0.5\nmax_tokens = 300\n",
            vec![],
            false,
        ),
        case("tools", &tools, list(), false),
        case("sub-agents", "sub_agents = [\"w\"]\n", delegate(), false),
        case(
            "parallel-false",
            "sub_agents = [\"w\"]\n[sub_agents_config]\nparallel = false\n",
            delegate(),
            false,
        ),
        case("output-schema", SCHEMA, vec![], false),
        case(
            "output-schema-tools",
            &format!("{tools}{SCHEMA}"),
            list(),
            false,
        ),
        case("streamed", &format!("stream = true\n{tools}"), list(), true),
        // `deep` is a sub-agent at the depth limit whose model calls
        // `call_agent` anyway: its follow-up carries the tool with
        // `tool_choice` none (Ollama: no tools; design §4.2).
        case(
            "depth-limit",
            "sub_agents = [\"deep\"]\n[sub_agents_config]\nmax_depth = 1\n",
            vec![("c1", "call_agent", json!({"agent": "deep", "task": "t"}))],
            false,
        ),
        case(
            "mcp",
            "mcp_servers = [\"schemas\"]\n",
            vec![("c1", "schemas__lookup", lookup)],
            false,
        ),
        case(
            "prompt-cache",
            &format!("prompt_cache = true\n{tools}"),
            list(),
            false,
        ),
        case(
            "attachments",
            &format!("workdir = {work:?}\nattach = [\"shot.png\", \"a.txt\"]\n"),
            vec![],
            false,
        ),
    ]
}

const SCHEMA: &str = "[output]\nschema = { type = \"object\", properties = { verdict = { type = \"string\" } }, required = [\"verdict\"] }\n";

/// The fake model of `case` on `p`: the lead's first request makes the
/// case's calls, the rest end with an answer that fits the schema.
fn model(p: P, case: &Case) -> FakeServer {
    let calls: Vec<Call> = case
        .calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.clone()))
        .collect();
    let stream = case.stream;
    FakeServer::route(move |req| {
        let answer = r#"{"verdict": "fine"}"#;
        if req.who() == "deep" && !req.has_tool_results() {
            let anyway = [("d1", "call_agent", json!({"agent": "w", "task": "t"}))];
            return Reply::Json(200, p.tool_calls(&anyway));
        }
        let calling = req.who() == "lead" && !req.has_tool_results() && !calls.is_empty();
        match (calling, stream) {
            (true, false) => Reply::Json(200, p.tool_calls(&calls)),
            (false, false) => Reply::Json(200, p.text(answer)),
            (true, true) => p.stream_steps(vec![Step::bytes(&p.stream_calls("", &calls), 4096)]),
            (false, true) => {
                p.stream_steps(vec![Step::bytes(&p.stream_text(&[answer], 5, 2), 4096)])
            }
        }
    })
}

/// Runs every case on every wire; each body sent, as a JSON line.
fn bodies() -> Vec<Value> {
    let mut out = Vec::new();
    let server_script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/schemas_server.py");
    for p in WIRES {
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("a.txt"), "alpha\n").unwrap();
        std::fs::write(work.join("shot.png"), b"\x89PNG\r\n\x1a\nIHDR").unwrap();
        home.config(&format!(
            "[[mcp_servers]]\nname = \"schemas\"\ncommand = \"python3\"\nargs = [{:?}]\n",
            server_script.display().to_string()
        ));
        home.named_agent("w", p.model(), "");
        home.named_agent("deep", p.model(), "sub_agents = [\"w\"]\n");
        for case in cases(&work.display().to_string()) {
            home.named_agent("lead", p.model(), &case.extra);
            let server = model(p, &case);
            let b = home.run_bounded(&[(p, &server)], &["run", "lead", "-p", "go"], HUNG);
            assert_eq!(
                code(&b.output),
                0,
                "{} {}: {}",
                p.name(),
                case.name,
                stderr(&b.output)
            );
            for req in server.requests() {
                out.push(json!({"wire": p.name(), "case": case.name, "body": req.json()}));
            }
        }
    }
    out
}

/// What the fake answers on the Responses API, as the API would: whole
/// answers, and each event of its streams.
fn responses_replies() -> Vec<Value> {
    let calls = [("c1", "list_directory", json!({}))];
    let mut replies = vec![
        P::Responses.text("{\"verdict\": \"fine\"}"),
        P::Responses.tool_calls(&calls),
    ];
    for stream in [
        P::Responses.stream_calls("", &calls),
        P::Responses.stream_text(&["a", "b"], 5, 2),
    ] {
        replies.extend(
            stream
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(str::to_string),
        );
    }
    replies
        .iter()
        .map(|r| json!({"wire": "responses", "case": "reply", "reply": serde_json::from_str::<Value>(r).unwrap()}))
        .collect()
}

#[test]
fn every_body_axe_sends_is_what_the_vendors_sdk_types_take() {
    let Some(py) = python() else { return };
    let bodies = bodies();
    let dir = TempDir::new("conformance");
    let file = dir.path().join("bodies.jsonl");
    let replies = responses_replies();
    let lines: Vec<String> = bodies
        .iter()
        .chain(&replies)
        .map(Value::to_string)
        .collect();
    // The attachments' case carries its image on every wire (its base64).
    for p in PROVIDERS {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("\"wire\":\"{}\"", p.name()))
                    && l.contains("\"case\":\"attachments\"")
                    && l.contains("iVBORw0KGgpJSERS")),
            "{}: no body of the attachments case carried the image",
            p.name()
        );
    }
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/wires/conformance.py");
    let out = Command::new(&py).arg(&script).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checked = report["bodies"].as_array().unwrap();
    assert_eq!(checked.len(), bodies.len());
    let read = report["replies"].as_array().unwrap();
    assert_eq!(read.len(), replies.len());
    for r in read {
        assert_eq!(
            r["errors"],
            json!([]),
            "the fake's Responses answer is not the API's: {r}"
        );
    }
    assert!(
        read.iter().any(|r| r["kind"] == "event") && read.iter().any(|r| r["kind"] == "response")
    );
    let mut met = [false; KNOWN.len()];
    let mut wrong = Vec::new();
    for b in checked {
        for e in b["errors"].as_array().unwrap() {
            let e = e.as_str().unwrap();
            match KNOWN
                .iter()
                .position(|(wire, err, _)| b["wire"] == *wire && e == *err)
            {
                Some(i) => met[i] = true,
                None => wrong.push(format!("{} {}: {e}", b["wire"], b["case"])),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "bodies the types refuse:\n{}",
        wrong.join("\n")
    );
    for (i, (wire, err, why)) in KNOWN.iter().enumerate() {
        assert!(
            met[i],
            "a known gap no longer met ({wire}: {err}; {why}): take it off the list"
        );
    }
    // Not vacuous: every mutated body refused.
    assert!(report["mutated"].as_u64().unwrap() > 100, "{report}");
    assert_eq!(report["taken"], json!([]), "mutated bodies the types took");
    // What the wires are told of `parallel = false` is among them.
    let sent = |wire: &str, key: &str, want: Value| {
        bodies.iter().any(|b| {
            b["wire"] == wire && b["case"] == "parallel-false" && {
                let body = &b["body"];
                body[key] == want || body["tool_choice"][key] == want
            }
        })
    };
    assert!(sent("openai", "parallel_tool_calls", json!(false)));
    assert!(sent("responses", "parallel_tool_calls", json!(false)));
    assert!(sent("anthropic", "disable_parallel_tool_use", json!(true)));
    let at_limit = |wire: &str, want: Value| {
        bodies.iter().any(|b| {
            b["wire"] == wire && b["case"] == "depth-limit" && b["body"]["tool_choice"] == want
        })
    };
    let limited: Vec<String> = bodies
        .iter()
        .filter(|b| b["case"] == "depth-limit")
        .map(|b| format!("{} {}", b["wire"], b["body"]["tool_choice"]))
        .collect();
    assert!(at_limit("openai", json!("none")), "{limited:?}");
    assert!(at_limit("anthropic", json!({"type": "none"})));
    assert!(at_limit("responses", json!("none")));
    eprintln!(
        "conformance: {} bodies, {} mutated and refused",
        bodies.len(),
        report["mutated"]
    );
}
