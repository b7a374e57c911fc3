//! Redaction never changes an answer (design §6.7): with a key that a
//! local server's user sets because the OpenAI provider needs one — `1234`,
//! `none`, `sk-x` — the model's answer (plain, `--json`, shaped, in the
//! trace, handed to a parent) and every number around it come out as they
//! went in, and a server's error text holding the same letters is shown
//! whole. secrets.rs keeps real keys out of every output.

use crate::common::*;

const MARK: &str = "[redacted]";

/// Keys a user sets for a local server that ignores them (docs/guide/providers.md:
/// "set any value"): none of them is a secret.
const PLACEHOLDER_KEYS: [&str; 3] = ["1234", "none", "sk-x"];

/// An answer holding each of them, and a number holding the first.
const ANSWER: &str = r#"{"n":12345} is "none" of sk-x's business"#;

/// Token counts that hold `1234` too, so that the numbers of `--json`, the
/// trace and `--verbose` are at stake as well as the text.
const INPUT_TOKENS: u64 = 12345;
const OUTPUT_TOKENS: u64 = 1234;

fn placeholder_axe(home: &Home, key: &str, server: &FakeServer) -> std::process::Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", key)
        .env("AXE_OPENAI_BASE_URL", &server.url);
    c
}

#[test]
fn a_placeholder_key_never_changes_the_answer_or_the_numbers() {
    for key in PLACEHOLDER_KEYS {
        let home = Home::new();
        home.named_agent("a", "openai/gpt-4o", "");
        let server = echoing_usage(ANSWER);

        // Plain, with the verbose footer's numbers.
        let out = placeholder_axe(&home, key, &server)
            .args(["run", "a", "--verbose"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("{ANSWER}\n"), "key {key}");
        assert!(
            stderr(&out).contains(&format!(
                "Tokens:   {INPUT_TOKENS} input, {OUTPUT_TOKENS} output"
            )),
            "key {key}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains(MARK), "key {key}: {}", stderr(&out));

        // --json: valid JSON, the answer and the counts as they were.
        let out = placeholder_axe(&home, key, &server)
            .args(["run", "a", "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("key {key}: --json is not JSON ({e}): {}", stdout(&out)));
        assert_eq!(v["content"], ANSWER, "key {key}");
        assert_eq!(v["input_tokens"], INPUT_TOKENS, "key {key}");
        assert_eq!(v["output_tokens"], OUTPUT_TOKENS, "key {key}");
        assert!(!stdout(&out).contains(MARK), "key {key}: {}", stdout(&out));

        // The trace: every line JSON, the answer and the counts as they were.
        let trace = home.dir.path().join(format!("{key}.jsonl"));
        let out = placeholder_axe(&home, key, &server)
            .args([
                "run",
                "a",
                "--trace",
                trace.to_str().unwrap(),
                "--trace-bodies",
            ])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        let events = trace_events(&trace);
        let response = events
            .iter()
            .find(|e| e["event"] == "response")
            .expect("a response event");
        assert_eq!(response["content"], ANSWER, "key {key}");
        assert_eq!(response["input_tokens"], INPUT_TOKENS, "key {key}");
        assert_eq!(response["output_tokens"], OUTPUT_TOKENS, "key {key}");
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(!text.contains(MARK), "key {key}: {text}");
    }
}

fn echoing_usage(text: &str) -> FakeServer {
    FakeServer::json(200, &openai_text(text, INPUT_TOKENS, OUTPUT_TOKENS))
}

#[test]
fn a_placeholder_key_never_changes_a_shaped_answer() {
    let schema = "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" }, pick = { enum = [\"none\", \"sk-x\", \"1234\"] } }, required = [\"n\", \"pick\"] }\n";
    for key in PLACEHOLDER_KEYS {
        let home = Home::new();
        home.named_agent("shaped", "openai/gpt-4o", schema);
        let answer = format!(r#"{{"n":12345,"pick":"{key}"}}"#);
        let server = echoing_usage(&answer);
        let out = placeholder_axe(&home, key, &server)
            .args(["run", "shaped"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("{answer}\n"), "key {key}");
        let out = placeholder_axe(&home, key, &server)
            .args(["run", "shaped", "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("key {key}: --json is not JSON ({e}): {}", stdout(&out)));
        assert_eq!(v["content"], answer, "key {key}");
        assert_eq!(v["output"], serde_json::json!({"n": 12345, "pick": key}));
    }
}

#[test]
fn a_placeholder_key_is_not_hidden_in_a_provider_error() {
    // A local server's own complaint that happens to hold the key's text.
    let server = FakeServer::json(
        400,
        r#"{"error":{"message":"tool_choice none is not supported; n_ctx 12345 exceeded by sk-x","type":"invalid_request_error"}}"#,
    );
    for key in PLACEHOLDER_KEYS {
        let home = Home::new();
        home.named_agent("a", "openai/gpt-4o", "");
        let out = placeholder_axe(&home, key, &server)
            .args(["run", "a"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 1, "{key}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "axe: openai: bad request (HTTP 400): tool_choice none is not supported; n_ctx 12345 exceeded by sk-x\n",
            "key {key}"
        );
    }
}

#[test]
fn a_placeholder_key_never_changes_a_sub_agents_task_or_result() {
    for key in PLACEHOLDER_KEYS {
        let home = Home::new();
        home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"sub\"]\n");
        home.named_agent("sub", "openai/gpt-4o", "");
        // lead hands ANSWER down as the task, sub answers ANSWER, and lead
        // repeats what it got back.
        let server = FakeServer::route(|req| {
            let body = match req.who().as_str() {
                "sub" => openai_text(ANSWER, INPUT_TOKENS, OUTPUT_TOKENS),
                _ if req.has_tool_results() => openai_text(&req.tool_result_texts().concat(), 1, 1),
                _ => openai_tool_calls(&[("c1", "call_agent", delegate("sub", ANSWER))], 1, 1),
            };
            Reply::Json(200, body)
        });
        let trace = home.dir.path().join("tree.jsonl");
        let out = placeholder_axe(&home, key, &server)
            .args([
                "run",
                "lead",
                "--trace",
                trace.to_str().unwrap(),
                "--trace-bodies",
            ])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("{ANSWER}\n"), "key {key}");
        let sub = server
            .requests()
            .into_iter()
            .find(|r| r.who() == "sub")
            .unwrap();
        assert_eq!(
            sub.first_user_text(),
            format!("Task: {ANSWER}"),
            "key {key}"
        );
        let events = trace_events(&trace);
        let call = events.iter().find(|e| e["event"] == "tool_call").unwrap();
        assert_eq!(call["arguments"]["task"], ANSWER, "key {key}");
        let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
        assert_eq!(result["content"], ANSWER, "key {key}");
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(!text.contains(MARK), "key {key}: {text}");
    }
}
