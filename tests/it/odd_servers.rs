//! A server that is odd or hostile: headers, numbers and tool calls that a
//! well-behaved fake never sends, each through the real binary on all three
//! wire formats. Nothing a server sends may crash axe, lose an answer, wrap a
//! counter, rewrite what the model said or print a credential.

use crate::common::*;

use std::time::Duration;

use serde_json::{Value, json};

/// A home with the fast retries and agent `solo` on `p`.
fn solo_home(p: P) -> Home {
    let home = Home::fast_retries();
    home.named_agent("solo", p.model(), "");
    home
}

/// A reply with extra headers.
fn with_headers(status: u16, body: String, headers: &[(&str, &str)]) -> Reply {
    Reply::Raw {
        status,
        content_type: "application/json".into(),
        body,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn assert_no_internal_error(err: &str) {
    assert!(
        !err.contains("internal error") && !err.contains("panicked"),
        "axe crashed: {err}"
    );
}

// ---------------------------------------------------------------------------
// Headers.
// ---------------------------------------------------------------------------

#[test]
fn retry_hints_on_a_successful_answer_are_not_read_however_absurd() {
    for p in PROVIDERS {
        for (name, value) in [
            ("retry-after-ms", "1e30"),
            ("retry-after-ms", "-1"),
            ("retry-after", "1e300"),
            ("retry-after", "Sun, 06 Nov 300000000000 08:49:37 GMT"),
            ("x-should-retry", "maybe"),
        ] {
            let home = solo_home(p);
            let server = FakeServer::start(vec![with_headers(
                200,
                p.text("the answer"),
                &[(name, value)],
            )]);
            let b = home.run_bounded(&[(p, &server)], &["run", "solo"], HUNG);
            let err = stderr(&b.output);
            assert_no_internal_error(&err);
            assert_eq!(code(&b.output), 0, "{p:?} {name}: {value}: {err}");
            assert_eq!(stdout(&b.output), "the answer\n", "{p:?} {name}: {value}");
        }
    }
}

#[test]
fn a_429_asking_for_a_wait_past_any_deadline_gives_up_at_once() {
    for p in PROVIDERS {
        for (name, value) in [
            ("retry-after-ms", "1e30"),
            ("retry-after-ms", "1.8e19"),
            ("retry-after", "1e300"),
            ("retry-after", "99999999999999999999999"),
            ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
        ] {
            let home = solo_home(p);
            let server = FakeServer::start(vec![
                with_headers(
                    429,
                    r#"{"error":{"message":"slow down"}}"#.into(),
                    &[(name, value)],
                ),
                Reply::Json(200, p.text("too late")),
            ]);
            let b = home.run_bounded(&[(p, &server)], &["run", "solo", "--timeout", "30"], HUNG);
            let err = stderr(&b.output);
            assert_no_internal_error(&err);
            assert_eq!(code(&b.output), 3, "{p:?} {name}: {value}: {err}");
            assert!(
                err.starts_with(&format!("axe: {}: rate limited (HTTP 429)", p.name())),
                "{p:?} {name}: {value}: {err}"
            );
            assert_eq!(server.requests().len(), 1, "{p:?} {name}: {value}");
            assert!(
                b.took < Duration::from_secs(10),
                "{p:?}: waited {:?}",
                b.took
            );
        }
    }
}

#[test]
fn a_429_with_an_unreadable_retry_hint_falls_back_to_backoff_and_retries() {
    for p in PROVIDERS {
        for (name, value) in [
            ("retry-after-ms", "NaN"),
            ("retry-after-ms", "-5"),
            ("retry-after", "inf"),
            ("retry-after", "-1"),
            ("retry-after", "Sun, 31 Feb 2026 08:49:37 GMT"),
            ("retry-after", "Sun, 06 Nov 300000000000 08:49:37 GMT"),
            ("retry-after", "Sun, 06 Nov 1994 25:00:00 GMT"),
            ("retry-after", "soon"),
        ] {
            let home = solo_home(p);
            let server = FakeServer::start(vec![
                with_headers(429, "{}".into(), &[(name, value)]),
                Reply::Json(200, p.text("after one retry")),
            ]);
            let b = home.run_bounded(&[(p, &server)], &["run", "solo"], HUNG);
            let err = stderr(&b.output);
            assert_no_internal_error(&err);
            assert_eq!(code(&b.output), 0, "{p:?} {name}: {value}: {err}");
            assert_eq!(stdout(&b.output), "after one retry\n");
            assert_eq!(server.requests().len(), 2, "{p:?} {name}: {value}");
        }
    }
}

// ---------------------------------------------------------------------------
// Numbers in the body.
// ---------------------------------------------------------------------------

/// `body` with its usage counts replaced by `input` and `output` (any JSON).
fn with_usage(p: P, body: &str, input: Value, output: Value) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap();
    match p {
        P::Anthropic => v["usage"] = json!({"input_tokens": input, "output_tokens": output}),
        P::OpenAi => {
            v["usage"] =
                json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": null})
        }
        P::Ollama => {
            v["prompt_eval_count"] = input;
            v["eval_count"] = output;
        }
        P::Responses => {
            v["usage"] =
                json!({"input_tokens": input, "output_tokens": output, "total_tokens": null})
        }
    }
    v.to_string()
}

#[test]
fn missing_null_or_odd_usage_counts_are_unknown_not_a_failed_answer() {
    for p in PROVIDERS {
        for (input, output, want_in, want_out) in [
            (Value::Null, Value::Null, 0u64, 0u64),
            (json!(null), json!(7), 0, 7),
            (json!(-5), json!(2.0), 0, 2),
            (json!("12"), json!(true), 0, 0),
            (json!(1e300), json!(3), u64::MAX, 3),
        ] {
            let home = solo_home(p);
            let body = with_usage(p, &p.text("counted"), input.clone(), output.clone());
            let server = FakeServer::json(200, &body);
            let b = home.run_bounded(&[(p, &server)], &["run", "solo", "--json"], HUNG);
            let err = stderr(&b.output);
            assert_eq!(code(&b.output), 0, "{p:?} {input} {output}: {err}");
            let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
            assert_eq!(out["content"], "counted");
            assert_eq!(out["input_tokens"], want_in, "{p:?} {input}");
            assert_eq!(out["output_tokens"], want_out, "{p:?} {output}");
        }
        // No usage object at all, and a usage of null.
        let mut bare: Value = serde_json::from_str(&p.text("bare")).unwrap();
        match p {
            P::Anthropic | P::OpenAi | P::Responses => bare["usage"] = Value::Null,
            P::Ollama => {
                let o = bare.as_object_mut().unwrap();
                o.remove("prompt_eval_count");
                o.remove("eval_count");
            }
        }
        let home = solo_home(p);
        let server = FakeServer::json(200, &bare.to_string());
        let b = home.run_bounded(&[(p, &server)], &["run", "solo"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "bare\n");
    }
}

/// `lead` on `p` delegates once to `w` with the usage `input` on its first
/// response, then answers.
fn greedy_lead(p: P, input: u64) -> (Home, FakeServer) {
    let home = solo_home(p);
    home.named_agent("lead", p.model(), "sub_agents = [\"w\"]\n");
    home.named_agent("w", p.model(), "");
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, p.text("lead done")),
        "lead" => {
            let calls = p.tool_calls(&[("c1", "call_agent", delegate("w", "go"))]);
            Reply::Json(200, with_usage(p, &calls, json!(input), json!(5)))
        }
        _ => Reply::Json(200, p.text("w done")),
    });
    (home, server)
}

