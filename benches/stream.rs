//! `make bench`, the streaming part: the release binary run as a user
//! would (`axe run solo --stream`) against a provider on 127.0.0.1 that
//! drips a 2,000-token answer on the OpenAI wire, one server-sent event per
//! token and 1 ms between them. Three figures, each beside its target,
//! never failing on a time:
//!
//! - the first token on stdout: from the moment the server wrote its event
//!   (flushed, with `TCP_NODELAY`) to the moment this process read the
//!   first byte from axe's stdout pipe, both on this process's clock;
//! - axe's CPU (user + system, from `wait4`) for the streamed run, beside
//!   the same answer sent whole without `--stream`: the difference is what
//!   decoding and printing the stream costs;
//! - peak RSS of the streamed run beside the whole one;
//! - beside them, the machine's floor: what a reader paced as axe's is
//!   costs with nothing decoded (a read of the same stream every 33 ms,
//!   a write of what it brought to a pipe another thread drains), this
//!   thread's CPU only, with its reads and the CPU of each: a count of
//!   wakes, whatever the read buffer or the segments (design §4.11);
//! - axe's own part, the streamed run over the whole one less the floor.
//!
//! `AXE_BENCH_BIN=PATH` (or `label=PATH,label=PATH`, taking turns in each
//! repetition) measures other builds of the same CLI;
//! `AXE_BENCH_REPEATS=n` the runs of each (default 5);
//! `AXE_BENCH_PACE_MS=n` the floor's wait (default axe's, 33), for builds
//! of another wait.

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

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Home, OPENAI_KEY};
use serde_json::json;

/// Tokens in the answer, and the time between two of them.
const TOKENS: usize = 2000;
const GAP: Duration = Duration::from_millis(1);
/// Runs of each kind; medians are reported.
const RUNS: usize = 5;
/// The wait of axe's stream reader after a read that brought text
/// (`provider/streamed.rs`), for the floor, unless `AXE_BENCH_PACE_MS`
/// says another.
const PACE: Duration = Duration::from_millis(33);

/// What the drip server noticed about one request.
#[derive(Default)]
struct Sent {
    /// When the first token's event was written.
    first: Option<Instant>,
}

