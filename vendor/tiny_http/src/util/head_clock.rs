//! axe: a request head is read whole within the socket's read timeout of
//! its first byte (AXE.md). The socket's timeout alone bounds each read,
//! so a head trickled a byte at a time, each inside it, was read for as
//! long as its sender liked.
//!
//! `HeadClock` is started by the connection at the head's first byte and
//! stopped at its end; `Timed`, the reader below the connection's buffer,
//! gives each read of the socket made meanwhile only the time left, and
//! puts the socket's own timeout back for what follows (a body, the next
//! request's first byte). A head that comes in one read, as nearly every
//! one does, costs no system call more.

use std::io::{Error as IoError, ErrorKind, Read, Result as IoResult};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::RefinedTcpStream;

/// When the head being read must be whole; none between heads.
#[derive(Default)]
pub struct HeadClock(Mutex<Option<Instant>>);

impl HeadClock {
    /// The head's first byte came: it must be whole within `limit`.
    pub fn start(&self, limit: Option<Duration>) {
        if let Some(limit) = limit {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + limit);
        }
    }

    /// The head is whole.
    pub fn stop(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn deadline(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection's reading side, each read bounded by its head's clock.
pub struct Timed {
    inner: RefinedTcpStream,
    clock: Arc<HeadClock>,
    /// The socket's own read timeout, to put back after a head.
    idle: Option<Duration>,
    /// Whether the socket's timeout is a head's time left.
    shortened: bool,
}

impl Timed {
    /// `inner` read under `clock`; the socket's read timeout, which also
    /// bounds a head, with it.
    pub fn new(inner: RefinedTcpStream, clock: Arc<HeadClock>) -> (Timed, Option<Duration>) {
        let idle = inner.read_timeout().ok().flatten();
        let timed = Timed {
            inner,
            clock,
            idle,
            shortened: false,
        };
        (timed, idle)
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        let deadline = self.clock.deadline();
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < Duration::from_millis(1) {
                return Err(too_slow());
            }
            self.inner.set_read_timeout(Some(left))?;
            self.shortened = true;
        } else if self.shortened {
            self.inner.set_read_timeout(self.idle)?;
            self.shortened = false;
        }
        match self.inner.read(buf) {
            // The socket's timeout mid-head: the connection answers 408.
            Err(e) if deadline.is_some() && e.kind() == ErrorKind::WouldBlock => Err(too_slow()),
            r => r,
        }
    }
}

fn too_slow() -> IoError {
    IoError::new(ErrorKind::TimedOut, "the request head came too slowly")
}