#[test]
fn token_counts_near_the_top_of_u64_saturate_instead_of_wrapping() {
    for p in PROVIDERS {
        let (home, server) = greedy_lead(p, u64::MAX);
        let b = home.run_bounded(&[(p, &server)], &["run", "lead", "--json"], HUNG);
        let err = stderr(&b.output);
        assert_no_internal_error(&err);
        assert_eq!(code(&b.output), 0, "{p:?}: {err}");
        let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
        assert_eq!(out["input_tokens"], u64::MAX, "{p:?}");
        assert_eq!(out["total_input_tokens"], u64::MAX, "{p:?}");
        assert_eq!(out["agents"][0]["input_tokens"], u64::MAX, "{p:?}");
    }
}

#[test]
fn a_token_budget_holds_whatever_count_a_server_reports() {
    for p in PROVIDERS {
        let (home, server) = greedy_lead(p, u64::MAX);
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "lead", "--max-tokens", "100"],
            HUNG,
        );
        let err = stderr(&b.output);
        assert_no_internal_error(&err);
        assert_eq!(code(&b.output), 4, "{p:?}: {err}");
        assert_eq!(
            err,
            format!("axe: token budget exceeded (used {} of 100)\n", u64::MAX),
            "{p:?}"
        );
        // Only the lead's first turn: w's request and the lead's next are refused.
        let who: Vec<String> = server.requests().iter().map(|r| r.who()).collect();
        assert_eq!(who, ["lead"], "{p:?}");
    }
}

// ---------------------------------------------------------------------------
// Tool calls.
// ---------------------------------------------------------------------------

