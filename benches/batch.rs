//! `make bench`, the batch part (design §11.2): 1,000 one-line inputs with
//! `--jobs 32` against a fake OpenAI server that answers each request after
//! L = 50 ms, through the release binary: wall time against 1.1 × ⌈1000/32⌉
//! × L, axe's CPU per input, its peak RSS and the TCP connections the server
//! accepted; then the same 1,000 inputs as 1,000 single `axe run`s through
//! `xargs -P 32`, side by side. The figures are printed beside their
//! targets, never checked. Then 100,000 inputs through `--provider-batch`
//! against a fake OpenAI Batch API (issue 37's figure: axe's memory). `AXE_BENCH_REPEATS=n` sets the repetitions
//! (default 3; the median is shown), `AXE_BENCH_BIN=PATH` another binary.

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
#[allow(dead_code, reason = "the bench uses a part of it")]
#[path = "support/measure.rs"]
mod measure;

use std::process::Command;
use std::time::Duration;

use common::*;
use measure::Measured;

const INPUTS: u64 = 1000;
const JOBS: u64 = 32;
const LATENCY: Duration = Duration::from_millis(50);

/// One way of running the inputs, measured.
struct Run {
    m: Measured,
    connections: usize,
    requests: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(measure::SHIM_FLAG) {
        return measure::shim(&args[2..]);
    }
    let repeats: usize = std::env::var("AXE_BENCH_REPEATS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let home = Home::new();
    home.agent(
        "bot",
        "name = \"bot\"\nmodel = \"openai/bench\"\nsystem_prompt = \"You are bot.\"\n",
    );
    let inputs: String = (1..=INPUTS).map(|i| format!("ticket {i}\n")).collect();
    let file = home.dir.path().join("inputs.txt");
    std::fs::write(&file, &inputs).expect("inputs");
    // AXE_BENCH_BIN=PATH measures another build of the same CLI.
    let bin = std::env::var("AXE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_axe").into());
    let bin = bin.as_str();

    let mut batch = Vec::new();
    let mut xargs = Vec::new();
    for _ in 0..repeats {
        batch.push(measured(&home, |server| {
            let mut c = home.command(bin);
            c.args([
                "run",
                "bot",
                "--no-log",
                "--jobs",
                &JOBS.to_string(),
                "--each",
            ])
            .arg(&file);
            with_server(&mut c, server);
            c
        }));
        xargs.push(measured(&home, |server| {
            let mut c = home.command("sh");
            let script = format!(
                "xargs -P {JOBS} -d '\\n' -n 1 {bin} run bot --no-log --json -p < {}",
                file.display()
            );
            c.args(["-c", &script]);
            with_server(&mut c, server);
            c
        }));
    }
    report(&batch, &xargs);
    provider_batch(&home, bin);
}

/// Inputs of the provider-batch row (issue 37): two parts of OpenAI's
/// 50,000-request limit.
const PROVIDER_INPUTS: u64 = 100_000;

/// `--provider-batch` over 100,000 inputs against a fake OpenAI Batch API
/// whose batches have ended at their first poll: axe's peak RSS (target
/// <= 64 MiB: nothing of the batch is held but an offset per answer) and
/// its CPU, which includes each input's run from its answer.
fn provider_batch(home: &Home, bin: &str) {
    type Files = std::sync::Mutex<Vec<Vec<(String, String)>>>;
    let files: std::sync::Arc<Files> = std::sync::Arc::default();
    let seen = files.clone();
    let server = FakeServer::route(move |r| {
        let mut files = seen.lock().unwrap();
        let tail = |prefix: &str| -> usize {
            let rest = r.path.trim_start_matches(prefix);
            rest.split('/').next().unwrap_or("0").parse().unwrap_or(0)
        };
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/files") => {
                let start = r.body.find("\r\n\r\n{").map_or(0, |i| i + 4);
                let end = r.body[start..]
                    .find("\r\n--")
                    .map_or(r.body.len(), |i| i + start);
                let lines = r.body[start..end]
                    .lines()
                    .map(|l| {
                        let v: serde_json::Value = serde_json::from_str(l).unwrap();
                        let said = v["body"]["messages"][1]["content"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        (v["custom_id"].as_str().unwrap().to_string(), said)
                    })
                    .collect();
                files.push(lines);
                Reply::Json(200, format!("{{\"id\":\"file-{}\"}}", files.len()))
            }
            ("POST", "/v1/batches") => {
                let k = r.json()["input_file_id"]
                    .as_str()
                    .unwrap_or("")
                    .replace("file-", "");
                Reply::Json(
                    200,
                    format!("{{\"id\":\"batch-{k}\",\"status\":\"validating\"}}"),
                )
            }
            ("GET", p) if p.starts_with("/v1/batches/batch-") => {
                let k = tail("/v1/batches/batch-");
                Reply::Json(
                    200,
                    format!(
                        "{{\"id\":\"batch-{k}\",\"status\":\"completed\",\"output_file_id\":\"out-{k}\"}}"
                    ),
                )
            }
            ("GET", p) if p.starts_with("/v1/files/out-") => {
                let k = tail("/v1/files/out-");
                let mut body = String::new();
                for (id, said) in &files[k - 1] {
                    let answer = openai_text(&format!("re: {said}"), 20, 5);
                    body.push_str(&format!(
                        "{{\"custom_id\":\"{id}\",\"response\":{{\"status_code\":200,\"body\":{answer}}}}}\n"
                    ));
                }
                Reply::Json(200, body)
            }
            _ => Reply::Json(404, "{}".into()),
        }
    });
    let inputs: String = (1..=PROVIDER_INPUTS)
        .map(|i| format!("ticket {i}\n"))
        .collect();
    let file = home.dir.path().join("provider-inputs.txt");
    std::fs::write(&file, &inputs).expect("inputs");
    let mut c = home.command(bin);
    c.args(["run", "bot", "--no-log", "--provider-batch", "--each"])
        .arg(&file);
    with_server(&mut c, &server);
    let m = measure::measure(&c, "");
    let parts = files.lock().unwrap().len();
    println!(
        "provider batch, {PROVIDER_INPUTS} inputs in {parts} batches: peak RSS {:.1} MiB (target <= 64 MiB), \
         CPU {:.2} s in all ({:.0} us per input, its run from its answer included), wall {:.2} s",
        m.max_rss_kib as f64 / 1024.0,
        m.cpu.as_secs_f64(),
        m.cpu.as_secs_f64() * 1e6 / PROVIDER_INPUTS as f64,
        m.wall.as_secs_f64()
    );
}

