//! The schema Anthropic's JSON outputs are sent (`output_config.format`),
//! written from the agent's output schema, or the reason none can be.
//!
//! That API takes a subset of JSON Schema and requires every object to be
//! closed (`additionalProperties: false`). What it does not take is loosened,
//! never made stricter: `oneOf` becomes `anyOf`, and a keyword it does not
//! accept (bounds, `pattern`, `default`, a string `format` outside its list,
//! ...) moves into the schema's `description` as `{key: value}`, the rule of
//! Anthropic's own SDKs. An object that closing would contradict (a map, a
//! free-form object, a required key it does not list, objects joined by
//! `allOf`) cannot be sent at all: the agent is then checked and repaired by
//! axe alone (design D22).

use serde_json::{Map, Value};

/// Keywords that carry no constraint on the answer: left out.
const DROPPED: &[&str] = &["$schema", "$id", "$comment"];

/// Keywords kept as they are.
const KEPT: &[&str] = &["type", "title", "required", "$ref"];

/// Keywords whose value is an object of schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];

/// The string formats the API accepts (its structured-outputs documentation).
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Schemas nested deeper than this are not sent (axe still checks them).
const MAX_DEPTH: usize = 64;

/// `schema` as Anthropic's JSON outputs take it, or why it cannot be sent
/// without asking for less than, or something other than, what it allows.
pub fn for_anthropic(schema: &Value) -> Result<Value, String> {
    node(schema, "", 0)
}

fn node(schema: &Value, at: &str, depth: usize) -> Result<Value, String> {
    let Value::Object(map) = schema else {
        return Ok(schema.clone());
    };
    if depth > MAX_DEPTH {
        return Err(format!("{}: nested more than {MAX_DEPTH} deep", place(at)));
    }
    let object = is_object(map);
    closable(map, object, at)?;
    let mut out = Map::with_capacity(map.len() + 1);
    let mut described: Vec<(&str, &Value)> = Vec::new();
    let mut description = None;
    for (key, value) in map {
        match key.as_str() {
            k if DROPPED.contains(&k) => {}
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            "description" => match value {
                Value::String(s) => description = Some(s.as_str()),
                other => described.push((key, other)),
            },
            "enum" if value.as_array().is_some_and(|l| l.iter().all(primitive)) => {
                out.insert(key.clone(), value.clone());
            }
            "const" if primitive(value) => {
                out.insert(key.clone(), value.clone());
            }
            k if SCHEMA_MAPS.contains(&k) && value.is_object() => {
                let mut sent = Map::new();
                let here = child(at, key);
                for (name, s) in value.as_object().into_iter().flatten() {
                    sent.insert(name.clone(), node(s, &child(&here, name), depth + 1)?);
                }
                out.insert(key.clone(), Value::Object(sent));
            }
            "items" => {
                out.insert(key.clone(), node(value, &child(at, key), depth + 1)?);
            }
            // oneOf goes as anyOf, which is looser and what the API takes;
            // beside an anyOf of its own it can only be described.
            "oneOf" if map.contains_key("anyOf") => described.push((key, value)),
            "anyOf" | "allOf" | "oneOf" if value.is_array() => {
                let here = child(at, key);
                let mut list = Vec::new();
                for (i, s) in value.as_array().into_iter().flatten().enumerate() {
                    list.push(node(s, &format!("{here}/{i}"), depth + 1)?);
                }
                let name = if key == "oneOf" {
                    "anyOf"
                } else {
                    key.as_str()
                };
                out.insert(name.into(), Value::Array(list));
            }
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            "minItems" if value.as_u64().is_some_and(|n| n <= 1) => {
                out.insert(key.clone(), value.clone());
            }
            // Closed below; `closable` has refused any other value.
            "additionalProperties" if object => {}
            _ => described.push((key, value)),
        }
    }
    if object {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(text) = describe(description, &described) {
        out.insert("description".into(), Value::String(text));
    }
    Ok(Value::Object(out))
}

/// Whether `map` is an object schema, which is sent closed.
fn is_object(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(list)) => list.iter().any(|t| t == "object"),
        _ => ["properties", "additionalProperties", "patternProperties"]
            .iter()
            .any(|k| map.contains_key(*k)),
    }
}

