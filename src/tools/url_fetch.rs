//! `url_fetch`: a GET over http(s). Where it may go is decided at connect
//! time, not by the URL's text: every address a host resolves to is
//! checked, on the first request and on every redirect (at most 5), and
//! loopback, private, link-local (169.254.169.254), CGNAT, unique-local and
//! other non-public addresses are refused unless the agent opts in
//! (`private_networks`), so neither a redirect nor a DNS answer that
//! changes between check and use (rebinding) reaches the machine's
//! neighbours: ureq connects to the very addresses this resolver returns.
//! `allowed_hosts` narrows the names (exact, or `*.suffix`). HTML comes
//! back as text; the content type is said; size and time are bounded.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::{Args, Done, Env, required, tool};
use crate::provider::Tool;

/// The most bytes of a body read.
const MAX_BODY: u64 = 5 * 1024 * 1024;

/// Redirects followed at most.
const MAX_REDIRECTS: u32 = 5;

/// The longest one fetch may take (the run's deadline may be sooner).
const MAX_TIME: Duration = Duration::from_secs(30);

pub fn define() -> Tool {
    tool(
        "url_fetch",
        "Fetch a URL (http or https, GET) and return its content as text; HTML is turned into plain text.",
        &[("url", "string", true, "The URL to fetch.")],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    match fetch(args, env) {
        Ok(done) | Err(done) => done,
    }
}

fn fetch(args: &Args, env: &Env) -> Result<Done, Done> {
    let url = required(args, "url")?.trim();
    if !has_web_scheme(url) {
        return Err(Done::error(format!(
            "{url}: only http and https URLs are fetched"
        )));
    }
    let left = env
        .deadline
        .saturating_duration_since(Instant::now())
        .min(MAX_TIME);
    if left.is_zero() {
        return Err(Done::error("the deadline has passed"));
    }
    let guard = Guard {
        inner: DefaultResolver::default(),
        allowed: env.allowed_hosts.to_vec(),
        private_networks: env.private_networks,
    };
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(MAX_REDIRECTS)
        .timeout_global(Some(left))
        .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
        // ureq takes a proxy from HTTP(S)_PROXY by default: the guard below
        // would then judge the proxy's address, and the proxy would go
        // wherever the URL says (169.254.169.254, a host outside
        // allowed_hosts). A fetch connects to the target itself.
        .proxy(None)
        .build();
    let agent = ureq::Agent::with_parts(config, DefaultConnector::default(), guard);
    let resp = agent
        .get(url)
        .call()
        .map_err(|e| Done::error(format!("{url}: {}", why(&e))))?;
    let status = resp.status().as_u16();
    let kind = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BODY + 1)
        .read_to_end(&mut body)
        .map_err(|e| Done::error(format!("{url}: reading the body: {e}")))?;
    let cut = body.len() as u64 > MAX_BODY;
    body.truncate(usize::try_from(MAX_BODY).unwrap_or(usize::MAX));
    let text = as_text(&body, &kind);
    let mut out = format!(
        "HTTP {status}, {}\n\n",
        if kind.is_empty() {
            "no content type"
        } else {
            &kind
        }
    );
    out.push_str(&text);
    if cut {
        out.push_str(&format!(
            "\n[the body goes on past {MAX_BODY} bytes; not read]"
        ));
    }
    let bytes = body.len() as u64;
    // The registry caps the result (`MAX_RESULT_BYTES`), as for every tool.
    let mut done = Done::ok(out, bytes);
    done.is_error = status >= 400;
    Ok(done)
}

/// Whether `url` starts with `http://` or `https://`, in any case (a
/// scheme is case-insensitive: `HTTP://` is the same URL).
fn has_web_scheme(url: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// The body as text for the model: HTML as plain text, other text as it
/// is, anything else described, not shown.
fn as_text(body: &[u8], kind: &str) -> String {
    let kind = kind.to_ascii_lowercase();
    let textual = kind.is_empty()
        || kind.starts_with("text/")
        || kind.contains("json")
        || kind.contains("xml")
        || kind.contains("javascript")
        || kind.contains("yaml");
    if !textual || body[..body.len().min(8192)].contains(&0) {
        return format!("[{} bytes of {kind}; not text, not shown]", body.len());
    }
    let text = String::from_utf8_lossy(body);
    if kind.contains("html") {
        nanohtml2text::html2text(&text)
    } else {
        text.into_owned()
    }
}

/// A fetch failure in words, the refusals first.
fn why(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => io.to_string(),
        ureq::Error::TooManyRedirects => format!("more than {MAX_REDIRECTS} redirects"),
        ureq::Error::Timeout(_) => "timed out".to_string(),
        other => other.to_string(),
    }
}