fn with_server(c: &mut Command, server: &FakeServer) {
    c.env("OPENAI_API_KEY", "sk-bench-0123456789")
        .env("AXE_OPENAI_BASE_URL", &server.url);
}

/// Runs the command `make` builds for a fresh server, measured.
fn measured(_home: &Home, make: impl Fn(&FakeServer) -> Command) -> Run {
    let server = FakeServer::route_with(Some(2 * JOBS as usize), |_| {
        Reply::Delay(LATENCY, Box::new(Reply::Json(200, openai_text("ok", 5, 2))))
    });
    let m = measure::measure(&make(&server), "");
    Run {
        m,
        connections: server.connections(),
        requests: server.requests().len(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn report(batch: &[Run], xargs: &[Run]) {
    let wall = |r: &[Run]| median(r.iter().map(|x| x.m.wall.as_secs_f64() * 1e3).collect());
    let cpu = |r: &[Run]| {
        median(
            r.iter()
                .map(|x| x.m.cpu.as_secs_f64() * 1e6 / INPUTS as f64)
                .collect(),
        )
    };
    let rss = |r: &[Run]| median(r.iter().map(|x| x.m.max_rss_kib as f64 / 1024.0).collect());
    let conns = |r: &[Run]| median(r.iter().map(|x| x.connections as f64).collect());
    let threads = |r: &[Run]| median(r.iter().map(|x| x.m.threads as f64).collect());
    let requests = |r: &[Run]| r.iter().map(|x| x.requests).max().unwrap_or(0);
    let floor = INPUTS.div_ceil(JOBS) as f64 * LATENCY.as_secs_f64() * 1e3;
    println!(
        "batch bench: {INPUTS} inputs, --jobs {JOBS}, L = {} ms, median of {}",
        LATENCY.as_millis(),
        batch.len()
    );
    println!(
        "{:<28} {:>14} {:>14}  target (--each)",
        "figure", "--each", "xargs -P 32"
    );
    let line = |name: &str, a: f64, b: f64, unit: &str, target: String| {
        println!("{name:<28} {a:>11.1} {unit:<2} {b:>11.1} {unit:<2}  {target}");
    };
    line(
        "wall",
        wall(batch),
        wall(xargs),
        "ms",
        format!("<= {:.0} ms (1.1 x {floor:.0})", 1.1 * floor),
    );
    line(
        "CPU per input",
        cpu(batch),
        cpu(xargs),
        "us",
        "<= 250 us".into(),
    );
    line(
        "peak RSS (one process)",
        rss(batch),
        rss(xargs),
        "Mi",
        "<= 30 MiB".into(),
    );
    line(
        "TCP connections",
        conns(batch),
        conns(xargs),
        "",
        format!("<= {JOBS} (one pool)"),
    );
    println!(
        "threads (most at once): {:.0} in --each's process",
        threads(batch)
    );
    println!(
        "requests served: {} and {}",
        requests(batch),
        requests(xargs)
    );
    println!(
        "xargs / --each: CPU {:.1}x, connections {:.1}x",
        cpu(xargs) / cpu(batch).max(f64::MIN_POSITIVE),
        conns(xargs) / conns(batch).max(1.0)
    );
}
