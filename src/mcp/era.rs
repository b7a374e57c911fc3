//! The protocol's two eras (design §9.7): the handshake (`initialize`, up
//! to 2025-11-25) and the stateless revision 2026-07-28, in which there is
//! no handshake and no session, every request carries its protocol version
//! and the client's capabilities in `_meta`, and a result says its kind in
//! `resultType`. A server is probed once with `server/discover`; what it
//! answers decides its era for the run ([`verdict`]). A result that asks
//! for input (`input_required`) is an error naming what was asked
//! ([`unanswerable`]): axe has no user to ask. Over HTTP each request
//! names its method and what it calls in headers ([`routing`]).

use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::rpc::{Answer, Failure, shown, string};

/// The stateless revision, the only one of its era axe speaks.
pub const STATELESS: &str = "2026-07-28";

/// The longest the probe is waited for, as the official SDKs wait it (the
/// Python SDK's `DISCOVER_TIMEOUT_SECONDS`): a server that never answers
/// an unknown method still gets its `initialize` after.
pub const PROBE_WAIT: Duration = Duration::from_secs(10);

/// The error a server of the stateless era gives `initialize`: -32022,
/// unsupported protocol version.
pub const UNSUPPORTED: i64 = -32022;

/// The `_meta` keys of the envelope (2026-07-28, "basic/versioning").
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// `params` with the envelope in its `_meta` (kept: what else is there):
/// the version, the client's capabilities (none: axe answers no sampling,
/// roots or elicitation) and who the client is.
pub fn envelope(params: Value) -> Value {
    let mut params = match params {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(VERSION_KEY.into(), json!(STATELESS));
        meta.insert(CAPABILITIES_KEY.into(), json!({}));
        meta.insert(
            CLIENT_INFO_KEY.into(),
            json!({"name": "axe", "version": env!("CARGO_PKG_VERSION")}),
        );
    }
    Value::Object(params)
}

/// What the probe found.
#[derive(Debug, PartialEq)]
pub enum Era {
    /// The server speaks 2026-07-28; its `serverInfo`, if it gave one.
    Stateless(Option<(String, String)>),
    /// Anything else that is an answer: the handshake it is.
    Handshake,
}

/// `server/discover`'s answer, leniently.
#[derive(Deserialize)]
struct Discover<'a> {
    #[serde(borrow, default, rename = "supportedVersions")]
    versions: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

/// The era the probe's answer shows, as the official SDKs read it: a
/// result listing 2026-07-28 is the stateless era; a JSON-RPC error, an
/// HTTP refusal, a probe not answered in time, or a result without that
/// version is the handshake era (a server of that era knows no
/// `server/discover`). A connection that failed is an error.
pub fn verdict(answer: Answer) -> Result<Era, Failure> {
    let raw = match answer {
        Ok(raw) => raw,
        Err(Failure::Rpc(..) | Failure::Refused(..) | Failure::Timeout) => {
            return Ok(Era::Handshake);
        }
        Err(f) => return Err(f),
    };
    let Ok(d) = serde_json::from_str::<Discover>(raw.get()) else {
        return Ok(Era::Handshake);
    };
    let speaks = d
        .versions
        .unwrap_or_default()
        .into_iter()
        .any(|v| string(Some(v)).as_deref() == Some(STATELESS));
    if !speaks {
        return Ok(Era::Handshake);
    }
    let info = d
        .meta
        .and_then(|m| serde_json::from_str::<Map<String, Value>>(m.get()).ok())
        .and_then(|mut m| m.remove(SERVER_INFO_KEY))
        .map(|i| {
            let field = |k: &str| i[k].as_str().unwrap_or("?").to_string();
            (field("name"), field("version"))
        });
    Ok(Era::Stateless(info))
}

/// A result's `resultType` and what an `input_required` one asks for,
/// leniently.
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(borrow, default, rename = "resultType")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "inputRequests")]
    requests: Option<&'a RawValue>,
}

/// `None` for a result that is complete (`resultType` "complete", or none:
/// the handshake era's). Otherwise why axe cannot use it, one line: an
/// `input_required` result names each request (its method, and an
/// elicitation's message); another kind (the tasks extension's "task") is
/// named as unknown.
pub fn unanswerable(result: &RawValue) -> Option<String> {
    let k = serde_json::from_str::<Kind>(result.get()).ok()?;
    let kind = string(k.kind)?;
    if kind == "complete" {
        return None;
    }
    if kind != "input_required" {
        return Some(format!(
            "the server answered with a result of type \"{}\", which axe does not take",
            shown(&kind, 40)
        ));
    }
    let asked = k
        .requests
        .and_then(|r| serde_json::from_str::<Map<String, Value>>(r.get()).ok())
        .unwrap_or_default();
    let mut wanted = Vec::new();
    for (_, request) in asked.iter().take(8) {
        let method = request["method"].as_str().unwrap_or("?");
        wanted.push(match request["params"]["message"].as_str() {
            Some(m) => format!("{} {:?}", shown(method, 40), shown(m, 200)),
            None => shown(method, 40),
        });
    }
    let what = if wanted.is_empty() {
        "input".to_string()
    } else {
        wanted.join(", ")
    };
    Some(format!(
        "the server asked for input axe cannot give (no user to ask): {what}"
    ))
}