fn main() {
    let runs = std::env::var("AXE_BENCH_REPEATS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(RUNS);
    let bins = binaries();
    let pace = std::env::var("AXE_BENCH_PACE_MS")
        .ok()
        .and_then(|n| n.parse().ok())
        .map_or(PACE, Duration::from_millis);
    println!("stream bench: {TOKENS} tokens, one every {GAP:?}, {runs} runs each");
    let home = Home::new();
    home.named_agent("solo", "openai/m", "");
    let mut seen: Vec<Figures> = bins.iter().map(|_| Figures::default()).collect();
    let mut floors = Vec::new();
    // Each repetition runs every binary in turn: a loaded machine's drift
    // falls on all of them alike.
    for _ in 0..runs {
        for ((_, bin), fig) in bins.iter().zip(&mut seen) {
            let (gap, cpu, rss) = streamed(&home, bin);
            fig.gaps.push(gap);
            fig.cpu_stream.push(cpu);
            fig.rss_stream.push(rss);
            let (cpu, rss) = whole(&home, bin);
            fig.cpu_whole.push(cpu);
            fig.rss_whole.push(rss);
        }
        floors.push(floor(pace));
    }
    let floor = median(floors.iter().map(|f| f.0).collect());
    let reads = median(floors.iter().map(|f| f.1).collect());
    println!(
        "floor: a reader paced at {pace:?} that decodes nothing, CPU {:.2} ms, {reads} reads, {:.0} us a read (runs: {})",
        ms(floor),
        ms(floor) * 1000.0 / f64::from(reads.max(1)),
        floors
            .iter()
            .map(|f| format!("{:.2}", ms(f.0)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for ((label, _), fig) in bins.iter().zip(seen) {
        if bins.len() > 1 {
            println!("-- {label}");
        }
        fig.report(floor);
    }
}

/// The machine's floor for a paced reader: one read of the dripped stream
/// every `pace` while it brings text, what it brought written to a pipe
/// that another thread drains, nothing decoded; the CPU of this thread
/// only (a loopback connection's ACKs included, as for axe).
fn floor(pace: Duration) -> (Duration, u32) {
    let url = serve(true, Arc::default());
    let mut conn = TcpStream::connect(url.trim_start_matches("http://")).expect("connect");
    conn.write_all(b"POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
        .expect("request");
    let mut fds = [0; 2];
    // SAFETY: a new pipe into two ints of ours.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: each end is ours alone, owned by one File.
    let (mut from, mut to) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    let drain = std::thread::spawn(move || std::io::copy(&mut from, &mut std::io::sink()));
    let mut buf = vec![0u8; 8 << 10];
    let start = thread_cpu();
    let mut reads = 0;
    loop {
        let n = conn.read(&mut buf).expect("read");
        reads += 1;
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n.min(64)]).expect("write");
        std::thread::sleep(pace);
    }
    let cpu = thread_cpu().saturating_sub(start);
    drop(to);
    drain.join().expect("drain").expect("drain");
    (cpu, reads)
}

/// The CPU (user + system) this thread has used.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage of this thread into a zeroed rusage of the right size.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// What the runs of one binary measured.
#[derive(Default)]
struct Figures {
    gaps: Vec<Duration>,
    cpu_stream: Vec<Duration>,
    cpu_whole: Vec<Duration>,
    rss_stream: Vec<u64>,
    rss_whole: Vec<u64>,
}

impl Figures {
    /// The medians beside their targets; `floor` is the paced reader's CPU,
    /// which axe's stream pays too.
    fn report(self, floor: Duration) {
        let (gap, cs, cw) = (
            median(self.gaps),
            median(self.cpu_stream.clone()),
            median(self.cpu_whole.clone()),
        );
        let (rs, rw) = (median(self.rss_stream), median(self.rss_whole));
        println!(
            "streamed run: CPU {:.2} ms, peak RSS {:.2} MiB; the same answer whole: CPU {:.2} ms, peak RSS {:.2} MiB",
            ms(cs),
            mib(rs),
            ms(cw),
            mib(rw)
        );
        let list = |v: &[Duration]| {
            let v: Vec<String> = v.iter().map(|d| format!("{:.2}", ms(*d))).collect();
            v.join(" ")
        };
        println!("  streamed runs' CPU (ms): {}", list(&self.cpu_stream));
        println!("  whole runs' CPU (ms):    {}", list(&self.cpu_whole));
        println!("{:<52} {:>10} {:>8}", "figure", "value", "target");
        row(
            "first token: server wrote it -> stdout read it (ms)",
            ms(gap),
            1.0,
        );
        row(
            "CPU for the whole stream, over the answer whole (ms)",
            ms(cs.saturating_sub(cw)),
            2.0,
        );
        // The floor is the machine's cost of a paced reader's wakes (a
        // thread switch each, design §4.11), which no decoding removes:
        // what is left is axe's own.
        row(
            "  of which axe's own (streamed - whole - floor) (ms)",
            ms(cs.saturating_sub(cw).saturating_sub(floor)),
            2.0,
        );
        row(
            "peak RSS, streamed over whole (MiB)",
            mib(rs) - mib(rw),
            0.0,
        );
    }
}

/// The binaries to measure: `AXE_BENCH_BIN` names them (`PATH`, or
/// `label=PATH,label=PATH`, taking turns), else the release build.
fn binaries() -> Vec<(String, PathBuf)> {
    let Ok(list) = std::env::var("AXE_BENCH_BIN") else {
        return vec![("axe".into(), env!("CARGO_BIN_EXE_axe").into())];
    };
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|entry| {
            let (label, path) = entry.split_once('=').unwrap_or((entry, entry));
            (label.to_string(), PathBuf::from(path))
        })
        .collect()
}

fn row(name: &str, value: f64, target: f64) {
    let mark = if value <= target { "ok" } else { "MISSED" };
    println!("{name:<52} {value:>10.3} {target:>8} {mark}");
}

/// One streamed run: the first token's way to stdout, CPU, peak RSS.
fn streamed(home: &Home, bin: &Path) -> (Duration, Duration, u64) {
    let sent = Arc::new(Mutex::new(Sent::default()));
    let url = serve(true, sent.clone());
    let mut child = start(home, bin, &url, &["--stream"]);
    let mut out = child.stdout.take().expect("stdout");
    let mut byte = [0u8; 1];
    let n = out.read(&mut byte).expect("read stdout");
    let read_at = Instant::now();
    assert_eq!(n, 1, "no output");
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).expect("read stdout");
    assert_eq!(
        rest.len() + 1,
        TOKENS * 2 + 1,
        "the whole answer and a newline"
    );
    let (cpu, rss) = reap(child);
    let first = sent.lock().unwrap().first.expect("the server sent a token");
    (read_at.saturating_duration_since(first), cpu, rss)
}

/// The same answer sent whole: CPU and peak RSS.
fn whole(home: &Home, bin: &Path) -> (Duration, u64) {
    let url = serve(false, Arc::default());
    let mut child = start(home, bin, &url, &[]);
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut out)
        .expect("read stdout");
    assert_eq!(out.len(), TOKENS * 2 + 1);
    reap(child)
}

