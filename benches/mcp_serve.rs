//! `make bench`, the `axe mcp serve` part (design §9.6, issue 35's
//! figures): the release binary serving one agent over stdio against an
//! instant fake OpenAI provider, driven by raw JSON-RPC lines written by
//! the bench, in both eras: the handshake's (`initialize` first) and the
//! stateless revision's (each request's `_meta` envelope, no handshake).
//! Printed beside their targets; never fails on a time.
//!
//! - one `tools/call` round trip, interleaved with a raw HTTP request of
//!   the bench's own to the same fake provider: the difference of the
//!   medians is all axe does for a call (the protocol, and the run itself:
//!   the agent resolved, the request made, the answer read, the run log
//!   written), so an upper bound on what serving adds over the same run
//!   in an `axe run` process (target: ≤ 0.5 ms); and beside the same
//!   run through `axe serve` (HTTP, one long-lived process, fresh
//!   connection each): what MCP over stdio costs over axe's other server;
//! - 64 calls written at once on the one connection, the provider taking
//!   50 ms: their wall time beside one such call's (target: they overlap
//!   and add ≤ 5 ms), and the serving process's CPU for them;
//! - the stateless era's round trip beside the handshake era's,
//!   interleaved, and the serving process's CPU per call in each, the
//!   steadier figure on a loaded machine (target: no more);
//! - for contrast, an `axe run` process for the same agent, start-up
//!   included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use common::{FakeServer, Home, P, Reply, openai_text};
use serde_json::{Value, json};

/// Round trips per era (interleaved); the median is reported.
const CALLS: usize = 400;
/// Rounds of the 64 calls at once (and of the single slow call).
const ROUNDS: usize = 9;
/// What the provider takes for a task that says SLOW, in ms.
const SLOW_MS: u64 = 50;
/// `axe run` processes for the contrast.
const RUNS: usize = 15;

/// A running `axe mcp serve`, spoken to line by line.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stateless: bool,
    id: u64,
}

fn main() {
    let bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/axe");
    if !bin.is_file() {
        eprintln!("mcp serve: SKIPPED: no release build (cargo build --release)");
        return;
    }
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::route_with(Some(192), |r| {
        let ok = Reply::Json(200, openai_text("ok", 1, 1));
        if r.body.contains("SLOW") {
            Reply::Delay(Duration::from_millis(SLOW_MS), Box::new(ok))
        } else {
            ok
        }
    });
    println!("mcp serve bench: {} cores", cores());
    let mut old = Session::start(&bin, &home, &fake, false);
    let mut new = Session::start(&bin, &home, &fake, true);
    let (addr, mut served) = serve(&bin, &home, &fake);
    let provider = fake.url.trim_start_matches("http://").to_string();
    let mut t = [(); 4].map(|()| Vec::new());
    let cpu_at = (cpu(&old.child), cpu(&new.child));
    for i in 0..CALLS {
        // Each takes its turn first: the one before may still be ending
        // its run (the log written, its thread ended) on the shared cores.
        for k in (0..4).map(|k| (k + i) % 4) {
            t[k].push(match k {
                0 => old.call("hi"),
                1 => new.call("hi"),
                2 => post(&provider, "gpt-4o"),
                _ => post(&addr, "helper"),
            });
        }
    }
    let per_call = |c: Duration, at: Duration| ms(c.saturating_sub(at)) / CALLS as f64;
    let (cpu_old, cpu_new) = (
        per_call(cpu(&old.child), cpu_at.0),
        per_call(cpu(&new.child), cpu_at.1),
    );
    println!(
        "CPU of the axe mcp serve process per call: handshake era {cpu_old:.3} ms, stateless {cpu_new:.3} ms (over {CALLS} calls, in 10 ms ticks)",
    );
    let _ = served.kill();
    let _ = served.wait();
    let [o, n, r, h] = t.map(median);
    println!(
        "tools/call round trip: handshake era {:.3} ms, stateless {:.3} ms; the provider alone (a raw HTTP request) {:.3} ms; the same run through `axe serve` {:.3} ms (medians of {CALLS}, interleaved)",
        ms(o),
        ms(n),
        ms(r),
        ms(h)
    );
    let mut rows = vec![
        (
            "tools/call: all axe does for a call (handshake era)",
            ms(o) - ms(r),
            0.5,
        ),
        (
            "tools/call: all axe does for a call (stateless)",
            ms(n) - ms(r),
            0.5,
        ),
        (
            "tools/call (stateless) over the run through axe serve",
            ms(n) - ms(h),
            0.5,
        ),
        (
            "stateless over handshake era: CPU per call",
            cpu_new - cpu_old,
            0.0,
        ),
    ];
    rows.extend(fan_out(&mut old, "handshake era"));
    rows.extend(fan_out(&mut new, "stateless"));
    contrast(&bin, &home, &fake, n);
    println!("{:<58} {:>10} {:>10}", "figure", "ms", "target");
    for (name, value, target) in rows {
        let mark = if value <= target { "ok" } else { "MISSED" };
        println!("{name:<58} {value:>10.3} {target:>9} {mark}");
    }
    old.stop();
    new.stop();
}

