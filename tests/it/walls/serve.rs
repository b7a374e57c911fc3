//! `axe serve`'s walls (design §12.4): a web page cannot run an agent on
//! a loopback server, cross-site or by DNS rebinding, unless a token is
//! required (then the token is the gate), while curl and the `openai`
//! clients are served; a request head is bounded in size and in time
//! before any token is checked; requests pipelined behind a slow one stay
//! few; a client that reads nothing holds up no other; what a client
//! sends reaches the access log as one escaped line. Through the binary,
//! on raw sockets, with curl and the `openai` client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Raw, Server, chat_body, client, parse_raw, python, raw};

fn start(args: &[&str]) -> (Home, FakeServer, Server) {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::json(200, &openai_text("ran", 1, 1));
    let server = Server::start(&home, &fake, args);
    (home, fake, server)
}

/// The port of `server` (listening on 127.0.0.1).
fn port(server: &Server) -> &str {
    server.addr.rsplit(':').next().unwrap()
}

/// A chat completion POSTed to `server` with `headers` (each ending in
/// CRLF, the host among them) and `connection: close`.
fn chat(server: &Server, headers: &str) -> Raw {
    let body = chat_body("helper", "hi");
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\n{headers}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(&server.addr, req.as_bytes())
}

/// `/proc/<pid>/status`'s VmHWM: the process's peak resident memory, KiB.
pub(super) fn peak_kib(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM")
}

/// Another client's `/healthz` is answered at once (5 s at most) while
/// whatever `why` says goes on.
fn healthz_at_once(server: &Server, why: &str) {
    let asked = Instant::now();
    let r = raw(
        &server.addr,
        format!(
            "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n",
            port(server)
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "another client's /healthz {why}: {}", r.head);
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "another client's /healthz waited {:?} {why}",
        asked.elapsed()
    );
}

