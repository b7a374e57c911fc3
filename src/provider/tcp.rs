//! A provider's plain TCP connection, in fewer system calls than ureq's
//! (design §3.15, sixth round).
//!
//! ureq's `TcpTransport` connects with std's `connect_timeout` (the socket
//! made non-blocking, a `poll`, made blocking again: two `ioctl` and a
//! `poll` around the `connect`), sets the write timeout before every write,
//! and checks a connection it takes from or gives back to its pool by a
//! read made non-blocking and back (two `ioctl` around it). Here: the
//! connect is a blocking one bounded by the socket's send timeout (Linux
//! applies `SO_SNDTIMEO` to `connect`, which then fails with
//! `EINPROGRESS`); a write is first tried without waiting (`MSG_DONTWAIT`),
//! which sends a sub-agent's request whole, and only a write that would
//! wait sets the timeout and waits; the check is one `recv` with
//! `MSG_DONTWAIT`. A deadline holds as it did: nothing here waits without
//! the timeout ureq gives, and reads set it as ureq does. Its buffers are
//! `buffers.rs`'s, which touch fewer pages than ureq's.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ureq::Timeout;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, NextTimeout, ShutdownHandle, Transport,
};

use super::buffers::Grown;
use super::client::Pooled;

/// A connected socket and ureq's buffers for it.
pub(super) struct Tcp {
    /// Shared (weakly) with ureq's shutdown of the agent, as ureq's own is.
    stream: Arc<TcpStream>,
    buffers: Grown,
    /// The socket's send and receive timeouts as last set, so that an
    /// unchanged one is not set again.
    write_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    /// In the pool, counted in `count`.
    pooled: bool,
    /// The most idle connections kept (the agent's setting).
    keep: usize,
    /// The agent's idle connections of axe's own in its pool: one count per
    /// agent, as each keeps its own number (`max_idle_connections`; the
    /// providers' 64, the exporter's ureq's 10). ureq asks a connection it is
    /// given back whether it is open before it takes its pool's lock, and then
    /// purges the pool under that lock (comparing every idle connection with
    /// every other, design §3.15) and closes what is past its limit: when 256
    /// answers come back together, 192 of them only to be closed. A connection
    /// given back while its pool holds as many as it keeps says it is closed
    /// instead, and is closed by its own thread outside the lock.
    count: Pooled,
}

impl std::fmt::Debug for Tcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tcp")
            .field("addr", &self.stream.peer_addr().ok())
            .finish()
    }
}

/// Connects to the first of `details.addrs` that answers, each given a
/// share of the connect's time as ureq gives it (half to the first, a
/// quarter to the next, and so on, at least 10 ms), and registers the
/// socket for the agent's shutdown.
pub(crate) fn connect(details: &ConnectionDetails, count: &Pooled) -> Result<Tcp, ureq::Error> {
    let started = std::time::Instant::now();
    let total = details.timeout.not_zero().map(|t| *t);
    let n = i32::try_from(details.addrs.len()).unwrap_or(i32::MAX);
    let all_weights = 2.0 * (1.0 - 0.5_f64.powi(n));
    let mut weight = 1.0_f64;
    let mut last = None;
    for addr in details.addrs.iter() {
        let share = total.map(|t| {
            t.mul_f64(weight / all_weights)
                .max(Duration::from_millis(10))
        });
        match connect_one(*addr, share) {
            Ok(stream) => return connected(stream, share, details, count),
            Err(e) if tries_next(&e) => last = Some(ureq::Error::Io(e)),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                if started.elapsed() > *details.timeout.after {
                    return Err(ureq::Error::Timeout(details.timeout.reason));
                }
                last = Some(ureq::Error::Timeout(Timeout::Connect));
            }
            Err(e) => return Err(e.into()),
        }
        weight /= 2.0;
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::ConnectionRefused).into()))
}

/// An error that concerns only the address tried (ureq's list): the next
/// one may answer.
fn tries_next(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::NetworkDown
            | io::ErrorKind::AddrNotAvailable
    )
}

/// A connection made elsewhere (the telemetry's early one,
/// `trace/telemetry/conn.rs`), connected and blocking, made a transport
/// as [`connect`] makes its own.
pub(crate) fn adopt(
    stream: TcpStream,
    details: &ConnectionDetails,
    count: &Pooled,
) -> Result<Box<dyn Transport>, ureq::Error> {
    Ok(Box::new(connected(stream, None, details, count)?))
}

/// `stream`, its send timeout set to `share` by [`connect_one`], made a
/// transport.
fn connected(
    stream: TcpStream,
    share: Option<Duration>,
    details: &ConnectionDetails,
    count: &Pooled,
) -> Result<Tcp, ureq::Error> {
    let config = details.config;
    if config.no_delay() {
        stream.set_nodelay(true)?;
    }
    let stream = Arc::new(stream);
    let handle: Arc<dyn ShutdownHandle> = stream.clone();
    (details.register_shutdown)(Arc::downgrade(&handle))?;
    Ok(Tcp {
        stream,
        buffers: Grown::new(config.input_buffer_size(), config.output_buffer_size()),
        write_timeout: share.map(at_least_a_microsecond),
        read_timeout: None,
        pooled: false,
        keep: config.max_idle_connections(),
        count: Arc::clone(count),
    })
}

