//! A client's message read as text, never as a whole tree (as the client
//! reads a server's, issue 31, design §9.2): the parts the protocol's
//! steps look at taken from the line, each argument of a call kept as its
//! JSON text until it is read as the string it must be. A tree of JSON can
//! take 90 times its line's size; this takes about the line's.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

/// One message as it arrives.
#[derive(Deserialize)]
pub struct Incoming<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// What reading a line found.
pub enum Read<'a> {
    Message(Incoming<'a>),
    /// JSON, but not one message object (a batch, a number, a repeated
    /// key): -32600.
    NotAMessage,
    /// Not JSON: -32700, with serde's reason (a position, never the text).
    NotJson(String),
}

/// Reads `line`.
pub fn read(line: &[u8]) -> Read<'_> {
    let object = line.first() == Some(&b'{');
    match serde_json::from_slice::<Incoming>(line) {
        Ok(m) if object => Read::Message(m),
        Ok(_) => Read::NotAMessage,
        Err(e) => match serde_json::from_slice::<IgnoredAny>(line) {
            Ok(_) => Read::NotAMessage,
            Err(_) => Read::NotJson(e.to_string()),
        },
    }
}

/// `raw` as a JSON-RPC id (a string or an integer), or None.
pub fn id(raw: &RawValue) -> Option<Value> {
    if let Ok(s) = serde_json::from_str::<String>(raw.get()) {
        return Some(Value::String(s));
    }
    if let Ok(n) = serde_json::from_str::<i64>(raw.get()) {
        return Some(Value::from(n));
    }
    serde_json::from_str::<u64>(raw.get()).ok().map(Value::from)
}

/// `raw` as a string, when it is one.
pub fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// `initialize`'s params, what axe reads of them.
#[derive(Deserialize, Default)]
pub struct InitParams<'a> {
    #[serde(borrow, default, rename = "protocolVersion")]
    pub protocol_version: Option<&'a RawValue>,
}

/// `notifications/cancelled`'s params.
#[derive(Deserialize, Default)]
pub struct CancelParams<'a> {
    #[serde(borrow, default, rename = "requestId")]
    pub request_id: Option<&'a RawValue>,
}

/// `tools/call`'s params.
#[derive(Deserialize, Default)]
pub struct CallParams<'a> {
    #[serde(borrow, default)]
    pub name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    pub meta: Option<&'a RawValue>,
}

/// A request's `_meta`, what axe reads of it.
#[derive(Deserialize, Default)]
pub struct Meta<'a> {
    #[serde(borrow, default, rename = "progressToken")]
    pub progress_token: Option<&'a RawValue>,
}

/// The most keys a call's `arguments` may have: a tool takes `task`,
/// `context` and its variables. Unbounded, 1.6 million keys in one 16 MiB
/// line were all kept (193 MB) before the first unknown one was refused.
pub const MAX_ARGUMENTS: usize = 256;

/// A call's arguments: each as its JSON text, at most [`MAX_ARGUMENTS`]
/// (one more ends the reading).
#[derive(Default)]
pub struct Arguments<'a>(BTreeMap<String, &'a RawValue>);

impl<'a> std::ops::Deref for Arguments<'a> {
    type Target = BTreeMap<String, &'a RawValue>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Arguments<'a>, D::Error> {
        struct Keys<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Keys<'a> {
            type Value = Arguments<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "an object of at most {MAX_ARGUMENTS} keys")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Arguments<'a>, M::Error> {
                let mut args = BTreeMap::new();
                let mut n = 0;
                while let Some(key) = m.next_key::<String>()? {
                    n += 1;
                    if n > MAX_ARGUMENTS {
                        return Err(serde::de::Error::custom("too many keys"));
                    }
                    args.insert(key, m.next_value::<&'a RawValue>()?);
                }
                Ok(Arguments(args))
            }
        }
        d.deserialize_map(Keys(std::marker::PhantomData))
    }
}

/// `raw` read as `T`; None when it is not one (or is absent: `T`'s
/// default).
pub fn params<'a, T: Deserialize<'a> + Default>(raw: Option<&'a RawValue>) -> Option<T> {
    match raw {
        None => Some(T::default()),
        Some(r) => serde_json::from_str(r.get()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_an_object_and_anything_else_is_said_apart() {
        assert!(matches!(
            read(br#"{"id":1,"method":"ping"}"#),
            Read::Message(_)
        ));
        assert!(matches!(read(b"[1,2]"), Read::NotAMessage));
        assert!(matches!(read(b"3"), Read::NotAMessage));
        assert!(matches!(read(br#"{"id":1,"id":2}"#), Read::NotAMessage));
        assert!(matches!(read(b"{\"id\":"), Read::NotJson(_)));
        assert!(matches!(read(b"\xff"), Read::NotJson(_)));
    }

    #[test]
    fn an_id_is_a_string_or_an_integer() {
        let raw = |t: &str| RawValue::from_string(t.to_string()).unwrap();
        assert_eq!(id(&raw("7")), Some(Value::from(7)));
        assert_eq!(id(&raw("\"a\\u0062\"")), Some(Value::from("ab")));
        assert_eq!(id(&raw("-1")), Some(Value::from(-1)));
        assert_eq!(id(&raw("1.5")), None);
        assert_eq!(id(&raw("[1]")), None);
        assert_eq!(id(&raw("{}")), None);
    }
}
