//! A single run's post, written by hand on the connection the run opened
//! early (design §7.9): the request goes as soon as the run's last span has
//! ended, before the answer is printed, so that the collector reads and
//! answers it while axe prints and tears down; its answer is read at exit,
//! within the flush's bound. ureq's call cannot be split so (its request and
//! its answer are one call); a post that cannot go this way goes through
//! ureq at exit, as before. The socket stays non-blocking throughout: the
//! waits are polls, so no switching it back and forth.

use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use super::conn::{Wait, wait};

/// The most of the collector's answer read to find its status: its status
/// line, and the head of a `1xx` before it.
const ANSWER: usize = 4096;

/// The request's head: `start` (the request line and `host`, from the URL),
/// the body's type and length, the user's headers. `None` when a header
/// could not be sent as it is (a name that is not a token, a value with a
/// line break): ureq's post then says why, as it always did. `None` too
/// when the user names a header this head writes or frames the body by
/// (`host`, `content-length`, `transfer-encoding`): ureq's post lets the
/// user's replace its own, which two of a kind here would not.
pub fn head(start: &str, kind: &str, len: usize, headers: &[(String, String)]) -> Option<Vec<u8>> {
    let mut h = Vec::with_capacity(start.len() + 128 + 64 * headers.len());
    h.extend_from_slice(start.as_bytes());
    h.extend_from_slice(concat!("user-agent: axe/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes());
    h.extend_from_slice(b"accept: */*\r\ncontent-type: ");
    h.extend_from_slice(kind.as_bytes());
    h.extend_from_slice(b"\r\ncontent-length: ");
    h.extend_from_slice(len.to_string().as_bytes());
    h.extend_from_slice(b"\r\n");
    for (k, v) in headers {
        // The checks ureq's own header insert makes; names lowercased as
        // it sends them.
        let name = ureq::http::HeaderName::from_bytes(k.as_bytes()).ok()?;
        ureq::http::HeaderValue::from_str(v).ok()?;
        if name == ureq::http::header::HOST
            || name == ureq::http::header::CONTENT_LENGTH
            || name == ureq::http::header::TRANSFER_ENCODING
        {
            return None;
        }
        h.extend_from_slice(name.as_str().as_bytes());
        h.extend_from_slice(b": ");
        h.extend_from_slice(v.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    h.extend_from_slice(b"\r\n");
    Some(h)
}

/// A request written (or being written) on the early connection, its
/// answer not yet read.
pub struct Exchange {
    stream: TcpStream,
    /// What the socket did not take at once (a connect still under way, a
    /// body larger than its buffer): written at exit, before the answer is
    /// waited for.
    unsent: Vec<u8>,
    /// Some of the request went: a failure now is the post's, not a
    /// connection's that a new one might not have.
    started: bool,
}

/// Why an exchange brought no answer.
pub enum Failed {
    /// None of the request went (the connect was refused, or the
    /// connection failed before a byte was taken): a post on a connection
    /// of its own may still get through, and says why if not.
    NotSent,
    /// The post's failure, as warned of.
    Post(String),
}

impl Exchange {
    /// Writes `head` and `body` on `stream` (open, or still connecting, as
    /// [`super::conn::Direct::take_open`] gave it) without waiting: in one
    /// call, and whatever the socket does not take is kept for
    /// [`Exchange::answer`].
    pub fn start(stream: TcpStream, head: &[u8], body: &[u8]) -> Exchange {
        let total = head.len() + body.len();
        // Nothing taken (still connecting, or a failure the answer's wait
        // reports) is all of it kept.
        let n = (&stream)
            .write_vectored(&[IoSlice::new(head), IoSlice::new(body)])
            .unwrap_or_default();
        let mut unsent = Vec::new();
        if n < total {
            unsent.reserve_exact(total - n);
            if n < head.len() {
                unsent.extend_from_slice(&head[n..]);
                unsent.extend_from_slice(body);
            } else {
                unsent.extend_from_slice(&body[n - head.len()..]);
            }
        }
        Exchange {
            stream,
            unsent,
            started: n > 0,
        }
    }

    /// The rest of the request written and the answer's status read, by
    /// `until`.
    pub fn answer(mut self, until: Instant) -> Result<u16, Failed> {
        self.send_rest(until)?;
        let mut buf = [0u8; ANSWER];
        let mut len = 0;
        loop {
            match (&self.stream).read(&mut buf[len..]) {
                Ok(0) => {
                    return Err(Failed::Post(
                        "the collector closed the connection without an answer".into(),
                    ));
                }
                Ok(n) => len += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.wait(Wait::Read, until)?;
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failed::Post(e.to_string())),
            }
            match status(&buf[..len]) {
                Some(Ok(code)) => return Ok(code),
                Some(Err(why)) => return Err(Failed::Post(why.into())),
                None if len == buf.len() => {
                    return Err(Failed::Post("the collector's answer is not HTTP".into()));
                }
                None => {}
            }
        }
    }

    /// What the socket did not take at first, written by `until`.
    fn send_rest(&mut self, until: Instant) -> Result<(), Failed> {
        let mut at = 0;
        while at < self.unsent.len() {
            match (&self.stream).write(&self.unsent[at..]) {
                Ok(n) => {
                    at += n;
                    self.started = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.wait(Wait::Write, until)?,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) if !self.started => return Err(Failed::NotSent),
                Err(e) => return Err(Failed::Post(e.to_string())),
            }
        }
        Ok(())
    }

    /// Waits for the socket to be ready for `what`; the time up is the
    /// post's timeout, as ureq's own says it.
    fn wait(&self, what: Wait, until: Instant) -> Result<(), Failed> {
        match wait(
            &self.stream,
            what,
            Some(until.saturating_duration_since(Instant::now())),
        ) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failed::Post(
                ureq::Error::Timeout(ureq::Timeout::Global).to_string(),
            )),
            Err(e) => Err(Failed::Post(e.to_string())),
        }
    }
}

/// The final answer's status in `buf`, once its status line is whole (an
/// informational `1xx` answer's head skipped); `None` while more is needed.
fn status(mut buf: &[u8]) -> Option<Result<u16, &'static str>> {
    loop {
        let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
        let line = &buf[..line_end];
        let code = line
            .strip_prefix(b"HTTP/1.")
            .and_then(|rest| rest.get(1..5))
            .filter(|c| c[0] == b' ' && c[1..].iter().all(u8::is_ascii_digit))
            .map(|c| {
                c[1..]
                    .iter()
                    .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'))
            });
        let Some(code) = code else {
            return Some(Err("the collector's answer is not HTTP"));
        };
        if !(100..200).contains(&code) {
            return Some(Ok(code));
        }
        // A `100 Continue` or the like: the final answer follows its head.
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
        buf = &buf[head_end + 4..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_read_once_its_line_is_whole_past_any_1xx() {
        assert_eq!(status(b"HTTP/1.1 20"), None);
        assert_eq!(status(b"HTTP/1.1 200 OK\r\n"), Some(Ok(200)));
        assert_eq!(
            status(b"HTTP/1.0 503 Busy\r\ncontent-length: 0\r\n\r\n"),
            Some(Ok(503))
        );
        assert_eq!(status(b"HTTP/1.1 100 Continue\r\n"), None);
        assert_eq!(
            status(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No"),
            None
        );
        assert_eq!(
            status(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No\r\n"),
            Some(Ok(204))
        );
        assert_eq!(
            status(b"SSH-2.0-OpenSSH\r\n"),
            Some(Err("the collector's answer is not HTTP"))
        );
        assert_eq!(
            status(b"HTTP/1.1 2x0\r\n"),
            Some(Err("the collector's answer is not HTTP"))
        );
    }

    #[test]
    fn the_head_carries_the_type_length_and_headers_lowercased_and_refuses_a_line_break() {
        let h = head(
            "POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1:4318\r\n",
            "application/x-protobuf",
            42,
            &[("X-Api-Key".into(), "abc".into())],
        )
        .unwrap();
        let text = String::from_utf8(h).unwrap();
        assert!(
            text.starts_with(
                "POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1:4318\r\nuser-agent: axe/"
            )
        );
        assert!(
            text.contains("\r\ncontent-type: application/x-protobuf\r\ncontent-length: 42\r\n")
        );
        assert!(text.ends_with("\r\nx-api-key: abc\r\n\r\n"), "{text:?}");
        assert!(head("", "k", 1, &[("x".into(), "a\r\nb: c".into())]).is_none());
        assert!(head("", "k", 1, &[("x y".into(), "a".into())]).is_none());
    }

    #[test]
    fn a_header_the_head_writes_itself_is_left_to_ureqs_post() {
        for name in ["Host", "content-length", "Transfer-Encoding"] {
            assert!(
                head("", "k", 1, &[(name.into(), "1".into())]).is_none(),
                "{name}"
            );
        }
        assert!(head("", "k", 1, &[("x-host".into(), "1".into())]).is_some());
    }
}
