//! The streamed side of the HTTP path (design §4.11): a 2xx streamed body
//! read as it comes through the wire's decoder, its text handed out piece
//! by piece, the time to its first token kept, and each way it fails
//! (silent past the idle limit, cut, not a stream, an error event) made
//! the failed attempt the retry rules of `http.rs` judge.

use std::io::Read;
use std::time::{Duration, Instant};

use super::attempt::Attempt;
use super::error::{ErrorKind, stream_error};
use super::stream::{Decoder, StreamError};
use super::{MAX_BODY_BYTES, Provider, Response};

/// How long a stream's reader waits after a delta before reading on: two
/// frames at 60 Hz (30 a second, a film's rate), long enough to take a few
/// dozen tokens of a fast stream at once. Each wake costs ~70 µs of CPU
/// (the thread switches, the socket read, the write): at 16 ms a 2,000-token
/// stream took 13.8 ms of CPU over the same answer whole, at 33 ms 8.8
/// (`make bench`'s stream figures, design §4.11). Measured again with text
/// events read by their shape: 8.8 ms at 33, 5.4 at 50, 5.0 at 66, 3.4 at
/// 100; none reaches the 2 ms target that would have made a longer wait
/// worth its choppier text, so it stays.
const PACE: Duration = Duration::from_millis(33);

/// A read that brought this many bytes of body or more took about all the
/// connection's input buffer holds (8 KiB less the chunks' framing,
/// `client.rs`; on Linux it grows to that from 2 KiB as reads fill it,
/// `buffers.rs`): more is waiting, so the next read does not wait a pace.
const FULL_READ: usize = 7 * 1024;

impl Provider {
    /// A streamed answer read as it comes, each piece of its text handed to
    /// `on_text`; `sent` is when the request went, for the time to the
    /// first token.
    pub(super) fn read_stream(
        &self,
        body: &mut ureq::Body,
        sent: Instant,
        on_text: &dyn Fn(&str),
        url: &str,
    ) -> Result<Response, Attempt> {
        let mut reader = body.with_config().limit(MAX_BODY_BYTES).reader();
        let mut decoder = Decoder::new(self.wire);
        let mut first_token = None;
        // On the heap: a waiting sub-agent's frame stays small (design §3.15).
        let mut buf = vec![0; 8 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.no_answer(ureq::Error::from(e), url)),
            };
            // What one read brought is handed out at once: one write to
            // stdout for a dozen tokens, not one each.
            let mut text = String::new();
            let delta = decoder
                .feed(&buf[..n], &mut |t| text.push_str(t))
                .map_err(|e| self.stream_failure(e))?;
            if !text.is_empty() {
                on_text(&text);
            }
            if delta && first_token.is_none() {
                first_token = Some(sent.elapsed());
            }
            if self.cancelled() {
                return Err(self.cancelled_failure());
            }
            // Tokens come a millisecond or so apart: waking for each costs
            // a thread switch (the most of a stream's CPU). After a delta
            // the next read waits a little, and takes what came meanwhile
            // in one read, unless the stream is over, or unless this read
            // took about all one read can: more is waiting, and a wait
            // would let the text fall behind a stream faster than a read
            // a pace.
            if delta && !decoder.ended() && n < FULL_READ {
                std::thread::sleep(PACE);
            }
        }
        let mut resp = decoder.finish().map_err(|e| self.stream_failure(e))?;
        resp.first_token = first_token;
        Ok(resp)
    }

    pub(super) fn idle_failure(&self) -> Attempt {
        let mut error = self.error(
            ErrorKind::Timeout,
            None,
            format!(
                "the stream sent nothing for {}s (the idle limit)",
                self.idle.as_secs_f64()
            ),
        );
        error.idle = true;
        let mut failed = Attempt::failed(error);
        failed.retryable = true;
        failed
    }

    /// A stream that is not one, or the provider's error event in it.
    fn stream_failure(&self, e: StreamError) -> Attempt {
        match e {
            StreamError::Invalid(detail) => Attempt::failed(self.error(
                ErrorKind::InvalidResponse,
                None,
                format!("invalid response: {detail}"),
            )),
            StreamError::Failed(detail) => {
                let (error, retryable) = stream_error(self.wire, &detail);
                Attempt {
                    error,
                    detail: Box::new(detail),
                    retry_after: None,
                    should_retry: None,
                    retryable,
                }
            }
        }
    }
}
