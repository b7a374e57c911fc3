//! The stateless revision 2026-07-28, the server's side (design §9.6):
//! no handshake and no session; every request carries its protocol
//! version and the client's capabilities in `params._meta` (the
//! envelope), which is how a request of this era is told from one of the
//! handshake's; `server/discover` says what the server speaks; every
//! result says its kind in `resultType` (axe's are all "complete"), and a
//! list result how long it may be cached. `ping` is gone in this revision
//! and is answered -32601, as the official Python SDK's server answers
//! it. Over HTTP each request also names its method (and a call its tool)
//! in headers, checked against the body ([`routing`]).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::message;

/// The only revision of the era axe speaks.
pub const STATELESS: &str = "2026-07-28";

/// The envelope's keys (2026-07-28, "basic/versioning").
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// -32020: the HTTP headers do not match the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// -32022: a protocol version the server does not speak.
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// A request's `params`, what the era is told by.
#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
}

/// The envelope in a request's `_meta`.
#[derive(Deserialize, Default)]
struct Envelope<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<&'a RawValue>,
}

/// A JSON-RPC error's code, message and data.
pub type Refusal = (i64, String, Option<Value>);

/// The version a request's envelope names: `None` when it has none (a
/// request of the handshake era); `Some(Err)` when the envelope is there
/// but incomplete (-32602) or names a version axe does not speak (-32022,
/// its data the versions axe speaks, as the revision asks).
pub fn version(params: Option<&RawValue>) -> Option<Result<String, Refusal>> {
    let p = message::params::<Params>(params)?;
    let env = message::params::<Envelope>(Some(p.meta?))?;
    let asked = env.version?;
    let Some(version) = message::string(Some(asked)) else {
        let why = format!("Invalid params: _meta's {VERSION_KEY} must be a string");
        return Some(Err((-32602, why, None)));
    };
    if env.capabilities.is_none() {
        let why = format!("Invalid params: _meta is missing the required key {CAPABILITIES_KEY}");
        return Some(Err((-32602, why, None)));
    }
    if version != STATELESS {
        let data = json!({"supported": [STATELESS], "requested": version});
        let why = "Unsupported protocol version".to_string();
        return Some(Err((UNSUPPORTED_VERSION, why, Some(data))));
    }
    Some(Ok(version))
}

/// Who axe is, as a result's `_meta` says it.
fn server_info() -> Value {
    json!({SERVER_INFO_KEY: {"name": "axe", "version": env!("CARGO_PKG_VERSION")}})
}

/// `server/discover`'s result.
pub fn discover() -> Value {
    json!({
        "supportedVersions": [STATELESS],
        "capabilities": {"tools": {"listChanged": false}},
        "resultType": "complete",
        // The tools depend on the agent files, read once, not on who asks;
        // but a server behind a token is not for every cache.
        "cacheScope": "private",
        "ttlMs": 0,
        "_meta": server_info(),
    })
}

/// `result` as this era's: its `resultType`, and for a list its cache
/// hints; the server's name in `_meta` beside what is there.
pub fn complete(mut result: Value, list: bool) -> Value {
    if let Value::Object(map) = &mut result {
        map.insert("resultType".into(), json!("complete"));
        if list {
            map.insert("cacheScope".into(), json!("private"));
            map.insert("ttlMs".into(), json!(0));
        }
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if let (Value::Object(meta), Value::Object(info)) = (meta, server_info()) {
            meta.extend(info);
        }
    }
    result
}

/// Over HTTP, why the routing headers do not match the request (-32020),
/// checked as the official Python SDK checks them: `MCP-Protocol-Version`
/// equal to the envelope's version, `Mcp-Method` to the method, and for
/// `tools/call` `Mcp-Name` to the tool's name (plain, or
/// `=?base64?...?=`). `header` looks a header up by its name.
pub fn routing<'h>(
    method: &str,
    version: &str,
    params: Option<&RawValue>,
    header: impl Fn(&str) -> Option<&'h str>,
) -> Result<(), String> {
    if header("MCP-Protocol-Version") != Some(version) {
        return Err("MCP-Protocol-Version header does not match the request's _meta".into());
    }
    if header("Mcp-Method") != Some(method) {
        return Err("Mcp-Method header does not match the request body's method".into());
    }
    if method == "tools/call" {
        let name = message::params::<Params>(params).and_then(|p| message::string(p.name));
        if name.is_some() && header("Mcp-Name").and_then(decode) != name {
            return Err("Mcp-Name header does not match the request body's name".into());
        }
    }
    Ok(())
}

/// A header's value as sent: plain ASCII, or UTF-8 as `=?base64?...?=`.
fn decode(value: &str) -> Option<String> {
    let Some(b64) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_string());
    };
    String::from_utf8(base64(b64)?).ok()
}

/// Standard base64 decoded, padded as a header value's must be; none when
/// it is not.
fn base64(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    crate::text::base64::decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(t: &str) -> Box<RawValue> {
        RawValue::from_string(t.to_string()).unwrap()
    }

    #[test]
    fn a_request_is_of_this_era_by_its_envelope() {
        let ok = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        assert_eq!(version(Some(&ok)).unwrap().unwrap(), STATELESS);
        assert!(version(Some(&raw(r#"{"_meta":{"progressToken":1}}"#))).is_none());
        assert!(version(None).is_none());
        let old = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        assert_eq!(
            version(Some(&old)).unwrap().unwrap_err().0,
            UNSUPPORTED_VERSION
        );
        let half = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        assert_eq!(version(Some(&half)).unwrap().unwrap_err().0, -32602);
    }

    #[test]
    fn the_routing_headers_match_the_body_or_are_refused() {
        let p = raw(r#"{"name":"héllo"}"#);
        let headers = |name: &'static str| {
            move |h: &str| match h {
                "MCP-Protocol-Version" => Some(STATELESS),
                "Mcp-Method" => Some("tools/call"),
                "Mcp-Name" => Some(name),
                _ => None,
            }
        };
        assert!(
            routing(
                "tools/call",
                STATELESS,
                Some(&p),
                headers("=?base64?aMOpbGxv?=")
            )
            .is_ok()
        );
        assert!(routing("tools/call", STATELESS, Some(&p), headers("other")).is_err());
        assert!(routing("tools/list", STATELESS, None, headers("x")).is_err());
    }
}
