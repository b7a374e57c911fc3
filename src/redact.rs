//! Keeps API keys out of every line axe prints (DECISIONS D10, D18).
//!
//! Every key axe resolves is registered here; every message that reaches
//! stdout or stderr — errors, verbose lines, dry-run text, provider error
//! bodies — passes through [`redact`] first.

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

/// `text` with every registered key replaced by [`MARK`].
pub fn redact(text: &str) -> String {
    let secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    let mut out = text.to_string();
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MARK);
        }
    }
    out
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
}
