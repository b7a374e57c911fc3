//! `make bench`, the MCP part: what axe's MCP client costs, measured in
//! this process through the library (`axe::mcp::Server`, exactly as an
//! agent's MCP tool call runs it) against a tiny echo server in Python
//! written into a temp dir, each figure beside its target. Never fails on
//! a time; without `python3` it prints SKIPPED.
//!
//! - one `tools/call` round trip over stdio: `Server::call` against a raw
//!   JSON-RPC line written and read by the bench over the same kind of pipe
//!   to the same script, interleaved, many times; the difference of the
//!   medians is axe's overhead (the server's own time cancels out).
//! - 64 calls at once to one server: 64 threads (started beforehand, let go
//!   together) each calling a tool that sleeps 50 ms (the script keeps the
//!   calls waiting in a heap on its one thread: it starts no thread per
//!   call, so what the fan-out adds is axe's); the wall time of the 64
//!   beside one call's time tells whether they overlapped, and the
//!   difference is what the fan-out adds. The same 64 written as raw lines
//!   at once by the bench (interleaved) show how much of that the script
//!   itself takes.
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
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use axe::mcp::{Server, ServerFile};
use common::{FakeServer, Home, openai_text};
use serde_json::json;

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../tests/common/mod.rs"]
mod common;

/// Repetitions of the round trip; the median is reported.
const RUNS: usize = 1000;
/// Rounds of the 64 parallel calls (and of the single slow call).
const ROUNDS: usize = 15;
/// What the slow tool sleeps, in ms.
const SLEEP_MS: u64 = 50;

/// The echo server: `echo` answers `text` back after `sleep_ms`. One
/// thread for every call: a slow call is kept in a heap by the time it is
/// due, and the loop waits (`select`) for the next line or the next due
/// answer, whichever comes first, so that 64 calls at once cost the script
/// no thread starts and the figure is axe's.
const ECHO_PY: &str = r#"
import heapq, json, os, select, sys, time
out = sys.stdout.buffer
due = []
seq = 0
def send(m):
    out.write((json.dumps(m) + "\n").encode())
def answer(m):
    a = m["params"].get("arguments") or {}
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": a.get("text", "")}]}})
def handle(m):
    global seq
    if "id" not in m:
        return
    method = m.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "echo", "description": "echo", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        sleep_ms = (m["params"].get("arguments") or {}).get("sleep_ms")
        if sleep_ms:
            seq += 1
            heapq.heappush(due, (time.monotonic() + sleep_ms / 1000.0, seq, m))
        else:
            answer(m)
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no such method"}})
fd = sys.stdin.fileno()
buf = b""
while True:
    wait = max(0.0, due[0][0] - time.monotonic()) if due else None
    if select.select([fd], [], [], wait)[0]:
        data = os.read(fd, 1 << 16)
        if not data:
            break
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            if line.strip():
                handle(json.loads(line))
    now = time.monotonic()
    while due and due[0][0] <= now:
        answer(heapq.heappop(due)[2])
    out.flush()
"#;

/// The same script driven by the bench itself: one JSON-RPC line out, one in.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn main() {
    let dir = std::env::temp_dir().join(format!("axe-bench-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let script = dir.join("echo.py");
    std::fs::write(&script, ECHO_PY).expect("write the echo server");
    let script = script.to_string_lossy().into_owned();
    println!("mcp bench: {} cores", cores());
    let (Some(server), Some(mut raw)) = (start(&script, &dir), Raw::start(&script)) else {
        println!("mcp: SKIPPED (python3 cannot run the echo server)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let mut rows = Vec::new();
    rows.push(round_trip_overhead(&server, &mut raw));
    rows.extend(parallel_calls(&server, &mut raw));
    rows.push(start_delay(&script));
    println!("{:<58} {:>10} {:>10}", "figure", "ms", "target");
    for (name, value, target) in rows {
        let mark = if value <= target { "ok" } else { "MISSED" };
        println!("{name:<58} {value:>10.3} {target:>9} {mark}");
    }
    server.stop();
    raw.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

fn start(script: &str, dir: &Path) -> Option<Server> {
    let config = ServerFile {
        name: "echo".into(),
        command: Some("python3".into()),
        args: vec![script.to_string()],
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
    fn start(script: &str) -> Option<Raw> {
        let mut child = Command::new("python3")
            .arg(script)
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
    /// what the script itself takes to overlap 64 calls.
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

fn parallel_calls(server: &Server, raw: &mut Raw) -> Vec<(&'static str, f64, f64)> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let args = json!({"text": "slow", "sleep_ms": SLEEP_MS});
    let (mut one, mut one_cpu) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (started, cpu_at) = (Instant::now(), cpu());
        let out = server.call("echo", args.clone(), deadline);
        assert!(!out.is_error, "{out:?}");
        one.push(started.elapsed());
        one_cpu.push(cpu().saturating_sub(cpu_at));
    }
    let (mut wall, mut raw_wall, mut wall_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        raw.fan_out();
        raw_wall.push(started.elapsed());
        let (took, cpu) = at_once(server, &args, deadline);
        wall.push(took);
        wall_cpu.push(cpu);
    }
    // CPU is steadier than wall time on a loaded machine.
    println!(
        "CPU of this process (axe's client, its reader thread, the callers): 64 calls at once {:.2} ms, one call {:.3} ms (medians of {ROUNDS})",
        ms(median(wall_cpu)),
        ms(median(one_cpu))
    );
    let (one, wall, raw_wall) = (median(one), median(wall), median(raw_wall));
    let overlapped = wall < one * 2;
    println!(
        "64 calls at once of a {SLEEP_MS} ms tool: wall {:.2} ms, one call {:.2} ms, wall / one {:.3}, overlapped: {} (medians of {ROUNDS})",
        ms(wall),
        ms(one),
        wall.as_secs_f64() / one.as_secs_f64(),
        if overlapped { "yes" } else { "NO" }
    );
    println!(
        "the same 64 as raw lines written at once: wall {:.2} ms (the script's own part)",
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

/// 64 calls of `args` at once, each on a thread of its own started
/// beforehand (a barrier lets them go together, so the bench's own thread
/// starts are not measured): from their start to the last answer, and
/// this process's CPU from then until they are joined.
fn at_once(server: &Server, args: &serde_json::Value, deadline: Instant) -> (Duration, Duration) {
    let go = Barrier::new(65);
    let started = std::thread::scope(|s| {
        let callers: Vec<_> = (0..64)
            .map(|_| {
                s.spawn(|| {
                    go.wait();
                    let out = server.call("echo", args.clone(), deadline);
                    assert!(!out.is_error, "{out:?}");
                    Instant::now()
                })
            })
            .collect();
        let cpu_at = cpu();
        go.wait();
        let started = Instant::now();
        let last = callers
            .into_iter()
            .map(|c| c.join().expect("a caller"))
            .max();
        (started, last, cpu().saturating_sub(cpu_at))
    });
    let (started, last, cpu) = started;
    let took = last.expect("64 callers").saturating_duration_since(started);
    (took, cpu)
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

fn start_delay(script: &str) -> (&'static str, f64, f64) {
    let provider = FakeServer::json(200, &openai_text("hello", 1, 1));
    let home = |server: bool| {
        let home = Home::new();
        if server {
            home.config(&format!(
                "[[mcp_servers]]\nname = \"slow\"\ncommand = \"sh\"\nargs = [\"-c\", {:?}]\n",
                format!("sleep 1; exec python3 {script}")
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
