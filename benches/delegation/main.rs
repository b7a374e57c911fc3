//! `make bench`: what axe adds on top of the model's latency, measured by
//! driving an `axe` binary as a user would (a temp `XDG_CONFIG_HOME`, agent
//! files, the prompt on stdin, `AXE_OPENAI_BASE_URL` pointing at a fake
//! provider on 127.0.0.1). Prints one table, a column per binary with each
//! figure marked against its target, and writes `target/bench/results.json`.
//! Never fails on a time: the targets are goals shown beside the figures,
//! not assertions.
//!
//! Which binaries: `AXE_BENCH_BIN` names them (`PATH`, or
//! `LABEL=PATH,LABEL=PATH`, e.g. another implementation of the same CLI);
//! by default the release build cargo made (`glibc`) and, when `make static`
//! has built it, the static one (`static`); `AXE_BENCH_GO=PATH` adds the Go
//! original (`go`) as one more column. The binaries take turns within
//! every repetition, so drift on the machine falls on all of them alike.
//!
//! The fake provider is the test harness's (`tests/common`): a thread per
//! connection, `TCP_NODELAY`, each response in one write, counting requests
//! in flight and connections accepted, so that it is not the bottleneck.
//!
//! The scenarios: fan-out and the tree in `fan_out.rs`; the per-run cost,
//! `--dry-run` and connection reuse in `per_run.rs`; cost accounting's
//! share of a sub-agent's CPU in `cost.rs`; OpenTelemetry's cost, export
//! on against off, in `telemetry.rs`; the table and
//! `results.json` in `report.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../../tests/common/mod.rs"]
mod common;
mod cost;
mod fan_out;
#[path = "../support/measure.rs"]
mod measure;
mod per_run;
mod report;
mod telemetry;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use fan_out::{fan_out_rows, tree_rows};
use measure::{Measured, RUSAGE_SELF, measure, rusage};
use per_run::{connections, per_run_rows};
use report::{Row, linkage, ms, report};
use serde_json::{Value, json};

/// The model latency the fan-out and tree scenarios simulate.
const L: Duration = Duration::from_millis(200);
/// Repetitions of a latency scenario, by default; the median is reported.
/// `AXE_BENCH_REPEATS=n` sets another count (an odd one keeps the median a
/// measured run).
const DEFAULT_REPEATS: usize = 3;

fn repeats() -> usize {
    std::env::var("AXE_BENCH_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_REPEATS)
}
/// Runs in each per-run cost loop.
const RUNS: usize = 200;
/// The prompt every run is given, on stdin.
const PROMPT: &str = "hi";

/// A binary under measurement.
struct Bin {
    label: String,
    path: PathBuf,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(measure::SHIM_FLAG) {
        return measure::shim(&args[2..]);
    }
    let bins = binaries();
    let mut rows = Vec::new();
    // AXE_BENCH_ONLY=word runs only the scenarios whose name holds it
    // (fan-out, N=256, tree, per-run, telemetry, connections): for profiling.
    let only = std::env::var("AXE_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str());

    for n in [1, 4, 16, 64, 256] {
        if wanted(&format!("fan-out N={n}")) {
            let cpu = fan_out_rows(&bins, n, &mut rows);
            if n == 256 {
                cost::cost_row(&bins, &cpu, &mut rows);
            }
        }
    }
    if wanted("tree") {
        tree_rows(&bins, &mut rows);
    }
    if wanted("per-run") {
        per_run_rows(&bins, &mut rows);
    }
    if wanted("telemetry") {
        telemetry::telemetry_rows(&bins, &mut rows);
    }
    if wanted("connections") {
        let mut row = Row::new("connections, 10-turn conversation", "conn", "<= 1");
        for bin in &bins {
            match attempt(|| connections(bin)) {
                Some((connections, requests)) => row.push(
                    Some(connections as f64),
                    format!("{requests} requests served over {connections} TCP connection(s)"),
                ),
                None => row.push(None, "failed".into()),
            }
        }
        rows.push(row);
    }

    // A budget, not a wall (D29): both binaries under 6 MiB with everything
    // they do; `make bench` prints where the bytes go (scripts/sizes.py).
    let mut row = Row::new("binary size (the budget)", "MiB", "<= 6");
    for bin in &bins {
        let size = std::fs::metadata(&bin.path).map_or(0, |m| m.len());
        row.push(
            Some(size as f64 / (1024.0 * 1024.0)),
            format!("{size} bytes, {}", linkage(&bin.path)),
        );
    }
    rows.push(row);

    report(&bins, &rows);
}

/// The binaries to measure (see the file's header), and the Go original as
/// one more column when `AXE_BENCH_GO` names its binary (built as
/// docs/contributing.md's "Side by side with the Go original" says).
fn binaries() -> Vec<Bin> {
    let mut bins = axe_binaries();
    if let Some(path) = std::env::var_os("AXE_BENCH_GO").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "AXE_BENCH_GO: {} is not a file",
            path.display()
        );
        bins.push(Bin {
            label: "go".into(),
            path,
        });
    }
    bins
}

