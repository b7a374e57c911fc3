//! llama.cpp's server streaming on the OpenAI and Anthropic wires (docs/guide/streams.md,
//! docs/contributing.md's "End-to-end tests"): at temperature 0 the streamed answer axe prints is
//! the one it prints without `--stream`, the request asks for a stream as
//! the API reference says, and `--json`'s tokens are the usage the stream
//! itself carried.

use super::*;

const QUESTION: &str = "What is a command-line interface?";

/// The agent `solo` on `format`, deterministic.
fn solo(home: &Home, format: Format) {
    Cast::write(
        home,
        &[(
            "solo".into(),
            format!(
                "name = \"solo\"\nmodel = \"{}/{}\"\nsystem_prompt = \"You answer in one short sentence.\"\n\
                 [params]\ntemperature = 0\nmax_tokens = 60\n",
                format.provider(),
                local_model()
            ),
        )],
    );
}

/// `axe run solo -p QUESTION <extra>`'s stdout, after checking it exited 0.
fn answer(home: &Home, proxy: &Proxy, extra: &[&str]) -> String {
    let out = axe(home, proxy)
        .args(["run", "solo", "-p", QUESTION, "--timeout", "600"])
        .args(extra)
        .output()
        .expect("run axe");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
}

/// The input and output tokens a streamed response body reports.
fn streamed_usage(format: Format, body: &str) -> (u64, u64) {
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    match format {
        Format::OpenAi => {
            let usage = events
                .iter()
                .rev()
                .find(|e| e["usage"].is_object())
                .map(|e| e["usage"].clone())
                .unwrap_or_else(|| panic!("no usage in the stream: {body}"));
            (n(&usage["prompt_tokens"]), n(&usage["completion_tokens"]))
        }
        _ => {
            let start = events
                .iter()
                .find(|e| e["type"] == "message_start")
                .map(|e| e["message"]["usage"].clone())
                .unwrap_or_else(|| panic!("no message_start: {body}"));
            let delta = events
                .iter()
                .rev()
                .find(|e| e["type"] == "message_delta")
                .map(|e| e["usage"].clone())
                .unwrap_or_else(|| panic!("no message_delta: {body}"));
            // A field message_delta gives replaces message_start's.
            let field = |k: &str| {
                if delta[k].is_u64() {
                    n(&delta[k])
                } else {
                    n(&start[k])
                }
            };
            let input = field("input_tokens")
                + field("cache_creation_input_tokens")
                + field("cache_read_input_tokens");
            (input, field("output_tokens"))
        }
    }
}

fn streamed_equals_whole(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    solo(&home, format);
    // The server reuses its cache of a prompt it has seen, and a reused
    // cache can move a temperature-0 answer by a token: the answer sent
    // whole is asked for once first, to warm it, then compared.
    let _warm = answer(&home, &proxy, &[]);
    let whole = answer(&home, &proxy, &[]);
    let streamed = answer(&home, &proxy, &["--stream"]);
    assert!(!whole.trim().is_empty(), "an answer");
    let log = proxy.exchanges();
    let (a, b) = (log[1].request.json(), log[2].request.json());
    let mut b_whole = b.clone();
    b_whole.as_object_mut().unwrap().remove("stream");
    b_whole.as_object_mut().unwrap().remove("stream_options");
    assert_eq!(a, b_whole, "the same request but for the stream");
    assert_eq!(streamed, whole, "the streamed answer is the whole one");
    let (_, report) = run_json(&home, &proxy, "solo", &["-p", QUESTION, "--stream"]);
    let log = proxy.exchanges();
    assert_eq!(log.len(), 4);
    let last = &log[3];
    assert_eq!(last.status, 200, "{}", last.response);
    let body = last.request.json();
    assert_eq!(body["stream"], json!(true));
    if format == Format::OpenAi {
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert!(last.response.contains("data: [DONE]"), "{}", last.response);
    } else {
        assert!(
            last.response.contains("event: message_stop"),
            "{}",
            last.response
        );
    }
    let (input, output) = streamed_usage(format, &last.response);
    assert!(input > 0 && output > 0, "{}", last.response);
    assert_eq!(report["input_tokens"], json!(input), "{report}");
    assert_eq!(report["output_tokens"], json!(output), "{report}");
    assert_eq!(report["content"], json!(whole.trim_end_matches('\n')));
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_stream_prints_the_whole_answer() {
    streamed_equals_whole(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_stream_prints_the_whole_answer() {
    streamed_equals_whole(Format::Anthropic);
}
