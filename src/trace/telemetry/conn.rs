//! The exporter's connection to a collector at an IP address or `localhost`
//! over plain `http` (design §7.9): a run's is opened as the run starts, without
//! waiting for it, so that its handshake (and the collector's accepting it)
//! overlaps the run rather than following the answer. ureq still speaks the
//! HTTP: this is its connector and resolver for that one address, the
//! connection made a transport as the providers' are (`provider/tcp.rs`,
//! under their [`OneWrite`]: a request's head and body in one write, not two
//! segments the collector wakes for twice).
//! `localhost` is taken as 127.0.0.1 for the early connection (RFC 6761
//! makes the name the loopback's); when that one cannot be used, the post
//! connects as ureq does, the name looked up (a collector on `::1` alone).
//! The exporter's HTTP client ([`Client`]) is here too: its agent makes the
//! posts, on this connection when there is one.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectionDetails, Connector, NextTimeout, Transport};

// The early connection made a transport as the providers' connector makes
// its own (`provider/tcp.rs`).
#[cfg(target_os = "linux")]
use crate::provider::adopt_tcp as adopt;
use crate::provider::{OneWrite, Pooled, open_tcp};

/// The exporter's HTTP client: its own, so that an export never holds a
/// provider's connections. To a collector at an IP address over plain
/// `http` (no proxy), it connects through [`Direct`]: the connection
/// a run opens early, and a request in one write; otherwise as the providers'
/// clients do (an IP literal resolved in place, not on a thread of its own
/// per connection). The agent is made when a post needs it: a single run
/// that posts by hand (`oneshot.rs`) never does.
pub struct Client {
    pub direct: Option<Arc<Direct>>,
    agent: OnceLock<ureq::Agent>,
}

impl Client {
    pub fn new(url: &str) -> Client {
        // What ureq's configuration reads the proxy from, read alone.
        let direct = ureq::Proxy::try_from_env()
            .is_none()
            .then(|| Direct::for_url(url))
            .flatten();
        Client {
            direct,
            agent: OnceLock::new(),
        }
    }

    pub fn agent(&self) -> &ureq::Agent {
        self.agent.get_or_init(|| {
            let config = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
                // ureq's 128 KiB each way, zeroed per connection, for a
                // collector's answer of a few bytes: small buffers (as the
                // providers' client has, design §3.15). The input buffer
                // holds the answer's head, the output one a header line
                // whole (a long token); a body is written in pieces.
                .input_buffer_size(8 * 1024)
                .output_buffer_size(8 * 1024)
                .build();
            match (&self.direct, config.proxy()) {
                (Some(d), None) => {
                    ureq::Agent::with_parts(config, Connect(d.clone()), Resolve(d.addr()))
                }
                _ => crate::provider::http_agent(config),
            }
        })
    }
}

/// An early connection older than this is not used: a collector or a
/// firewall may have dropped it without a word (a run that long does not
/// notice a connect at its end).
const FRESH: Duration = Duration::from_secs(30);

/// Where the exporter posts, when it is `http://` to an IP address or
/// `localhost`: the agent's connector and resolver, and the connection
/// opened early.
pub struct Direct {
    addr: SocketAddr,
    /// The URL named `localhost`: `addr` is its IPv4 loopback, and a post
    /// without the early connection looks the name up.
    named: bool,
    /// The request line and `host` of a post written by hand
    /// (`oneshot.rs`); `None` for a URL with a user's name or password,
    /// which only ureq's post sends as it should.
    start: Option<String>,
    early: Mutex<Option<(TcpStream, Instant)>>,
    /// The exporter agent's idle connections (the providers' connector's
    /// count, `provider/client.rs`).
    pooled: Pooled,
}

