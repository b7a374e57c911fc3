//! Response bodies, streams and TOML files: the parsers and loaders fed mutants of real inputs.

use super::*;

#[test]
fn fuzz_anthropic_response_parser_never_panics() {
    let mut seeds = fixtures("anthropic_");
    assert!(seeds.len() >= 4);
    seeds.push(
        r#"{"content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"call_agent","input":{"agent":"x","task":"y","n":[1,{"k":null}]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}"#.into(),
    );
    fuzz("anthropic::parse", &seeds, |s| {
        let _ = anthropic::parse(s);
    });
}

#[test]
fn fuzz_openai_response_parser_never_panics() {
    let seeds = fixtures("openai_");
    assert!(seeds.len() >= 10);
    fuzz("openai::parse", &seeds, |s| {
        let _ = openai::parse(s);
    });
}

#[test]
fn fuzz_ollama_response_parser_never_panics() {
    let seeds = fixtures("ollama_");
    assert!(seeds.len() >= 3);
    fuzz("ollama::parse", &seeds, |s| {
        let _ = ollama::parse(s);
    });
}

/// Fragments that make streams interesting.
pub(crate) const STREAM_TOKENS: &[&str] = &[
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "data:",
    "data: ",
    "event: ",
    ": ping\n",
    "[DONE]",
    "{",
    "}",
    "\"",
    "\"index\":",
    "\"done\":true",
    "\"type\":\"error\"",
    "\"error\":",
    "é",
    "✓",
    "\"message_stop\"",
    "\"partial_json\":",
    "\"arguments\":",
    "\"tool_calls\":",
];

/// A stream fed to `kind`'s decoder in `chunks`: the text it handed out,
/// and what it made of the stream.
fn decode(kind: Wire, chunks: &[&[u8]]) -> (String, String) {
    let mut d = Decoder::new(kind);
    let mut text = String::new();
    for c in chunks {
        if let Err(e) = d.feed(c, &mut |t| text.push_str(t)) {
            return (text, format!("{e:?}"));
        }
    }
    (text, format!("{:?}", d.finish()))
}

/// Never a panic, and the same answer (or the same error) and the same
/// text whether the stream comes whole or cut at three points drawn from
/// the input itself (so that a failure reproduces from it).
fn stream_target(kind: Wire, s: &str) {
    let b = s.as_bytes();
    let whole = decode(kind, &[b]);
    let mut h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    });
    let mut cuts = [0usize; 3];
    for c in &mut cuts {
        h = h.rotate_left(17).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        *c = (h % (b.len() as u64 + 1)) as usize;
    }
    cuts.sort_unstable();
    let split = decode(
        kind,
        &[
            &b[..cuts[0]],
            &b[cuts[0]..cuts[1]],
            &b[cuts[1]..cuts[2]],
            &b[cuts[2]..],
        ],
    );
    assert_eq!(split, whole, "cut at {cuts:?}");
}

#[test]
fn fuzz_stream_decoders_never_panic_and_any_split_decodes_as_the_whole() {
    for (kind, prefix) in [
        (Wire::OpenAi, "openai_"),
        (Wire::Anthropic, "anthropic_"),
        (Wire::Ollama, "ollama_"),
    ] {
        let seeds = fixtures_in("streams", prefix);
        let default = seeds.len() * (MUTANTS + EXTRAS);
        fuzz_with(
            &format!("stream::Decoder ({})", kind.name()),
            &seeds,
            STREAM_TOKENS,
            default,
            |s| stream_target(kind, s),
        );
    }
}

#[test]
fn fuzz_error_body_reader_never_panics() {
    let mut seeds = fixtures("openai_error");
    assert!(seeds.len() >= 7);
    seeds.push("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>".into());
    seeds.push(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    );
    fuzz("error_detail", &seeds, |s| {
        let d = error_detail(s);
        // The message is bounded whatever the body.
        assert!(d.message.chars().count() <= 301, "{}", d.message.len());
    });
}

#[test]
fn fuzz_agent_toml_loader_never_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<String> = std::fs::read_dir(dir.join("fixtures/agents"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 4);
    seeds.push(axe::agent::scaffold("fuzzed"));
    seeds.push(std::fs::read_to_string(dir.join("examples/axe/agents/lead.toml")).unwrap());
    fuzz("agent::parse + validate", &seeds, |s| {
        if let Ok(a) = axe::agent::parse("fuzzed", Path::new("fuzzed.toml"), s) {
            let _ = axe::agent::show(&a, None);
        }
    });
}

#[test]
fn fuzz_config_toml_loader_never_panics() {
    let seeds = vec![
        "[providers.openai]\napi_key = \"sk-x\"\nbase_url = \"http://127.0.0.1:1\"\n\n[retry]\nmax_retries = 2\ninitial_delay_ms = 500\nmax_delay_ms = 30000\n".to_string(),
        "[providers.anthropic]\napi_key = \"a\"\n[providers.ollama]\nbase_url = \"http://h\"\n".to_string(),
    ];
    fuzz("config.toml", &seeds, |s| {
        let _ = axe::config::GlobalConfig::parse(s);
    });
}

/// Output schemas and answers, one input: the schema, `\n---\n`, the answer.
fn schema_seeds() -> Vec<String> {
    let pairs = [
        (
            r##"{"type":"object","properties":{"severity":{"enum":["low","high"]},"reasons":{"type":"array","items":{"type":"string"}}},"required":["severity"]}"##,
            r##"{"severity":"low","reasons":["a"]}"##,
        ),
        (
            r##"{"$defs":{"n":{"oneOf":[{"type":"object","properties":{"k":{"const":"a"},"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}},{"type":"object","properties":{"k":{"const":"b"},"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}}]}},"$ref":"#/$defs/n"}"##,
            r##"{"k":"a","c":[{"k":"b","c":[{"k":"a","c":[]}]}]}"##,
        ),
        (
            r##"{"type":"array","uniqueItems":true,"items":{"multipleOf":0.01,"minimum":-5,"exclusiveMaximum":1e9}}"##,
            r##"[1.25,3,1e3,-4.99,0.1]"##,
        ),
        (
            r##"{"patternProperties":{"^\d+$":{"type":"integer"}},"propertyNames":{"maxLength":3,"pattern":"\w"},"dependentRequired":{"a":["b"]},"dependentSchemas":{"b":{"required":["c"]}},"additionalProperties":false}"##,
            r##"{"12":1,"a":2,"b":3,"c":4}"##,
        ),
        (
            r##"{"if":{"properties":{"t":{"const":1}}},"then":{"required":["x"]},"else":{"not":{"required":["x"]}},"anyOf":[{"$anchor":"s","type":"string"},{"type":"object"}],"contains":{"$ref":"#s"},"minContains":1}"##,
            r##"{"t":1,"x":[1,"a"]}"##,
        ),
    ];
    pairs
        .iter()
        .map(|(s, a)| format!("{s}\n---\n{a}"))
        .collect()
}

#[test]
fn fuzz_schema_check_never_panics_and_ends_by_its_deadline() {
    fuzz("schema::compile + check", &schema_seeds(), |s| {
        let (schema, answer) = s.split_once("\n---\n").unwrap_or((s, "{}"));
        let Ok(schema) = serde_json::from_str::<serde_json::Value>(schema) else {
            return;
        };
        let Ok(shape) = axe::schema::compile(schema, 0) else {
            return;
        };
        let started = Instant::now();
        let _ = shape.check(answer, Some(started + Duration::from_secs(2)));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the check ran past its deadline"
        );
    });
}
