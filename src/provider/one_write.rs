//! A request's head sent with its body, in one write (design §3.15).
//!
//! ureq writes a request's head, then each piece of its body, each with a
//! write of its own: a small request, as every sub-agent's is, left in two
//! system calls and two TCP segments (two TLS records over `https`), and
//! woke the server twice. [`OneWrite`] sits over the connection ureq talks
//! to: it keeps a head aside and sends it in front of the body's first
//! piece, or alone before the response is waited for when no body follows.
//! Everything else, the reads, the timeouts and the checks of a pooled
//! connection, is the connection's own.

use ureq::unversioned::transport::{Buffers, NextTimeout, Transport};

/// A connection whose requests' heads wait for their bodies.
#[derive(Debug)]
pub(crate) struct OneWrite {
    inner: Box<dyn Transport>,
    /// The head kept aside, to go in front of what is sent next.
    head: Vec<u8>,
    /// What ureq sends next starts a request: the connection is new, or a
    /// response was waited for since.
    starts: bool,
}

impl OneWrite {
    pub(crate) fn new(inner: Box<dyn Transport>) -> OneWrite {
        OneWrite {
            inner,
            head: Vec::new(),
            starts: true,
        }
    }

    /// Sends what is kept aside, if anything, alone. Out of line, as
    /// [`OneWrite::split`] is: a waiting thread's stack holds no more of
    /// this file than the calls' own small frames (design §3.15).
    #[inline(never)]
    fn flush(&mut self, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let n = self.head.len();
        if n == 0 {
            return Ok(());
        }
        self.inner.buffers().output()[..n].copy_from_slice(&self.head);
        self.head.clear();
        self.inner.transmit_output(n, timeout)
    }

    /// Sends the head kept aside in front of a piece of `amount` bytes that
    /// is longer than it (it fills the buffer, and a head kept is at most
    /// half of it): the head and all of the piece but its last bytes
    /// first, then those, swapped into the head's place.
    #[inline(never)]
    fn split(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let n = self.head.len();
        let piece = &mut self.inner.buffers().output()[..amount];
        piece.rotate_right(n);
        piece[..n].swap_with_slice(&mut self.head);
        self.inner.transmit_output(amount, timeout)?;
        self.flush(timeout)
    }
}

impl Transport for OneWrite {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let out = self.inner.buffers().output();
        // A head of at most half the buffer waits: the body's first piece
        // then fits behind it, or, filling the buffer, is longer than it.
        if std::mem::take(&mut self.starts) && amount <= out.len() / 2 {
            self.head.extend_from_slice(&out[..amount]);
            return Ok(());
        }
        let n = self.head.len();
        if n == 0 {
            return self.inner.transmit_output(amount, timeout);
        }
        if n + amount <= out.len() {
            out.copy_within(..amount, n);
            out[..n].copy_from_slice(&self.head);
            self.head.clear();
            return self.inner.transmit_output(n + amount, timeout);
        }
        self.split(amount, timeout)
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush(timeout)?;
        self.starts = true;
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.flush(timeout)?;
        self.starts = true;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use ureq::unversioned::transport::LazyBuffers;

    /// A connection that keeps what each write sent.
    #[derive(Debug)]
    struct Wire {
        buffers: LazyBuffers,
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    impl Transport for Wire {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            let sent = self.buffers.output()[..amount].to_vec();
            self.writes.lock().unwrap().push(sent);
            Ok(())
        }

        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            Ok(false)
        }

        fn is_open(&mut self) -> bool {
            true
        }
    }

    /// A connection with an output buffer of 64 bytes, and its writes.
    fn connection() -> (OneWrite, Arc<Mutex<Vec<Vec<u8>>>>) {
        let writes = Arc::default();
        let wire = Wire {
            buffers: LazyBuffers::new(64, 64),
            writes: Arc::clone(&writes),
        };
        (OneWrite::new(Box::new(wire)), writes)
    }

    /// Writes `bytes` as ureq does: into the output buffer, then sent.
    fn send(c: &mut OneWrite, bytes: &[u8]) {
        c.buffers().output()[..bytes.len()].copy_from_slice(bytes);
        c.transmit_output(bytes.len(), NextTimeout::default())
            .unwrap();
    }

    fn wait(c: &mut OneWrite) {
        c.maybe_await_input(NextTimeout::default()).unwrap();
    }

    fn sent(writes: &Mutex<Vec<Vec<u8>>>) -> Vec<String> {
        let writes = writes.lock().unwrap();
        writes
            .iter()
            .map(|w| String::from_utf8_lossy(w).into())
            .collect()
    }

    #[test]
    fn a_small_request_leaves_in_one_write_each_time() {
        let (mut c, writes) = connection();
        for _ in 0..2 {
            send(&mut c, b"POST / HTTP/1.1\r\n\r\n");
            send(&mut c, b"{\"a\":1}");
            wait(&mut c);
        }
        assert_eq!(
            sent(&writes),
            [
                "POST / HTTP/1.1\r\n\r\n{\"a\":1}",
                "POST / HTTP/1.1\r\n\r\n{\"a\":1}"
            ]
        );
    }

    #[test]
    fn a_body_that_fills_the_buffer_follows_the_head_whole_and_in_order() {
        let (mut c, writes) = connection();
        let body: Vec<u8> = (0..64 + 10).map(|i| b'a' + (i % 26) as u8).collect();
        send(&mut c, b"HEAD-16-BYTES\r\n\n");
        send(&mut c, &body[..64]);
        send(&mut c, &body[64..]);
        wait(&mut c);
        let writes = sent(&writes);
        assert_eq!(writes.len(), 3);
        assert_eq!(
            writes.concat(),
            format!("HEAD-16-BYTES\r\n\n{}", String::from_utf8_lossy(&body))
        );
    }

    #[test]
    fn a_head_without_a_body_leaves_before_the_wait_and_a_long_one_at_once() {
        let (mut c, writes) = connection();
        send(&mut c, b"GET / HTTP/1.1\r\n\r\n");
        assert!(sent(&writes).is_empty());
        wait(&mut c);
        let long = [b'h'; 40];
        send(&mut c, &long);
        assert_eq!(sent(&writes).len(), 2);
        send(&mut c, b"body");
        assert_eq!(
            sent(&writes),
            ["GET / HTTP/1.1\r\n\r\n", &"h".repeat(40), "body"]
        );
    }
}
