//! What a run did, as it goes and after: each trace event (`event`) made
//! in one place, the `--trace` lines they are written as (`writer`), the
//! ledger the whole tree reports to (`ledger`: usage, budgets, the tools'
//! records, the live view's state), what a finished conversation gives its
//! caller (`outcome`), and the run log, one line per top-level run
//! (`run_log`, design §7.7); the same events as OpenTelemetry spans
//! (`telemetry`, design §7.9).

pub(crate) mod event;
pub mod ledger;
pub mod outcome;
pub(crate) mod run_log;
pub mod telemetry;
pub(crate) mod writer;
