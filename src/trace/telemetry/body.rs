//! A batch's protobuf body (design §7.9): the `ExportTraceServiceRequest`
//! of `otlp.rs`'s spans, read a piece at a time by the HTTP client, each
//! span encoded straight into the client's output buffer. A fan-out's batch
//! was first encoded whole into a buffer of its own (220 KB: its pages
//! faulted in and zeroed, then copied into the client's); its length is
//! known beforehand, so the request says it and the body is never held
//! whole.

use std::io::Read;

use super::otlp::{
    Out, Resource, SCOPE, Span, VERSION, head, key_value, kv_len, msg_len, span_len, span_pb,
    string,
};

/// The body of one batch, as a reader.
pub struct Protobuf<'a> {
    spans: &'a [Box<Span>],
    /// Each span's length: the total needs it first, and so does its head.
    lens: Vec<usize>,
    /// The next span to encode.
    next: usize,
    /// Bytes encoded and not yet read: the message's head first, then a
    /// span that did not fit in what was left of a read's buffer.
    pending: Vec<u8>,
    at: usize,
    total: usize,
}

impl<'a> Protobuf<'a> {
    /// The body of `spans`, sent by the sender `resource` says. Each
    /// message's length is computed before it is written, so that every
    /// byte is written once, in place: no buffer per nested message, no
    /// copy of one into its parent.
    pub fn new(resource: &Resource, spans: &'a [Box<Span>]) -> Protobuf<'a> {
        let resource_len: usize = resource
            .attrs
            .iter()
            .map(|(k, v)| msg_len(1, kv_len(k, v)))
            .sum();
        let scope_len = msg_len(1, SCOPE.len()) + msg_len(2, VERSION.len());
        let lens: Vec<usize> = spans.iter().map(|s| span_len(s)).collect();
        let scope_spans_len =
            msg_len(1, scope_len) + lens.iter().map(|&n| msg_len(2, n)).sum::<usize>();
        let resource_spans_len = msg_len(1, resource_len) + msg_len(2, scope_spans_len);
        let total = msg_len(1, resource_spans_len);
        // The head: everything but the spans, which come after it.
        let head_len = total - (scope_spans_len - msg_len(1, scope_len));
        let mut pending = vec![0; head_len];
        let out = &mut Out {
            buf: &mut pending,
            at: 0,
        };
        head(out, 1, resource_spans_len);
        head(out, 1, resource_len);
        for (k, v) in &resource.attrs {
            key_value(out, 1, k, v);
        }
        head(out, 2, scope_spans_len);
        head(out, 1, scope_len);
        string(out, 1, SCOPE);
        string(out, 2, VERSION);
        debug_assert_eq!(out.at, head_len, "the head's length computed is its length");
        Protobuf {
            spans,
            lens,
            next: 0,
            pending,
            at: 0,
            total,
        }
    }

    /// Its whole length, in bytes.
    pub fn len(&self) -> usize {
        self.total
    }

    /// The next span, with its field's head, into `buf` (exactly its
    /// length).
    fn encode_next(&mut self, buf: &mut [u8]) {
        let (span, len) = (&self.spans[self.next], self.lens[self.next]);
        let out = &mut Out { buf, at: 0 };
        head(out, 2, len);
        span_pb(out, span);
        debug_assert_eq!(
            out.at,
            out.buf.len(),
            "the lengths computed are the lengths written"
        );
        self.next += 1;
    }
}

impl Read for Protobuf<'_> {
    /// As much of the body as `buf` takes: whole spans encoded into it in
    /// place, and the one that does not fit kept for the next read.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        loop {
            if self.at < self.pending.len() {
                let k = (self.pending.len() - self.at).min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&self.pending[self.at..self.at + k]);
                (self.at, n) = (self.at + k, n + k);
                if n == buf.len() {
                    return Ok(n);
                }
            }
            let Some(&len) = self.lens.get(self.next) else {
                return Ok(n);
            };
            let whole = msg_len(2, len);
            if whole <= buf.len() - n {
                self.encode_next(&mut buf[n..n + whole]);
                n += whole;
            } else {
                let mut pending = std::mem::take(&mut self.pending);
                sized(&mut pending, whole);
                self.encode_next(&mut pending);
                (self.pending, self.at) = (pending, 0);
            }
        }
    }
}

/// `spans` as an `ExportTraceServiceRequest` in protobuf, into `out`
/// (written over: its allocation kept when it is long enough): the body a
/// post written by hand sends whole (`oneshot.rs`).
pub fn protobuf(resource: &Resource, spans: &[Box<Span>], out: &mut Vec<u8>) {
    let mut body = Protobuf::new(resource, spans);
    sized(out, body.len());
    // Reading into a slice of its length takes all of it, in one call.
    let n = body.read(out).unwrap_or(0);
    debug_assert_eq!(n, out.len(), "one read takes the whole body");
}

/// `buf` made `len` bytes long, every one of which is written next: what it
/// held is left to be written over, and a longer one is allocated zeroed
/// (`resize` stores a byte at a time at opt-level "z", measured).
fn sized(buf: &mut Vec<u8>, len: usize) {
    if buf.len() >= len {
        buf.truncate(len);
    } else {
        *buf = vec![0; len];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::telemetry::context::SpanContext;
    use crate::trace::telemetry::otlp::{AttrValue, Code, Kind, Name};

    /// Read a few bytes at a time, as the client's buffer takes it, the
    /// body is the one written whole, and as long as it said.
    #[test]
    fn read_in_pieces_it_is_the_body_written_whole() {
        let resource = Resource {
            attrs: vec![("service.name".into(), AttrValue::Str("axe".into()))],
        };
        let spans: Vec<Box<Span>> = (0..30)
            .map(|i| {
                let mut span = Span {
                    ctx: SpanContext::child_of(None),
                    parent: None,
                    name: Name::new("chat", "m".into()),
                    kind: Kind::Client,
                    start: i,
                    end: i + 1,
                    shared: None,
                    attrs: Default::default(),
                    status: Code::Unset,
                    message: String::new(),
                };
                span.add("s", AttrValue::Str("x".repeat(i as usize * 7).into()));
                Box::new(span)
            })
            .collect();
        let mut whole = Vec::new();
        protobuf(&resource, &spans, &mut whole);
        for piece in [1, 7, 100, 333, 8192] {
            let mut body = Protobuf::new(&resource, &spans);
            assert_eq!(body.len(), whole.len());
            let (mut read, mut buf) = (Vec::new(), vec![0; piece]);
            loop {
                let n = body.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&buf[..n]);
            }
            assert!(read == whole, "read {piece} bytes at a time");
        }
    }
}