/// The resolver that decides where a fetch may connect.
#[derive(Debug)]
struct Guard {
    inner: DefaultResolver,
    allowed: Vec<String>,
    private_networks: bool,
}

impl Resolver for Guard {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri
            .host()
            .unwrap_or("")
            .trim_start_matches('[')
            .trim_end_matches(']');
        if !host_allowed(host, &self.allowed) {
            return Err(refused(format!(
                "{host} is not in this agent's allowed_hosts"
            )));
        }
        let found = self.inner.resolve(uri, config, timeout)?;
        let mut kept = self.empty();
        for addr in found.iter() {
            if self.private_networks || is_public(addr.ip()) {
                kept.push(*addr);
            }
        }
        if kept.is_empty() {
            let first = found.first().map(SocketAddr::ip);
            let what = first.map_or("no address".to_string(), |ip| ip.to_string());
            return Err(refused(format!(
                "{host} resolves to {what}, a private or local address; this agent may not reach those"
            )));
        }
        Ok(kept)
    }
}

fn refused(what: String) -> ureq::Error {
    ureq::Error::Io(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        what,
    ))
}

/// Whether `host` matches an entry of `allowed` (`name` exactly, or
/// `*.suffix` for any name below it); an empty list allows every host.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allowed.is_empty()
        || allowed.iter().any(|a| {
            let a = a.trim().trim_end_matches('.').to_ascii_lowercase();
            match a.strip_prefix("*.") {
                Some(suffix) => host.ends_with(&format!(".{suffix}")),
                None => host == a,
            }
        })
}

/// Whether `ip` is an address on the public internet: not loopback,
/// private (10/8, 172.16/12, 192.168/16), link-local (169.254/16, fe80::/10),
/// CGNAT (100.64/10), unique-local (fc00::/7), site-local (fec0::/10),
/// unspecified, multicast, broadcast, documentation, benchmarking,
/// discard-only or reserved. An IPv6 address that carries an IPv4 one
/// (mapped, compatible, translated, 6to4, Teredo, NAT64's well-known
/// prefix) is judged by the IPv4 address inside: `::127.0.0.1` is
/// loopback however it is written.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            let inside = embedded_v4(v6);
            if !inside.is_empty() {
                return inside.into_iter().all(is_public_v4);
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                // ::/8 is reserved; it holds 64:ff9b:1::/48, local-use
                // NAT64, where the IPv4 address sits at a place only the
                // operator knows.
                || (s[0] & 0xff00) == 0
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0)
                || (s[0] == 0x2001 && (0x0010..0x0030).contains(&s[1]))
                || (s[0] & 0xfff0) == 0x3ff0
                || s[0] == 0x5f00)
        }
    }
}

fn is_public_v4(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

/// The IPv4 addresses an IPv6 one carries: `::ffff:a.b.c.d` (mapped),
/// `::a.b.c.d` (compatible), `::ffff:0:a.b.c.d` (translated),
/// `64:ff9b::a.b.c.d` (NAT64), `2002:aabb:ccdd::` (6to4), and Teredo's
/// server and client (`2001:0:ssss:ssss:...:cccc:cccc`, the client's bits
/// inverted). Empty for every other address.
fn embedded_v4(v6: std::net::Ipv6Addr) -> Vec<std::net::Ipv4Addr> {
    use std::net::Ipv4Addr;
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let last = v4(s[6], s[7]);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => vec![last],
        // `::` and `::1` are themselves, not IPv4 addresses.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => Vec::new(),
        [0, 0, 0, 0, 0, 0, _, _] => vec![last],
        [0, 0, 0, 0, 0xffff, 0, _, _] => vec![last],
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => vec![last],
        [0x2002, hi, lo, ..] => vec![v4(hi, lo)],
        [0x2001, 0, hi, lo, ..] => vec![v4(hi, lo), v4(!s[6], !s[7])],
        _ => Vec::new(),
    }
}
