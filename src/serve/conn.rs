//! A request's connection, below tiny_http (design §12.3): its socket
//! found by the two addresses tiny_http gives (the peer's and the
//! listener's), so that axe serve can notice the client hang up while the
//! run goes on, stop reading a body it refused, and answer without waiting
//! on a client that reads nothing. One thread, the watcher, looks at every
//! watched socket's TCP state and sets the cancel flag of a run whose
//! client hung up; a socket is watched while its guard lives.

use std::io::Cursor;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use crate::deadline::Cancel;

/// How often the watcher looks: a client's hang-up cancels its run at
/// most this late.
pub const WATCH_EVERY: Duration = Duration::from_millis(100);

/// The sockets being watched, each with its id and its run's flag.
type Watched = Vec<(u64, OwnedFd, Cancel)>;

static WATCHED: Mutex<Watched> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
static WATCHER: OnceLock<()> = OnceLock::new();

/// Keeps a socket watched; dropped, it is not, and its descriptor (a
/// duplicate) is closed.
pub struct Watch(u64);

impl Drop for Watch {
    fn drop(&mut self) {
        WATCHED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _, _)| *id != self.0);
    }
}

/// Descriptor numbers a client's socket was found at before, ascending, at
/// most [`MAX_SEEN`]. A socket tiny_http accepts takes the lowest free
/// number, most often one a closed connection left, so a new request's
/// socket is usually at one of these: a getpeername each finds it, where
/// listing `/proc/self/fd` and asking every descriptor in it was a fifth
/// of a served request's CPU (design §12.3).
static SEEN: Mutex<Vec<RawFd>> = Mutex::new(Vec::new());
const MAX_SEEN: usize = 1024;

/// A duplicate of the descriptor of the TCP connection from `peer` to
/// local port `port`, found among this process's; none when it is not
/// there (the client already left).
pub fn socket(port: u16, peer: SocketAddr) -> Option<OwnedFd> {
    let seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(found) = seen.iter().find_map(|&fd| claim(fd, port, peer)) {
        return Some(found);
    }
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    for entry in dir.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<RawFd>().ok())
        else {
            continue;
        };
        if seen.binary_search(&fd).is_ok() {
            continue;
        }
        if let Some(found) = claim(fd, port, peer) {
            let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(at) = seen.binary_search(&fd)
                && seen.len() < MAX_SEEN
            {
                seen.insert(at, fd);
            }
            return Some(found);
        }
    }
    None
}

/// A duplicate of `fd` when it is the connection from `peer` to local
/// port `port`.
fn claim(fd: RawFd, port: u16, peer: SocketAddr) -> Option<OwnedFd> {
    if addr(fd, libc::getpeername) != Some(peer) {
        return None;
    }
    // SAFETY: duplicating a descriptor number; the copy is checked again
    // below, in case the number was reused meanwhile.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return None;
    }
    // SAFETY: `dup` is a new descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(dup) };
    let ours = addr(dup, libc::getpeername) == Some(peer)
        && addr(dup, libc::getsockname).is_some_and(|a| a.port() == port);
    ours.then_some(owned)
}

/// The most body bytes tiny_http reads with a request's head; a longer
/// body is left on the socket, to be read, or drained to its end when the
/// request is dropped, on the thread that drops it.
const READ_WITH_HEAD: usize = 1024;

/// For `rq`, about to be answered without its body being read: when a body
/// is left on its socket, stops reading it (the answer's drop would read it
/// to its end, however slowly it came, on the thread answering) and returns
/// the header that closes the connection.
pub fn leave_body(rq: &tiny_http::Request, port: u16) -> Option<(&'static str, String)> {
    if rq.body_length().is_none_or(|n| n <= READ_WITH_HEAD) {
        return None;
    }
    if let Some(sock) = rq.remote_addr().copied().and_then(|p| socket(port, p)) {
        stop_reading(&sock);
    }
    Some(("connection", "close".into()))
}

