//! The HTTP clients every provider call goes through: one per wire format,
//! kept for the whole process so keep-alive connections are reused across
//! turns and sub-agents, with buffers sized for a wide fan-out and IP
//! literal hosts resolved without a lookup thread.

use std::sync::OnceLock;
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::Wire;

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
            // fan-out. A provider's response head is one or two KiB (8 KiB
            // is also what nginx allows an upstream's head by default);
            // bodies are read in pieces and requests written in pieces, so
            // small buffers cost a few more system calls on a large body
            // only. Measured at N = 256 (design §3.15): 32 + 16 KiB -> 8 + 4
            // KiB took peak RSS from 31 to 22 MiB and CPU per sub-agent
            // down by about 30 us.
            .input_buffer_size(8 * 1024)
            .max_response_header_size(8 * 1024)
            .output_buffer_size(4 * 1024)
            .build();
        ureq::Agent::with_parts(config, DefaultConnector::default(), LiteralFirst::default())
    })
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
