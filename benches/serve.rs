//! `make bench`, the serve part (design ch. 12): the release binary's
//! `axe serve` against an instant fake OpenAI provider, driven on raw
//! loopback connections (one per request, as a plain client makes them).
//! Printed beside their targets; never fails on a time.
//!
//! - requests per second for a one-agent run at concurrency 1 and 32;
//! - the latency each request sees at 32 at once, p50 and p99, beside the
//!   same at concurrency 1: what 32 at once add (target: p99 added ≤ 2 ms),
//!   flat out (the CPU saturated) and paced (each client pausing 20 ms);
//! - serve's time per request beside the same run as an `axe run` process
//!   (start-up included): what a served request saves.

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
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{FakeServer, Home, P, openai_text};

const BODY: &str = r#"{"model":"helper","messages":[{"role":"user","content":"hi"}]}"#;

fn main() {
    let bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/axe");
    if !bin.is_file() {
        eprintln!("SKIPPED: no release build (cargo build --release)");
        return;
    }
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::route_with(Some(64), |_| {
        common::Reply::Json(200, openai_text("ok", 1, 1))
    });
    let mut cmd = home.command(&bin);
    cmd.env(P::OpenAi.base_url_var(), &fake.url)
        .env("OPENAI_API_KEY", common::OPENAI_KEY)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-concurrent",
            "64",
            "-q",
            "--no-log",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("axe serve");
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_string();
    for _ in 0..50 {
        request(&addr);
    }
    let (rps1, lat1) = run(&addr, 1, 400, Duration::ZERO);
    let (rps32, lat32) = run(&addr, 32, 40, Duration::ZERO);
    // The same 32 clients, each pausing 20 ms between its requests: an
    // offered load well below what two cores serve, so that the latency
    // is what 32 at once add, not queueing for a saturated CPU.
    let (rps_paced, lat_paced) = run(&addr, 32, 40, Duration::from_millis(20));
    let (p50_1, p99_1) = (pct(&lat1, 50), pct(&lat1, 99));
    let (p50_32, p99_32) = (pct(&lat32, 50), pct(&lat32, 99));
    let cli = cli_run(&home, &bin, &fake, 30);
    let _ = child.kill();
    let _ = child.wait();
    println!("axe serve, one-agent run, instant provider (release build)");
    println!("  requests/s at concurrency 1:   {rps1:8.0}");
    println!("  requests/s at concurrency 32:  {rps32:8.0}");
    println!(
        "  latency at 1:  p50 {:.2} ms, p99 {:.2} ms",
        ms(p50_1),
        ms(p99_1)
    );
    println!(
        "  latency at 32: p50 {:.2} ms, p99 {:.2} ms",
        ms(p50_32),
        ms(p99_32)
    );
    println!(
        "  p99 added at 32 over the p50 at 1: {:.2} ms   (target <= 2 ms)",
        ms(p99_32.saturating_sub(p50_1))
    );
    let (p50_p, p99_p) = (pct(&lat_paced, 50), pct(&lat_paced, 99));
    println!(
        "  latency at 32 paced (20 ms between a client's requests, {rps_paced:.0}/s): p50 {:.2} ms, p99 {:.2} ms",
        ms(p50_p),
        ms(p99_p)
    );
    println!(
        "  p99 added at 32 paced over the p50 at 1: {:.2} ms   (target <= 2 ms)",
        ms(p99_p.saturating_sub(p50_1))
    );
    println!(
        "  per request: served {:.2} ms, `axe run` process {:.2} ms: serve saves {:.2} ms   (target: well under the CLI's start-up)",
        ms(p50_1),
        ms(cli),
        ms(cli.saturating_sub(p50_1))
    );
}

/// `per` requests on each of `threads` threads, each thread pausing
/// `pause` after each of its requests; requests/s and every latency.
fn run(addr: &str, threads: usize, per: usize, pause: Duration) -> (f64, Vec<Duration>) {
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let addr = addr.to_string();
            std::thread::spawn(move || {
                (0..per)
                    .map(|_| {
                        let took = request(&addr);
                        std::thread::sleep(pause);
                        took
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let took = started.elapsed().as_secs_f64();
    all.sort();
    (all.len() as f64 / took, all)
}

/// One completion on a connection of its own; its latency.
fn request(addr: &str) -> Duration {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    let _ = s.set_nodelay(true);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    started.elapsed()
}

/// The median wall time of `axe run helper` as a process.
fn cli_run(home: &Home, bin: &std::path::Path, fake: &FakeServer, n: usize) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let mut c: Command = home.command(bin);
            c.env(P::OpenAi.base_url_var(), &fake.url)
                .env("OPENAI_API_KEY", common::OPENAI_KEY)
                .args(["run", "helper", "-p", "hi", "--no-log"]);
            let started = Instant::now();
            let o = c.output().expect("axe run");
            assert!(o.status.success());
            started.elapsed()
        })
        .collect();
    times.sort();
    times[n / 2]
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
