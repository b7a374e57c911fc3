//! The output-schema check is bounded like everything else (design D22):
//! schemas that made a small answer exponential work, `$ref` loops that
//! never ended, quadratic `uniqueItems`, values quoted whole, deep answers
//! refused as loops, `multipleOf` on a float tolerance and `$ref`s into
//! places that are not schemas — each through the binary, on the OpenAI
//! wire's fake.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// An agent `shaped` whose `[output]` is `schema` (as a schema file).
fn home_with_schema(schema: &Value, extra: &str) -> Home {
    let home = Home::new();
    let dir = home.config_dir();
    std::fs::write(Path::new(&dir).join("s.json"), schema.to_string()).unwrap();
    home.named_agent(
        "shaped",
        "openai/gpt-4o",
        &format!("[output]\nschema_file = \"s.json\"\n{extra}"),
    );
    home
}

/// Runs `shaped` against a fake that always answers `answer`, with
/// `--timeout 5`, killed after `limit` if it has not ended.
fn run_shaped(home: &Home, answer: &str, limit: Duration) -> (Bounded, FakeServer) {
    let server = FakeServer::json(200, &openai_text(answer, 1, 1));
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "shaped", "--timeout", "5", "-p", "x"]);
    (run_within(&mut cmd, limit), server)
}

/// A tree whose nodes are one of three kinds, each with the same recursive
/// `children`: checked naively, every level tries every kind below it.
fn three_kinds() -> Value {
    let kind = |k: &str| {
        json!({
            "type": "object",
            "properties": {
                "kind": {"const": k},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
            },
            "required": ["kind"]
        })
    };
    json!({
        "$defs": {"node": {"oneOf": [kind("a"), kind("b"), kind("c")]}},
        "$ref": "#/$defs/node"
    })
}

fn nested_kinds(depth: usize) -> String {
    let mut v = json!({"kind": "c"});
    for _ in 0..depth {
        v = json!({"kind": "c", "children": [v]});
    }
    v.to_string()
}

#[test]
fn a_tree_of_one_of_kinds_forty_deep_is_checked_in_bounded_work() {
    let home = home_with_schema(&three_kinds(), "");
    let answer = nested_kinds(40);
    let (run, _server) = run_shaped(&home, &answer, Duration::from_secs(20));
    assert!(!run.killed, "still checking after {:?}", run.took);
    assert_eq!(code(&run.output), 0, "{}", stderr(&run.output));
    let printed: Value = serde_json::from_str(stdout(&run.output).trim()).unwrap();
    assert_eq!(printed, serde_json::from_str::<Value>(&answer).unwrap());
}