impl Direct {
    /// For `url` when it is plain `http` to an IP address (`[::1]` too) or
    /// to `localhost` (any case); `None` for another host name or `https`,
    /// which ureq's own connector serves.
    pub fn for_url(url: &str) -> Option<Arc<Direct>> {
        let uri: ureq::http::Uri = url.parse().ok()?;
        if uri.scheme_str() != Some("http") {
            return None;
        }
        let host = uri.host()?;
        let named = host.eq_ignore_ascii_case("localhost");
        let ip: std::net::IpAddr = if named {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .ok()?
        };
        let addr = SocketAddr::new(ip, uri.port_u16().unwrap_or(80));
        let start = uri
            .authority()
            .filter(|a| !a.as_str().contains('@'))
            .map(|a| {
                let target = uri.path_and_query().map_or("/", |p| p.as_str());
                format!("POST {target} HTTP/1.1\r\nhost: {a}\r\n")
            });
        Some(Arc::new(Direct {
            addr,
            named,
            start,
            early: Mutex::new(None),
            pooled: Pooled::default(),
        }))
    }

    /// The request line and `host` of a post written by hand, when one may
    /// be.
    pub fn start(&self) -> Option<&str> {
        self.start.as_deref()
    }

    /// The collector's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts connecting, not waiting for it: the first post takes the
    /// connection (see [`Direct::take_early`]). A connect that cannot even
    /// start is left to the post, which says why.
    pub fn open_early(&self) {
        if let Some(stream) = connect_started(self.addr) {
            // ureq's default, set now rather than at the exit.
            let _ = stream.set_nodelay(true);
            *self.early.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((stream, Instant::now()));
        }
    }

    /// The early connection, for a post written on it by hand now
    /// (`oneshot.rs`): fresh, and neither refused nor closed by the
    /// collector as far as one peek sees (it may still be connecting: the
    /// write then waits for the exit). `None` leaves the post to ureq at
    /// exit, on a connection of its own.
    pub fn take_open(&self) -> Option<TcpStream> {
        let (stream, at) = self
            .early
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        (at.elapsed() < FRESH && still_open(&stream)).then_some(stream)
    }

    /// The early connection once it is made (waiting for it at most
    /// `timeout`), when it is fresh and still open; `None` sends the post
    /// to a connection of its own, as without one (a collector that refused
    /// it then refuses that too, and the post says so). A connect still
    /// under way when the time is up is the post's timeout.
    fn take_early(&self, timeout: NextTimeout) -> Result<Option<TcpStream>, ureq::Error> {
        let taken = self
            .early
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some((stream, _)) = taken.filter(|(_, at)| at.elapsed() < FRESH) else {
            return Ok(None);
        };
        if !wait(&stream, Wait::Write, timeout.not_zero().map(|t| *t))? {
            return Err(ureq::Error::Timeout(timeout.reason));
        }
        if stream.take_error()?.is_some() || !still_open(&stream) {
            return Ok(None);
        }
        stream.set_nonblocking(false)?;
        Ok(Some(stream))
    }
}

/// The agent's connector: the early connection when there is one, else a
/// new one to the address (to `localhost`: ureq's own, the name looked up).
#[derive(Debug)]
pub struct Connect(pub Arc<Direct>);

impl Connector for Connect {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        _: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if details.timeout.after.is_zero() {
            return Err(ureq::Error::Timeout(details.timeout.reason));
        }
        let connection = match self.0.take_early(details.timeout)? {
            Some(stream) => Some(adopt(stream, details, &self.0.pooled)?),
            None => fresh(details, &self.0)?,
        };
        Ok(connection.map(|c| Box::new(OneWrite::new(c)) as Box<dyn Transport>))
    }
}

/// Elsewhere there is no early connection (`connect_started`).
#[cfg(not(target_os = "linux"))]
fn adopt(
    _: TcpStream,
    _: &ConnectionDetails,
    _: &Pooled,
) -> Result<Box<dyn Transport>, ureq::Error> {
    Err(std::io::Error::from(ErrorKind::Unsupported).into())
}