fn start(home: &Home, bin: &Path, url: &str, extra: &[&str]) -> Child {
    home.command(bin)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("AXE_OPENAI_BASE_URL", url)
        .args(["run", "solo", "-p", "hi", "--no-log", "--quiet"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start axe")
}

/// Waits for `child`: its CPU (user + system) and peak RSS in bytes.
fn reap(child: Child) -> (Duration, u64) {
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: wait4 on our own child, into a zeroed rusage of the right size.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::wait4(pid, &mut status, 0, &mut usage);
        usage
    };
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        (usage.ru_maxrss as u64) * 1024,
    )
}

/// A one-request OpenAI server: the answer dripped as events (`stream`),
/// or whole as JSON. Returns its base URL.
fn serve(stream: bool, sent: Arc<Mutex<Sent>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let Ok((conn, _)) = listener.accept() else {
            return;
        };
        let _ = conn.set_nodelay(true);
        let mut reader = BufReader::new(conn.try_clone().expect("clone"));
        read_request(&mut reader);
        let mut conn = conn;
        if stream {
            drip(&mut conn, &sent);
        } else {
            let body = json!({
                "id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "x ".repeat(TOKENS)}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5}
            })
            .to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// Reads the request head and its body (content-length).
fn read_request(reader: &mut BufReader<TcpStream>) {
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    let _ = reader.read_exact(&mut body);
}

/// The stream: a chunked response of one event per token, then the usage
/// and `[DONE]`.
fn drip(conn: &mut TcpStream, sent: &Mutex<Sent>) {
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    // One write, so one TCP segment, per event, as a provider flushing
    // each event writes it: `write!` on the socket would send its size
    // line, data and line end as segments of their own, four times the
    // segments axe's reads take in (design §4.11).
    let chunk = |conn: &mut TcpStream, data: &str| {
        let _ = conn.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
    };
    let event = |delta: serde_json::Value, finish: serde_json::Value| {
        let c = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    chunk(
        conn,
        &event(json!({"role": "assistant", "content": ""}), json!(null)),
    );
    for i in 0..TOKENS {
        chunk(conn, &event(json!({"content": "x "}), json!(null)));
        if i == 0 {
            sent.lock().unwrap().first = Some(Instant::now());
        }
        std::thread::sleep(GAP);
    }
    chunk(conn, &event(json!({}), json!("stop")));
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5}});
    chunk(conn, &format!("data: {usage}\n\ndata: [DONE]\n\n"));
    let _ = write!(conn, "0\r\n\r\n");
    let _ = conn.flush();
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
