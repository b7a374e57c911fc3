//! OTLP's trace messages, written by hand (design §7.9): a finished
//! [`Span`] and the `ExportTraceServiceRequest` that carries a batch of
//! them, encoded as protobuf (`http/protobuf`) or as OTLP's JSON
//! (`http/json`: ids in hex, 64-bit integers as strings, enums as numbers).
//! The field numbers are opentelemetry-proto's `trace/v1/trace.proto` and
//! `common/v1/common.proto`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::context::SpanContext;
use super::own::Own;
use crate::text::hex;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// Boxed, not a `String`: a span holds a list of these while it is
    /// open, and a wide fan-out holds hundreds of spans (design §7.9).
    Str(Box<str>),
    /// A string the same in every span (an operation's name): nothing
    /// allocated per span.
    Static(&'static str),
    /// A string many spans share (the run's id), counted, not copied.
    Shared(Arc<str>),
    Int(i64),
    Double(f64),
    Bool(bool),
    /// An array of one string, shared (a chat's finish reason).
    OneStr(Arc<str>),
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

/// A span's name: its operation and what it is of (`chat gpt-4o`), the
/// one static, the other shared with the run's other spans, joined by the
/// encoder rather than formatted into a string per span (design §7.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    pub op: &'static str,
    pub of: Arc<str>,
}

impl Name {
    pub fn new(op: &'static str, of: Arc<str>) -> Name {
        Name { op, of }
    }

    /// Its length written.
    fn len(&self) -> usize {
        self.op.len() + 1 + self.of.len()
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.op, self.of)
    }
}

/// Attributes, each a key and its value.
pub type Attrs = [(&'static str, AttrValue)];

/// Attributes spans share, with their protobuf fields written once: a
/// span writes them by one copy (design §7.9).
#[derive(Debug)]
pub struct SharedAttrs {
    pub list: Box<Attrs>,
    pb: Box<[u8]>,
}

impl SharedAttrs {
    pub fn new(list: Vec<(&'static str, AttrValue)>) -> SharedAttrs {
        let mut pb = vec![0; attrs_len(&list)];
        let out = &mut Out {
            buf: &mut pb,
            at: 0,
        };
        attrs_pb(out, &list);
        SharedAttrs {
            list: list.into_boxed_slice(),
            pb: pb.into_boxed_slice(),
        }
    }
}

/// One span, finished or being built: boxed wherever it goes (its slot,
/// the queue), so that a move is a pointer's, not the span copied by a
/// loop at opt-level "z" (measured: ~165 instructions a move; §7.9).
#[derive(Debug, Clone)]
pub struct Span {
    pub ctx: SpanContext,
    pub parent: Option<SpanContext>,
    pub name: Name,
    pub kind: Kind,
    /// Unix nanoseconds.
    pub start: u64,
    pub end: u64,
    /// The attributes it shares with the run's other spans of its kind
    /// (a fan-out's 256 chat spans have one provider, model and run id):
    /// one counted list, written first, never set again (design §7.9).
    pub shared: Option<Arc<SharedAttrs>>,
    /// Its own attributes.
    pub attrs: Own,
    pub status: Code,
    pub message: String,
}

impl Span {
    /// Adds `key`, which the span does not have yet (no search: most of a
    /// span's attributes are set once, as it opens or closes).
    pub fn add(&mut self, key: &'static str, value: AttrValue) {
        debug_assert!(self.attrs.iter().all(|(k, _)| *k != key), "{key} twice");
        self.attrs.push((key, value));
    }

    /// Sets `key` to `value`, replacing an earlier value (of its own: a
    /// shared attribute is never set again).
    pub fn set(&mut self, key: &'static str, value: AttrValue) {
        debug_assert!(self.shared().iter().all(|(k, _)| *k != key), "{key} shared");
        match self.attrs.get_mut(key) {
            Some(v) => *v = value,
            None => self.attrs.push((key, value)),
        }
    }

    /// The attributes it shares with other spans.
    pub fn shared(&self) -> &Attrs {
        self.shared.as_ref().map_or(&[], |s| &s.list)
    }

    /// The span ended in an error of the kind `kind`.
    pub fn fail(&mut self, kind: &str, message: &str) {
        self.status = Code::Error;
        self.message = crate::text::redact::redact(message);
        self.set("error.type", AttrValue::Str(kind.into()));
    }
}

/// What every batch says of its sender: the resource's attributes and the
/// instrumentation scope.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    pub attrs: Vec<(String, AttrValue)>,
}

pub(super) const SCOPE: &str = "axe";
pub(super) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The body being written into a buffer of its length, computed
/// beforehand: a byte stored through an index, not pushed (`Vec::push`,
/// a call at opt-level "z", was the encoder's largest cost; design §7.9).
/// A write past the end, which the lengths computed rule out, is dropped
/// rather than a panic.
pub(super) struct Out<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) at: usize,
}