/// A connection of its own, as the providers' client makes one
/// (`provider::open_tcp`), to the one address, or for `localhost` to the
/// addresses ureq's resolver looks the name up as (`::1` may be first, or
/// the only one), each tried in turn.
#[inline(never)]
fn fresh(
    details: &ConnectionDetails,
    direct: &Direct,
) -> Result<Option<Box<dyn Transport>>, ureq::Error> {
    if !direct.named {
        return open_tcp(details, &direct.pooled);
    }
    let addrs = DefaultResolver::default().resolve(details.uri, details.config, details.timeout)?;
    let looked_up = ConnectionDetails {
        addrs,
        current_time: details.current_time.clone(),
        run_connector: details.run_connector.clone(),
        register_shutdown: details.register_shutdown.clone(),
        ..*details
    };
    open_tcp(&looked_up, &direct.pooled)
}

/// The agent's resolver: the one address, no lookup (for `localhost`, the
/// connector looks the name up when it needs to).
#[derive(Debug)]
pub struct Resolve(pub SocketAddr);

impl Resolver for Resolve {
    fn resolve(
        &self,
        _: &ureq::http::Uri,
        _: &ureq::config::Config,
        _: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut found = self.empty();
        found.push(self.0);
        Ok(found)
    }
}

// Debug, which ureq requires, by name only: a derived one pulls in the
// socket's and the clock's own (about 2 KB of the binary).
impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Direct")
    }
}

/// Nothing to read and no end: the collector has not closed the idle
/// connection. One `recv` that does not wait, the providers' pool check
/// (`provider/tcp.rs`).
#[cfg(target_os = "linux")]
fn still_open(stream: &TcpStream) -> bool {
    crate::provider::tcp_is_idle(stream)
}

#[cfg(not(target_os = "linux"))]
fn still_open(mut stream: &TcpStream) -> bool {
    use std::io::Read;
    let open = stream.set_nonblocking(true).is_ok()
        && matches!(stream.read(&mut [0u8]), Err(e) if e.kind() == ErrorKind::WouldBlock);
    stream.set_nonblocking(false).is_ok() && open
}

/// A TCP connect to `addr` started and not waited for: a non-blocking
/// socket, closed on exec (a tool's command never inherits it).
#[cfg(target_os = "linux")]
fn connect_started(addr: SocketAddr) -> Option<TcpStream> {
    use std::os::fd::FromRawFd;
    let (storage, len) = crate::provider::socket_addr(&addr);
    let family = libc::c_int::from(storage.ss_family);
    // SAFETY: socket takes no pointers; a negative result is checked.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a socket just opened and owned by nothing else; the
    // stream closes it.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    // SAFETY: `storage` holds a sockaddr of `len` bytes for the family the
    // socket was opened with, and outlives the call.
    let r = unsafe { libc::connect(fd, (&raw const storage).cast(), len) };
    let started =
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINPROGRESS);
    started.then_some(stream)
}

#[cfg(not(target_os = "linux"))]
fn connect_started(_: SocketAddr) -> Option<TcpStream> {
    None
}

/// What [`wait`] waits for.
#[derive(Clone, Copy)]
pub enum Wait {
    Read,
    /// A connect done (one way or the other), or room to write.
    Write,
}

/// Waits until `stream` is ready for `what`, or has failed: `false` when
/// `timeout` passed first.
#[cfg(unix)]
pub fn wait(stream: &TcpStream, what: Wait, timeout: Option<Duration>) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let until = timeout.map(|t| Instant::now() + t);
    loop {
        let ms = match until {
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                // Rounded up, so that a wait of less than 1 ms is not none.
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            }
            None => -1,
        };
        let mut p = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: match what {
                Wait::Read => libc::POLLIN,
                Wait::Write => libc::POLLOUT,
            },
            revents: 0,
        };
        // SAFETY: `p` is one valid pollfd, as the count says.
        match unsafe { libc::poll(&mut p, 1, ms) } {
            n if n > 0 => return Ok(true),
            0 => return Ok(false),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(not(unix))]
pub fn wait(_: &TcpStream, _: Wait, _: Option<Duration>) -> std::io::Result<bool> {
    Ok(true)
}
