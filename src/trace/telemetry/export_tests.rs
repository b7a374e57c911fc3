//! The exporter's queue (`export.rs`): its bound, and spans handed over
//! in the order they came.

use super::*;
use crate::trace::telemetry::context::SpanContext;
use crate::trace::telemetry::otlp::{Code, Kind, Name, Resource};
use crate::trace::telemetry::own::Own;

/// An exporter of its own, whose thread counts as started (none is), so
/// that nothing takes the spans but the test.
fn exporter() -> &'static Exporter {
    let e = Box::leak(Box::new(Exporter::new(Settings {
        url: "http://127.0.0.1:9/v1/traces".into(),
        json: false,
        headers: Vec::new(),
        resource: Resource::default(),
        capture: false,
        timeout: Duration::from_secs(1),
    })));
    let _ = e.thread.set(());
    e
}

fn span(n: u64) -> Box<Span> {
    Box::new(Span {
        ctx: SpanContext::child_of(None),
        parent: None,
        name: Name::new("chat", "m".into()),
        kind: Kind::Client,
        start: n,
        end: n,
        shared: None,
        attrs: Own::default(),
        status: Code::Unset,
        message: String::new(),
    })
}

#[test]
fn a_full_queue_drops_and_counts_and_hands_over_in_order() {
    let e = exporter();
    for n in 0..QUEUE as u64 + 5 {
        e.send(span(n));
    }
    assert_eq!(e.dropped.load(Ordering::Relaxed), 5);
    assert_eq!(e.waiting.load(Ordering::Relaxed), QUEUE);
    assert_ne!(e.since.load(Ordering::Relaxed), 0, "the linger started");
    let mut spans = Vec::new();
    e.drain(&mut spans);
    let starts: Vec<u64> = spans.iter().map(|s| s.start).collect();
    assert_eq!(starts, (0..QUEUE as u64).collect::<Vec<_>>());
    assert_eq!(e.waiting.load(Ordering::Relaxed), 0);
    assert_eq!(e.since.load(Ordering::Relaxed), 0, "nothing waits");
    // Room again.
    e.send(span(7));
    assert_eq!(e.dropped.load(Ordering::Relaxed), 5);
    assert_eq!(e.waiting.load(Ordering::Relaxed), 1);
}
