//! Reading stdin, the one input axe reads that may never end: a writer
//! that never finishes (`sleep 9 | axe run ...`) is bounded by the run's
//! deadline, and a larger input than [`MAX_BYTES`] is refused, not cut
//! (design §6.2, §6.3). Files are read by `sandbox::read`.

use crate::deadline::Deadline;
use crate::error::{During, Error};

/// The most of stdin axe reads.
pub const MAX_BYTES: u64 = 32 << 20;

/// Stdin to its end, at most [`MAX_BYTES`], waiting for each piece with
/// poll() so that the wait ends at the deadline: a blocking read cannot be
/// given one. (A thread per read did the same for the price of a thread in
/// every run.)
pub fn read_all(deadline: &Deadline) -> Result<Vec<u8>, Error> {
    const FD: i32 = 0;
    let failed = |e: std::io::Error| Error::general(format!("cannot read stdin: {e}"));
    let mut bytes = Vec::new();
    let mut piece = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.left();
        if left.is_zero() {
            return Err(Error::TimedOut {
                secs: deadline.secs,
                during: During::ReadingStdin,
            });
        }
        let mut ready = libc::pollfd {
            fd: FD,
            events: libc::POLLIN,
            revents: 0,
        };
        let wait = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: one valid pollfd, and its count.
        if unsafe { libc::poll(&mut ready, 1, wait) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(failed(e));
        }
        if ready.revents == 0 {
            continue; // the wait ended; the deadline is checked above
        }
        // SAFETY: `piece` is a writable buffer of `piece.len()` bytes.
        let n = unsafe { libc::read(FD, piece.as_mut_ptr().cast(), piece.len()) };
        let Ok(n) = usize::try_from(n) else {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN) => continue,
                // No stdin at all reads as an empty one.
                Some(libc::EBADF) => return Ok(bytes),
                _ => return Err(failed(e)),
            }
        };
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&piece[..n]);
        if bytes.len() as u64 > MAX_BYTES {
            return Err(Error::general(format!(
                "stdin is larger than {} MiB",
                MAX_BYTES >> 20
            )));
        }
    }
}
