//! The fake provider: a real HTTP/1.1 server on 127.0.0.1 that records
//! every request and answers from a script or a handler; and [`Gate`], a
//! barrier with a bounded wait for proving that requests are in flight
//! together.
//!
//! The server is written here on `std::net` rather than taken from
//! tiny_http: tiny_http 0.12 serves connections from a task pool that, in a
//! burst of new connections, can queue one behind threads that are busy with
//! kept-alive connections (its `spawn` counts a just-woken thread as still
//! waiting). A fan-out of N sub-agents then never has N requests in flight
//! at the server, and the concurrency tests stall. Here every connection has
//! its own thread, `TCP_NODELAY` is set, and each response is one write.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::streams::{Step, stream};

/// One request the fake provider received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }
}

/// What the fake provider answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `status` with a body, content-type application/json.
    Json(u16, String),
    /// `status` with a body, a content type of your choosing, and extra headers.
    Raw {
        status: u16,
        content_type: String,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Accept the request and never answer (held for a minute).
    Hang,
    /// Wait, then answer.
    Delay(Duration, Box<Reply>),
    /// Send `status`'s head with a content-length 1 KiB larger than
    /// `partial_body`, then `partial_body`, then close the connection: a
    /// server that dies in the middle of its answer.
    CloseMidBody { status: u16, partial_body: String },
    /// A 200 answer of `content_type` whose body is sent in chunks
    /// (`transfer-encoding: chunked`, each chunk one write), step by step:
    /// a streamed answer, and every way one goes wrong.
    Stream {
        content_type: String,
        steps: Vec<Step>,
    },
    /// A 200 JSON answer of `bytes` bytes in all, streamed in pieces:
    /// spaces, then `tail` (so the whole body, read to the end, would be
    /// `tail` as valid JSON). Stops quietly when the client hangs up.
    Huge { bytes: u64, tail: String },
}

/// A fake provider on 127.0.0.1. Every connection is served on its own
/// thread, keep-alive included; a request's handler runs on that thread.
pub struct FakeServer {
    pub url: String,
    addr: std::net::SocketAddr,
    listener: Arc<std::net::TcpListener>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    max_in_flight: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// What every connection thread shares.
struct Shared {
    handler: Box<Handler>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    in_flight: AtomicUsize,
    max_in_flight: Arc<AtomicUsize>,
}

impl FakeServer {
    /// Replies are used in order; the last one repeats.
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        assert!(
            !replies.is_empty(),
            "a fake server needs at least one reply"
        );
        let next = AtomicUsize::new(0);
        FakeServer::route(move |_| {
            let i = next.fetch_add(1, Ordering::SeqCst);
            replies[i.min(replies.len() - 1)].clone()
        })
    }

    /// A model whose answers to requests without tool results are `first`
    /// (a response making tool calls) and to those with them `done`: one
    /// round of tool calls, then the end of the run.
    pub fn tool_loop(first: String, done: String) -> FakeServer {
        FakeServer::route(move |req| {
            let body = if req.has_tool_results() {
                &done
            } else {
                &first
            };
            Reply::Json(200, body.clone())
        })
    }

