//! axe's peak memory, measured by the kernel for exactly that process
//! (`wait4`, [`with_peak_rss`]): a 4 GiB context file is skipped unread,
//! a command's gigabyte of output is cut in bounded memory, a batch of
//! 100,000 inputs runs in the memory of a batch of 1,000, and a `--resume`
//! file's enormous line is passed over without being held.
//!
//! A crate of its own: Linux counts in a child's peak the memory of the
//! process that spawned it (the high-water mark of the address space it
//! had until exec, which a vfork child shares with its parent), so these
//! figures hold only where the test process stays small. The integration
//! binary grows with the hundreds of tests beside them; so does this one
//! once the batch test has read 100,000 answers, which is why each test
//! measures from a fresh copy of this binary ([`in_own_process`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
mod common;
use common::*;

use std::time::{Duration, Instant};

use serde_json::json;

/// Set in the copy of this binary that [`in_own_process`] starts.
const OWN_PROCESS: &str = "AXE_PEAK_MEMORY_OWN_PROCESS";

/// True in a process that runs only the test `name`; elsewhere runs this
/// binary again for that one test, checks that it ran and passed, and
/// returns false. A peak taken after another test grew the process would
/// count that test's memory (see the crate's comment); the order in which
/// the harness runs tests is not ours to choose.
fn in_own_process(name: &str) -> bool {
    if std::env::var_os(OWN_PROCESS).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, "1")
        .output()
        .unwrap();
    let all = format!("{}{}", stdout(&out), stderr(&out));
    eprint!("{all}");
    assert!(out.status.success(), "{name} failed in its own process");
    assert!(all.contains("1 passed"), "{name} did not run");
    false
}

/// A home with agent `solo` on OpenAI, `extra` appended.
fn solo(extra: &str) -> Home {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", extra);
    home
}

#[test]
fn a_huge_context_file_is_skipped_without_being_read() {
    if !in_own_process("a_huge_context_file_is_skipped_without_being_read") {
        return;
    }
    let home = solo("files = [\"*.log\"]\n");
    let dir = home.dir.path();
    std::fs::write(dir.join("ok.log"), "fine\n").unwrap();
    // 4 GiB, sparse: costs nothing on disk, everything if read.
    let big = std::fs::File::create(dir.join("big.log")).unwrap();
    big.set_len(4 << 30).unwrap();
    drop(big);
    let started = Instant::now();
    let (out, peak_kib) = with_peak_rss(home.axe().args(["run", "solo", "--dry-run", "--verbose"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stdout(&out).contains("--- Files (1) ---\nok.log\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(
            "Skipped:  big.log (larger than max_file_bytes, 1048576: 4294967296 bytes)\n"
        ),
        "{}",
        stderr(&out)
    );
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
}

#[test]
fn a_gigabyte_of_output_is_capped_in_bounded_memory() {
    if !in_own_process("a_gigabyte_of_output_is_capped_in_bounded_memory") {
        return;
    }
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let calls: Vec<Call> = vec![(
        "c1",
        "run_command",
        json!({"command": "head -c 1073741824 /dev/zero | tr '\\0' x; echo; echo end"}),
    )];
    let (out, results, _, peak_kib) = s.run_measured(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(results[0].len() < 40 * 1024, "{} bytes", results[0].len());
    assert!(
        results[0].contains("bytes of output cut"),
        "{}",
        &results[0][..200]
    );
    assert!(
        results[0].contains("end\n[exit status 0"),
        "{}",
        &results[0][results[0].len() - 200..]
    );
    // axe's own peak memory stayed small.
    assert!(peak_kib < 200 * 1024, "peak RSS of axe: {peak_kib} KiB");
}

/// A batch of `n` one-line inputs against `server`: its peak RSS in KiB,
/// after checking that every input got its line.
fn batch_peak(home: &Home, server: &FakeServer, n: usize) -> u64 {
    let inputs: String = (1..=n).map(|i| format!("input {i}\n")).collect();
    let path = home.dir.path().join(format!("in-{n}.txt"));
    std::fs::write(&path, inputs).unwrap();
    let mut cmd = home.axe_on(&[(P::OpenAi, server)]);
    cmd.args(["run", "solo", "--jobs", "8", "--no-log", "--each"])
        .arg(&path);
    let (out, peak_kib) = with_peak_rss(&mut cmd);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), n);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["line"], n as u64);
    assert_eq!(last["ok"], true);
    peak_kib
}

#[test]
fn a_batch_of_100000_inputs_runs_in_the_memory_of_one_of_1000() {
    if !in_own_process("a_batch_of_100000_inputs_runs_in_the_memory_of_one_of_1000") {
        return;
    }
    let home = solo("");
    let server = FakeServer::route(|_| Reply::Json(200, openai_text("ok", 5, 2)));
    let small = batch_peak(&home, &server, 1_000);
    let started = Instant::now();
    let large = batch_peak(&home, &server, 100_000);
    eprintln!(
        "batch peak RSS: 1,000 inputs {small} KiB, 100,000 inputs {large} KiB ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        large < small + 8 * 1024,
        "peak RSS grew with the inputs: {small} KiB for 1,000, {large} KiB for 100,000"
    );
    assert!(large < 64 * 1024, "peak RSS {large} KiB");
}

#[test]
fn a_resume_file_with_an_enormous_line_is_read_in_bounded_memory() {
    if !in_own_process("a_resume_file_with_an_enormous_line_is_read_in_bounded_memory") {
        return;
    }
    let home = solo("");
    let server = FakeServer::route(|_| Reply::Json(200, openai_text("ok", 5, 2)));
    let dir = home.dir.path();
    std::fs::write(dir.join("in.txt"), "input 1\ninput 2\ninput 3\n").unwrap();
    // Input 1 done, then a 512 MiB line (sparse: nothing on disk; its
    // 64 MiB head is read, the rest only passed over), then input 2 done.
    let done = |n: u64| {
        format!(
            "{}\n",
            json!({"line": n, "input": format!("input {n}"), "ok": true})
        )
    };
    let out = dir.join("out.jsonl");
    std::fs::write(&out, done(1)).unwrap();
    let f = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    f.set_len(512 << 20).unwrap();
    drop(f);
    let mut f = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    std::io::Write::write_all(&mut f, format!("\n{}", done(2)).as_bytes()).unwrap();
    drop(f);
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args([
        "run",
        "solo",
        "--no-log",
        "--each",
        "in.txt",
        "--resume",
        "out.jsonl",
    ]);
    let (o, peak_kib) = with_peak_rss(&mut cmd);
    eprintln!("resume peak RSS past a 512 MiB line: {peak_kib} KiB");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.requests().len(), 1, "only input 3 ran");
    assert!(server.requests()[0].body.contains("input 3"));
    assert!(peak_kib < 160 * 1024, "peak RSS of axe: {peak_kib} KiB");
}
