//! `make bench`, the MCP part: what axe's MCP client costs, measured in
//! this process through the library (`axe::mcp::Server`, exactly as an
//! agent's MCP tool call runs it) against an echo server that is this
//! bench binary run again (`support/mcp_echo.rs`: one thread, no
//! interpreter, so that its own part is small and the figures are axe's),
//! each figure beside its target. Never fails on a time.
//!
//! - one `tools/call` round trip over stdio: `Server::call` against a raw
//!   JSON-RPC line written and read by the bench over the same kind of pipe
//!   to the same server, interleaved, many times; the difference of the
//!   medians is axe's overhead (the server's own time cancels out).
//! - 64 calls at once to one server: 64 threads (started beforehand, let go
//!   together) each calling a tool that sleeps 50 ms (the server keeps the
//!   calls waiting in a heap on its one thread: it starts no thread per
//!   call, so what the fan-out adds is axe's); the wall time of the 64
//!   beside one call's time tells whether they overlapped, and the
//!   difference is what the fan-out adds. The same 64 written as raw lines
//!   at once by the bench (interleaved) show how much of that the server
//!   itself takes, and the server's CPU for each is printed.
//! - starting a server does not delay the first model request when the
//!   top-level agent does not use it: the release binary, run as a user
//!   would against a fake OpenAI provider, answers with a server that takes
//!   a second to start configured for its sub-agent only, and without it;
//!   the difference of the medians is the delay.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axe::mcp::{Server, ServerFile};
use common::{FakeServer, Home, openai_text};
use serde_json::json;

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../tests/common/mod.rs"]
mod common;

#[path = "support/mcp_echo.rs"]
mod echo;
#[path = "support/mcp_round.rs"]
mod round;
use round::Round;

/// Repetitions of the round trip; the median is reported.
const RUNS: usize = 1000;
/// Rounds of the 64 parallel calls (and of the single slow call), unless
/// `AXE_BENCH_MCP_ROUNDS` says how many (then only those run: to profile
/// them, or to take more of them).
const ROUNDS: usize = 15;
/// What the slow tool sleeps, in ms.
const SLEEP_MS: u64 = 50;

