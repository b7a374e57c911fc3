//! Output schemas (design D22): an agent's `[output]` schema (or
//! `--output-schema`'s) read and checked, an answer checked against it, and
//! the message that tells the model what to fix. What part of JSON Schema
//! is checked is in `subset`.

mod subset;

use std::path::Path;

use serde_json::Value;

use crate::agent::{OutputConfig, SchemaSource};
use crate::error::Error;
use crate::{paths, read};

/// The most validation errors a repair message lists.
const MAX_LISTED: usize = 8;

/// An output schema that axe can check answers against, with what a run
/// needs of `[output]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    /// The schema as written (sent to providers, shown by `--dry-run`).
    pub schema: Value,
    pub max_repairs: u32,
}

/// What an answer turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// It matches: the value, and its compact JSON text.
    Valid(Value, String),
    /// It does not: what is wrong, first things first, each one line.
    Invalid(Vec<String>),
}

/// The agent's `[output]`, or `--output-schema`'s file in its place, read
/// and compiled. `config_dir` is where a `schema_file` is relative to;
/// `override_file` is relative to `cwd` (`~` expanded in both, as for a
/// skill). Errors are config errors (exit 2).
pub fn load(
    output: Option<&OutputConfig>,
    override_file: Option<&str>,
    config_dir: Option<&Path>,
    cwd: &Path,
) -> Result<Option<OutputSchema>, Error> {
    let max_repairs = output.map_or(crate::agent::DEFAULT_MAX_REPAIRS, |o| o.max_repairs);
    let schema = match (override_file, output.map(|o| &o.schema)) {
        (Some(file), _) => read_file(&paths::resolve_against(cwd, file), "--output-schema")?,
        (None, Some(SchemaSource::Inline(v))) => v.clone(),
        (None, Some(SchemaSource::File(file))) => {
            let dir = config_dir.unwrap_or(cwd);
            read_file(&paths::resolve_against(dir, file), "output.schema_file")?
        }
        (None, None) => return Ok(None),
    };
    compile(schema, max_repairs).map(Some)
}

/// Checks that `schema` is one axe can check answers against (design D22).
pub fn compile(schema: Value, max_repairs: u32) -> Result<OutputSchema, Error> {
    subset::lint(&schema)
        .map_err(|e| Error::config(format!("output schema: {}", crate::text::one_line(&e))))?;
    Ok(OutputSchema {
        schema,
        max_repairs,
    })
}

/// Reads a JSON schema file: regular, at most 1 MiB, JSON.
fn read_file(path: &Path, what: &str) -> Result<Value, Error> {
    let text = read::config_text(path)
        .map_err(|e| Error::config(format!("{what} {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::config(format!("{what} {}: not JSON: {e}", path.display())))
}

impl OutputSchema {
    /// Checks `answer`, the model's final text: it must be one JSON value
    /// (a fenced ```json block around it is taken off) matching the schema.
    pub fn check(&self, answer: &str) -> Checked {
        let value: Value = match serde_json::from_str(unfenced(answer)) {
            Ok(v) => v,
            Err(e) => return Checked::Invalid(vec![format!("at /: not JSON: {e}")]),
        };
        let problems = subset::errors(&self.schema, &value);
        if problems.is_empty() {
            let text = value.to_string();
            Checked::Valid(value, text)
        } else {
            Checked::Invalid(problems)
        }
    }

    /// The user turn that asks for a repair: what is wrong, and the schema.
    pub fn repair_message(&self, problems: &[String]) -> String {
        let mut text = String::from("Your answer does not match the required JSON schema:\n");
        for p in problems.iter().take(MAX_LISTED) {
            text.push_str(&format!("- {p}\n"));
        }
        if problems.len() > MAX_LISTED {
            text.push_str(&format!("- ... and {} more\n", problems.len() - MAX_LISTED));
        }
        text.push_str(&format!(
            "Answer again with only a JSON value that matches this schema, and nothing else:\n{}",
            self.schema
        ));
        text
    }
}

/// `text` without surrounding whitespace and without a Markdown code fence
/// around it (models often add one even when asked not to).
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // Drop the info string (`json`) on the opening line.
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let got = s.check("  {\"severity\": \"low\",\n \"reasons\": [\"a\"]}\n");
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
        let got = s.check("```json\n{\"severity\": \"high\", \"reasons\": []}\n```");
        assert!(matches!(got, Checked::Valid(..)), "{got:?}");
    }

    #[test]
    fn what_is_wrong_names_the_place() {
        let s = triage();
        let Checked::Invalid(problems) = s.check("{\"severity\": \"mid\"}") else {
            panic!("should not match");
        };
        let all = problems.join("\n");
        assert!(all.contains("reasons"), "{all}");
        assert!(all.contains("/severity"), "{all}");
        let Checked::Invalid(problems) = s.check("severity: low") else {
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
            refused(json!({"properties": {"a": {"patternProperties": {}}}})),
            "output schema: /properties/a/patternProperties: keyword \"patternProperties\" is not one axe checks"
        );
        assert!(
            refused(json!({"pattern": "(unclosed"}))
                .starts_with("output schema: /pattern: not a pattern axe can use: "),
        );
        // Nothing is fetched: a reference must point inside the schema.
        assert!(
            refused(json!({"$ref": "file:///etc/hostname"})).contains("only a reference inside")
        );
        assert!(refused(json!({"$ref": "#/$defs/missing"})).contains("only a reference inside"));
    }

    /// Each keyword of the subset, with one answer it takes and one it
    /// refuses (and what it says).
    #[test]
    fn each_keyword_takes_and_refuses() {
        let cases: &[(Value, Value, Value, &str)] = &[
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
        ];
        for (schema, good, bad, says) in cases {
            let s = compile(schema.clone(), 0).unwrap_or_else(|e| panic!("{schema}: {e}"));
            assert!(
                matches!(s.check(&good.to_string()), Checked::Valid(..)),
                "{schema} should take {good}"
            );
            assert_eq!(
                s.check(&bad.to_string()),
                Checked::Invalid(vec![says.to_string()]),
                "{schema} on {bad}"
            );
        }
    }

    #[test]
    fn a_ref_loop_ends() {
        let s = compile(
            json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            0,
        )
        .unwrap();
        let Checked::Invalid(problems) = s.check("1") else {
            panic!("should not match");
        };
        assert!(problems[0].contains("nests too deep"), "{problems:?}");
    }
}