impl Session {
    fn start(bin: &Path, home: &Home, fake: &FakeServer, stateless: bool) -> Session {
        let mut child = home
            .command(bin)
            .env(P::OpenAi.base_url_var(), &fake.url)
            .env("OPENAI_API_KEY", common::OPENAI_KEY)
            .args(["mcp", "serve", "--max-concurrent", "64"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("axe mcp serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            stateless,
            id: 0,
        };
        if !stateless {
            let init = s.request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}),
            );
            s.write(&[init]);
            let answer = s.read();
            assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
            s.write(&[json!({"jsonrpc": "2.0", "method": "notifications/initialized"})]);
        }
        s
    }

    /// A request of this session's era: the stateless one carries the
    /// envelope in `params._meta` (design §9.6).
    fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.id += 1;
        if self.stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
    }

    fn call_line(&mut self, task: &str) -> Value {
        self.request(
            "tools/call",
            json!({"name": "helper", "arguments": {"task": task}}),
        )
    }

    fn write(&mut self, messages: &[Value]) {
        let mut lines = String::new();
        for m in messages {
            lines.push_str(&m.to_string());
            lines.push('\n');
        }
        self.stdin.write_all(lines.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// One `tools/call` written, its answer read: the round trip.
    fn call(&mut self, task: &str) -> Duration {
        let line = self.call_line(task);
        let started = Instant::now();
        self.write(&[line]);
        let answer = self.read();
        let took = started.elapsed();
        answered(&answer);
        took
    }

    /// 64 slow `tools/call`s written at once, their 64 answers read.
    fn at_once(&mut self) -> Duration {
        let lines: Vec<Value> = (0..64).map(|_| self.call_line("SLOW")).collect();
        let started = Instant::now();
        self.write(&lines);
        for _ in 0..64 {
            answered(&self.read());
        }
        started.elapsed()
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// The answer is a result that is not an error.
fn answered(answer: &Value) {
    let r = &answer["result"];
    assert!(
        r["isError"] != true && r["content"][0]["text"] == "ok",
        "{answer}"
    );
}

fn fan_out(s: &mut Session, era: &'static str) -> Vec<(&'static str, f64, f64)> {
    let (mut one, mut all, mut used) = (Vec::new(), Vec::new(), Duration::ZERO);
    for _ in 0..ROUNDS {
        one.push(s.call("SLOW"));
        let at = cpu(&s.child);
        all.push(s.at_once());
        used += cpu(&s.child).saturating_sub(at);
    }
    let (one, all) = (median(one), median(all));
    println!(
        "{era}: 64 calls at once of a {SLOW_MS} ms run: wall {:.2} ms, one call {:.2} ms, overlapped: {}, axe's CPU for the 64 {:.1} ms (medians of {ROUNDS}; CPU their mean)",
        ms(all),
        ms(one),
        if all < one * 2 { "yes" } else { "NO" },
        ms(used) / ROUNDS as f64
    );
    let name = if era == "stateless" {
        "64 calls at once, one connection: added (stateless)"
    } else {
        "64 calls at once, one connection: added (handshake era)"
    };
    vec![(name, ms(all) - ms(one), 5.0)]
}

/// One chat completion POSTed on a fresh loopback connection (to the
/// fake provider, or to `axe serve`), its answer read to the end.
fn post(addr: &str, model: &str) -> Duration {
    let body = format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]}}"#);
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let mut c = TcpStream::connect(addr).expect("connect");
    let _ = c.set_nodelay(true);
    c.write_all(request.as_bytes()).expect("write");
    let mut answer = BufReader::new(c);
    let (mut head, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        answer.read_line(&mut line).expect("read");
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().expect("content-length");
        }
        if line.trim().is_empty() {
            break;
        }
        head.push_str(&line);
    }
    // The fake provider keeps the connection open: the body is read by
    // its length, not to the end.
    let mut body = vec![0; length];
    answer.read_exact(&mut body).expect("read the body");
    let took = started.elapsed();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    took
}

/// `axe serve` for the same agent: the same run in one long-lived axe
/// process, over HTTP instead of MCP. Its address, and the process.
fn serve(bin: &Path, home: &Home, fake: &FakeServer) -> (String, Child) {
    let mut child = home
        .command(bin)
        .env(P::OpenAi.base_url_var(), &fake.url)
        .env("OPENAI_API_KEY", common::OPENAI_KEY)
        .args(["serve", "--listen", "127.0.0.1:0", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("axe serve");
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("axe serve's address")
        .to_string();
    (addr, child)
}

/// An `axe run` process for the same agent, start-up included, beside
/// the stateless call.
fn contrast(bin: &Path, home: &Home, fake: &FakeServer, call: Duration) {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = home
            .command(bin)
            .env(P::OpenAi.base_url_var(), &fake.url)
            .env("OPENAI_API_KEY", common::OPENAI_KEY)
            .args(["run", "helper", "-p", "hi"])
            .output()
            .expect("axe run");
        assert!(out.status.success(), "{out:?}");
        runs.push(started.elapsed());
    }
    println!(
        "the same agent as an `axe run` process: {:.2} ms (median of {RUNS}); a tools/call {:.3} ms",
        ms(median(runs)),
        ms(call)
    );
}

/// A child's CPU so far (user + system, all its threads), from
/// `/proc/<pid>/stat` in clock ticks (100 a second on Linux).
fn cpu(child: &Child) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap_or_default();
    // The fields after the command's closing parenthesis: utime and stime
    // are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
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
