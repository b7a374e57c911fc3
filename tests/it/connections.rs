//! How axe reaches a provider (design §4.2, §3.15): TLS for an `https` base
//! URL, ureq's proxy from the environment, and the bound on a response's
//! head. axe connects with a connector of its own (src/provider/client.rs),
//! so these check what ureq's chain did before it still happens.

use crate::common::*;

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// A listener on loopback that takes one connection, hands back the first
/// bytes it sent (what came within a second of the first), and closes it.
fn first_bytes() -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(got);
    });
    (port, rx)
}

/// `axe run solo` on OpenAI at `base_url`, with no retries.
fn run_at(base_url: &str, env: &[(&str, &str)]) -> Bounded {
    let home = Home::fast_retries();
    home.named_agent("solo", P::OpenAi.model(), "");
    let mut cmd = home.axe();
    cmd.env("AXE_OPENAI_BASE_URL", base_url)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["run", "solo", "--retries", "0"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_within(&mut cmd, HUNG)
}

#[test]
fn an_https_base_url_gets_a_tls_handshake_and_no_plain_request() {
    let (port, got) = first_bytes();
    let b = run_at(&format!("https://127.0.0.1:{port}/v1"), &[]);
    let hello = got.recv_timeout(HUNG).expect("axe connected");
    // A TLS record of type handshake (22), its first message a ClientHello (1).
    assert!(hello.len() > 5, "{hello:?}");
    assert_eq!((hello[0], hello[5]), (0x16, 0x01), "{hello:?}");
    assert!(
        !hello.windows(4).any(|w| w == b"POST") && !hello.windows(2).any(|w| w == b"sk"),
        "the request went out in the clear"
    );
    // The server hung up in the handshake: a network error, exit 3.
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert!(
        stderr(&b.output).contains("network error"),
        "{}",
        stderr(&b.output)
    );
}

#[test]
fn a_proxy_from_the_environment_is_asked_to_connect() {
    let (port, got) = first_bytes();
    let proxy = format!("http://127.0.0.1:{port}");
    // 192.0.2.1 is TEST-NET-1: reached only through the proxy, if at all.
    let b = run_at("https://192.0.2.1/v1", &[("HTTPS_PROXY", &proxy)]);
    let asked = got.recv_timeout(HUNG).expect("axe went to the proxy");
    let asked = String::from_utf8_lossy(&asked);
    assert!(
        asked.starts_with("CONNECT 192.0.2.1:443 HTTP/1.1\r\n"),
        "{asked}"
    );
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
}

/// A reply whose head is about `size` bytes: padding headers of `each`.
fn head_of(size: usize, each: usize) -> Reply {
    let headers = (0..size / (each + 14))
        .map(|i| (format!("x-pad-{i:03}"), "a".repeat(each)))
        .collect();
    Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: P::OpenAi.text("the answer"),
        headers,
    }
}

#[test]
fn a_response_head_of_up_to_8_kib_is_read_and_a_longer_one_fails_once_as_too_big() {
    let home = Home::fast_retries();
    home.named_agent("solo", P::OpenAi.model(), "");
    let server = FakeServer::start(vec![head_of(7 * 1024, 100)]);
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "solo"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output).trim_end(), "the answer");
    for size in [9 * 1024, 12 * 1024] {
        let server = FakeServer::start(vec![head_of(size, 1000); 3]);
        let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "solo"], HUNG);
        let err = stderr(&b.output);
        assert_eq!(code(&b.output), 3, "{err}");
        assert!(err.contains("response header is too big"), "{size}: {err}");
        // Not taken for a server that hung up: not retried.
        assert_eq!(server.requests().len(), 1, "{size}: {err}");
    }
}

/// A listener on loopback whose one-place accept queue is full: a further
/// connect gets no answer to its SYN (Linux drops it), so it never
/// completes. Returns the port and what keeps it so.
fn connect_never_completes() -> (u16, TcpListener, std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: listen() on a socket this test owns only changes its backlog.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    let port = listener.local_addr().unwrap().port();
    let queued = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    (port, listener, queued)
}

