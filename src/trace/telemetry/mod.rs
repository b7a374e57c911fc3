//! OpenTelemetry traces (design §7.9): a run's trace events turned into
//! spans in the GenAI conventions (`spans`, with `content` when asked),
//! exported as OTLP over HTTP, protobuf or JSON, written by hand (`otlp`;
//! a batch's protobuf body read a piece at a time: `body`)
//! by a thread of their own (`export`, on a connection of its own to a
//! collector at an IP address: `conn`); where they go (`settings`); the
//! W3C trace context a run joins and passes on (`context`). Nothing is
//! built or sent unless an endpoint is set.

mod body;
mod conn;
mod content;
pub mod context;
mod export;
mod oneshot;
mod open;
mod otlp;
mod own;
mod settings;
mod shared;
mod spans;

pub use context::{SpanContext, parse_traceparent};
pub use export::{FLUSH_BOUND, deadline, ended, finish};
pub use open::AgentSpans;
pub use settings::TelemetrySettings;
pub use spans::{RunSpans, Workflow};

/// Export as config.toml's `[telemetry]` and the `OTEL_*` variables say;
/// a setting axe cannot follow is the returned warning, and nothing is
/// exported then.
pub fn init(file: &TelemetrySettings) -> Result<(), String> {
    let vars = settings::otel_vars();
    let env = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if let Some(settings) = settings::settle(file, &env)? {
        export::start(settings);
    }
    Ok(())
}

/// The spans of the new run `run_id` under `parent` (another process's
/// span), when spans are exported.
pub fn run_spans(run_id: &str, parent: Option<SpanContext>) -> Option<RunSpans> {
    export::exporter().map(|e| RunSpans::new(e, run_id, parent))
}

/// `TRACEPARENT`, for a run that joins its caller's trace: `None` when it
/// is unset; an error saying why a malformed one is ignored.
pub fn env_parent() -> Result<Option<SpanContext>, String> {
    let Ok(value) = std::env::var("TRACEPARENT") else {
        return Ok(None);
    };
    parse_traceparent(&value)
        .map(Some)
        .map_err(|why| format!("TRACEPARENT ignored: {why}"))
}