impl Out<'_> {
    #[inline(always)]
    pub(super) fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.at) {
            *slot = b;
        }
        self.at += 1;
    }

    #[inline(always)]
    pub(super) fn extend_from_slice(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.at..self.at + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self.at += bytes.len();
    }
}

/// One `Span` message's fields.
pub(super) fn span_pb(s: &mut Out, span: &Span) {
    bytes(s, 1, &span.ctx.trace_id);
    bytes(s, 2, &span.ctx.span_id);
    if let Some(p) = &span.parent {
        bytes(s, 4, &p.span_id);
    }
    head(s, 5, span.name.len());
    s.extend_from_slice(span.name.op.as_bytes());
    s.push(b' ');
    s.extend_from_slice(span.name.of.as_bytes());
    tag(s, 6, 0);
    varint(s, span.kind as u64);
    tag(s, 7, 1);
    s.extend_from_slice(&span.start.to_le_bytes());
    tag(s, 8, 1);
    s.extend_from_slice(&span.end.to_le_bytes());
    if let Some(shared) = &span.shared {
        s.extend_from_slice(&shared.pb);
    }
    for list in span.attrs.lists() {
        attrs_pb(s, list);
    }
    head(s, 15, status_len(span));
    if !span.message.is_empty() {
        string(s, 2, &span.message);
    }
    if span.status != Code::Unset {
        tag(s, 3, 0);
        varint(s, span.status as u64);
    }
    tag(s, 16, 5);
    s.extend_from_slice(&flags(span).to_le_bytes());
}

/// The length of [`span_pb`]'s fields.
pub(super) fn span_len(span: &Span) -> usize {
    let parent = span.parent.map_or(0, |_| msg_len(4, 8));
    let [held, more] = span.attrs.lists();
    let attrs = span.shared.as_ref().map_or(0, |s| s.pb.len()) + attrs_len(held) + attrs_len(more);
    msg_len(1, 16)
        + msg_len(2, 8)
        + parent
        + msg_len(5, span.name.len())
        + tag_len(6)
        + varint_len(span.kind as u64)
        + 2 * (tag_len(7) + 8)
        + attrs
        + msg_len(15, status_len(span))
        + tag_len(16)
        + 4
}

/// The length of `list`'s fields in a span: a loop, not an iterator's
/// sum nor the two lists chained, each a call per attribute at opt-level
/// "z" (measured).
#[inline(always)]
fn attrs_len(list: &Attrs) -> usize {
    let mut n = 0;
    for (k, v) in list {
        n += msg_len(9, kv_len(k, v));
    }
    n
}

/// `list` as a span's attribute fields.
fn attrs_pb(out: &mut Out, list: &Attrs) {
    for (k, v) in list {
        key_value(out, 9, k, v);
    }
}

/// The length of a span's `Status` message.
fn status_len(span: &Span) -> usize {
    let message = match span.message.len() {
        0 => 0,
        n => msg_len(2, n),
    };
    let code = match span.status {
        Code::Unset => 0,
        c => tag_len(3) + varint_len(c as u64),
    };
    message + code
}

/// The span's `flags`: the trace flags, and whether its parent is remote
/// (bit 8 says the bit 9 is known).
fn flags(span: &Span) -> u32 {
    let remote = span.parent.is_some_and(|p| p.remote);
    u32::from(span.ctx.flags) | 0x100 | (u32::from(remote) << 9)
}

/// A `KeyValue` as the field `field`: its value's length computed once,
/// for its head and its own (it was three times, design §7.9).
#[inline(always)]
pub(super) fn key_value(out: &mut Out, field: u32, key: &str, value: &AttrValue) {
    let len = any_len(value);
    head(out, field, msg_len(1, key.len()) + msg_len(2, len));
    string(out, 1, key);
    head(out, 2, len);
    any_value(out, value);
}

#[inline(always)]
pub(super) fn kv_len(key: &str, value: &AttrValue) -> usize {
    msg_len(1, key.len()) + msg_len(2, any_len(value))
}