    /// Each request is answered with what `handler` returns for it. The
    /// handler runs on the connection's own thread, so it may block (at a
    /// [`Gate`], say) without holding up other connections.
    pub fn route<F>(handler: F) -> FakeServer
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeServer::route_with(None, handler)
    }

    /// [`FakeServer::route`], with `Some(threads)` connection threads
    /// started before any client connects, each taking the next connection
    /// when it is free: for the bench, so that a burst of hundreds of
    /// connections is not served at the pace one accepting thread can start
    /// threads (on two cores, among hundreds of busy ones). At most
    /// `threads` connections are served at once; more wait to be accepted.
    /// With `None`, a thread is started per connection as it comes.
    pub fn route_with<F>(prestarted: Option<usize>, handler: F) -> FakeServer
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        deepen_backlog(&listener);
        let addr = listener.local_addr().expect("local address");
        let listener = Arc::new(listener);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            requests: requests.clone(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: max_in_flight.clone(),
        });
        let accept = {
            let (listener, stop, connections) =
                (listener.clone(), stop.clone(), connections.clone());
            move || -> Option<std::net::TcpStream> {
                loop {
                    let accepted = listener.accept();
                    if stop.load(Ordering::SeqCst) {
                        return None;
                    }
                    match accepted {
                        Ok((stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            return Some(stream);
                        }
                        // Out of descriptors, say: do not spin.
                        Err(_) => thread::sleep(Duration::from_millis(10)),
                    }
                }
            }
        };
        match prestarted {
            None => {
                thread::spawn(move || {
                    while let Some(stream) = accept() {
                        let shared = shared.clone();
                        thread::spawn(move || serve(stream, &shared));
                    }
                });
            }
            Some(threads) => {
                let accept = Arc::new(accept);
                for _ in 0..threads {
                    let (accept, shared) = (accept.clone(), shared.clone());
                    thread::spawn(move || {
                        while let Some(stream) = accept() {
                            serve(stream, &shared);
                        }
                    });
                }
            }
        }
        FakeServer {
            url: format!("http://{addr}"),
            addr,
            listener,
            stop,
            requests,
            max_in_flight,
            connections,
        }
    }

    /// A server answering every request with `status` and `body` as JSON.
    pub fn json(status: u16, body: &str) -> FakeServer {
        FakeServer::start(vec![Reply::Json(status, body.to_string())])
    }

    /// Waits until this server has seen `n` requests (at most 30 s: a bound
    /// against a hang, which costs nothing when the request comes).
    pub fn wait_for_requests(&self, n: usize) {
        let started = std::time::Instant::now();
        while self.requests().len() < n {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no request came"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The requests, once `n` have come or 10 s have passed: a client that
    /// gave up (a timeout) may have gone before this server's threads, slow
    /// on a loaded machine, read what it sent.
    pub fn requests_settled(&self, n: usize) -> Vec<Recorded> {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while self.requests().len() < n && std::time::Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        self.requests()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The requests agent `name` sent (see [`Recorded::who`]), in order.
    pub fn sent_by(&self, name: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.who() == name)
            .collect()
    }

    /// The only request received (panics if there was not exactly one).
    pub fn only_request(&self) -> Recorded {
        let r = self.requests();
        assert_eq!(r.len(), 1, "expected exactly one request, got {}", r.len());
        r[0].clone()
    }

    /// The most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake every thread waiting to accept, so that it sees the flag.
        wake_acceptors(&self.listener);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

/// Shutting a listening socket down makes every accept() waiting on it
/// return (Linux).
#[cfg(target_os = "linux")]
fn wake_acceptors(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn shutdown(fd: i32, how: i32) -> i32;
    }
    // SAFETY: the fd is a valid socket owned by `listener`; shutdown only
    // changes its state. 2 is SHUT_RDWR.
    unsafe {
        shutdown(listener.as_raw_fd(), 2);
    }
}

#[cfg(not(target_os = "linux"))]
fn wake_acceptors(_: &std::net::TcpListener) {}

/// Raises the listen backlog from std's 128 to the kernel's limit. A 256-way
/// fan-out connects all at once; with 128 the overflowing SYNs are dropped
/// and retried a second later, and the fake provider, not axe, would be
/// what the benchmark measures. Linux takes a second `listen` on a
/// listening socket as a new backlog.
#[cfg(target_os = "linux")]
fn deepen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn listen(fd: i32, backlog: i32) -> i32;
    }
    // SAFETY: the fd is a valid listening socket owned by `listener`, and
    // listen() only changes its backlog.
    unsafe {
        listen(listener.as_raw_fd(), 4096);
    }
}

#[cfg(not(target_os = "linux"))]
fn deepen_backlog(_: &std::net::TcpListener) {}

