//! Unit tests of the output-schema check: the keywords one by one, the
//! bounds that keep it finite, and the official test suite (run by
//! `make schema-suite`).

use super::*;
use serde_json::json;

impl OutputSchema {
    fn check_now(&self, answer: &str) -> Checked {
        self.check(answer, None)
    }
}

fn triage() -> OutputSchema {
    compile(
        json!({
            "type": "object",
            "properties": {
                "severity": {"type": "string", "enum": ["low", "high"]},
                "reasons": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["severity", "reasons"]
        }),
        2,
    )
    .unwrap()
}

#[test]
fn a_matching_answer_comes_back_compact() {
    let s = triage();
    let got = s.check_now("  {\"severity\": \"low\",\n \"reasons\": [\"a\"]}\n");
    assert_eq!(
        got,
        Checked::Valid(
            json!({"severity": "low", "reasons": ["a"]}),
            "{\"reasons\":[\"a\"],\"severity\":\"low\"}".to_string()
        )
    );
}

#[test]
fn a_fenced_answer_is_unwrapped() {
    let s = triage();
    let got = s.check_now("```json\n{\"severity\": \"high\", \"reasons\": []}\n```");
    assert!(matches!(got, Checked::Valid(..)), "{got:?}");
}

#[test]
fn what_is_wrong_names_the_place() {
    let s = triage();
    let Checked::Invalid(problems) = s.check_now("{\"severity\": \"mid\"}") else {
        panic!("should not match");
    };
    let all = problems.join("\n");
    assert!(all.contains("reasons"), "{all}");
    assert!(all.contains("/severity"), "{all}");
    let Checked::Invalid(problems) = s.check_now("severity: low") else {
        panic!("should not match");
    };
    assert!(problems[0].starts_with("at /: not JSON: "), "{problems:?}");
}

#[test]
fn an_invalid_schema_is_a_config_error_naming_the_place() {
    let refused = |schema: Value| match compile(schema, 2) {
        Err(Error::Config(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(json!({"type": 12})),
        "output schema: /type: must be a type name or a non-empty list of them"
    );
    assert_eq!(
        refused(json!({"properties": {"a": {"type": "text"}}})),
        "output schema: /properties/a/type: unknown type \"text\""
    );
    assert_eq!(
        refused(json!({"properties": {"a": {"unevaluatedProperties": false}}})),
        "output schema: /properties/a/unevaluatedProperties: keyword \"unevaluatedProperties\" is not one axe checks"
    );
    assert!(
        refused(json!({"pattern": "(unclosed"}))
            .starts_with("output schema: /pattern: not a pattern axe can use: "),
    );
    // Nothing is fetched: a reference must point inside the schema.
    assert!(refused(json!({"$ref": "file:///etc/hostname"})).contains("only a reference inside"));
    assert!(refused(json!({"$ref": "#/$defs/missing"})).contains("only a reference inside"));
}

/// Each case: a schema, one answer it takes, one it refuses and what it
/// says about that one.
type Case = (Value, Value, Value, &'static str);

fn each_takes_and_refuses(cases: &[Case]) {
    for (schema, good, bad, says) in cases {
        let s = compile(schema.clone(), 0).unwrap_or_else(|e| panic!("{schema}: {e}"));
        assert!(
            matches!(s.check_now(&good.to_string()), Checked::Valid(..)),
            "{schema} should take {good}"
        );
        assert_eq!(
            s.check_now(&bad.to_string()),
            Checked::Invalid(vec![says.to_string()]),
            "{schema} on {bad}"
        );
    }
}

/// Each keyword of the subset on a single value (type, enum, const,
/// lengths, bounds, multipleOf), with one answer it takes and one it
/// refuses (and what it says).
#[test]
fn value_keywords_take_and_refuse() {
    each_takes_and_refuses(&[
        (
            json!({"type": "integer"}),
            json!(3.0),
            json!(3.5),
            "at /: expected integer, got number",
        ),
        (
            json!({"type": ["string", "null"]}),
            json!(null),
            json!(1),
            "at /: expected string or null, got number",
        ),
        (
            json!({"enum": [1, "a"]}),
            json!(1.0),
            json!("b"),
            "at /: \"b\" is not one of 1, \"a\"",
        ),
        (
            json!({"const": {"a": 1}}),
            json!({"a": 1}),
            json!({"a": 2}),
            "at /: must be {\"a\":1}",
        ),
        (
            json!({"minLength": 2, "maxLength": 3}),
            json!("éé"),
            json!("abcd"),
            "at /: 4 characters, more than 3",
        ),
        (
            json!({"minimum": 1, "exclusiveMaximum": 2}),
            json!(1),
            json!(2),
            "at /: 2 is not less than 2",
        ),
        (
            json!({"multipleOf": 0.5}),
            json!(1.5),
            json!(1.2),
            "at /: 1.2 is not a multiple of 0.5",
        ),
    ]);
}

/// Each keyword of the subset on arrays and objects, likewise.
#[test]
fn array_and_object_keywords_take_and_refuse() {
    each_takes_and_refuses(&[
        (
            json!({"items": {"type": "string"}, "maxItems": 2}),
            json!(["a"]),
            json!(["a", 1]),
            "at /1: expected string, got number",
        ),
        (
            json!({"prefixItems": [{"const": 1}], "items": false}),
            json!([1]),
            json!([1, 2]),
            "at /1: no value is allowed here",
        ),
        (
            json!({"uniqueItems": true}),
            json!([1, 2]),
            json!([1, 1.0]),
            "at /: item 1 repeats an earlier one",
        ),
        (
            json!({"contains": {"const": 2}}),
            json!([1, 2]),
            json!([1]),
            "at /: 0 items match \"contains\", wanted 1 or more",
        ),
        (
            json!({"required": ["a"]}),
            json!({"a": 0}),
            json!({}),
            "at /: missing property \"a\"",
        ),
        (
            json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            json!({"a": "x"}),
            json!({"b": 1}),
            "at /: property \"b\" is not allowed",
        ),
        (
            json!({"propertyNames": {"maxLength": 1}}),
            json!({"a": 1}),
            json!({"ab": 1}),
            "at /ab: 2 characters, more than 1",
        ),
    ]);
}

/// Each keyword of the subset that combines schemas (anyOf, oneOf, not,
/// if/then, $ref), likewise.
#[test]
fn combining_keywords_take_and_refuse() {
    each_takes_and_refuses(&[
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!("x"),
            json!(1),
            "at /: matches none of the 2 schemas of anyOf",
        ),
        (
            json!({"oneOf": [{"minimum": 0}, {"maximum": 10}]}),
            json!(-1),
            json!(5),
            "at /: matches 2 of the schemas of oneOf, not exactly one",
        ),
        (
            json!({"not": {"type": "null"}}),
            json!(0),
            json!(null),
            "at /: matches the schema of \"not\"",
        ),
        (
            json!({"if": {"const": 1}, "then": false}),
            json!(2),
            json!(1),
            "at /: no value is allowed here",
        ),
        (
            json!({"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}}),
            json!({"a": "x"}),
            json!({"a": 1}),
            "at /a: expected string, got number",
        ),
    ]);
}

#[test]
fn a_ref_loop_that_never_reaches_into_the_answer_is_refused() {
    let loops = [
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
                         "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
        json!({"not": {"$ref": "#"}}),
    ];
    for schema in loops {
        match compile(schema.clone(), 0) {
            Err(Error::Config(m)) => assert!(m.contains("loops back"), "{m}"),
            other => panic!("{schema}: {other:?}"),
        }
    }
    // Through an array's items the answer is consumed: no loop.
    let nested = compile(json!({"type": "array", "items": {"$ref": "#"}}), 0).unwrap();
    let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
    assert!(matches!(nested.check_now(&deep), Checked::Valid(..)));
}

#[test]
fn a_ref_must_point_at_a_schema_that_was_read() {
    let schema = json!({
        "$defs": {"a": {"description": {"patternProperties": {"x": false}}}},
        "$ref": "#/$defs/a/description"
    });
    match compile(schema, 0) {
        Err(Error::Config(m)) => assert!(m.contains("is not a schema in this document"), "{m}"),
        other => panic!("{other:?}"),
    }
    let anchored = json!({"$defs": {"a": {"$anchor": "name", "type": "string"}},
                          "properties": {"n": {"$ref": "#name"}},
                          "additionalProperties": {"$ref": "#/$defs/a%7E0"}});
    assert!(compile(anchored, 0).is_err(), "a ref to a missing ~ name");
}

mod check {
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    use crate::schema::check::*;
    use crate::schema::compile::compile;

    fn outcome(schema: Value, answer: &Value) -> Outcome {
        check(&compile(&schema).unwrap(), answer, 10_000_000, None)
    }

    /// Each array level passes through a chain of 200 `$ref`s: the walk
    /// reaches its depth limit and says so, on a thread with the stack a
    /// sub-agent's thread has (2 MiB), in a debug build.
    #[test]
    fn the_depth_limit_comes_before_the_stack_runs_out() {
        let mut defs = serde_json::Map::new();
        for i in 0..200 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        defs.insert(
            "d200".into(),
            json!({"type": "array", "items": {"$ref": "#/$defs/d0"}}),
        );
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        let answer: Value =
            serde_json::from_str(&format!("{}{}", "[".repeat(100), "]".repeat(100))).unwrap();
        let got = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || outcome(schema, &answer))
            .unwrap()
            .join()
            .unwrap();
        match got {
            Outcome::Invalid(p) => assert!(p[0].contains("nest too deep to check"), "{p:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_passed_deadline_stops_the_check() {
        let schema = json!({"type": "array", "items": {"type": "integer"}});
        let answer = Value::Array((0..100_000).map(|i| json!(i)).collect());
        let c = compile(&schema).unwrap();
        let past = Instant::now() - Duration::from_millis(1);
        assert!(matches!(
            check(&c, &answer, u64::MAX, Some(past)),
            Outcome::TimedOut
        ));
        assert!(matches!(check(&c, &answer, u64::MAX, None), Outcome::Valid));
    }

    #[test]
    fn the_step_budget_ends_a_costly_check_as_an_answer_not_accepted() {
        let big_enum: Vec<Value> = (0..10_000).map(|i| json!(format!("v{i}"))).collect();
        let schema = json!({"items": {"enum": big_enum}});
        let answer = Value::Array((0..10_000).map(|_| json!("nope")).collect());
        match check(&compile(&schema).unwrap(), &answer, 100_000, None) {
            Outcome::Invalid(p) => assert!(
                p[0].contains("could not be checked in 100000 steps"),
                "{p:?}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_listing_stops_after_enough_problems() {
        let schema = json!({"items": {"type": "string"}});
        let answer = Value::Array((0..1000).map(|i| json!(i)).collect());
        match outcome(schema, &answer) {
            Outcome::Invalid(p) => assert_eq!(p.len(), MAX_PROBLEMS),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ecmascript_classes_match_whole_characters() {
        let c = compile(&json!({"pattern": "^\\D\\s\\w.$"})).unwrap();
        let ok = |s: &str| matches!(check(&c, &json!(s), 1000, None), Outcome::Valid);
        assert!(ok("é\u{a0}_ß"));
        assert!(!ok("1 a."));
        assert!(!ok("é éé"), "\\w is ASCII");
    }
}

mod suite {
    //! The official JSON Schema Test Suite (draft 2020-12) run through the
    //! check: `make schema-suite` fetches it and runs this. Every case whose
    //! schema axe accepts must come out as the suite says; what is refused
    //! is counted.

    use std::path::Path;

    use serde_json::Value;

    #[test]
    #[ignore = "needs the suite: make schema-suite"]
    fn the_official_suite_agrees_on_every_schema_axe_accepts() {
        let Ok(dir) = std::env::var("AXE_SCHEMA_SUITE") else {
            panic!("set AXE_SCHEMA_SUITE to the suite's tests/draft2020-12 directory");
        };
        let (mut right, mut wrong, mut refused) = (0, Vec::new(), 0);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in &files {
            let groups: Value =
                serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            for group in groups.as_array().unwrap() {
                let tests = group["tests"].as_array().unwrap();
                let schema = match crate::schema::compile(group["schema"].clone(), 0) {
                    Ok(s) => s,
                    Err(e) => {
                        if std::env::var("AXE_SCHEMA_SUITE_REFUSED").is_ok() {
                            println!("  refused: {name}: {} tests: {e}", tests.len());
                        }
                        refused += tests.len();
                        continue;
                    }
                };
                for t in tests {
                    let want = t["valid"].as_bool().unwrap();
                    let got = schema.check(&t["data"].to_string(), None);
                    let valid = matches!(got, crate::schema::Checked::Valid(..));
                    if valid == want {
                        right += 1;
                    } else {
                        wrong.push(format!(
                            "{name}: {} / {}: want {want}, got {got:?}",
                            group["description"], t["description"]
                        ));
                    }
                }
            }
        }
        let total = right + wrong.len() + refused;
        println!(
            "schema suite ({}): {right} right, {} wrong of {} accepted; {refused} of {total} refused ({:.0}%)",
            Path::new(&dir).display(),
            wrong.len(),
            right + wrong.len(),
            refused as f64 * 100.0 / total as f64
        );
        for w in &wrong {
            println!("  wrong: {w}");
        }
        assert!(wrong.is_empty());
    }
}