fn any_value(v: &mut Out, value: &AttrValue) {
    match value {
        AttrValue::Str(s) => string(v, 1, s),
        AttrValue::Static(s) => string(v, 1, s),
        AttrValue::Shared(s) => string(v, 1, s),
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
        AttrValue::OneStr(s) => {
            head(v, 5, msg_len(1, msg_len(1, s.len())));
            head(v, 1, msg_len(1, s.len()));
            string(v, 1, s);
        }
    }
}

#[inline(always)]
fn any_len(value: &AttrValue) -> usize {
    match value {
        AttrValue::Str(s) => msg_len(1, s.len()),
        AttrValue::Static(s) => msg_len(1, s.len()),
        AttrValue::Shared(s) => msg_len(1, s.len()),
        AttrValue::Bool(_) => tag_len(2) + 1,
        AttrValue::Int(i) => tag_len(3) + varint_len(*i as u64),
        AttrValue::Double(_) => tag_len(4) + 8,
        AttrValue::OneStr(s) => msg_len(5, msg_len(1, msg_len(1, s.len()))),
    }
}

#[inline(always)]
fn tag(out: &mut Out, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

#[inline(always)]
fn tag_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

#[inline(always)]
fn varint(out: &mut Out, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[inline(always)]
fn varint_len(n: u64) -> usize {
    // 7 bits a byte (0 takes one): the bits * 9 / 64 rounded up, without
    // a division, which profiled as the encoder's largest cost.
    let bits = 64 - (n | 1).leading_zeros() as usize;
    (bits * 9 + 64) >> 6
}

/// A length-delimited field's head: its tag and the length that follows.
#[inline(always)]
pub(super) fn head(out: &mut Out, field: u32, len: usize) {
    tag(out, field, 2);
    varint(out, len as u64);
}

/// The whole length of a length-delimited field of `len` bytes.
#[inline(always)]
pub(super) fn msg_len(field: u32, len: usize) -> usize {
    tag_len(field) + varint_len(len as u64) + len
}

#[inline(always)]
fn bytes(out: &mut Out, field: u32, b: &[u8]) {
    head(out, field, b.len());
    out.extend_from_slice(b);
}

#[inline(always)]
pub(super) fn string(out: &mut Out, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

/// `spans` as an `ExportTraceServiceRequest` in OTLP's JSON, into `out`
/// (cleared first).
pub fn json(resource: &Resource, spans: &[Box<Span>], out: &mut Vec<u8>) {
    out.clear();
    let spans: Vec<Value> = spans.iter().map(|s| span_json(s)).collect();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": attrs_json(&resource.attrs)},
        "scopeSpans": [{
            "scope": {"name": SCOPE, "version": VERSION},
            "spans": spans,
        }],
    }]});
    // Writing into a Vec fails only for a map key that is not a string:
    // there are none.
    let _ = serde_json::to_writer(out, &body);
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
        "traceId": hex::encode(&span.ctx.trace_id),
        "spanId": hex::encode(&span.ctx.span_id),
        "name": span.name.to_string(),
        "kind": span.kind as u8,
        "startTimeUnixNano": span.start.to_string(),
        "endTimeUnixNano": span.end.to_string(),
        "attributes": span.shared().iter().chain(span.attrs.iter()).map(attr_json).collect::<Value>(),
        "status": status,
        "flags": flags(span),
    });
    if let Some(p) = &span.parent {
        v["parentSpanId"] = hex::encode(&p.span_id).into();
    }
    v
}

fn attrs_json<K: AsRef<str>>(attrs: &[(K, AttrValue)]) -> Value {
    attrs.iter().map(attr_json).collect()
}

fn attr_json<K: AsRef<str>>((k, v): &(K, AttrValue)) -> Value {
    json!({"key": k.as_ref(), "value": value_json(v)})
}

fn value_json(v: &AttrValue) -> Value {
    match v {
        AttrValue::Str(s) => json!({"stringValue": &**s}),
        AttrValue::Static(s) => json!({"stringValue": s}),
        AttrValue::Shared(s) => json!({"stringValue": &**s}),
        AttrValue::Bool(b) => json!({"boolValue": b}),
        AttrValue::Int(i) => json!({"intValue": i.to_string()}),
        AttrValue::Double(d) => json!({"doubleValue": d}),
        AttrValue::OneStr(s) => json!({"arrayValue": {"values": [{"stringValue": &**s}]}}),
    }
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
