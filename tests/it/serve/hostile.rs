//! Clients that do not play fair (design §12.4): a head that stops
//! coming, a 1 GiB body sent lazily, a body cut off, invalid UTF-8, a
//! million-message conversation. Each is let go in bounded time, the
//! server never reads more than its limit, and it keeps serving others.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{Server, chat_body, parse_raw, post, raw};
use crate::common::*;

fn start(args: &[&str]) -> (Home, FakeServer, Server) {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, args);
    (home, fake, server)
}

/// Whether the server still answers an honest request.
fn still_serves(server: &Server) -> bool {
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    if r.status != 200 {
        eprintln!(
            "not served: {} {}\nserver: {}",
            r.head,
            r.body,
            server.log()
        );
    }
    r.status == 200
}

#[test]
fn a_head_that_stops_coming_is_let_go_at_the_idle_limit() {
    let (_h, _f, server) = start(&["--idle-timeout", "2"]);
    let mut slow: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(&server.addr).unwrap();
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
                .unwrap();
            s
        })
        .collect();
    // Twenty stalled heads hold no worker: others are served meanwhile.
    assert!(still_serves(&server));
    let started = Instant::now();
    for s in &mut slow {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    }
    // At the 2 s limit: under the 10 s default, with room for a loaded
    // machine.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "stalled connections were closed at the idle limit, took {:?}",
        started.elapsed()
    );
}

/// POSTs `body` as a client that stops sending when the server takes no
/// more (a write timeout), then reads the answer.
fn refused_early(addr: &str, body: &str) -> super::Raw {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = s
        .write_all(head.as_bytes())
        .and_then(|()| s.write_all(body.as_bytes()));
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    parse_raw(&answer)
}

#[test]
fn a_1_gib_body_is_refused_before_it_is_read() {
    let (_h, fake, server) = start(&[]);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1073741824\r\n\r\n{\"model\":\"helper\",")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The client goes on sending while it waits; the server reads none of
    // it and answers at once.
    s.set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let started = Instant::now();
    let chunk = vec![b' '; 64 * 1024];
    let mut sent: u64 = 0;
    while started.elapsed() < Duration::from_secs(3) {
        match s.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let r = parse_raw(&answer);
    assert_eq!(r.status, 413, "{}", r.head);
    assert!(r.body.contains("request_too_large"), "{}", r.body);
    assert!(
        sent < 256 * 1024 * 1024,
        "the server took {sent} bytes of a body it refused"
    );
    assert!(fake.requests().is_empty());
    assert!(still_serves(&server));
}

#[test]
fn a_body_cut_off_is_a_400_and_one_that_stalls_a_408() {
    let (_h, fake, server) = start(&["--idle-timeout", "2"]);
    // Longer than tiny_http reads itself: the body reaches axe's reader.
    let body = chat_body("helper", &"x".repeat(4000));
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body.as_bytes()[..2000]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    assert_eq!(
        parse_raw(&answer).status,
        400,
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body.as_bytes()[..2000]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    assert_eq!(
        parse_raw(&answer).status,
        408,
        "{}",
        String::from_utf8_lossy(&answer)
    );
    // At the 2 s limit: under the 10 s default, with room for a loaded
    // machine.
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(fake.requests().is_empty());
    assert!(still_serves(&server));
}

#[test]
fn invalid_utf8_is_a_400() {
    let (_h, fake, server) = start(&[]);
    let mut body =
        b"{\"model\":\"helper\",\"messages\":[{\"role\":\"user\",\"content\":\"".to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0x80]);
    body.extend_from_slice(b"\"}]}");
    let mut req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    let r = raw(&server.addr, &req);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("invalid_request_error"), "{}", r.body);
    assert!(fake.requests().is_empty());
}

