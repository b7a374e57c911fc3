//! `axe serve` through the binary (design ch. 12): the server started on a
//! free loopback port against a fake provider, driven by the official
//! `openai` Python package (`client.rs`), by the `openai` Node package, the
//! Vercel AI SDK and simonw's `llm` (`client_node.rs`, `client_ai.rs`,
//! `client_llm.rs`), all installed by scripts/serve_client.sh into
//! target/serve-client (a test whose client is missing is a skip that
//! `make test` lists and fails on, tests/common/skips.rs), by hostile clients on raw sockets (`hostile.rs`), and by 200
//! requests at once (`load.rs`); what clients meet on their defaults
//! (`defaults.rs`).

mod client;
mod client_ai;
mod client_llm;
mod client_node;
mod clients;
mod defaults;
mod fd_limit;
mod hostile;
mod load;
mod responses;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;

/// A running `axe serve`, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// `axe serve --listen 127.0.0.1:0 <args>` with the OpenAI provider
    /// pointed at `fake`.
    pub fn start(home: &Home, fake: &FakeServer, args: &[&str]) -> Server {
        Server::start_with(home.axe_on(&[(P::OpenAi, fake)]), args)
    }

    /// `cmd serve --listen 127.0.0.1:0 <args>`.
    pub fn start_with(mut cmd: Command, args: &[&str]) -> Server {
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start axe serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { return };
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let mut server = Server {
            child,
            url: String::new(),
            addr: String::new(),
            log,
        };
        assert!(
            server.wait_log("serving on http://", Duration::from_secs(30)),
            "axe serve did not start: {}",
            server.log()
        );
        let log = server.log();
        let addr = log
            .split("serving on http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("the address")
            .to_string();
        server.url = format!("http://{addr}");
        server.addr = addr;
        server
    }

    /// Everything axe serve wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until stderr holds `needle`; false if it did not in `limit`.
    pub fn wait_log(&self, needle: &str, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.log().contains(needle)
    }

    /// The access-log lines so far.
    pub fn access_lines(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.starts_with("axe: serve: "))
            .map(str::to_string)
            .collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the server.
    pub fn signal(&self, signal: i32) {
        let pid = i32::try_from(self.pid()).unwrap();
        // SAFETY: a signal to our own child.
        unsafe {
            libc::kill(pid, signal);
        }
    }

    /// Waits for the server to exit; its status, or None after `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python of the venv with the `openai` package, or None (the skip
/// said, a failure of `make test`) when scripts/serve_client.sh has not
/// installed it.
pub fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/serve-client/venv/bin/python");
    if p.is_file() {
        Some(p)
    } else {
        crate::common::missing(
            "axe serve with the official openai client",
            "the openai package is not installed in target/serve-client (bash scripts/serve_client.sh)",
        );
        None
    }
}

/// Runs client.py `action` against `server` with bearer `key`; its JSON.
pub fn client(
    py: &PathBuf,
    server: &Server,
    key: &str,
    action: &str,
    arg: &str,
) -> serde_json::Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/serve/client.py");
    let mut cmd = Command::new(py);
    cmd.arg(&script)
        .args([&server.url, key, action, arg])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .stdin(Stdio::null());
    let out = run_within(&mut cmd, Duration::from_secs(60)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "client.py {action}: not JSON ({e}): {text}\nstderr: {}\nserver: {}",
            String::from_utf8_lossy(&out.stderr),
            server.log()
        )
    })
}

/// What a raw request got back: the status, the head's lines, the body.
pub struct Raw {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends `request` (whole, as bytes) to `addr` on a connection of its own
/// and reads the answer to its end (the request says `connection: close`).
pub fn raw(addr: &str, request: &[u8]) -> Raw {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.write_all(request);
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    parse_raw(&bytes)
}

/// The status, head and body of an HTTP/1.1 answer (a chunked body
/// left framed).
pub fn parse_raw(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Raw {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A POST of `body` to `path`, closing the connection after.
pub fn post(addr: &str, path: &str, body: &str, headers: &str) -> Raw {
    let req = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    raw(addr, req.as_bytes())
}

/// A chat completion request for `agent` saying `text`.
pub fn chat_body(agent: &str, text: &str) -> String {
    serde_json::json!({"model": agent, "messages": [{"role": "user", "content": text}]}).to_string()
}
