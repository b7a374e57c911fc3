//! Who may use `axe serve` (design §12.4): a loopback address serves its
//! own machine, any other address needs a bearer token; the token comes
//! from `--token-file` or `AXE_SERVE_TOKEN`, and a request's is compared
//! with it in constant time. Without a token, a loopback server serves its
//! machine's programs, not the web pages its browser shows: a request
//! that carries an `Origin`, names a `Host` that is not loopback (DNS
//! rebinding) or whose body is not JSON is refused before it runs.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use tiny_http::{Header, Method};

use super::reply::ApiError;
use crate::error::Error;

/// The shortest token accepted: a guessable one protects nothing.
pub const MIN_TOKEN_LEN: usize = 16;

/// The token from `file`, else from `AXE_SERVE_TOKEN`; none when neither
/// has one. Required (an error without one) when `addr` is not loopback.
pub fn token(file: Option<&str>, addr: &SocketAddr) -> Result<Option<String>, Error> {
    let token = match file {
        Some(f) => Some(read_token(Path::new(f))?),
        None => std::env::var("AXE_SERVE_TOKEN")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
    };
    if let Some(t) = &token {
        if t.len() < MIN_TOKEN_LEN || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::config(format!(
                "the serve token must be at least {MIN_TOKEN_LEN} characters, with no spaces"
            )));
        }
        crate::text::redact::register(t);
    }
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(Error::config(format!(
            "--listen {addr} is not a loopback address: a bearer token is required \
             (--token-file FILE or AXE_SERVE_TOKEN)"
        )));
    }
    Ok(token)
}

/// The token file's first line, trimmed: a regular file of at most 4 KiB.
fn read_token(path: &Path) -> Result<String, Error> {
    let text = crate::sandbox::read::config_text(path)
        .map_err(|e| Error::config(format!("--token-file {}: {e}", path.display())))?;
    let line = text.lines().next().unwrap_or("").trim().to_string();
    if line.is_empty() || text.len() > 4096 {
        return Err(Error::config(format!(
            "--token-file {}: expected one line holding the token",
            path.display()
        )));
    }
    Ok(line)
}

/// Whether the `Authorization` header `header` carries `token` (always,
/// when there is no token to check).
pub fn allowed(token: Option<&str>, header: Option<&str>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let given = header
        .and_then(|h| h.trim().strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("");
    same(given.as_bytes(), token.as_bytes())
}

/// Why a request with `method` and `headers`, to a server that requires
/// no token, is refused before it runs; none when it may go on. A browser
/// sends an `Origin` with every request a page makes that is not a plain
/// GET (a POST from a form or `fetch()` alike, `null` from a sandboxed
/// frame); a page that rebound its own name to 127.0.0.1 sends that name
/// as the `Host`; and no page can POST `application/json` elsewhere
/// without a preflight, which is refused for its `Origin`. The port is not
/// looked at: a tunnel or a port mapping changes it, and no page can
/// choose it.
pub fn cross_site(method: &Method, headers: &[Header]) -> Option<ApiError> {
    let named = |name: &'static str| headers.iter().filter(move |h| h.field.equiv(name));
    let forbidden = |code, message: &str| {
        let message = format!("{message}; a server that requires a token (--token-file) takes it");
        Some(ApiError::new(403, "invalid_request_error", code, message))
    };
    if named("Origin").next().is_some() {
        return forbidden(
            "origin_not_allowed",
            "a request from a web page (it carries an Origin) is refused",
        );
    }
    let mut hosts = named("Host");
    let host = hosts.next().map(|h| h.value.as_str());
    if hosts.next().is_some() || !host.is_some_and(loopback_host) {
        return forbidden(
            "host_not_allowed",
            "the Host header must name this machine (localhost, 127.0.0.1, [::1])",
        );
    }
    let mut types = named("Content-Type").peekable();
    let json = types.peek().is_some() && types.all(|h| is_json(h.value.as_str()));
    if *method == Method::Post && !json {
        return Some(ApiError::new(
            415,
            "invalid_request_error",
            "unsupported_media_type",
            "the body must be sent as content-type: application/json",
        ));
    }
    None
}

/// Whether a `Host` value names this machine by a loopback name:
/// `localhost` (in any case) or a loopback address (127.0.0.0/8, `[::1]`,
/// `[::ffff:127.0.0.1]`), with a port or without.
fn loopback_host(host: &str) -> bool {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, "")) => (ip, None),
            Some((ip, after)) => match after.strip_prefix(':') {
                Some(port) => (ip, Some(port)),
                None => return false,
            },
            None => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    let port_ok =
        port.is_none_or(|p| p.parse::<u16>().is_ok() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = if host.starts_with('[') {
        name.parse::<Ipv6Addr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
    } else {
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    };
    port_ok && name_ok
}

/// Whether a `Content-Type` value is JSON: `application/json`, in any
/// case, with any parameters (`; charset=utf-8`).
fn is_json(value: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// `a == b`, taking the same time wherever they differ (the length of the
/// secret alone is not hidden).
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, y) in b.iter().enumerate() {
        let x = a.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_allowed() {
        let t = Some("0123456789abcdef");
        assert!(allowed(t, Some("Bearer 0123456789abcdef")));
        assert!(!allowed(t, Some("Bearer 0123456789abcdeF")));
        assert!(!allowed(t, Some("Bearer 0123456789abcdef0")));
        assert!(!allowed(t, Some("Bearer 0123456789abcde")));
        assert!(!allowed(t, Some("0123456789abcdef")));
        assert!(!allowed(t, None));
        assert!(allowed(None, None));
    }

    #[test]
    fn a_host_is_loopback_by_its_name_whatever_its_port() {
        for ok in [
            "localhost",
            "LocalHost:8080",
            "127.0.0.1",
            "127.0.0.1:65535",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:8080",
            "[0:0:0:0:0:0:0:1]:80",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for no in [
            "",
            "attacker.example",
            "attacker.example:8080",
            "localhost.",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "0x7f.1",
            "2130706433",
            "127.0.0.1:",
            "127.0.0.1:+80",
            "127.0.0.1:65536",
            "127.0.0.1:80:80",
            "localhost:80@attacker.example",
            "[::1]x:80",
            "[::1",
            "::1",
            "[::2]",
            "[::1%lo]",
            "10.0.0.1",
            "0.0.0.0",
        ] {
            assert!(!loopback_host(no), "{no}");
        }
    }

    #[test]
    fn json_is_application_json_with_any_parameters() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for no in [
            "",
            "text/plain",
            "text/plain; application/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json-seq",
            "application/vnd.api+json",
        ] {
            assert!(!is_json(no), "{no}");
        }
    }

    #[test]
    fn a_public_address_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let e = token(None, &public);
        if std::env::var_os("AXE_SERVE_TOKEN").is_none() {
            assert!(e.is_err());
        }
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(token(None, &local).is_ok());
    }
}
