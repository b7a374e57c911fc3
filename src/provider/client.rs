//! The HTTP clients every provider call goes through: one per wire format,
//! kept for the whole process so keep-alive connections are reused across
//! turns and sub-agents, with buffers sized for a wide fan-out, IP literal
//! hosts resolved without a lookup thread, and a connector of its own that
//! keeps a waiting thread's stack small.

use std::sync::OnceLock;
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectionDetails, Connector, DefaultConnector, NextTimeout};
use ureq::unversioned::transport::{RustlsConnector, Transport};

use super::Wire;
use super::one_write::OneWrite;

/// The longest response head axe reads: a provider's is one or two KiB,
/// a CDN's cookies and tracing headers can double that.
const HEAD_LIMIT: usize = 8 * 1024;

/// One HTTP client per wire format, shared by every call in the process so
/// that keep-alive connections are reused across turns and sub-agents.
pub(super) fn client(wire: Wire) -> &'static ureq::Agent {
    static CLIENTS: [OnceLock<ureq::Agent>; Wire::COUNT] = [const { OnceLock::new() }; Wire::COUNT];
    CLIENTS[wire as usize].get_or_init(|| {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
            // ureq keeps 10 idle connections overall by default, whatever
            // the per-host limit: a fan-out's connections would be closed.
            .max_idle_connections(64)
            .max_idle_connections_per_host(64)
            .max_idle_age(Duration::from_secs(30))
            // ureq's defaults are 128 KiB each way per connection, zeroed
            // when the connection opens: 64 MiB written for a 256-way
            // fan-out. A provider's response head is one or two KiB (nginx
            // passes on an upstream's of 4 or 8 KiB by default, a page);
            // bodies are read in pieces and requests written in pieces, so
            // small buffers cost a few more system calls on a large body
            // only. Measured at N = 256 (design §3.15): 32 + 16 KiB -> 8 + 4
            // KiB took peak RSS from 31 to 22 MiB and CPU per sub-agent
            // down by about 30 us.
            //
            // The input buffer holds the whole head, so its size is the
            // head's real bound; one byte over the limit makes a longer head
            // fail as too big rather than as the server hanging up (which
            // would be retried). 8 KiB, not less: 5 KiB measured 0.6 MiB
            // less at N = 256 with every request held, but only 0.1 MiB on
            // the bench's peak, not worth failing a provider whose CDN sends
            // a long head (and not 4: sending a body, ureq grows the input
            // buffer to 10 KiB less its size, so 4 KiB becomes 6).
            // The output buffer holds a request header line whole (a long
            // bearer token), so it stays 4 KiB.
            .input_buffer_size(HEAD_LIMIT + 1)
            .max_response_header_size(HEAD_LIMIT)
            .output_buffer_size(4 * 1024)
            .build();
        with_parts(config)
    })
}

/// An agent with `config` that connects as the providers' clients do: an
/// IP literal host resolved in place (no lookup thread per connection), and
/// the small-framed connector. The OpenTelemetry exporter's (design §7.9).
pub(crate) fn with_parts(config: ureq::config::Config) -> ureq::Agent {
    ureq::Agent::with_parts(config, Direct::default(), LiteralFirst::default())
}

/// TCP, then TLS for `https`, each step a call of its own, and a request's
/// head sent with its body (`one_write.rs`). ureq's default
/// connector is a chain of generic connectors (proxies, TCP, TLS) inlined
/// into one 11 KiB stack frame, whose pages every sub-agent's thread keeps
/// touched while it waits on its answer: 2.7 MiB at a 256-way fan-out
/// (design §3.15). Through a proxy (ureq takes one from `HTTPS_PROXY` and
/// the like) the connection is ureq's chain's, as before.
#[derive(Debug, Default)]
struct Direct {
    chain: DefaultConnector,
    tls: RustlsConnector,
    /// Its pool's idle connections of axe's own (`tcp.rs`).
    pooled: Pooled,
}