/// Why closing `map` (and the object schemas its combinators apply to the
/// same value) would forbid answers it allows, if it would.
fn closable(map: &Map<String, Value>, object: bool, at: &str) -> Result<(), String> {
    let here = place(at);
    let combined = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .map_or(0, |list| list.iter().filter(|s| may_close(s)).count())
    };
    if combined("allOf") > 1 {
        return Err(format!(
            "{here}: objects joined by allOf would each be closed to its own properties"
        ));
    }
    if !object {
        return Ok(());
    }
    if map.contains_key("patternProperties") {
        return Err(format!(
            "{here}: patternProperties allows keys it does not list"
        ));
    }
    let open = map.get("additionalProperties").is_some_and(|a| a != false);
    if open {
        return Err(format!(
            "{here}: additionalProperties allows keys it does not list"
        ));
    }
    let listed = map.get("properties").and_then(Value::as_object);
    let count = listed.map_or(0, Map::len);
    if count == 0 && map.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(format!(
            "{here}: an object with no properties would be closed to {{}}"
        ));
    }
    let required = map.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten() {
        let known = name
            .as_str()
            .is_some_and(|n| listed.is_some_and(|l| l.contains_key(n)));
        if !known {
            return Err(format!(
                "{here}: required {name} is not among its properties"
            ));
        }
    }
    if map
        .get("minProperties")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > count as u64)
    {
        return Err(format!(
            "{here}: minProperties is more than the {count} properties it lists"
        ));
    }
    if ["anyOf", "oneOf", "allOf"].iter().any(|k| combined(k) > 0) {
        return Err(format!(
            "{here}: an object and the objects of its anyOf, oneOf or allOf would each be closed to its own properties"
        ));
    }
    Ok(())
}

/// Whether `schema` is or may be (through a `$ref`) an object schema.
fn may_close(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|m| m.contains_key("$ref") || is_object(m))
}

/// A value `enum` and `const` may hold on the API's side.
fn primitive(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// The description sent: the schema's own, then what was moved into it.
fn describe(own: Option<&str>, moved: &[(&str, &Value)]) -> Option<String> {
    if moved.is_empty() {
        return own.map(str::to_string);
    }
    let listed: Vec<String> = moved
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect();
    let moved = format!("{{{}}}", listed.join(", "));
    Some(match own {
        Some(own) => format!("{own}\n\n{moved}"),
        None => moved,
    })
}

/// The JSON pointer of `key` inside the schema at `at`.
fn child(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn place(at: &str) -> String {
    if at.is_empty() {
        "the schema's root".into()
    } else {
        at.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unsupported_keywords_move_into_the_description_and_one_of_becomes_any_of() {
        let sent = for_anthropic(&json!({
            "oneOf": [
                {"type": "integer", "minimum": 1, "description": "a count"},
                {"type": "string", "format": "ipv4-cidr", "default": "x", "pattern": "^a"},
                {"type": "string", "format": "email", "title": "Mail"}
            ],
            "$schema": "https://json-schema.org/draft/2020-12/schema"
        }))
        .unwrap();
        assert_eq!(
            sent,
            json!({"anyOf": [
                {"type": "integer", "description": "a count\n\n{minimum: 1}"},
                {"type": "string", "description": "{default: x, format: ipv4-cidr, pattern: ^a}"},
                {"type": "string", "format": "email", "title": "Mail"}
            ]})
        );
    }

    #[test]
    fn objects_that_closing_would_contradict_are_not_sent() {
        let refused = |s: Value| for_anthropic(&s).unwrap_err();
        assert_eq!(
            refused(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
            "the schema's root: additionalProperties allows keys it does not list"
        );
        assert_eq!(
            refused(json!({"properties": {"m": {"type": "object"}}})),
            "/properties/m: an object with no properties would be closed to {}"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": true}, "required": ["b"]})),
            "the schema's root: required \"b\" is not among its properties"
        );
        assert!(
            refused(json!({"allOf": [{"$ref": "#/$defs/a"}, {"properties": {"b": true}}]}))
                .contains("allOf")
        );
        // Closed by its author, or listing what it allows: sent.
        assert!(for_anthropic(&json!({"type": "object", "additionalProperties": false})).is_ok());
        assert_eq!(
            for_anthropic(&json!({"type": ["object", "null"], "properties": {"a": {}}})).unwrap(),
            json!({"type": ["object", "null"], "properties": {"a": {}}, "additionalProperties": false})
        );
    }
}
