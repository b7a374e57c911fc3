//! `axe serve` under a low limit on open files (design §12.4): idle
//! connections beyond what it can hold are answered 503 or wait in the
//! kernel's queue, never end the server, which answers again once they
//! close; and the limit it raises is not what its runs' commands get.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{Server, parse_raw};
use crate::common::*;
use serde_json::json;

/// `GET /healthz` on a connection of its own; its status, 0 when none came
/// within two seconds.
fn healthz(addr: &str) -> u16 {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return 0;
    };
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    parse_raw(&answer).status
}

#[test]
fn idle_connections_beyond_the_open_file_limit_leave_the_server_up() {
    let home = Home::new();
    // `ulimit -n` sets the hard limit too: axe cannot raise it.
    let mut cmd = home.command("sh");
    cmd.args([
        "-c",
        "ulimit -n 64 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_axe"),
    ]);
    let mut server = Server::start_with(cmd, &[]);
    assert_eq!(healthz(&server.addr), 200, "{}", server.log());
    let idle: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(&server.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        server.wait_exit(Duration::from_millis(500)).is_none(),
        "axe serve ended: {}",
        server.log()
    );
    // Those over the limit were told so.
    let mut refused = 0;
    for mut s in &idle {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        if matches!(s.read(&mut buf), Ok(n) if buf[..n].starts_with(b"HTTP/1.1 503")) {
            refused += 1;
        }
    }
    assert!(refused > 0, "none of 100 was refused: {}", server.log());
    drop(idle);
    let until = Instant::now() + Duration::from_secs(20);
    while healthz(&server.addr) != 200 {
        assert!(
            Instant::now() < until,
            "not answered after the idle connections closed: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(server.wait_exit(Duration::from_millis(10)).is_none());
}

#[test]
fn a_command_a_served_run_starts_gets_the_open_file_limit_axe_started_with() {
    if !landlock() {
        return;
    }
    let home = Home::new();
    home.named_agent("sh", "openai/gpt-4o", "tools = [\"run_command\"]\n");
    let fake = FakeServer::route(|r| {
        if r.has_tool_results() {
            Reply::Json(200, openai_text("done", 1, 1))
        } else {
            let call = [("c1", "run_command", json!({"command": "ulimit -n"}))];
            Reply::Json(200, openai_tool_calls(&call, 1, 1))
        }
    });
    // A soft limit of 200 under a higher hard one, which axe serve raises
    // itself to for its connections.
    let mut sh = home.command("sh");
    sh.args(["-c", "ulimit -S -n 200 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_axe"))
        .env("AXE_OPENAI_BASE_URL", &fake.url)
        .env("OPENAI_API_KEY", OPENAI_KEY);
    let server = Server::start_with(sh, &[]);
    let answer = super::post(
        &server.addr,
        "/v1/chat/completions",
        &super::chat_body("sh", "go"),
        "",
    );
    assert_eq!(answer.status, 200, "{}", server.log());
    let requests = fake.requests();
    let results = requests.last().unwrap().tool_result_texts();
    assert!(results[0].starts_with("200\n"), "{results:?}");
}