/// An agent's idle connections of axe's own, counted (`tcp.rs`; unused
/// where ureq makes the connections).
pub(crate) type Pooled = std::sync::Arc<std::sync::atomic::AtomicUsize>;

impl Connector for Direct {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if details.config.proxy().is_some() {
            return self.chain.connect(details, chained);
        }
        let Some(tcp) = open_tcp(details, &self.pooled)? else {
            return Ok(None);
        };
        let connection = if details.needs_tls() {
            wrap_tls(&self.tls, details, tcp)?
        } else {
            Some(tcp)
        };
        Ok(connection.map(|c| Box::new(OneWrite::new(c)) as Box<dyn Transport>))
    }
}

/// The TCP connection, boxed: out of line, so that its frame is gone once
/// connected. On Linux axe's own (`tcp.rs`: fewer system calls a
/// connection), elsewhere ureq's. The OpenTelemetry exporter's connections
/// are made here too (`trace/telemetry/conn.rs`).
#[inline(never)]
pub(crate) fn open_tcp(
    details: &ConnectionDetails,
    pooled: &Pooled,
) -> Result<Option<Box<dyn Transport>>, ureq::Error> {
    #[cfg(target_os = "linux")]
    {
        Ok(Some(Box::new(super::tcp::connect(details, pooled)?)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pooled;
        let tcp = ureq::unversioned::transport::TcpConnector::default();
        Ok(Connector::<()>::connect(&tcp, details, None)?
            .map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// The TLS handshake over `tcp` (rustls, as ureq's chain does it), out of
/// line so that a plain `http` connection never touches its frame.
///
/// Every provider request carries a request-level config (its deadline), and
/// for one of those ureq's TLS connector builds a rustls config afresh,
/// root store and all, for each connection, which keeps it as long as the
/// connection lives. axe sets nothing about TLS per request, so the agent's
/// config is the one to use: given as agent-level, it is built once and
/// shared by every connection.
#[inline(never)]
fn wrap_tls(
    tls: &RustlsConnector,
    details: &ConnectionDetails,
    tcp: Box<dyn Transport>,
) -> Result<Option<Box<dyn Transport>>, ureq::Error> {
    let shared = ConnectionDetails {
        request_level: false,
        addrs: details.addrs.clone(),
        current_time: details.current_time.clone(),
        run_connector: details.run_connector.clone(),
        register_shutdown: details.register_shutdown.clone(),
        ..*details
    };
    Ok(tls
        .connect(&shared, Some(tcp))?
        .map(|t| Box::new(t) as Box<dyn Transport>))
}

/// ureq's resolver runs every lookup on a thread of its own when a request
/// has a deadline (so that a stuck DNS cannot outlive it): one thread per
/// new connection, even to `127.0.0.1`. A host that is an IP address needs
/// no lookup and is resolved in place; any other host goes through ureq's
/// resolver as before. (A 256-way fan-out to a local server otherwise
/// starts 512 threads, not 256.)
#[derive(Debug, Default)]
struct LiteralFirst(DefaultResolver);

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        match literal_address(uri) {
            Some(addr) => {
                let mut found = self.empty();
                found.push(addr);
                Ok(found)
            }
            None => self.0.resolve(uri, config, timeout),
        }
    }
}

/// The socket address of a URI whose host is an IP address (`[::1]` too).
fn literal_address(uri: &ureq::http::Uri) -> Option<std::net::SocketAddr> {
    let host = uri.host()?;
    let ip: std::net::IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    })?;
    Some(std::net::SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literal_hosts_resolve_in_place_and_names_do_not() {
        let addr = |u: &str| literal_address(&u.parse().unwrap());
        assert_eq!(
            addr("http://127.0.0.1:8080/v1/messages"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            addr("http://[::1]/api/chat"),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            addr("https://10.0.0.2/x"),
            Some("10.0.0.2:443".parse().unwrap())
        );
        assert_eq!(addr("https://api.openai.com/v1/chat/completions"), None);
        assert_eq!(addr("http://localhost:11434/api/chat"), None);
    }
}