/// axe's own binaries: `AXE_BENCH_BIN`'s list, else the release builds.
fn axe_binaries() -> Vec<Bin> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if let Ok(list) = std::env::var("AXE_BENCH_BIN") {
        return list
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|entry| {
                let (label, path) = entry.split_once('=').unwrap_or(("", entry));
                let path = root.join(path);
                let label = if label.is_empty() {
                    path.display().to_string()
                } else {
                    label.to_string()
                };
                Bin { label, path }
            })
            .collect();
    }
    let mut bins = vec![Bin {
        label: "glibc".into(),
        path: env!("CARGO_BIN_EXE_axe").into(),
    }];
    let musl = root.join("target/x86_64-unknown-linux-musl/release/axe");
    if musl.is_file() {
        bins.push(Bin {
            label: "static".into(),
            path: musl,
        });
    }
    bins
}

/// Runs `f`; a panic (a failed check inside a scenario) becomes None, so
/// that one binary's failure leaves the others' figures standing.
fn attempt<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// Runs `f` for every binary [`repeats`] times, the binaries taking turns,
/// and returns each binary's runs (None where one failed). The turns go
/// one way round in a repetition and the other way in the next, so that no
/// binary always runs first: two builds on the telemetry row read 3.4
/// points apart one way round and 0.9 the other (design §7.9).
fn repeated<T>(bins: &[Bin], f: impl FnMut(&Bin) -> T) -> Vec<Option<Vec<T>>> {
    repeated_n(bins, repeats(), f)
}

/// [`repeated`], `n` times.
fn repeated_n<T>(bins: &[Bin], n: usize, mut f: impl FnMut(&Bin) -> T) -> Vec<Option<Vec<T>>> {
    let mut runs: Vec<Option<Vec<T>>> = bins.iter().map(|_| Some(Vec::new())).collect();
    for repetition in 0..n {
        let mut turns: Vec<_> = bins.iter().zip(runs.iter_mut()).collect();
        if repetition % 2 == 1 {
            turns.reverse();
        }
        for (bin, runs) in turns {
            if runs.is_some() {
                match attempt(|| f(bin)) {
                    Some(run) => runs.as_mut().map(|r| r.push(run)),
                    None => runs.take().map(|_| ()),
                };
            }
        }
    }
    runs
}

/// The median of `values` (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

// What every scenario starts from.

/// A config home with `agents` written as (name, extra TOML); every agent is
/// on `openai/bench` with the system prompt `You are <name>.`.
fn home_with(agents: &[(&str, &str)]) -> Home {
    let home = Home::new();
    for (name, extra) in agents {
        home.agent(
            name,
            &format!(
                "name = \"{name}\"\nmodel = \"openai/bench\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        );
    }
    home
}

/// `bin` with `args`, set up for `home` and `server`.
fn axe_at(bin: &Bin, home: &Home, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = home.command(&bin.path);
    cmd.args(args)
        .env("OPENAI_API_KEY", "sk-bench-0123456789")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` with [`PROMPT`] on stdin, checks it succeeded, returns its
/// standard output.
fn run_ok(mut cmd: Command) -> String {
    let mut child = cmd.spawn().expect("run axe");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(PROMPT.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for axe");
    assert!(
        out.status.success(),
        "axe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