#[test]
fn a_million_message_conversation_is_refused() {
    let (_h, fake, server) = start(&["--max-body", "67108864"]);
    let mut body = String::from("{\"model\":\"helper\",\"messages\":[");
    for i in 0..1_000_000 {
        if i > 0 {
            body.push(',');
        }
        body.push_str("{\"role\":\"user\",\"content\":\"\"}");
    }
    body.push_str("]}");
    let r = post(&server.addr, "/v1/chat/completions", &body, "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("at most 10000 messages"), "{}", r.body);
    // Under the default 4 MiB limit it is refused by its length alone.
    let (_h2, _f2, small) = start(&[]);
    let r = refused_early(&small.addr, &body);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(fake.requests().is_empty());
}

#[test]
fn a_server_left_alone_past_its_idle_limit_still_serves() {
    // Linux applies the listener's read timeout to accept() too: the
    // listener must outlive a quiet spell longer than the idle limit.
    let (_h, _f, server) = start(&["--idle-timeout", "2"]);
    std::thread::sleep(Duration::from_secs(5));
    assert!(still_serves(&server), "{}", server.log());
}

#[test]
fn a_request_pipelined_behind_a_running_one_holds_up_no_other_client() {
    // tiny_http answers a connection's requests in order: the answer to a
    // request pipelined behind a running one can only be written after
    // that one's. Nobody else may wait for it meanwhile.
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::start(vec![Reply::Delay(
        Duration::from_secs(10),
        Box::new(Reply::Json(200, openai_text("slow answer", 1, 1))),
    )]);
    let server = Server::start(&home, &fake, &[]);
    let chat = chat_body("helper", "hi");
    let mut a = TcpStream::connect(&server.addr).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let two = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{chat}GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
        chat.len()
    );
    a.write_all(two.as_bytes()).unwrap();
    fake.wait_for_requests(1);
    std::thread::sleep(Duration::from_millis(300));
    healthz_at_once(&server, "for the slow run");
    // The pipelined request is answered too, after the one before it.
    let mut answers = Vec::new();
    let _ = a.read_to_end(&mut answers);
    let answers = String::from_utf8_lossy(&answers);
    // Two answers, both 200 (the first body has no newline to end it).
    assert_eq!(answers.matches("HTTP/1.1 ").count(), 2, "{answers}");
    assert_eq!(answers.matches("HTTP/1.1 200 OK").count(), 2, "{answers}");
    assert!(answers.contains("slow answer"), "{answers}");
    let at = |s: &str| answers.find(s).unwrap();
    assert!(at("slow answer") < at("\"status\":\"ok\""), "{answers}");
}

#[test]
fn a_body_declared_larger_than_any_memory_is_refused_and_the_server_lives() {
    // An unread body is drained before the connection is used again; a
    // drain sized by the declared length once took the process down.
    let (_h, _f, mut server) = start(&[]);
    for (path, want) in [("/healthz", 200), ("/v1/chat/completions", 413)] {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: 1000000000000000\r\n\r\n{{\"a\":"
        );
        s.write_all(head.as_bytes()).unwrap();
        let mut got = [0u8; 1024];
        let n = s.read(&mut got).unwrap_or(0);
        assert_eq!(
            parse_raw(&got[..n]).status,
            want,
            "{path}: {}",
            server.log()
        );
        drop(s);
    }
    assert!(
        server.wait_exit(Duration::from_millis(500)).is_none(),
        "axe serve ended: {}",
        server.log()
    );
    assert!(still_serves(&server), "{}", server.log());
}

#[test]
fn a_body_trickled_to_a_request_answered_without_it_holds_up_no_other_client() {
    // /healthz, a refused token and a 429 are answered by the one thread
    // that takes every request; the body they leave unread must not be
    // read there, however slowly it comes.
    let (_h, _f, server) = start(&[]);
    let mut a = TcpStream::connect(&server.addr).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    a.write_all(
        b"POST /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100000000\r\n\r\n{\"a\":",
    )
    .unwrap();
    let mut got = [0u8; 1024];
    let n = a.read(&mut got).unwrap_or(0);
    assert_eq!(parse_raw(&got[..n]).status, 200);
    // A byte a second, inside the idle limit, for 12 s.
    let trickle = std::thread::spawn(move || {
        for _ in 0..12 {
            std::thread::sleep(Duration::from_secs(1));
            if a.write_all(b" ").is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    healthz_at_once(&server, "behind a trickled body");
    trickle.join().unwrap();
}

/// Another client's `/healthz` is answered, and at once (5 s at most),
/// whatever holds up the connection `why` says.
fn healthz_at_once(server: &Server, why: &str) {
    let asked = Instant::now();
    let b = raw(
        &server.addr,
        b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(b.status, 200, "{}", server.log());
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "another client's /healthz waited {:?} {why}",
        asked.elapsed()
    );
}