/// The same server driven by the bench itself: one JSON-RPC line out, one in.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some(echo::FLAG) {
        echo::serve();
        return;
    }
    let dir = std::env::temp_dir().join(format!("axe-bench-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let echo = Echo::new();
    println!(
        "mcp bench: {} cores, the echo server: {}",
        cores(),
        echo.shown()
    );
    let (Some(server), Some(mut raw)) = (start(&echo, &dir), Raw::start(&echo)) else {
        println!("mcp: FAILED (the echo server did not start)");
        let _ = std::fs::remove_dir_all(&dir);
        std::process::exit(1);
    };
    let rounds = std::env::var("AXE_BENCH_MCP_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok());
    let mut rows = Vec::new();
    if rounds.is_none() {
        rows.push(round_trip_overhead(&server, &mut raw));
    }
    rows.extend(parallel_calls(&server, &mut raw, rounds.unwrap_or(ROUNDS)));
    if rounds.is_none() {
        rows.push(start_delay(&echo));
    }
    println!("{:<58} {:>10} {:>10}", "figure", "ms", "target");
    for (name, value, target) in rows {
        let mark = if value <= target { "ok" } else { "MISSED" };
        println!("{name:<58} {value:>10.3} {target:>9} {mark}");
    }
    server.stop();
    raw.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The echo server's command line: this bench binary as the server
/// (`support/mcp_echo.rs`), or `AXE_BENCH_MCP_SERVER`'s words (another
/// server of the same tool, e.g. one in another language, to compare).
struct Echo {
    command: String,
    args: Vec<String>,
}

impl Echo {
    fn new() -> Echo {
        if let Ok(line) = std::env::var("AXE_BENCH_MCP_SERVER") {
            let mut words = line.split_whitespace().map(str::to_string);
            if let Some(command) = words.next() {
                return Echo {
                    command,
                    args: words.collect(),
                };
            }
        }
        let exe = std::env::current_exe().expect("the bench's own path");
        Echo {
            command: exe.to_string_lossy().into_owned(),
            args: vec![echo::FLAG.to_string()],
        }
    }

    fn shown(&self) -> String {
        format!("{} {}", self.command, self.args.join(" "))
    }
}

fn start(echo: &Echo, dir: &Path) -> Option<Server> {
    let config = ServerFile {
        name: "echo".into(),
        command: Some(echo.command.clone()),
        args: echo.args.clone(),
        ..ServerFile::default()
    }
    .validate("bench")
    .ok()?;
    let log: axe::mcp::rpc::Log =
        Arc::new(|l: &axe::mcp::rpc::Note| eprintln!("{}", l.verbose_line()));
    let deadline = Instant::now() + Duration::from_secs(30);
    match Server::start(&config, dir, log, deadline) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("mcp bench: the echo server did not start: {e}");
            None
        }
    }
}

impl Raw {
    fn start(echo: &Echo) -> Option<Raw> {
        let mut child = Command::new(&echo.command)
            .args(&echo.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Raw {
            child,
            stdin,
            stdout,
        })
    }

    /// One `tools/call` line written, its answer line read.
    fn call(&mut self, id: u64) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}}})
        .to_string();
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).expect("read");
        assert!(answer.contains("hello"), "{answer}");
    }

    /// 64 slow `tools/call` lines written at once, their 64 answers read:
    /// what the server itself takes to overlap 64 calls.
    fn fan_out(&mut self) {
        let mut lines = String::new();
        for id in 0..64 {
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "slow", "sleep_ms": SLEEP_MS}}});
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        self.stdin.write_all(lines.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
        for _ in 0..64 {
            let mut answer = String::new();
            self.stdout.read_line(&mut answer).expect("read");
            assert!(answer.contains("slow"), "{answer}");
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn round_trip_overhead(server: &Server, raw: &mut Raw) -> (&'static str, f64, f64) {
    let (mut axe_times, mut raw_times) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(600);
    for i in 0..RUNS {
        let started = Instant::now();
        let out = server.call("echo", json!({"text": "hello"}), deadline);
        assert!(!out.is_error && out.text == "hello", "{out:?}");
        axe_times.push(started.elapsed());
        let started = Instant::now();
        raw.call(i as u64 + 1);
        raw_times.push(started.elapsed());
    }
    let (a, r) = (median(axe_times), median(raw_times));
    println!(
        "tools/call round trip: through axe {:.3} ms, raw JSON-RPC line {:.3} ms (medians of {RUNS})",
        ms(a),
        ms(r)
    );
    (
        "tools/call over stdio: axe's overhead over a raw line",
        ms(a) - ms(r),
        0.2,
    )
}

fn parallel_calls(server: &Server, raw: &mut Raw, rounds: usize) -> Vec<(&'static str, f64, f64)> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let args = json!({"text": "slow", "sleep_ms": SLEEP_MS});
    let (mut one, mut one_cpu) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (started, cpu_at) = (Instant::now(), cpu());
        let out = server.call("echo", args.clone(), deadline);
        assert!(!out.is_error, "{out:?}");
        one.push(started.elapsed());
        one_cpu.push(cpu().saturating_sub(cpu_at));
    }
    let (mut wall, mut raw_wall, mut wall_cpu) = (Vec::new(), Vec::new(), Vec::new());
    let (mut served, mut raw_served, mut let_go) = (Vec::new(), Vec::new(), Vec::new());
    let (pid, raw_pid) = (server.pid().unwrap_or(0).unsigned_abs(), raw.child.id());
    let round = Round::new();
    std::thread::scope(|s| {
        for i in 0..64 {
            let (round, args) = (&round, &args);
            s.spawn(move || round.caller(i, server, args, deadline));
        }
        round.ready();
        for _ in 0..rounds {
            let (started, at) = (Instant::now(), proc_cpu(raw_pid));
            raw.fan_out();
            raw_wall.push(started.elapsed());
            raw_served.push(proc_cpu(raw_pid).saturating_sub(at));
            let at = proc_cpu(pid);
            let took = round.run();
            served.push(proc_cpu(pid).saturating_sub(at));
            wall.push(took.wall);
            let_go.push(took.let_go);
            wall_cpu.push(took.cpu);
        }
        round.finish();
    });
    // CPU is steadier than wall time on a loaded machine.
    println!(
        "CPU of this process (axe's client, its reader thread, the callers): 64 calls at once {:.2} ms, one call {:.3} ms (medians of {rounds})",
        ms(median(wall_cpu)),
        ms(median(one_cpu))
    );
    println!(
        "CPU of the echo server for the 64: from axe {:.2} ms, as raw lines {:.2} ms (medians of {rounds})",
        ms(median(served)),
        ms(median(raw_served))
    );
    println!(
        "the 64 callers all begun {:.3} ms after the go (the bench's part: one wake each; median of {rounds})",
        ms(median(let_go))
    );
    let (one, wall, raw_wall) = (median(one), median(wall), median(raw_wall));
    let overlapped = wall < one * 2;
    println!(
        "64 calls at once of a {SLEEP_MS} ms tool: wall {:.2} ms, one call {:.2} ms, wall / one {:.3}, overlapped: {} (medians of {rounds})",
        ms(wall),
        ms(one),
        wall.as_secs_f64() / one.as_secs_f64(),
        if overlapped { "yes" } else { "NO" }
    );
    println!(
        "the same 64 as raw lines written at once: wall {:.2} ms (the server's own part)",
        ms(raw_wall)
    );
    vec![
        (
            "64 calls at once to one server: added over one call",
            ms(wall) - ms(one),
            5.0,
        ),
        (
            "64 calls at once: axe's part (wall over the raw 64's)",
            ms(wall) - ms(raw_wall),
            5.0,
        ),
    ]
}

/// The CPU time process `pid` (one thread) has run so far: its
/// scheduler's count, in nanoseconds, rather than `stat`'s 10 ms ticks.
fn proc_cpu(pid: u32) -> Duration {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// This process's CPU so far (user + system, all its threads).
fn cpu() -> Duration {
    // SAFETY: getrusage into a zeroed rusage of the right size.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs of one agent with and without a slow-starting server for its
/// sub-agent.
const START_RUNS: usize = 10;

fn start_delay(echo: &Echo) -> (&'static str, f64, f64) {
    let provider = FakeServer::json(200, &openai_text("hello", 1, 1));
    let home = |server: bool| {
        let home = Home::new();
        if server {
            home.config(&format!(
                "[[mcp_servers]]\nname = \"slow\"\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\n",
                format!("sleep 1; exec {}", echo.shown())
            ));
        }
        home.named_agent("top", "openai/m", "sub_agents = [\"helper\"]\n");
        home.named_agent("helper", "openai/m", "mcp_servers = [\"slow\"]\n");
        home
    };
    let (with, without) = (home(true), home(false));
    let run = |home: &Home| {
        let started = Instant::now();
        let out = home
            .axe()
            .env("OPENAI_API_KEY", "sk-bench")
            .env("AXE_OPENAI_BASE_URL", &provider.url)
            .args(["run", "top", "-p", "hi"])
            .output()
            .expect("run axe");
        assert!(out.status.success(), "{out:?}");
        started.elapsed()
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..START_RUNS {
        a.push(run(&with));
        b.push(run(&without));
    }
    let (a, b) = (median(a), median(b));
    println!(
        "a run whose sub-agent's server takes 1 s to start: {:.2} ms; with no server: {:.2} ms (medians of {START_RUNS})",
        ms(a),
        ms(b)
    );
    (
        "first answer: delay from a server the top level does not use",
        ms(a) - ms(b),
        1.0,
    )
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