#[test]
fn a_connect_that_never_completes_is_cut_at_the_calls_timeout() {
    // axe connects with a blocking connect bounded by the socket's send
    // timeout (src/provider/tcp.rs): the deadline must hold as it did.
    let (port, _listener, _queued) = connect_never_completes();
    let home = Home::fast_retries();
    home.named_agent("solo", P::OpenAi.model(), "");
    let mut cmd = home.axe();
    cmd.env("AXE_OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["run", "solo", "--retries", "0", "--timeout", "2"]);
    let b = run_bounded(&mut cmd, HUNG);
    let err = stderr(&b.output);
    assert_eq!(code(&b.output), 3, "{err}");
    assert!(
        err.contains("timed out") || err.contains("timeout"),
        "{err}"
    );
    assert!(
        b.took >= Duration::from_millis(1500) && b.took < Duration::from_secs(8),
        "{:?}: {err}",
        b.took
    );
}

/// Serves OpenAI answers over keep-alive connections, sending the count of
/// requests answered after each; the first request is answered with
/// `first` and its connection then closed.
fn closes_after_first(first: String, rest: String) -> (u16, mpsc::Receiver<usize>) {
    use std::io::Write;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut served = 0;
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            conn.set_read_timeout(Some(HUNG)).unwrap();
            while read_request(&mut conn) {
                let body = if served == 0 { &first } else { &rest };
                served += 1;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                conn.write_all(format!("{head}{body}").as_bytes()).unwrap();
                let _ = tx.send(served);
                if served == 1 {
                    break;
                }
            }
        }
    });
    (port, rx)
}

/// Reads one request (head, then a body of its content-length); false at
/// the connection's end.
fn read_request(conn: &mut std::net::TcpStream) -> bool {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => return false,
        }
    }
    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).is_ok()
}

#[test]
fn a_pooled_connection_the_server_closed_is_not_used_again() {
    // The parent's connection goes back to the pool and the server closes
    // it; the sub-agent's request must go on a new one, not fail on the
    // closed one (with no retries it would fail, and the parent would go on
    // with that failure as the call's result: two requests answered, not
    // three).
    let calls: Vec<Call> = vec![("call_1", "call_agent", delegate("helper", "work"))];
    let (port, answered) = closes_after_first(P::OpenAi.tool_calls(&calls), P::OpenAi.text("done"));
    let home = Home::fast_retries();
    home.named_agent("lead", P::OpenAi.model(), "sub_agents = [\"helper\"]\n");
    home.named_agent("helper", P::OpenAi.model(), "");
    let mut cmd = home.axe();
    cmd.env("AXE_OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["run", "lead", "--retries", "0"]);
    let b = run_bounded(&mut cmd, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(answered.try_iter().last(), Some(3));
}

#[test]
fn a_wide_fan_out_keeps_64_idle_connections_for_the_next_and_closes_the_rest() {
    // Two 80-way fan-outs, every call in flight at once (a barrier): the
    // first opens 79 connections besides the parent's, of which 64 are
    // kept when the answers come back; the second takes those 64 and opens
    // 16; the parent's turns take a kept one each. axe's connections count
    // themselves into the pool (src/provider/tcp.rs): a count that drifted
    // would keep fewer (more connections) or more.
    const N: usize = 80;
    let home = Home::new();
    let names: Vec<String> = (0..N).map(|i| format!("w{i}")).collect();
    home.named_agent(
        "lead",
        P::OpenAi.model(),
        &format!("sub_agents = {names:?}\nmax_turns = 10\n"),
    );
    for n in &names {
        home.named_agent(n, P::OpenAi.model(), "");
    }
    let gates = [Arc::new(Gate::new(N)), Arc::new(Gate::new(N))];
    let g = gates.clone();
    let server = FakeServer::route(move |req| {
        let results = req.tool_messages().len();
        if req.who() == "lead" {
            if results >= 2 * N {
                return Reply::Json(200, P::OpenAi.text("done"));
            }
            let task = if results == 0 { "one" } else { "two" };
            let ids: Vec<String> = (0..N).map(|i| format!("call_{task}_{i}")).collect();
            let calls: Vec<Call> = ids
                .iter()
                .zip(&names)
                .map(|(id, n)| (id.as_str(), "call_agent", delegate(n, task)))
                .collect();
            return Reply::Json(200, P::OpenAi.tool_calls(&calls));
        }
        let gate = &g[usize::from(req.first_user_text().contains("two"))];
        gate.arrive(Duration::from_secs(10));
        Reply::Json(200, P::OpenAi.text("ok"))
    });
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "lead"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert!(gates.iter().all(|g| !g.timed_out.load(Ordering::SeqCst)));
    assert_eq!(server.connections(), N + (N - 64));
}
