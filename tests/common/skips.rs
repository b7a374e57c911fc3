//! Tests that could not run here, never silently. A test that cannot run
//! says SKIPPED on stderr (which cargo hides) and appends one line to the
//! skips file, which `make test` reads after the tests (scripts/skips.sh):
//! one line per reason with its count. A skip is of one of two kinds:
//! - [`not_tested`]: what this machine cannot have (the kernel's Landlock
//!   or user namespaces, an architecture, not running as root): listed;
//! - [`missing`]: what `make test` installs or the machine should have (the
//!   MCP servers, the `openai` client, the static build, python3, util-linux):
//!   listed, and `make test` fails on it unless `AXE_TEST_ALLOW_SKIP=1`.

use std::io::Write;

/// The skips file when `make test` does not name one (`AXE_TEST_SKIPS`):
/// the same `target/tmp/skipped.txt` it reads.
pub const SKIPS: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/skipped.txt");

/// Says that `what` was not tested because this machine cannot have what
/// it needs (`why`): a skip `make test` lists and allows.
pub fn not_tested(what: &str, why: &str) {
    record("cannot", what, why);
}

/// Says that `what` was not tested because something that can be installed
/// is missing (`why`, with how to get it): a skip `make test` lists and
/// fails on unless `AXE_TEST_ALLOW_SKIP=1`.
pub fn missing(what: &str, why: &str) {
    record("missing", what, why);
}

fn record(kind: &str, what: &str, why: &str) {
    eprintln!("SKIPPED: {what} not tested: {why}");
    // One line each, kind first: newlines inside would split a reason.
    let line = format!("{kind}\t{what}: {why}").replace(['\n', '\r'], " ");
    let path = std::env::var_os("AXE_TEST_SKIPS").unwrap_or_else(|| SKIPS.into());
    // One append of one line: whole even when tests add theirs at once.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}