/// Serves one connection: requests one after another until the client
/// closes it (or sends something that is not HTTP/1.1 with a length).
fn serve(stream: std::net::TcpStream, shared: &Shared) {
    use std::io::BufRead;
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    let mut reader = std::io::BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        // Only bodies with a content-length are understood; anything else
        // would put the connection out of step, so it is refused and closed.
        if headers
            .iter()
            .any(|(k, _)| k == "transfer-encoding" || k == "expect")
        {
            let _ = write_response(&mut writer, 501, "text/plain", "not supported", &[]);
            return;
        }
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
            return;
        }
        let recorded = Recorded {
            method,
            path,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        shared.requests.lock().unwrap().push(recorded.clone());
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let reply = (shared.handler)(&recorded);
        let keep = answer(&mut writer, reply);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep {
            return;
        }
    }
}

/// Writes `reply`; false when the connection is to be closed.
fn answer(out: &mut std::net::TcpStream, reply: Reply) -> bool {
    use std::io::Write;
    let written = match reply {
        Reply::Json(status, body) => write_response(out, status, "application/json", &body, &[]),
        Reply::Raw {
            status,
            content_type,
            body,
            headers,
        } => write_response(out, status, &content_type, &body, &headers),
        Reply::Hang => {
            thread::sleep(Duration::from_secs(60));
            false
        }
        Reply::Delay(d, inner) => {
            thread::sleep(d);
            return answer(out, *inner);
        }
        Reply::CloseMidBody {
            status,
            partial_body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                if status < 400 { "OK" } else { "Error" },
                partial_body.len() + 1024
            );
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(partial_body.as_bytes());
            let _ = out.write_all(&bytes);
            let _ = out.flush();
            let _ = out.shutdown(std::net::Shutdown::Both);
            false
        }
        Reply::Stream {
            content_type,
            steps,
        } => return stream(out, &content_type, &steps),
        Reply::Huge { bytes, tail } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {bytes}\r\n\r\n"
            );
            if out.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let padding = [b' '; 64 * 1024];
            let mut left = bytes.saturating_sub(tail.len() as u64);
            while left > 0 {
                let n = left.min(padding.len() as u64) as usize;
                if out.write_all(&padding[..n]).is_err() {
                    // The client hung up (as it should, past its limit).
                    return false;
                }
                left -= n as u64;
            }
            out.write_all(tail.as_bytes()).is_ok()
        }
    };
    written && out.flush().is_ok()
}

/// One response in one write (so no delayed-ACK stall between head and body).
fn write_response(
    out: &mut std::net::TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
    headers: &[(String, String)],
) -> bool {
    use std::io::Write;
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
        if status < 400 { "OK" } else { "Error" },
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    out.write_all(&bytes).is_ok()
}

/// A URL on 127.0.0.1 where nothing listens: a port that was just bound
/// and released.
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A barrier with a bounded wait: [`Gate::arrive`] returns `true` once `n`
/// callers have arrived, or `false` when `timeout` passes first. A test that
/// needs N requests in flight together lets each one arrive; a sequential
/// implementation then fails in bounded time instead of hanging.
pub struct Gate {
    n: usize,
    arrived: Mutex<usize>,
    cv: std::sync::Condvar,
    /// Set when any arrival timed out.
    pub timed_out: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            n,
            arrived: Mutex::new(0),
            cv: std::sync::Condvar::new(),
            timed_out: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn arrive(&self, timeout: Duration) -> bool {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.cv.notify_all();
        let (guard, result) = self
            .cv
            .wait_timeout_while(arrived, timeout, |a| *a < self.n)
            .unwrap();
        drop(guard);
        if result.timed_out() {
            self.timed_out.store(true, Ordering::SeqCst);
            false
        } else {
            true
        }
    }

    pub fn arrived(&self) -> usize {
        *self.arrived.lock().unwrap()
    }
}