#[test]
fn the_models_tool_call_arguments_go_back_in_the_history_exactly_as_received() {
    // Spacing, key order, a nested object and a number: what the model wrote.
    let raw = r#"{ "task": "t",  "n": 3, "agent": "w", "context": {"k": 1, "list": [1.50, "x"]} }"#;
    let args: Value = serde_json::from_str(raw).unwrap();
    for p in PROVIDERS {
        let home = solo_home(p);
        home.named_agent("lead", p.model(), "sub_agents = [\"w\"]\n");
        home.named_agent("w", p.model(), "");
        let first = match p {
            P::OpenAi => {
                let mut v: Value = serde_json::from_str(&openai_tool_calls(
                    &[("c1", "call_agent", json!({}))],
                    1,
                    1,
                ))
                .unwrap();
                v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = raw.into();
                v.to_string()
            }
            _ => p.tool_calls(&[("c1", "call_agent", args.clone())]),
        };
        let server = FakeServer::route(move |req| match req.who().as_str() {
            "lead" if req.has_tool_results() => Reply::Json(200, p.text("lead done")),
            "lead" => Reply::Json(200, first.clone()),
            _ => Reply::Json(200, p.text("w done")),
        });
        let b = home.run_bounded(&[(p, &server)], &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        let requests = server.requests();
        // The tool still reads the context as JSON text (design D3).
        let w = requests.iter().find(|r| r.who() == "w").unwrap();
        assert_eq!(
            w.first_user_text(),
            r#"Task: t

Context:
{"k":1,"list":[1.50,"x"]}"#
                .replace("1.50", "1.5"),
            "{p:?}"
        );
        let second = requests
            .iter()
            .find(|r| r.who() == "lead" && r.has_tool_results())
            .unwrap();
        let assistant = second
            .messages()
            .into_iter()
            .find(|m| m["role"] == "assistant")
            .unwrap();
        match p {
            P::OpenAi => assert_eq!(
                assistant["tool_calls"][0]["function"]["arguments"], raw,
                "the arguments string as the model wrote it"
            ),
            P::Anthropic => assert_eq!(assistant["content"][0]["input"], args),
            P::Ollama => assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], args),
            P::Responses => unreachable!("runs on PROVIDERS"),
        }
    }
}

#[test]
fn ollama_tool_results_carry_the_tool_name() {
    let p = P::Ollama;
    let (home, server) = greedy_lead(p, 1);
    let b = home.run_bounded(&[(p, &server)], &["run", "lead"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let second = server
        .requests()
        .into_iter()
        .find(|r| r.who() == "lead" && r.has_tool_results())
        .unwrap();
    let tools = second.tool_messages();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["tool_name"], "call_agent");
    assert_eq!(tools[0]["content"], "w done");
}

// ---------------------------------------------------------------------------
// Credentials in URLs.
// ---------------------------------------------------------------------------

const SECRET: &str = "hunter2secret";

fn assert_no_credentials(text: &str, what: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password: {text}");
    assert!(!text.contains("bob:"), "{what} shows the user: {text}");
}

#[test]
fn credentials_in_a_base_url_never_appear_in_any_output() {
    // A refused connection names the URL it tried.
    for p in PROVIDERS {
        let home = solo_home(p);
        let b = run_within(
            home.axe()
                .env(p.base_url_var(), format!("http://bob:{SECRET}@127.0.0.1:1"))
                .env("OPENAI_API_KEY", OPENAI_KEY)
                .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
                .args(["run", "solo", "--verbose", "--retries", "0"]),
            HUNG,
        );
        let err = stderr(&b.output);
        assert_eq!(code(&b.output), 3, "{p:?}: {err}");
        assert!(err.contains("[redacted]"), "{p:?}: {err}");
        assert_no_credentials(&err, &format!("{p:?} refused"));
    }
    // OLLAMA_HOST and config.toml are read the same way.
    let home = solo_home(P::Ollama);
    let b = run_within(
        home.axe()
            .env("OLLAMA_HOST", format!("http://bob:{SECRET}@127.0.0.1:1"))
            .args(["run", "solo", "--retries", "0"]),
        HUNG,
    );
    assert_no_credentials(&stderr(&b.output), "OLLAMA_HOST");
    let home = solo_home(P::OpenAi);
    home.config(&format!(
        "{FAST_RETRIES}[providers.openai]\napi_key = \"{OPENAI_KEY}\"\nbase_url = \"http://bob:{SECRET}@127.0.0.1:1/v1\"\n"
    ));
    let b = run_within(home.axe().args(["run", "solo", "--retries", "0"]), HUNG);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert_no_credentials(&stderr(&b.output), "config.toml");
    // A redirect's location with credentials in it.
    let server = FakeServer::start(vec![Reply::Raw {
        status: 307,
        content_type: "text/plain".into(),
        body: String::new(),
        headers: vec![(
            "location".into(),
            format!("https://bob:{SECRET}@elsewhere.example/v1"),
        )],
    }]);
    let home = solo_home(P::OpenAi);
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "solo"], HUNG);
    assert!(stderr(&b.output).contains("unexpected redirect"));
    assert_no_credentials(&stderr(&b.output), "a redirect");
}

#[test]
fn the_largest_retry_count_is_bounded_by_the_deadline_without_overflow() {
    for p in PROVIDERS {
        let home = solo_home(p);
        let server = FakeServer::start(vec![with_headers(429, "{}".into(), &[])]);
        let b = home.run_bounded(
            &[(p, &server)],
            &[
                "run",
                "solo",
                "--retries",
                "4294967295",
                "--timeout",
                "1",
                "--verbose",
            ],
            HUNG,
        );
        let err = stderr(&b.output);
        assert_no_internal_error(&err);
        assert_eq!(code(&b.output), 3, "{p:?}: {err}");
        assert!(err.contains("attempt 2/4294967296"), "{p:?}: {err}");
        // At the 1 s timeout, not at the harness's kill (HUNG).
        assert!(b.took < Duration::from_secs(10), "{p:?}: {:?}", b.took);
    }
}