#[test]
fn a_web_page_cannot_run_an_agent_on_a_loopback_server() {
    let (_h, fake, server) = start(&[]);
    let host = format!("host: 127.0.0.1:{}\r\n", port(&server));
    // A form or fetch() from any page: a "simple" request, no preflight,
    // the browser sends its Origin (every POST carries one, `null` from a
    // sandboxed frame).
    for (headers, want) in [
        (
            format!("{host}origin: http://attacker.example\r\ncontent-type: text/plain\r\n"),
            403,
        ),
        (
            format!("{host}origin: null\r\ncontent-type: application/x-www-form-urlencoded\r\n"),
            403,
        ),
        (
            format!("{host}origin: http://localhost:3000\r\ncontent-type: application/json\r\n"),
            403,
        ),
        // A text/plain body from a client sending no Origin is no API call.
        (format!("{host}content-type: text/plain\r\n"), 415),
        (
            format!("{host}content-type: multipart/form-data; boundary=x\r\n"),
            415,
        ),
        (
            format!("{host}content-type: text/plain; application/json\r\n"),
            415,
        ),
        (host.clone(), 415),
    ] {
        let r = chat(&server, &headers);
        assert_eq!(r.status, want, "{headers}: {} {}", r.head, r.body);
        assert!(r.body.contains("\"error\""), "{}", r.body);
        assert!(
            !r.head.to_ascii_lowercase().contains("access-control-"),
            "{}",
            r.head
        );
    }
    // A preflight is refused: no CORS header, so a browser sends nothing.
    let r = raw(
        &server.addr,
        format!(
            "OPTIONS /v1/chat/completions HTTP/1.1\r\n{host}origin: http://attacker.example\r\n\
             access-control-request-method: POST\r\naccess-control-request-headers: content-type\r\n\
             connection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 403, "{}", r.head);
    assert!(!r.head.to_ascii_lowercase().contains("access-control-"));
    assert!(fake.requests().is_empty(), "a refused request ran");
    // Each refusal logged (the line comes just after the answer).
    assert!(server.wait_log(
        "OPTIONS /v1/chat/completions agent=- status=403",
        Duration::from_secs(10)
    ));
    let log = server.access_lines().join("\n");
    assert_eq!(log.matches("status=403").count(), 4, "{log}");
    assert_eq!(log.matches("status=415").count(), 4, "{log}");
}

#[test]
fn a_rebinding_host_is_refused() {
    // DNS rebinding: attacker.example now resolves to 127.0.0.1, the page
    // is same-origin with the server and reads every answer. Its Host is
    // the attacker's name.
    let (_h, fake, server) = start(&[]);
    let p = port(&server).to_string();
    for host in [
        format!("attacker.example:{p}"),
        "attacker.example".to_string(),
        format!("localhost.attacker.example:{p}"),
        format!("127.0.0.1.nip.io:{p}"),
        format!("localhost:{p}@attacker.example"),
        format!("[::1]x:{p}"),
        String::new(),
    ] {
        let r = chat(
            &server,
            &format!("host: {host}\r\ncontent-type: application/json\r\n"),
        );
        assert_eq!(r.status, 403, "host {host}: {} {}", r.head, r.body);
        let r = raw(
            &server.addr,
            format!("GET /v1/models HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 403, "host {host}: {}", r.body);
        assert!(!r.body.contains("helper"), "{}", r.body);
    }
    // No host at all, and two of them.
    let r = chat(&server, "content-type: application/json\r\n");
    assert_eq!(r.status, 403, "{}", r.body);
    let r = chat(
        &server,
        &format!(
            "host: 127.0.0.1:{p}\r\nhost: attacker.example\r\ncontent-type: application/json\r\n"
        ),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(fake.requests().is_empty(), "a refused request ran");
}

#[test]
fn local_clients_are_still_served() {
    let (_h, fake, server) = start(&[]);
    let p = port(&server).to_string();
    let mut served = 0;
    // Every loopback spelling of the host, with or without a port (an SSH
    // tunnel or a port mapping changes the port), any charset.
    for headers in [
        format!("host: 127.0.0.1:{p}\r\ncontent-type: application/json\r\n"),
        format!("host: localhost:{p}\r\ncontent-type: application/json; charset=utf-8\r\n"),
        "host: localhost\r\ncontent-type: Application/JSON\r\n".to_string(),
        format!("host: LocalHost:{p}\r\ncontent-type: application/json;charset=UTF-8\r\n"),
        "host: [::1]:9999\r\ncontent-type: application/json\r\n".to_string(),
        "host: 127.0.0.2\r\ncontent-type: application/json\r\n".to_string(),
        // What curl sends.
        format!(
            "host: localhost:{p}\r\nuser-agent: curl/8.5.0\r\naccept: */*\r\ncontent-type: application/json\r\n"
        ),
        // What Node's fetch (the `openai` package for JavaScript) sends:
        // no Origin, a Sec-Fetch-Mode.
        format!(
            "host: 127.0.0.1:{p}\r\ncontent-type: application/json\r\naccept: */*\r\naccept-language: *\r\n\
             sec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\n"
        ),
    ] {
        let r = chat(&server, &headers);
        assert_eq!(r.status, 200, "{headers}: {} {}", r.head, r.body);
        served += 1;
    }
    let r = raw(
        &server.addr,
        format!("GET /v1/models HTTP/1.1\r\nhost: localhost:{p}\r\nconnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // curl itself, as README.md and docs/guide/serving.md show it.
    let body = chat_body("helper", "hi");
    match Command::new("curl")
        .args([
            "-sS",
            "--noproxy",
            "*",
            "-H",
            "content-type: application/json",
        ])
        .args([
            "-d",
            &body,
            &format!("http://localhost:{p}/v1/chat/completions"),
        ])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("\"ran\""), "curl: {out} {}", stderr(&o));
            served += 1;
        }
        Err(e) => missing(
            "the serve wall with curl itself",
            &format!("curl does not run here ({e}; Debian: apt-get install curl)"),
        ),
    }
    // The official `openai` client.
    if let Some(py) = python() {
        let r = client(&py, &server, "unused", "complete", "helper");
        assert_eq!(r["content"], "ran", "{r}");
        served += 1;
    }
    assert_eq!(fake.requests().len(), served);
}

#[test]
fn with_a_token_the_token_is_the_gate() {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::json(200, &openai_text("ran", 1, 1));
    let token = "wall-token-0123456789abcdef";
    let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
    cmd.env("AXE_SERVE_TOKEN", token);
    let server = Server::start_with(cmd, &[]);
    let foreign =
        "host: attacker.example\r\norigin: http://attacker.example\r\ncontent-type: text/plain\r\n";
    let r = chat(&server, foreign);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(fake.requests().is_empty());
    // The token is what a page cannot have: with it, the request runs.
    let r = chat(
        &server,
        &format!("{foreign}authorization: Bearer {token}\r\n"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(fake.requests().len(), 1);
}

/// Sends `head` then `filler` (`total` bytes of it) on a connection of
/// its own, as fast as the server takes it, while the server's answer is
/// read; the answer, and the server's peak memory after, KiB.
pub(super) fn flood_head(server: &Server, head: &str, filler: &[u8], total: usize) -> (Raw, u64) {
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut w = s.try_clone().unwrap();
    w.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = head.to_string();
    let filler = filler.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(head.as_bytes());
        let mut sent = 0;
        while sent < total {
            if w.write_all(&filler).is_err() {
                return;
            }
            sent += filler.len();
        }
        let _ = w.write_all(b"\r\n\r\n");
    });
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    drop(s);
    writer.join().unwrap();
    (parse_raw(&answer), peak_kib(server.pid()))
}

#[test]
fn a_64_mib_header_line_is_refused_and_memory_stays_small() {
    let (_h, _f, server) = start(&[]);
    healthz_at_once(&server, "at start");
    let before = peak_kib(server.pid());
    let head = format!(
        "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nx-big: ",
        port(&server)
    );
    let (r, after) = flood_head(&server, &head, &[b'a'; 64 * 1024], 64 << 20);
    assert_eq!(r.status, 431, "{} {}", r.head, server.log());
    assert!(
        after < before + 16 * 1024,
        "one header line took the server from {before} KiB to {after} KiB"
    );
    healthz_at_once(&server, "after");
}

#[test]
fn ten_thousand_headers_are_refused() {
    let (_h, fake, server) = start(&[]);
    let before = peak_kib(server.pid());
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n",
        port(&server)
    );
    let (r, after) = flood_head(&server, &head, b"x-h: v\r\n", 10_000 * 8);
    assert_eq!(r.status, 431, "{} {}", r.head, server.log());
    // 64 KiB in all, however it is split: 100 header lines of 1 KiB each
    // are 100 KiB.
    let line = format!("x-h: {}\r\n", "v".repeat(1000));
    let (r2, _) = flood_head(&server, &head, line.as_bytes(), 100 * line.len());
    assert_eq!(r2.status, 431, "{} {}", r2.head, server.log());
    assert!(after < before + 16 * 1024, "{before} KiB -> {after} KiB");
    assert!(fake.requests().is_empty());
}

#[test]
fn a_head_trickled_a_byte_a_second_is_closed_at_the_idle_limit() {
    // Each byte comes inside the 2 s idle limit; the head as a whole must
    // come within it too, from its first byte.
    let (_h, _f, server) = start(&["--idle-timeout", "2"]);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nx-slow: ").unwrap();
    let started = Instant::now();
    let mut w = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..20 {
            std::thread::sleep(Duration::from_secs(1));
            if w.write_all(b"a").is_err() {
                return;
            }
        }
    });
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let took = started.elapsed();
    let _ = s.shutdown(std::net::Shutdown::Both);
    trickle.join().unwrap();
    assert!(
        took < Duration::from_secs(6),
        "a head trickled within the idle limit was read for {took:?}"
    );
    let r = parse_raw(&answer);
    assert_eq!(r.status, 408, "{}", r.head);
    healthz_at_once(&server, "after");
}

#[test]
fn requests_pipelined_behind_a_slow_one_stay_few() {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::start(vec![Reply::Delay(
        Duration::from_secs(12),
        Box::new(Reply::Json(200, openai_text("slow", 1, 1))),
    )]);
    let server = Server::start(&home, &fake, &[]);
    let before = peak_kib(server.pid());
    let host = format!("host: 127.0.0.1:{}\r\n", port(&server));
    let chat = chat_body("helper", "hi");
    let first = format!(
        "POST /v1/chat/completions HTTP/1.1\r\n{host}content-type: application/json\r\ncontent-length: {}\r\n\r\n{chat}",
        chat.len()
    );
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(first.as_bytes()).unwrap();
    fake.wait_for_requests(1);
    // 100,000 small requests behind it (20 MB, more than the kernel's
    // buffers hold), as fast as the server takes them.
    let small = format!(
        "GET /healthz HTTP/1.1\r\n{host}x-pad: {}\r\n\r\n",
        "p".repeat(150)
    );
    let batch = small.repeat(1000);
    s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let started = Instant::now();
    let mut sent = 0;
    for _ in 0..100 {
        if s.write_all(batch.as_bytes()).is_err() {
            break;
        }
        sent += 1000;
    }
    // What was sent is read (or not) meanwhile; the slow one still runs.
    std::thread::sleep(Duration::from_secs(1));
    let peak = peak_kib(server.pid());
    healthz_at_once(&server, "behind 100,000 pipelined requests");
    assert!(
        peak < before + 32 * 1024,
        "{sent} pipelined requests took the server from {before} KiB to {peak} KiB"
    );
    assert!(
        sent < 100_000,
        "the server read all 100,000 requests behind a running one ({:?}, {before} KiB -> {peak} KiB)",
        started.elapsed()
    );
}

#[test]
fn a_client_that_never_reads_its_answers_holds_up_no_other_client() {
    // The answers the dispatcher gives itself (/healthz here) go to a
    // client that reads none of them: once its socket is full, a write
    // would wait, and every other client with it.
    let (_h, _f, server) = start(&[]);
    let host = format!("host: 127.0.0.1:{}\r\n", port(&server));
    let batch = format!("GET /healthz HTTP/1.1\r\n{host}\r\n").repeat(1000);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    small_receive_buffer(&s);
    s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    for _ in 0..200 {
        if s.write_all(batch.as_bytes()).is_err() {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    healthz_at_once(&server, "while a client read none of its answers");
    // That client's connection was closed: what it reads now ends.
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut sink = [0u8; 64 * 1024];
    let ended = loop {
        match s.read(&mut sink) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e) => break e.kind() != std::io::ErrorKind::WouldBlock,
        }
    };
    assert!(
        ended,
        "the connection of a client that reads nothing stayed open"
    );
}

#[test]
fn a_method_with_escapes_is_logged_as_one_escaped_line() {
    let (_h, _f, server) = start(&[]);
    let req = format!(
        "\x1b[2J\x1b]0;pwned\x07X\naxe:\twarning:\x0bforged\x1b[0m /healthz HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n",
        port(&server)
    );
    let r = raw(&server.addr, req.as_bytes());
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(server.wait_log("/healthz", Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200));
    let log = server.log();
    assert!(!log.contains('\x1b') && !log.contains('\x07'), "{log:?}");
    for line in log.lines() {
        assert!(
            line.starts_with("axe: serve: ") || line.starts_with("axe: serving on "),
            "a line of its own: {line:?} in {log:?}"
        );
    }
    let line = server.access_lines().pop().unwrap();
    assert!(
        line.starts_with("axe: serve: \\u{1b}[2J\\u{1b}]0;pwned\\u{7}X\\naxe:\\twarning:\\u{b}forged\\u{1b}[0m /healthz agent=- status=200 "),
        "{line}"
    );
}

/// Keeps `s`'s receive buffer at its smallest, so that a server writing
/// to it finds its own buffer full soon.
fn small_receive_buffer(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 4096;
    // SAFETY: setsockopt on our own socket with an int of its size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&raw const size).cast(),
            libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap(),
        )
    };
    assert_eq!(r, 0);
}
