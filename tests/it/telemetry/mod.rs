//! OpenTelemetry export through the binary (design §7.9): an OTLP receiver
//! of the tests' own (`receiver.py`), decoding with the official
//! `opentelemetry-proto` package (installed by scripts/conformance_deps.sh
//! in target/conformance), both encodings; the spans of a tree, their
//! parents, attributes and status; the trace joined across processes; and
//! a receiver that hangs, fails or is absent costing the run at most the
//! documented bound. `tree.rs` has the runs, `joins.rs` the processes,
//! `early.rs` a run's connection to the collector.

mod early;
mod joins;
mod response;
mod tree;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// The venv's Python with opentelemetry-proto, or None (the skip said, a
/// failure of `make test`).
fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/conformance/venv/bin/python");
    let ok = p.is_file()
        && Command::new(&p)
            .args(["-c", "import opentelemetry.proto"])
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(p);
    }
    missing(
        "the OTLP receiver of the telemetry tests",
        "opentelemetry-proto is not installed in target/conformance (bash scripts/conformance_deps.sh)",
    );
    None
}

/// A running `receiver.py`; killed on drop.
pub struct Receiver {
    child: Child,
    pub url: String,
    out: TempDir,
}

impl Receiver {
    /// A receiver that answers (`ok`), never answers (`hang`) or fails
    /// (`fail`); None when its Python is missing.
    pub fn start(mode: &str) -> Option<Receiver> {
        let python = python()?;
        let out = TempDir::new("otlp");
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/telemetry/receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(out.path().join("spans.jsonl"))
            .arg(mode)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start receiver.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the receiver's port");
        Some(Receiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            out,
        })
    }

    /// Every line received so far: a span each (or a refusal's error).
    pub fn lines(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.out.path().join("spans.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The spans, once `n` have come (or `limit` passed); a refused body
    /// fails the test.
    pub fn spans(&self, n: usize, limit: Duration) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let lines = self.lines();
            for l in &lines {
                assert!(l.get("error").is_none(), "the receiver refused a body: {l}");
            }
            if lines.len() >= n || start.elapsed() > limit {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans named `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// The one span named `name`.
#[track_caller]
pub fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name:?} in {spans:#?}");
    found[0]
}

/// The span whose id is `id`.
#[track_caller]
pub fn by_id<'a>(spans: &'a [Value], id: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span_id"] == id)
        .unwrap_or_else(|| panic!("no span {id} in {spans:#?}"))
}

/// OTLP's status codes.
pub const ERROR: u64 = 2;
