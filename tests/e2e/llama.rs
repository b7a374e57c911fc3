//! llama.cpp's server with a real model, on the OpenAI and Anthropic wires: a single shot, a delegation, an answer in a schema.

use super::*;

/// The demo agents on `format`'s wire.
fn demo_agents_on(format: Format) -> Vec<(String, String)> {
    demo_agents()
        .into_iter()
        .map(|(name, text)| {
            let text = text.replace(
                &format!("openai/{}", local_model()),
                &format!("{}/{}", format.provider(), local_model()),
            );
            (name, text)
        })
        .collect()
}

/// A single-shot agent on `format`: one request, the request shape the API
/// reference gives, the server's usage in `--json`.
fn single_shot(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let cast = Cast::write(
        &home,
        &[(
            "solo".into(),
            format!(
                "name = \"solo\"\nmodel = \"{}/{}\"\nsystem_prompt = \"You answer in one short sentence.\"\n\
                 [params]\ntemperature = 0\nmax_tokens = 40\n",
                format.provider(),
                local_model()
            ),
        )],
    );
    let (_, report) = run_json(&home, &proxy, "solo", &["-p", "What is a CLI?"]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);
    assert_eq!(log.len(), 1, "a single-shot run is one request");
    let req = &log[0].request;
    let body = req.json();
    assert!(
        body.get("tools").is_none(),
        "no sub_agents, no tools: {body}"
    );
    assert_eq!(body["temperature"], json!(0));
    assert_eq!(body["max_tokens"], json!(40));
    let resp = log[0].response_json();
    match format {
        Format::OpenAi => assert_eq!(resp["object"], "chat.completion"),
        _ => {
            assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(req.header("x-api-key"), Some(DUMMY_KEY));
            // One text block, carrying the prompt-cache mark (design §4.10).
            assert_eq!(
                body["system"],
                json!([{"type": "text", "text": "You answer in one short sentence.",
                        "cache_control": {"type": "ephemeral"}}])
            );
            assert_eq!(resp["type"], "message");
            assert_eq!(resp["role"], "assistant");
        }
    }
    let (input, output) = format.usage(&resp);
    assert!(input > 0 && output > 0, "the server reports usage: {resp}");
    assert_report_matches(format, &report, &log);
    assert_eq!(
        report["model"],
        json!(format!("{}/{}", format.provider(), local_model()))
    );
}

/// The demo's lead on `format`: a real model's real calls to both
/// sub-agents in one response, which run at the same time on the server's
/// two slots; every result goes back by id, in call order; the lead answers
/// without tools; `--json` matches the server's usage, the whole tree's too.
fn delegation(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &demo_agents_on(format));
    let (out, report) = run_json(&home, &proxy, "lead", &["-p", &demo_input()]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);
    let lead = made_by(&cast, &log, "lead");
    let first = lead[0].response_json();
    let calls = format.calls(&first);
    assert_eq!(
        calls.len(),
        2,
        "the lead did not call both sub-agents in its first response (the demo's \
         prompt and chat template make it do so at temperature 0): {first}"
    );
    let body = lead[0].request.json();
    let enum_path = match format {
        Format::OpenAi => &body["tools"][0]["function"]["parameters"],
        _ => &body["tools"][0]["input_schema"],
    };
    assert_eq!(
        enum_path["properties"]["agent"]["enum"],
        json!(["summarizer", "critic"])
    );
    if format == Format::OpenAi {
        assert_eq!(body["parallel_tool_calls"], json!(true), "{body}");
    }
    assert_eq!(assert_round_trips(format, &cast, &log, "lead"), 2);
    // The two sub-agents were answered by the server at the same time.
    assert!(
        proxy.server.max_in_flight() >= 2,
        "the two calls of one response did not run side by side"
    );
    let last = lead.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &lead);
    let (mut input, mut output) = (0, 0);
    for e in &log {
        let (i, o) = format.usage(&e.response_json());
        input += i;
        output += o;
    }
    assert_eq!(
        (
            report["total_input_tokens"].as_u64(),
            report["total_output_tokens"].as_u64()
        ),
        (Some(input), Some(output)),
        "the tree's totals are everything the server billed"
    );
    let err = stderr(&out);
    assert!(err.contains("[turn 1] Sending request"), "{err}");
    assert!(err.contains("[sub-agent] Calling \"summarizer\""), "{err}");
    assert!(err.contains("[sub-agent] Calling \"critic\""), "{err}");
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_single_shot() {
    single_shot(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_single_shot() {
    single_shot(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_delegation_to_two_sub_agents_at_once() {
    delegation(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_delegation_to_two_sub_agents_at_once() {
    delegation(Format::Anthropic);
}

/// An agent with an output schema on the OpenAI wire: llama.cpp's server
/// turns `response_format`'s schema into a grammar, so the real model's
/// answer is JSON of that shape on the first turn; axe checks it anyway,
/// prints it compact and puts the value in `--json`'s `output`.
#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_answer_in_a_schema() {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": ["low", "high"]},
            "reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
        },
        "required": ["severity", "reasons"]
    });
    std::fs::write(home.config_dir().join("triage.json"), schema.to_string()).unwrap();
    let cast = Cast::write(
        &home,
        &[(
            "triage".into(),
            format!(
                "name = \"triage\"\nmodel = \"openai/{}\"\n\
                 system_prompt = \"You triage incident reports: how severe, and why.\"\n\
                 [output]\nschema_file = \"triage.json\"\n\
                 [params]\ntemperature = 0\nmax_tokens = 200\n",
                local_model()
            ),
        )],
    );
    let (_, report) = run_json(
        &home,
        &proxy,
        "triage",
        &["-p", "The database disk is full and every write fails."],
    );
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, Format::OpenAi);
    let body = log[0].request.json();
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
    let output = &report["output"];
    assert!(
        output["severity"] == "low" || output["severity"] == "high",
        "{report}"
    );
    let reasons = output["reasons"].as_array().expect("reasons");
    assert!((1..=3).contains(&reasons.len()), "{report}");
    assert_eq!(report["content"], json!(output.to_string()));
    eprintln!(
        "  answer: {}  ({} request(s))",
        report["content"],
        log.len()
    );
}