/// A blocking connect to `addr`, bounded by `within` through the socket's
/// send timeout; `TimedOut` when that passed.
fn connect_one(addr: SocketAddr, within: Option<Duration>) -> io::Result<TcpStream> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: socket() has no memory argument; a descriptor it returns is
    // owned by the TcpStream at once, which closes it on every path.
    let stream = unsafe {
        let fd = libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        TcpStream::from_raw_fd(fd)
    };
    if let Some(within) = within {
        stream.set_write_timeout(Some(at_least_a_microsecond(within)))?;
    }
    let (raw, len) = socket_addr(&addr);
    let deadline = within.map(|w| std::time::Instant::now() + w);
    // SAFETY: `raw` is a sockaddr_storage holding `len` bytes of `addr`.
    let done = unsafe { libc::connect(stream.as_raw_fd(), std::ptr::from_ref(&raw).cast(), len) };
    if done == 0 {
        return Ok(stream);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // The send timeout passed while connecting.
        Some(libc::EINPROGRESS) => Err(io::ErrorKind::TimedOut.into()),
        // A signal: the connect goes on, and is waited for with what is left.
        Some(libc::EINTR) => finish_interrupted(stream, deadline),
        _ => Err(e),
    }
}

/// Waits for a connect a signal interrupted, until `deadline` (the one the
/// connect was given: what the interrupted wait spent counts, and so does
/// each wait a further signal cuts short).
#[inline(never)]
fn finish_interrupted(
    stream: TcpStream,
    deadline: Option<std::time::Instant>,
) -> io::Result<TcpStream> {
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    loop {
        let ms = match deadline {
            None => -1,
            Some(at) => {
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX)
            }
        };
        // SAFETY: one pollfd, owned by this frame.
        let n = unsafe { libc::poll(&mut fd, 1, ms) };
        if n > 0 {
            break;
        }
        if n == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    match stream.take_error()? {
        Some(e) => Err(e),
        None => Ok(stream),
    }
}

/// A timeout the socket can hold: std refuses a zero one, which the
/// kernel would read as none.
fn at_least_a_microsecond(d: Duration) -> Duration {
    d.max(Duration::from_micros(1))
}

/// `addr` as the C sockaddr connect() takes (the telemetry's early
/// connection's too, `trace/telemetry/conn.rs`).
pub(crate) fn socket_addr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage, and of the two
    // structures written into it each fits (sockaddr_storage holds any).
    unsafe {
        let mut raw: libc::sockaddr_storage = std::mem::zeroed();
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                std::ptr::write(std::ptr::from_mut(&mut raw).cast(), sin);
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                std::ptr::write(std::ptr::from_mut(&mut raw).cast(), sin6);
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (raw, libc::socklen_t::try_from(len).unwrap_or(0))
    }
}

/// ureq's error for an I/O error, a timeout as `reason`.
fn failed(e: io::Error, reason: Timeout) -> ureq::Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ureq::Error::Timeout(reason),
        _ => e.into(),
    }
}

/// The timeout ureq gives, checked as ureq checks it: none left fails.
fn bound(timeout: NextTimeout) -> Result<(Option<Duration>, Timeout), ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok((timeout.not_zero().map(|t| *t), timeout.reason))
}

/// Sends on `stream` without waiting: how much went (0 when the socket's
/// buffer is full).
fn send_now(stream: &TcpStream, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: `bytes` is valid for its length; the descriptor is ours.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => match io::Error::last_os_error() {
            e if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
            {
                Ok(0)
            }
            e => Err(e),
        },
    }
}

impl Transport for Tcp {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let (within, reason) = bound(timeout.for_write())?;
        let sent = send_now(&self.stream, &self.buffers.output()[..amount])?;
        if sent == amount {
            return Ok(());
        }
        // The rest would wait: with the timeout, as ureq's own would.
        if self.write_timeout != within {
            self.stream.set_write_timeout(within)?;
            self.write_timeout = within;
        }
        let rest = &self.buffers.output()[sent..amount];
        (&*self.stream)
            .write_all(rest)
            .map_err(|e| failed(e, reason))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let (within, reason) = bound(timeout.for_read())?;
        if self.read_timeout != within {
            self.stream.set_read_timeout(within)?;
            self.read_timeout = within;
        }
        let started = std::time::Instant::now();
        let mut stream = &*self.stream;
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match stream.read(input) {
                // Linux does not restart a read with a timeout after a
                // signal: read on with what is left, as ureq does.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    let Some(within) = within else {
                        return Err(e.into());
                    };
                    let left = within.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(ureq::Error::Timeout(reason));
                    }
                    stream.set_read_timeout(Some(left))?;
                    self.read_timeout = Some(left);
                }
                other => break other.map_err(|e| failed(e, reason))?,
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        if std::mem::take(&mut self.pooled) {
            // Taken from the pool.
            self.count.fetch_sub(1, Ordering::Relaxed);
        } else if self.count.fetch_add(1, Ordering::Relaxed) < self.keep {
            // Given back, and room for it.
            self.pooled = true;
        } else {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let open = probe(&self.stream);
        if !open && std::mem::take(&mut self.pooled) {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        open
    }
}

impl Drop for Tcp {
    fn drop(&mut self) {
        if self.pooled {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Whether `stream` is open and idle: nothing to read, no end, no error.
pub(crate) fn probe(stream: &TcpStream) -> bool {
    let mut byte = 0u8;
    // SAFETY: one byte of this frame's; the descriptor is ours.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            std::ptr::from_mut(&mut byte).cast(),
            1,
            libc::MSG_DONTWAIT,
        )
    };
    // Bytes nobody asked for, an end or an error are not idle.
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}
