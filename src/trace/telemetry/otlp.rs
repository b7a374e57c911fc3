//! OTLP's trace messages, written by hand (design §7.9): a finished
//! [`Span`] and the `ExportTraceServiceRequest` that carries a batch of
//! them, encoded as protobuf (`http/protobuf`) or as OTLP's JSON
//! (`http/json`: ids in hex, 64-bit integers as strings, enums as numbers).
//! The field numbers are opentelemetry-proto's `trace/v1/trace.proto` and
//! `common/v1/common.proto`.

use serde_json::{Value, json};

use super::context::{SpanContext, hex};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Strs(Vec<String>),
}

/// A span's kind, as OTLP numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Client = 3,
}

/// A span's status code, as OTLP numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Unset = 0,
    Error = 2,
}

/// One span, finished or being built.
#[derive(Debug, Clone)]
pub struct Span {
    pub ctx: SpanContext,
    pub parent: Option<SpanContext>,
    pub name: String,
    pub kind: Kind,
    /// Unix nanoseconds.
    pub start: u64,
    pub end: u64,
    pub attrs: Vec<(&'static str, AttrValue)>,
    pub status: Code,
    pub message: String,
}

impl Span {
    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: &'static str, value: AttrValue) {
        match self.attrs.iter_mut().find(|(k, _)| *k == key) {
            Some(kv) => kv.1 = value,
            None => self.attrs.push((key, value)),
        }
    }

    /// The span ended in an error of the kind `kind`.
    pub fn fail(&mut self, kind: &str, message: &str) {
        self.status = Code::Error;
        self.message = crate::text::redact::redact(message);
        self.set("error.type", AttrValue::Str(kind.to_string()));
    }
}

/// What every batch says of its sender: the resource's attributes and the
/// instrumentation scope.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    pub attrs: Vec<(String, AttrValue)>,
}

const SCOPE: &str = "axe";
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `spans` as an `ExportTraceServiceRequest` in protobuf.
pub fn protobuf(resource: &Resource, spans: &[Span]) -> Vec<u8> {
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, |s| {
        string(s, 1, SCOPE);
        string(s, 2, VERSION);
    });
    for span in spans {
        message(&mut scope_spans, 2, |s| span_pb(s, span));
    }
    let mut resource_spans = Vec::new();
    message(&mut resource_spans, 1, |r| {
        for (k, v) in &resource.attrs {
            message(r, 1, |kv| key_value(kv, k, v));
        }
    });
    bytes(&mut resource_spans, 2, &scope_spans);
    let mut out = Vec::with_capacity(resource_spans.len() + 8);
    bytes(&mut out, 1, &resource_spans);
    out
}

/// One `Span` message's fields.
fn span_pb(s: &mut Vec<u8>, span: &Span) {
    bytes(s, 1, &span.ctx.trace_id);
    bytes(s, 2, &span.ctx.span_id);
    if let Some(p) = &span.parent {
        bytes(s, 4, &p.span_id);
    }
    string(s, 5, &span.name);
    tag(s, 6, 0);
    varint(s, span.kind as u64);
    tag(s, 7, 1);
    s.extend_from_slice(&span.start.to_le_bytes());
    tag(s, 8, 1);
    s.extend_from_slice(&span.end.to_le_bytes());
    for (k, v) in &span.attrs {
        message(s, 9, |kv| key_value(kv, k, v));
    }
    message(s, 15, |st| {
        if !span.message.is_empty() {
            string(st, 2, &span.message);
        }
        if span.status != Code::Unset {
            tag(st, 3, 0);
            varint(st, span.status as u64);
        }
    });
    tag(s, 16, 5);
    s.extend_from_slice(&flags(span).to_le_bytes());
}

/// The span's `flags`: the trace flags, and whether its parent is remote
/// (bit 8 says the bit 9 is known).
fn flags(span: &Span) -> u32 {
    let remote = span.parent.is_some_and(|p| p.remote);
    u32::from(span.ctx.flags) | 0x100 | (u32::from(remote) << 9)
}

fn key_value(kv: &mut Vec<u8>, key: &str, value: &AttrValue) {
    string(kv, 1, key);
    message(kv, 2, |v| any_value(v, value));
}

fn any_value(v: &mut Vec<u8>, value: &AttrValue) {
    match value {
        AttrValue::Str(s) => string(v, 1, s),
        AttrValue::Bool(b) => {
            tag(v, 2, 0);
            varint(v, u64::from(*b));
        }
        AttrValue::Int(i) => {
            tag(v, 3, 0);
            // Two's complement, as protobuf writes an int64.
            varint(v, *i as u64);
        }
        AttrValue::Double(d) => {
            tag(v, 4, 1);
            v.extend_from_slice(&d.to_le_bytes());
        }
        AttrValue::Strs(list) => message(v, 5, |a| {
            for s in list {
                message(a, 1, |item| string(item, 1, s));
            }
        }),
    }
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    tag(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

/// A nested message: written apart, then length-delimited.
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(out, field, &inner);
}

/// `spans` as an `ExportTraceServiceRequest` in OTLP's JSON.
pub fn json(resource: &Resource, spans: &[Span]) -> Vec<u8> {
    let spans: Vec<Value> = spans.iter().map(span_json).collect();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": attrs_json(&resource.attrs)},
        "scopeSpans": [{
            "scope": {"name": SCOPE, "version": VERSION},
            "spans": spans,
        }],
    }]});
    serde_json::to_vec(&body).unwrap_or_default()
}

fn span_json(span: &Span) -> Value {
    let mut status = json!({});
    if span.status != Code::Unset {
        status["code"] = (span.status as u8).into();
    }
    if !span.message.is_empty() {
        status["message"] = span.message.clone().into();
    }
    let mut v = json!({
        "traceId": hex(&span.ctx.trace_id),
        "spanId": hex(&span.ctx.span_id),
        "name": span.name,
        "kind": span.kind as u8,
        "startTimeUnixNano": span.start.to_string(),
        "endTimeUnixNano": span.end.to_string(),
        "attributes": attrs_json(&span.attrs),
        "status": status,
        "flags": flags(span),
    });
    if let Some(p) = &span.parent {
        v["parentSpanId"] = hex(&p.span_id).into();
    }
    v
}

fn attrs_json<K: AsRef<str>>(attrs: &[(K, AttrValue)]) -> Value {
    attrs
        .iter()
        .map(|(k, v)| json!({"key": k.as_ref(), "value": value_json(v)}))
        .collect()
}

fn value_json(v: &AttrValue) -> Value {
    match v {
        AttrValue::Str(s) => json!({"stringValue": s}),
        AttrValue::Bool(b) => json!({"boolValue": b}),
        AttrValue::Int(i) => json!({"intValue": i.to_string()}),
        AttrValue::Double(d) => json!({"doubleValue": d}),
        AttrValue::Strs(list) => {
            let values: Vec<Value> = list.iter().map(|s| json!({"stringValue": s})).collect();
            json!({"arrayValue": {"values": values}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_protobufs() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        varint(&mut out, (-1i64) as u64);
        assert_eq!(out.len(), 10);
    }
}
