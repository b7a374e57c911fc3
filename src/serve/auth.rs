//! Who may use `axe serve` (design §14.4): a loopback address serves its
//! own machine, any other address needs a bearer token; the token comes
//! from `--token-file` or `AXE_SERVE_TOKEN`, and a request's is compared
//! with it in constant time.

use std::net::SocketAddr;
use std::path::Path;

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
        crate::redact::register(t);
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
    let text = crate::read::config_text(path)
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
