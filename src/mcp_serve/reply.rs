//! One HTTP request's answer (design §9.6): what the protocol sends for
//! it arrives on a channel ([`Channel`], the request's [`Out`]); the
//! first message that is the answer is sent as `application/json`, unless
//! notifications (a call's progress) came first: then the answer is a
//! `text/event-stream`, each message one `message` event, the answer last.
//! A client that goes away (its socket watched, or a write that fails)
//! cancels the call; a call that ends unanswered (cancelled) ends the
//! stream, or is answered -32800.

use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tiny_http::Request;

use super::Out;
use super::stateless::{HEADER_MISMATCH, UNSUPPORTED_VERSION};
use crate::deadline::Cancel;
use crate::serve::json_response;

/// How often a waiting answer looks at whether its client left.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The protocol's messages for one request, into a channel.
pub struct Channel(pub Mutex<Sender<Value>>);

impl Out for Channel {
    fn send(&self, message: &Value) {
        // The request's thread gone (its client left): nothing to do.
        let _ = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(message.clone());
    }
}

/// The HTTP status of a JSON-RPC error `code` in the stateless revision,
/// as the official Python SDK's server gives it; 200 otherwise (and
/// always in the handshake era).
pub fn status_of(message: &Value, modern: bool) -> u16 {
    let Some(code) = message["error"]["code"].as_i64() else {
        return 200;
    };
    match code {
        -32601 if modern => 404,
        -32700 | -32600 | -32602 | HEADER_MISMATCH | -32021 | UNSUPPORTED_VERSION if modern => 400,
        _ => 200,
    }
}

/// A JSON-RPC error object.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// How a request is answered.
pub struct Answer<'a> {
    pub rq: Request,
    pub rx: Receiver<Value>,
    /// The request's id, for -32800.
    pub id: Value,
    /// Of the stateless revision: errors get their HTTP status.
    pub modern: bool,
    /// Headers of the answer (the session's id).
    pub extra: Vec<(&'static str, String)>,
    /// Set when the client left: the call is cancelled by `on_gone`.
    pub gone: Cancel,
    pub on_gone: &'a dyn Fn(),
}

impl Answer<'_> {
    /// Waits for the answer and sends it, as the module says.
    pub fn send(self) {
        let Answer {
            rq,
            rx,
            id,
            modern,
            extra,
            gone,
            on_gone,
        } = self;
        let mut rq = Some(rq);
        let mut stream: Option<Stream> = None;
        loop {
            match rx.recv_timeout(LOOK_EVERY) {
                Ok(m) if m.get("method").is_none() => {
                    match (stream.as_mut(), rq.take()) {
                        (Some(s), _) => s.event(&m, &gone),
                        (None, Some(rq)) => {
                            let _ = rq.respond(json_response(status_of(&m, modern), &m, &extra));
                        }
                        (None, None) => {}
                    }
                    break;
                }
                Ok(m) => {
                    if let Some(rq) = rq.take() {
                        stream = Some(Stream::start(rq, &extra, &gone));
                    }
                    if let Some(s) = stream.as_mut() {
                        s.event(&m, &gone);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if let Some(rq) = rq.take() {
                        let m = error(&id, -32800, "Request cancelled");
                        let _ = rq.respond(json_response(200, &m, &extra));
                    }
                    break;
                }
            }
            if gone.is_set() {
                on_gone();
                return;
            }
        }
        if let Some(s) = stream {
            s.end();
        }
    }
}

/// An event stream, chunked, written as tiny_http's writer takes it.
struct Stream {
    writer: Box<dyn Write + Send>,
    failed: bool,
}

impl Stream {
    fn start(rq: Request, extra: &[(&str, String)], gone: &Cancel) -> Stream {
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n",
        );
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut s = Stream {
            writer: rq.into_writer(),
            failed: false,
        };
        s.write(head.as_bytes(), gone);
        s
    }

    fn event(&mut self, message: &Value, gone: &Cancel) {
        let event = format!("event: message\ndata: {message}\n\n");
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        self.write(chunk.as_bytes(), gone);
    }

    fn end(mut self) {
        let gone = Cancel::default();
        self.write(b"0\r\n\r\n", &gone);
    }

    /// Writes `bytes`; a write that fails is a client gone.
    fn write(&mut self, bytes: &[u8], gone: &Cancel) {
        if self.failed {
            return;
        }
        if self
            .writer
            .write_all(bytes)
            .and_then(|()| self.writer.flush())
            .is_err()
        {
            self.failed = true;
            gone.cancel();
        }
    }
}
