//! Tools in the shape Ollama's tool type takes (design §4.2): its
//! `parameters` model only `type` (`object`), `$defs`, `items`, `required`
//! and `properties`, and a property only `type`, `items`, `description` and
//! `enum` (the `ollama` Python package's `Tool`; its server's Go type the
//! same, which drops the rest unread). An MCP server's input schema says
//! more (`$schema`, `title`, `additionalProperties`, `default`,
//! `minimum`, `anyOf`, ...): what describes an argument is kept for the
//! model in the property's description, the rest dropped.

use serde_json::{Map, Value, json};

use crate::provider::Request;

/// Keys of a property that tell the model nothing about its value:
/// dropped, never described.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "$comment", "title", "examples"];

/// `req`'s tools, `{"type": "function", "function": {...}}` as OpenAI's,
/// with parameters Ollama's type takes.
pub(crate) fn tools(req: &Request) -> Value {
    let mut tools = crate::provider::openai::function_tools(req);
    if let Some(list) = tools.as_array_mut() {
        for t in list {
            let p = &mut t["function"]["parameters"];
            *p = parameters(p);
        }
    }
    tools
}

/// A tool's input schema as Ollama's `parameters`: an object schema's
/// `type`, `$defs`, `items`, `required` (names only) and `properties` (each
/// by [`property`]); whatever else the schema says of the whole
/// (`$schema`, `title`, `additionalProperties`, its own `description`) is
/// dropped.
fn parameters(schema: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    let Some(schema) = schema.as_object() else {
        return Value::Object(out);
    };
    for key in ["$defs", "items"] {
        if let Some(v) = schema.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(required) = schema.get("required").filter(|r| names(r)) {
        out.insert("required".into(), required.clone());
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let properties = properties
            .iter()
            .map(|(name, p)| (name.clone(), property(p)))
            .collect();
        out.insert("properties".into(), Value::Object(properties));
    }
    Value::Object(out)
}

/// One property as Ollama's type takes it: `type` (a name or a list of
/// names; from an `anyOf` of plain types too), `items`, `description` and
/// `enum` as they are; the rest of what constrains the value (`default`,
/// `minimum`, `format`, an object's own `properties`, ...) written after
/// the description as JSON Schema, annotations dropped.
fn property(p: &Value) -> Value {
    let mut out = Map::new();
    let mut rest = Map::new();
    for (key, v) in p.as_object().into_iter().flatten() {
        let fits = match key.as_str() {
            "type" => v.is_string() || names(v),
            "description" => v.is_string(),
            "enum" => v.is_array(),
            "items" => true,
            k => {
                if !ANNOTATIONS.contains(&k) {
                    rest.insert(key.clone(), v.clone());
                }
                continue;
            }
        };
        let into = if fits { &mut out } else { &mut rest };
        into.insert(key.clone(), v.clone());
    }
    if !out.contains_key("type")
        && let Some(types) = rest.get("anyOf").and_then(plain_types)
    {
        out.insert("type".into(), types);
        rest.remove("anyOf");
    }
    if !rest.is_empty() {
        let said = Value::Object(rest).to_string();
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) if !d.trim().is_empty() => format!("{d} (JSON Schema: {said})"),
            _ => format!("JSON Schema: {said}"),
        };
        out.insert("description".into(), json!(description));
    }
    Value::Object(out)
}

/// An array of strings.
fn names(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
}

/// The type names of an `anyOf` whose every branch is `{"type": name}`
/// alone (as Pydantic writes an optional argument), else None.
fn plain_types(any_of: &Value) -> Option<Value> {
    let branches = any_of.as_array()?;
    let types = branches
        .iter()
        .map(|b| match b.as_object() {
            Some(o) if o.len() == 1 => o.get("type").filter(|t| t.is_string()).cloned(),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    (!types.is_empty()).then_some(Value::Array(types))
}