/// Answers `rq` with `resp`, its body left unread, without ever waiting
/// on the client (design §12.1): for the threads every client shares. The
/// answer, as tiny_http would write it, goes in one non-blocking send; a
/// socket that cannot take it whole is a client that reads nothing, and
/// its connection is shut both ways. tiny_http's own write waited up to
/// the idle limit on a full socket, and every other client with it. A
/// body left on the socket is not read ([`leave_body`]). Where the socket
/// is not found (the client left), tiny_http writes the answer.
pub fn answer_now(rq: tiny_http::Request, resp: tiny_http::Response<Cursor<Vec<u8>>>, port: u16) {
    let sock = rq.remote_addr().copied().and_then(|p| socket(port, p));
    let mut resp = resp;
    if rq.body_length().is_some_and(|n| n > READ_WITH_HEAD) {
        if let Some(s) = &sock {
            stop_reading(s);
        }
        let closes = resp.headers().iter().any(|h| h.field.equiv("connection"));
        if let (false, Ok(h)) = (closes, tiny_http::Header::from_bytes("connection", "close")) {
            resp.add_header(h);
        }
    }
    let Some(sock) = sock else {
        let _ = rq.respond(resp);
        return;
    };
    let mut bytes = Vec::new();
    let head_only = *rq.method() == tiny_http::Method::Head;
    let version = rq.http_version().clone();
    let printed = resp.raw_print(&mut bytes, version, rq.headers(), head_only, None);
    if printed.is_err() || !send_now(&sock, &bytes) {
        // SAFETY: shutdown on a descriptor we own.
        unsafe {
            libc::shutdown(sock.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
    // Answered: tiny_http writes nothing more for it, and the connection's
    // next answer may follow.
    drop(rq.into_writer());
}

/// Whether `bytes` went whole onto `sock` in one send that does not wait.
fn send_now(sock: &OwnedFd, bytes: &[u8]) -> bool {
    // SAFETY: a send from our own buffer, of its length, on a descriptor
    // we own.
    let sent = unsafe {
        libc::send(
            sock.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(sent).ok() == Some(bytes.len())
}

/// Stops reading from `sock`: reads see the end at once (a refused body
/// is then not read to its end by tiny_http).
pub fn stop_reading(sock: &OwnedFd) {
    // SAFETY: shutdown on a descriptor we own.
    unsafe {
        libc::shutdown(sock.as_raw_fd(), libc::SHUT_RD);
    }
}

/// Watches `sock` until the guard is dropped: when the client hangs up,
/// `cancel` is set.
pub fn watch(sock: OwnedFd, cancel: Cancel) -> Watch {
    WATCHER.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("axe-hangups".into())
            .spawn(watcher);
    });
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    WATCHED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((id, sock, cancel));
    Watch(id)
}

/// The watcher's loop: every [`WATCH_EVERY`], each socket's TCP state;
/// one no longer established (the client sent its FIN, or reset) has its
/// run cancelled. (Polling for a hang-up would not do: tiny_http shuts
/// down its own reading side after a `connection: close` request, which
/// looks the same to poll.)
fn watcher() {
    loop {
        std::thread::sleep(WATCH_EVERY);
        let mut w = WATCHED.lock().unwrap_or_else(PoisonError::into_inner);
        w.retain(|(_, fd, cancel)| {
            if established(fd.as_raw_fd()) {
                return true;
            }
            cancel.cancel();
            false
        });
    }
}

/// Whether the TCP connection of `fd` is still established both ways
/// (`tcpi_state`, the first byte of `struct tcp_info`, is
/// `TCP_ESTABLISHED`).
fn established(fd: RawFd) -> bool {
    const TCP_ESTABLISHED: u8 = 1;
    let mut info = [0u8; 8];
    let mut len = libc::socklen_t::try_from(info.len()).unwrap_or(8);
    // SAFETY: the kernel writes at most `len` bytes into `info`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    r != 0 || info[0] == TCP_ESTABLISHED
}

/// The address `get` (getpeername or getsockname) gives for `fd`.
fn addr(
    fd: RawFd,
    get: unsafe extern "C" fn(
        libc::c_int,
        *mut libc::sockaddr,
        *mut libc::socklen_t,
    ) -> libc::c_int,
) -> Option<SocketAddr> {
    // SAFETY: a zeroed sockaddr_storage is a valid buffer for any address.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_storage>()).ok()?;
    // SAFETY: the buffer and its length are ours; a descriptor that is not
    // a socket fails with ENOTSOCK.
    let r = unsafe { get(fd, (&raw mut storage).cast(), &mut len) };
    if r != 0 {
        return None;
    }
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in = unsafe { std::ptr::read((&raw const storage).cast()) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 = unsafe { std::ptr::read((&raw const storage).cast()) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(a.sin6_port))))
        }
        _ => None,
    }
}
