//! Keeps secrets out of every line axe prints (design D10, D18): API
//! keys, and the user and password of any URL.
//!
//! Every key axe resolves is registered here; every message that reaches
//! stdout or stderr — errors, verbose lines, dry-run text, provider error
//! bodies, trace lines — passes through [`redact`] first, which replaces the
//! registered keys and the userinfo of every `scheme://user:pass@host` in
//! the text, whether the URL came from a setting or from a server.

use std::sync::{Mutex, PoisonError};

static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The text that replaces a key.
pub const MARK: &str = "[redacted]";

/// Keys shorter than this are not treated as secrets: replacing a one-letter
/// "key" everywhere would mangle every message and protect nothing.
const MIN_LEN: usize = 4;

/// Registers a key so that it never appears in output.
pub fn register(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_LEN {
        return;
    }
    let mut secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
        // Longest first, so a key that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// Registers the password of a URL's userinfo (`scheme://user:pass@host`),
/// so that it is hidden even where it shows up without its URL.
pub fn register_url(url: &str) {
    if let Some((start, end)) = userinfo(url, 0) {
        let info = &url[start..end];
        let password = info.split_once(':').map_or(info, |(_, p)| p);
        register(password);
    }
}

/// `text` with every registered key, and the userinfo of every URL,
/// replaced by [`MARK`].
pub fn redact(text: &str) -> String {
    let secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    let mut out = text.to_string();
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MARK);
        }
    }
    drop(secrets);
    redact_userinfo(&out)
}

/// `text` with the userinfo of every `scheme://userinfo@host` replaced.
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some((start, end)) = userinfo(text, from) {
        out.push_str(&text[from..start]);
        out.push_str(MARK);
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

/// The byte range of the first URL userinfo at or after `from`: the text
/// between a `://` and the last `@` of the authority that follows it (the
/// authority ends at `/`, `?`, `#`, whitespace, a quote or `>`). A userinfo
/// that is already [`MARK`] is skipped.
fn userinfo(text: &str, from: usize) -> Option<(usize, usize)> {
    let mut search = from;
    loop {
        let start = text.get(search..)?.find("://")? + search + 3;
        let authority_len = text[start..]
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '\\') || c.is_whitespace()
            })
            .unwrap_or(text.len() - start);
        let authority = &text[start..start + authority_len];
        match authority.rfind('@') {
            Some(at) if at > 0 && &authority[..at] != MARK => return Some((start, start + at)),
            _ => search = start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_replaces_registered_keys_and_leaves_short_ones() {
        register("sk-test-redact-1234567890");
        register("ab");
        let out = redact("key sk-test-redact-1234567890 in ab text");
        assert_eq!(out, "key [redacted] in ab text");
    }

    #[test]
    fn redact_hides_the_userinfo_of_every_url() {
        assert_eq!(
            redact("refused (http://bob:pw@127.0.0.1:1/v1/chat) and https://u@h/x"),
            "refused (http://[redacted]@127.0.0.1:1/v1/chat) and https://[redacted]@h/x"
        );
        assert_eq!(
            redact("\"https://a:b@c\" no://@x plain://host/p@q"),
            "\"https://[redacted]@c\" no://@x plain://host/p@q"
        );
        assert_eq!(redact("http://[redacted]@h"), "http://[redacted]@h");
        register_url("http://carol:s3cret-pw@h:1");
        assert_eq!(
            redact("the password s3cret-pw alone"),
            "the password [redacted] alone"
        );
    }
}
