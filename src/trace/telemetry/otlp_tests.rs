//! The OTLP encoders' unit tests: the protobuf writer's lengths and the
//! JSON form's shape (`otlp.rs`).

use super::*;
use crate::trace::telemetry::body::protobuf;

#[test]
fn varints_are_protobufs() {
    let encoded = |n: u64| {
        let mut buf = [0u8; 10];
        let out = &mut Out {
            buf: &mut buf,
            at: 0,
        };
        varint(out, n);
        let at = out.at;
        buf[..at].to_vec()
    };
    assert_eq!(encoded(300), [0xac, 0x02]);
    assert_eq!(encoded((-1i64) as u64).len(), 10);
    for n in [0, 1, 127, 128, 16_383, 16_384, u64::MAX] {
        assert_eq!(varint_len(n), encoded(n).len(), "{n}");
    }
}

/// The length-delimited fields of `buf` (field number, payload), the
/// others skipped; None unless the fields end exactly where `buf` does.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    fn read_varint(buf: &mut &[u8]) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = buf.split_first()?;
            *buf = rest;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }
    let mut found = Vec::new();
    while !buf.is_empty() {
        let key = read_varint(&mut buf)?;
        let skip = match key & 7 {
            0 => {
                read_varint(&mut buf)?;
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let len = usize::try_from(read_varint(&mut buf)?).ok()?;
                found.push((key >> 3, buf.get(..len)?));
                len
            }
            _ => return None,
        };
        buf = buf.get(skip..)?;
    }
    Some(found)
}

/// The lengths computed beforehand are the lengths written, at every
/// level: request, resource spans, scope spans, span, attribute, value.
#[test]
fn lengths_computed_are_lengths_written() {
    let ctx = SpanContext::child_of(None);
    let mut span = Span {
        ctx,
        parent: Some(SpanContext::child_of(Some(&ctx))),
        name: Name::new("chat", "m".into()),
        kind: Kind::Client,
        start: 1,
        end: 2,
        shared: Some(std::sync::Arc::new(SharedAttrs::new(vec![(
            "gen_ai.operation.name",
            AttrValue::Static("chat"),
        )]))),
        attrs: Own::default(),
        status: Code::Unset,
        message: String::new(),
    };
    span.set("s", AttrValue::Str("x".repeat(200).into()));
    span.set("i", AttrValue::Int(-5));
    span.set("d", AttrValue::Double(0.5));
    span.set("b", AttrValue::Bool(true));
    span.set("l", AttrValue::OneStr("y".repeat(130).into()));
    span.fail("kind", &"why".repeat(50));
    let resource = Resource {
        attrs: vec![("service.name".into(), AttrValue::Str("axe".into()))],
    };
    let spans = vec![Box::new(span); 40];
    let mut out = vec![1, 2, 3];
    protobuf(&resource, &spans, &mut out);
    let top = fields(&out).unwrap();
    assert_eq!(top.len(), 1);
    let resource_spans = fields(top[0].1).unwrap();
    let scope_spans = fields(resource_spans[1].1).unwrap();
    let written: Vec<_> = scope_spans.iter().filter(|(f, _)| *f == 2).collect();
    assert_eq!(written.len(), 40);
    for (_, span) in written {
        let attrs: Vec<_> = fields(span)
            .unwrap()
            .into_iter()
            .filter(|(f, _)| *f == 9)
            .collect();
        assert_eq!(attrs.len(), 7, "the shared one, then the span's own six");
        for (_, kv) in attrs {
            let kv = fields(kv).unwrap();
            assert!(fields(kv[1].1).is_some());
        }
    }
}