/// The stateless revision's routing headers of one request.
pub struct Routing {
    pub method: String,
    pub name: Option<String>,
    /// `Mcp-Param-*` ([`param_headers`]).
    pub params: Vec<(String, String)>,
}

/// `Mcp-Method`, and `Mcp-Name` for the methods that name something
/// (`tools/call` and `prompts/get` their `name`, `resources/read` its
/// `uri`), encoded as the revision says when the value is not plain
/// printable ASCII.
pub fn routing(method: &str, params: &Value) -> Routing {
    let key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    let name = key.and_then(|k| params[k].as_str()).map(header_value);
    Routing {
        method: header_value(method),
        name,
        params: Vec::new(),
    }
}

/// The most levels of `properties` walked for `x-mcp-header`.
const MAX_DEPTH: usize = 16;

/// The `Mcp-Param-*` headers a `tools/call` mirrors from its `arguments`
/// (2026-07-28, SEP-2243): for each property of the tool's `schema`
/// reached from its root through `properties` alone whose `x-mcp-header`
/// is a token, the argument at that place, when it is a string, a number
/// or a boolean (`true`/`false`), encoded as [`routing`]'s values are. A
/// server checks them against the arguments, and refuses a call without
/// them.
pub fn param_headers(schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    mirror(schema, Some(arguments), 0, &mut out);
    out
}

fn mirror(schema: &Value, args: Option<&Value>, depth: usize, out: &mut Vec<(String, String)>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    if depth >= MAX_DEPTH {
        return;
    }
    for (key, sub) in props {
        let arg = args.and_then(|a| a.get(key));
        if let Some(token) = sub.get("x-mcp-header").and_then(Value::as_str)
            && is_token(token)
            && let Some(value) = arg.and_then(rendered)
        {
            out.push((format!("mcp-param-{token}"), header_value(&value)));
        }
        mirror(sub, arg, depth + 1, out);
    }
}

/// An RFC 9110 token: what a header's name may be made of.
fn is_token(t: &str) -> bool {
    !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A scalar argument as its header carries it.
fn rendered(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `value` as it can go in a header: as it is when it is printable ASCII
/// without space at either end, else `=?base64?...?=` of its UTF-8.
fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            crate::text::base64::encode(value.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    #[test]
    fn a_header_value_not_plain_ascii_is_base64() {
        assert_eq!(header_value("get-sum"), "get-sum");
        assert_eq!(header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(crate::text::base64::encode(b"ab"), "YWI=");
    }

    #[test]
    fn arguments_are_mirrored_where_the_schema_says() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "on": {"type": "boolean", "x-mcp-header": "bad token"},
            "deep": {"properties": {"id": {"type": "string", "x-mcp-header": "Id"}}},
        }});
        let args = json!({"region": "eü", "n": 3, "on": true, "deep": {"id": "x"}});
        let mut got = param_headers(&schema, &args);
        got.sort();
        assert_eq!(
            got,
            [
                ("mcp-param-Id".to_string(), "x".to_string()),
                ("mcp-param-N".to_string(), "3".to_string()),
                (
                    "mcp-param-Region".to_string(),
                    "=?base64?ZcO8?=".to_string()
                ),
            ]
        );
        assert!(param_headers(&schema, &json!({})).is_empty());
    }

    #[test]
    fn the_envelope_keeps_what_meta_had() {
        let p = envelope(json!({"name": "t", "_meta": {"progressToken": 1}}));
        assert_eq!(p["name"], "t");
        assert_eq!(p["_meta"]["progressToken"], 1);
        assert_eq!(p["_meta"][VERSION_KEY], STATELESS);
        assert_eq!(p["_meta"][CAPABILITIES_KEY], json!({}));
    }

    #[test]
    fn the_probe_falls_back_on_anything_but_a_stateless_answer() {
        let rpc = Err(Failure::Rpc(-32601, "Method not found".into()));
        assert_eq!(verdict(rpc), Ok(Era::Handshake));
        let old = Ok(raw(json!({"supportedVersions": ["2025-11-25"]})));
        assert_eq!(verdict(old), Ok(Era::Handshake));
        let broken = Err(Failure::Broken("gone".into()));
        assert!(verdict(broken).is_err());
        let new = Ok(raw(json!({"supportedVersions": [STATELESS],
            "_meta": {SERVER_INFO_KEY: {"name": "s", "version": "1"}}})));
        assert_eq!(
            verdict(new),
            Ok(Era::Stateless(Some(("s".into(), "1".into()))))
        );
    }

    #[test]
    fn only_a_complete_result_is_taken() {
        assert_eq!(unanswerable(&raw(json!({"content": []}))), None);
        let done = raw(json!({"resultType": "complete"}));
        assert_eq!(unanswerable(&done), None);
        let ask = raw(json!({"resultType": "input_required", "inputRequests":
            {"a": {"method": "elicitation/create", "params": {"message": "Sure?"}}}}));
        let why = unanswerable(&ask).unwrap();
        assert!(why.contains("elicitation/create \"Sure?\""), "{why}");
        let task = raw(json!({"resultType": "task"}));
        assert!(unanswerable(&task).unwrap().contains("\"task\""));
    }
}
