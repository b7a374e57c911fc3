//! `[params] response_format`, the Go original's key (its 1.8 docs): `"text"`,
//! `"json_object"`, or a table `{ type = "json_schema", schema = {...} }`
//! whose schema may carry a `name`. It is turned into axe's output schema
//! (design D22), so the answer is asked for on every provider's wire and
//! checked the same way: `json_object` is "any JSON object", which OpenAI's
//! wire sends as its JSON mode (`provider/openai`).

use serde_json::json;

use super::{DEFAULT_MAX_REPAIRS, OutputConfig, SchemaSource};
use crate::error::Error;

/// The agent's `[output]`, or else what `response_format` asks for; both
/// (unless the format is `text`) is a config error.
pub(super) fn with(
    output: Option<OutputConfig>,
    format: Option<toml::Value>,
) -> Result<Option<OutputConfig>, Error> {
    match (output, format.map(self::output).transpose()?.flatten()) {
        (Some(_), Some(_)) => Err(Error::config(
            "set [output] schema or [params] response_format, not both",
        )),
        (o, f) => Ok(o.or(f)),
    }
}

/// `response_format` as written, into the output it asks for (`None` for
/// `text`). An unknown type, or `json_schema` without a schema table, is a
/// config error (exit 2) naming the key.
fn output(format: toml::Value) -> Result<Option<OutputConfig>, Error> {
    let bad = |what: &str| Error::config(format!("params.response_format: {what}"));
    let (kind, schema) = match format {
        toml::Value::String(s) => (s, None),
        toml::Value::Table(mut t) => {
            let kind = match t.remove("type") {
                Some(toml::Value::String(s)) => s,
                _ => {
                    return Err(bad(
                        "a table needs type = \"json_schema\" (or text, json_object)",
                    ));
                }
            };
            if let Some(k) = t.keys().find(|k| *k != "schema") {
                return Err(bad(&format!(
                    "unknown key `{k}` (type and schema are read)"
                )));
            }
            (kind, t.remove("schema"))
        }
        _ => {
            return Err(bad(
                "must be \"text\", \"json_object\" or a json_schema table",
            ));
        }
    };
    let schema = match (kind.as_str(), schema) {
        ("text", None) => return Ok(None),
        // OpenAI's wire knows this schema by sight and sends its JSON mode.
        ("json_object", None) => json!({"type": "object"}),
        ("json_schema", Some(toml::Value::Table(mut s))) => {
            // The Go original sends `name` as json_schema's name, not as
            // part of the schema.
            s.remove("name");
            serde_json::to_value(s).map_err(|e| bad(&e.to_string()))?
        }
        ("json_schema", _) => {
            return Err(bad(
                "json_schema needs a [params.response_format.schema] table",
            ));
        }
        ("text" | "json_object", Some(_)) => return Err(bad(&format!("{kind} takes no schema"))),
        (other, _) => {
            return Err(bad(&format!(
                "unknown type \"{other}\" (text, json_object or json_schema)"
            )));
        }
    };
    Ok(Some(OutputConfig {
        schema: SchemaSource::Inline(schema),
        max_repairs: DEFAULT_MAX_REPAIRS,
    }))
}
