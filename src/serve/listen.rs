//! The listening socket both HTTP servers take (`axe serve`, and `axe mcp
//! serve --listen`): bound with read and write timeouts every accepted
//! connection inherits, and a tick that keeps `accept` from waiting out
//! the read timeout (design §12.1); the file descriptors it may hold, and
//! so how many connections it serves at once.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::error::Error;

/// Keeps the listener's `accept` from waiting as long as its read timeout
/// (which Linux applies to `accept` too, and tiny_http takes a failed
/// `accept` as the end of the listener): a connection to itself, closed at
/// once, every `every` (a quarter of the idle limit) until `stopping`.
/// `axe mcp serve --listen` listens the same way.
pub(crate) fn tick(
    addr: SocketAddr,
    every: Duration,
    stopping: impl Fn() -> bool + Send + 'static,
) {
    let mut to = addr;
    if to.ip().is_unspecified() {
        to.set_ip(match to {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let _ = std::thread::Builder::new()
        .name("axe-serve-tick".into())
        .spawn(move || {
            while !stopping() {
                std::thread::sleep(every);
                let _ = std::net::TcpStream::connect_timeout(&to, every);
            }
        });
}

/// A socket listening on `addr`, its read and write timeouts set to
/// `idle`: Linux gives them to every connection it accepts, so a client
/// that stalls its request or its answer is let go.
pub(crate) fn listen(addr: SocketAddr, idle: Duration) -> Result<TcpListener, Error> {
    raise_fd_limit();
    let l = TcpListener::bind(addr)
        .map_err(|e| Error::general(format!("cannot listen on {addr}: {e}")))?;
    let tv = libc::timeval {
        tv_sec: idle.as_secs().try_into().unwrap_or(10),
        tv_usec: 0,
    };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: setsockopt on our own socket with a timeval of its size.
        let r = unsafe {
            libc::setsockopt(
                l.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&raw const tv).cast(),
                libc::socklen_t::try_from(std::mem::size_of::<libc::timeval>()).unwrap_or(16),
            )
        };
        if r != 0 {
            return Err(Error::general(format!(
                "cannot set the socket's timeouts: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(l)
}

/// File descriptors kept for the rest of axe (agent files, providers,
/// tools, logs) when the connections are counted.
const RESERVED_FDS: u64 = 64;

/// The most connections held at once beyond which tiny_http answers 503
/// (vendor/tiny_http/AXE.md).
const MOST_CONNECTIONS: u64 = 1024;

/// The soft limit on open files raised to the hard one, as a server that
/// holds a connection per client needs: many systems start at 1,024. The
/// processes its runs start get the old one back (`sandbox::inherit`).
fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a struct on this stack.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            let started = limit.rlim_cur;
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                crate::sandbox::inherit::raised_fd_limit(started);
            }
        }
    }
}

/// How many connections a server holds at once: each takes two file
/// descriptors (tiny_http reads and writes through two), from those left
/// once [`RESERVED_FDS`] are kept; at least 8, at most [`MOST_CONNECTIONS`].
/// Beyond it a client is answered 503 rather than `accept` failing for
/// lack of descriptors (design §12.4).
pub(crate) fn most_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct on this stack.
    let open = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur,
        _ => MOST_CONNECTIONS * 2,
    };
    let most = (open.saturating_sub(RESERVED_FDS) / 2).clamp(8, MOST_CONNECTIONS);
    usize::try_from(most).unwrap_or(8)
}
