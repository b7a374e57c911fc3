//! `make bench`, the tools' part: what the sandbox and the file tools cost,
//! measured in this process through the library (the tool registry and the
//! sandbox, exactly as a tool call runs them), each figure beside its
//! target. Never fails on a time.
//!
//! - `run_command` of `true`: the sandboxed run (a private TMPDIR, the
//!   Landlock ruleset built, the child confined, its group killed) against a
//!   plain spawn of `sh -c true`, interleaved, many times; the difference of
//!   the medians is the overhead.
//! - The confinement alone (`sandbox::Confinement::new`: the temporary
//!   directory, the Landlock ruleset with `/etc` entry by entry, the seccomp
//!   filter), built per command; and the walk of `/etc` it reuses, made
//!   once per process.
//! - `read_file` of a 1 MiB file: the registry's run of the call, from the
//!   arguments to the capped result.
//! - 64 `read_file` calls at once: 64 threads each running one call, as the
//!   fan-out runs the calls of one response.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use axe::sandbox::{self, Mode, Policy, Request, Root};
use axe::tools::{self, Args, Env};

/// Repetitions of each measure; the median is reported.
const RUNS: usize = 300;

fn main() {
    let dir = std::env::temp_dir().join(format!("axe-bench-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let abi = sandbox::landlock_abi();
    println!("tools bench: Landlock ABI {abi}, {} cores", cores());
    let mut rows = Vec::new();
    if abi > 0 {
        rows.push(run_command_overhead(&dir, abi));
        rows.extend(confinement_cost(&dir, abi));
    } else {
        println!("run_command: SKIPPED (no Landlock on this kernel)");
    }
    let file = one_mib_file(&dir);
    let (one, parallel) = read_file_times(&dir, &file);
    rows.push(("read_file of a 1 MiB file (median)", ms(one), 2.0));
    rows.push((
        "64 read_file calls at once (median of the slowest)",
        ms(parallel),
        10.0,
    ));
    println!("{:<58} {:>10} {:>10}", "figure", "ms", "target");
    for (name, value, target) in rows {
        let mark = if value <= target { "ok" } else { "MISSED" };
        println!("{name:<58} {value:>10.3} {target:>9} {mark}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn run_command_overhead(dir: &Path, abi: i32) -> (&'static str, f64, f64) {
    let policy = policy(dir, Mode::Landlock(abi));
    let (mut sandboxed, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let started = Instant::now();
        let req = Request {
            script: "true",
            policy: &policy,
            deadline: Instant::now() + Duration::from_secs(10),
            cancel: None,
            max_output: 32 * 1024,
        };
        let done = sandbox::run(&req).expect("sandboxed true");
        assert_eq!(done.exit, sandbox::Exit::Code(0));
        sandboxed.push(started.elapsed());
        let started = Instant::now();
        let status = Command::new("/bin/sh")
            .args(["-c", "true"])
            .current_dir(dir)
            .status()
            .expect("sh -c true");
        assert!(status.success());
        plain.push(started.elapsed());
    }
    let (s, p) = (median(sandboxed), median(plain));
    println!(
        "run_command true: sandboxed {:.3} ms, plain sh -c true {:.3} ms (medians of {RUNS})",
        ms(s),
        ms(p)
    );
    (
        "run_command `true`: overhead over sh -c true",
        ms(s) - ms(p),
        1.0,
    )
}

/// The `/etc` walk (once, timed cold in this process) and the
/// confinement built per command (median).
fn confinement_cost(dir: &Path, abi: i32) -> [(&'static str, f64, f64); 2] {
    let started = Instant::now();
    let entries = sandbox::etc::walk(Path::new("/etc"), &[]).len();
    let walk = started.elapsed();
    let policy = policy(dir, Mode::Landlock(abi));
    let mut built = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let c = sandbox::Confinement::new(&policy).expect("confinement");
        built.push(started.elapsed());
        drop(c);
    }
    println!("/etc: {entries} entries granted");
    [
        ("/etc walked (once per process)", ms(walk), 5.0),
        (
            "confinement built per command (median)",
            ms(median(built)),
            1.0,
        ),
    ]
}

fn read_file_times(dir: &Path, file: &str) -> (Duration, Duration) {
    let root = Root::open(dir).expect("root");
    let policy = policy(dir, Mode::Off);
    let args: Args = [("path".to_string(), file.to_string())]
        .into_iter()
        .collect();
    let env = Env {
        root: &root,
        policy: &policy,
        allowed_hosts: &[],
        private_networks: false,
        deadline: Instant::now() + Duration::from_secs(60),
        cancel: &axe::deadline::Cancel::default(),
        artifacts: None,
    };
    let mut one = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let done = tools::run("read_file", &args, &env);
        assert!(!done.is_error, "{}", done.text);
        one.push(started.elapsed());
    }
    let mut slowest = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..64 {
                s.spawn(|| {
                    let done = tools::run("read_file", &args, &env);
                    assert!(!done.is_error);
                });
            }
        });
        slowest.push(started.elapsed());
    }
    (median(one), median(slowest))
}

fn one_mib_file(dir: &Path) -> String {
    let line = "The quick brown fox jumps over the lazy dog, again and again and again.\n";
    let text = line.repeat((1 << 20) / line.len() + 1);
    std::fs::write(dir.join("big.txt"), &text[..1 << 20]).expect("write");
    "big.txt".to_string()
}

fn policy(dir: &Path, mode: Mode) -> Policy {
    Policy {
        workdir: sandbox::Opened::own(dir).expect("workdir"),
        read: Vec::new(),
        write: Vec::new(),
        network: false,
        env: Vec::new(),
        vars: Vec::new(),
        mode,
        protect: true,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