#[test]
fn forty_defs_of_two_options_each_end_with_the_answers_exit_code() {
    // d0 .. d39: each tries d(i+1) two ways; d40 wants a string. A number
    // fails every way, 2^40 of them if results were not remembered.
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}], "minimum": 0}]}),
        );
    }
    defs.insert("d40".into(), json!({"type": "string"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    let home = home_with_schema(&schema, "max_repairs = 0\n");
    let (run, server) = run_shaped(&home, "1", Duration::from_secs(20));
    assert!(!run.killed, "still checking after {:?}", run.took);
    assert_eq!(code(&run.output), 5, "{}", stderr(&run.output));
    assert_eq!(server.requests().len(), 1);
    // And a string passes.
    let (run, _) = run_shaped(&home, "\"x\"", Duration::from_secs(20));
    assert_eq!(code(&run.output), 0, "{}", stderr(&run.output));
}

#[test]
fn a_ref_loop_that_never_reaches_into_the_answer_is_exit_2_before_anything_is_sent() {
    let loops = [
        json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
    ];
    for schema in loops {
        let home = home_with_schema(&schema, "");
        let (run, server) = run_shaped(&home, "null", Duration::from_secs(20));
        assert!(!run.killed, "{schema}");
        assert_eq!(code(&run.output), 2, "{schema}: {}", stderr(&run.output));
        let err = stderr(&run.output);
        assert!(err.starts_with("axe: output schema: /$defs/"), "{err}");
        assert!(err.contains("loops back"), "{err}");
        assert!(server.requests().is_empty());
    }
}

#[test]
fn two_hundred_thousand_distinct_items_are_checked_for_uniqueness_quickly() {
    let home = home_with_schema(
        &json!({"type": "array", "uniqueItems": true}),
        "max_repairs = 0\n",
    );
    let items: Vec<u64> = (0..200_000).collect();
    let answer = serde_json::to_string(&items).unwrap();
    let (run, _) = run_shaped(&home, &answer, Duration::from_secs(15));
    assert!(!run.killed, "still checking after {:?}", run.took);
    assert_eq!(code(&run.output), 0, "{}", stderr(&run.output));
    eprintln!("200,000 unique items: the whole run took {:?}", run.took);
    // A repeat at the end is still found, and named.
    let mut items = items;
    items.push(123_456);
    let answer = serde_json::to_string(&items).unwrap();
    let (run, _) = run_shaped(&home, &answer, Duration::from_secs(15));
    assert_eq!(code(&run.output), 5);
    assert!(
        stderr(&run.output).contains("at /: item 200000 repeats an earlier one"),
        "{}",
        stderr(&run.output)
    );
}

#[test]
fn a_huge_answer_is_quoted_in_a_few_hundred_characters() {
    let home = home_with_schema(&json!({"enum": ["low", "high"]}), "max_repairs = 1\n");
    let answer = serde_json::to_string(&"x".repeat(2_000_000)).unwrap();
    let (run, server) = run_shaped(&home, &answer, Duration::from_secs(20));
    assert_eq!(code(&run.output), 5, "{}", stderr(&run.output));
    let err = stderr(&run.output);
    assert!(err.len() < 600, "an error line of {} bytes", err.len());
    assert!(
        err.contains("...[cut] is not one of \"low\", \"high\""),
        "{err}"
    );
    // The repair turn quotes the answer short (the answer itself is the
    // assistant's own turn, sent back as the conversation has it).
    let repair = server.requests()[1].json();
    let messages = repair["messages"].as_array().unwrap();
    let asked = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        asked.len() < 1_000,
        "a repair message of {} bytes",
        asked.len()
    );
}

#[test]
fn forty_levels_of_nested_arrays_are_an_answer_not_a_loop() {
    let schema = json!({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"});
    let home = home_with_schema(&schema, "");
    let answer = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let (run, _) = run_shaped(&home, &answer, Duration::from_secs(20));
    assert_eq!(code(&run.output), 0, "{}", stderr(&run.output));
    assert_eq!(stdout(&run.output), format!("{answer}\n"));
}

#[test]
fn multiple_of_is_decided_on_the_decimal_the_answer_wrote() {
    let cases = [
        (json!({"multipleOf": 0.01}), "1234567.89", 0),
        (json!({"multipleOf": 0.1}), "1e308", 0),
        (json!({"multipleOf": 2}), "9007199254740993", 5),
        (json!({"multipleOf": 2}), "9007199254740992", 0),
    ];
    for (schema, answer, want) in cases {
        let home = home_with_schema(&schema, "max_repairs = 0\n");
        let (run, _) = run_shaped(&home, answer, Duration::from_secs(20));
        assert_eq!(
            code(&run.output),
            want,
            "{answer} {schema}: {}",
            stderr(&run.output)
        );
    }
}

#[test]
fn a_ref_into_a_place_that_is_not_a_schema_is_exit_2() {
    let schema = json!({
        "$defs": {"a": {"description": {"patternProperties": {"^x": false}}}},
        "$ref": "#/$defs/a/description"
    });
    let home = home_with_schema(&schema, "");
    let (run, server) = run_shaped(&home, "{\"x\": 1}", Duration::from_secs(20));
    assert_eq!(code(&run.output), 2, "{}", stderr(&run.output));
    assert!(
        stderr(&run.output).contains("\"#/$defs/a/description\" is not a schema in this document"),
        "{}",
        stderr(&run.output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn pattern_properties_dependent_keywords_anchors_and_counts_written_as_decimals_are_checked() {
    let schema = json!({
        "type": "object",
        "patternProperties": {"^n_": {"type": "integer"}},
        "dependentRequired": {"card": ["billing"]},
        "dependentSchemas": {"gift": {"required": ["to"]}},
        "properties": {"code": {"$ref": "#short"}},
        "$defs": {"short": {"$anchor": "short", "type": "string", "maxLength": 2.0}},
        "additionalProperties": {"contentMediaType": "text/plain"}
    });
    let cases = [
        (json!({"n_a": 1, "code": "ab"}), 0, ""),
        (
            json!({"n_a": 1.5}),
            5,
            "at /n_a: expected integer, got number",
        ),
        (
            json!({"card": 1}),
            5,
            "at /: property \"card\" requires property \"billing\"",
        ),
        (json!({"gift": true}), 5, "at /: missing property \"to\""),
        (
            json!({"code": "abc"}),
            5,
            "at /code: 3 characters, more than 2",
        ),
    ];
    for (answer, want, says) in cases {
        let home = home_with_schema(&schema, "max_repairs = 0\n");
        let (run, _) = run_shaped(&home, &answer.to_string(), Duration::from_secs(20));
        assert_eq!(code(&run.output), want, "{answer}: {}", stderr(&run.output));
        assert!(
            stderr(&run.output).contains(says),
            "{answer}: {}",
            stderr(&run.output)
        );
    }
}

#[test]
fn what_stays_unsupported_is_refused_naming_it() {
    for (schema, says) in [
        (
            json!({"unevaluatedProperties": false}),
            "keyword \"unevaluatedProperties\" is not one axe checks",
        ),
        (
            json!({"$dynamicRef": "#x"}),
            "keyword \"$dynamicRef\" is not one axe checks",
        ),
        (
            json!({"$ref": "https://example.com/other.json"}),
            "only a reference inside this schema",
        ),
        (
            json!({"properties": {"a": {"$id": "inner", "type": "string"}}}),
            "an embedded schema",
        ),
        (
            json!({"$schema": "https://example.com/my-meta"}),
            "is not a meta-schema axe knows",
        ),
    ] {
        let home = home_with_schema(&schema, "");
        let (run, _) = run_shaped(&home, "{}", Duration::from_secs(20));
        assert_eq!(code(&run.output), 2, "{schema}");
        assert!(
            stderr(&run.output).contains(says),
            "{schema}: {}",
            stderr(&run.output)
        );
    }
}
