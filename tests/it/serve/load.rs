//! 200 requests at once against `--max-concurrent 64` and an instant
//! provider (design §12.4): every one answered 200 or told 429 with
//! Retry-After, none lost; after, the server's threads, descriptors and
//! memory back where they were.

use std::time::{Duration, Instant};

use super::{Server, chat_body, post};
use crate::common::*;

/// The most idle connections the provider's pool keeps.
const POOL: u64 = 64 + 4;

/// `/proc/<pid>/status`'s field `name`, in its unit (kB for memory).
fn status_field(pid: u32, name: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| {
            v.trim_start_matches(':')
                .split_whitespace()
                .next()
                .map(str::to_string)
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Waits until `f()` is at most `most`; its last value. The wait is long
/// (tiny_http's idle threads end after 5 s, later on a loaded machine) and
/// costs nothing when `f()` is already low enough.
fn settle(most: u64, f: impl Fn() -> u64) -> u64 {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until && f() > most {
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// 200 requests at once; how many got 200 and how many 429.
fn burst(addr: &str) -> (usize, usize) {
    let handles: Vec<_> = (0..200)
        .map(|i| {
            let addr = addr.to_string();
            std::thread::spawn(move || {
                post(
                    &addr,
                    "/v1/chat/completions",
                    &chat_body("helper", &format!("n{i}")),
                    "",
                )
            })
        })
        .collect();
    let (mut ok, mut busy) = (0, 0);
    for h in handles {
        let r = h.join().unwrap();
        match r.status {
            200 => ok += 1,
            429 => {
                assert!(
                    r.head.to_ascii_lowercase().contains("retry-after: 1"),
                    "{}",
                    r.head
                );
                busy += 1;
            }
            other => panic!("a request got {other}: {}", r.body),
        }
    }
    (ok, busy)
}

#[test]
fn two_hundred_requests_at_once_are_each_answered_or_told_429_and_nothing_leaks() {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &["--max-concurrent", "64", "--no-log", "-q"]);
    let pid = server.pid();
    // One request first: the lazily made parts (the hang-up watcher, the
    // provider's connection pool) exist before the baseline is taken.
    assert_eq!(
        post(
            &server.addr,
            "/v1/chat/completions",
            &chat_body("helper", "warm"),
            ""
        )
        .status,
        200
    );
    std::thread::sleep(Duration::from_millis(300));
    let threads0 = status_field(pid, "Threads");
    let fds0 = fds(pid) as u64;
    let (ok, busy) = burst(&server.addr);
    assert_eq!(ok + busy, 200);
    assert!(
        ok >= 64,
        "at least a pool's worth ran: {ok} ok, {busy} told 429"
    );
    let rss1 = status_field(pid, "VmRSS");
    // The provider's connection pool keeps at most 64 idle connections
    // (src/provider/client.rs): descriptors may grow by that much and no
    // more, however many bursts come (measured: every one of them is a
    // pooled connection to the provider, none a client's).
    let fds1 = settle(fds0 + POOL, || fds(pid) as u64);
    let (ok2, busy2) = burst(&server.addr);
    assert_eq!(ok2 + busy2, 200);
    // Memory after each burst, taken as it ends. A leak grows it with every
    // burst; the allocator's high-water mark grows only when a burst runs
    // more at once than any before it (CI: 112 runs of the first 200, 168 of
    // the second, +4.2 MB), and cannot do so each time. So bursts go on
    // until one leaves memory within 4 MiB of the one before, at most six.
    let mut rss = vec![rss1, status_field(pid, "VmRSS")];
    while rss.len() < 6 && rss[rss.len() - 1] > rss[rss.len() - 2] + 4096 {
        let (ok, busy) = burst(&server.addr);
        assert_eq!(ok + busy, 200);
        rss.push(status_field(pid, "VmRSS"));
    }
    // tiny_http's connection threads end after 5 s idle.
    let threads = settle(threads0 + 2, || status_field(pid, "Threads"));
    let fds2 = settle(fds0 + POOL, || fds(pid) as u64);
    eprintln!(
        "serve load: {ok}+{ok2} ok, {busy}+{busy2} told 429; threads {threads0} -> {threads}, fds {fds0} -> {fds1} -> {fds2}, rss after each burst {rss:?} kB"
    );
    assert!(threads <= threads0 + 2, "threads {threads0} -> {threads}");
    assert!(fds1 <= fds0 + POOL, "descriptors {fds0} -> {fds1}");
    // A later burst may run more provider calls at once than the first
    // and leave a few more pooled connections: the bound is the pool's,
    // whatever the bursts (it was `+ 2` over the first burst, which a
    // busier second burst passed by 3 in CI).
    assert!(
        fds2 <= fds0 + POOL,
        "descriptors past the provider pool's bound after the bursts: {fds0} -> {fds2}"
    );
    let (last, before) = (rss[rss.len() - 1], rss[rss.len() - 2]);
    assert!(
        last <= before + 4096,
        "memory grew by more than 4 MiB with every burst: {rss:?} kB"
    );
}
