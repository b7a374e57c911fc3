//! Keeps secrets out of what axe prints and writes (design D10, D18,
//! §6.7): API keys, and the user and password of any URL.
//!
//! Every key axe resolves is registered here, unless it is too short or a
//! known placeholder to be a secret. Text that can hold a key — errors,
//! provider error bodies, warnings, verbose lines, the dry run, `agents`
//! reports, trace fields — passes through [`redact`], which replaces the
//! registered keys and the userinfo of every `scheme://user:pass@host`.
//! JSON passes through [`redact_fields`], one string at a time, so that no
//! number or structure is ever touched. What a model answered is never
//! passed through either: an answer is printed and handed on as it came.

use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The text that replaces a key.
pub const MARK: &str = "[redacted]";

/// Keys shorter than this (in characters) are not secrets: `1234`, `none`
/// or `sk-x`, set for a local server that ignores the key, would otherwise
/// be cut out of every number and word that holds them. A real key is
/// far longer (design §6.7).
const MIN_LEN: usize = 8;

/// Keys that local servers' documentation tells users to set, compared
/// without regard to case; they are no more secret than the short ones.
const PLACEHOLDERS: [&str; 6] = [
    "sk-no-key-required",
    "lm-studio",
    "not-needed",
    "placeholder",
    "changeme",
    "anything",
];

/// Registers a key so that it never appears in output; one that cannot be a
/// secret (see `is_secret`) is left out.
pub fn register(secret: &str) {
    let secret = secret.trim();
    if !is_secret(secret) {
        return;
    }
    let mut secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
        // Longest first, so a key that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// Whether `key` is worth hiding: at least [`MIN_LEN`] characters and not
/// one of the [`PLACEHOLDERS`].
fn is_secret(key: &str) -> bool {
    key.chars().count() >= MIN_LEN && !PLACEHOLDERS.iter().any(|p| key.eq_ignore_ascii_case(p))
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

/// Every string in `fields` redacted as by [`redact`], but for the fields
/// named in `verbatim` (what a model said), which are left as they are.
/// Numbers, booleans and names are never touched, so JSON stays the JSON it
/// was, and a key is found even where JSON text would escape it.
pub fn redact_fields(fields: &mut Map<String, Value>, verbatim: &[&str]) {
    for (name, value) in fields.iter_mut() {
        if !verbatim.contains(&name.as_str()) {
            redact_value(value);
        }
    }
}

/// [`redact`] applied to every string inside `value`.
fn redact_value(value: &mut Value) {
    match value {
        Value::String(s) => *s = redact(s),
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(fields) => fields.values_mut().for_each(redact_value),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
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
    fn redact_replaces_registered_keys_and_leaves_placeholders() {
        register("sk-test-redact-1234567890");
        for placeholder in ["ab", "1234", "none", "sk-x", " 1234567 ", "LM-Studio"] {
            register(placeholder);
        }
        let out = redact("key sk-test-redact-1234567890 in ab 12345 none sk-x lm-studio");
        assert_eq!(out, "key [redacted] in ab 12345 none sk-x lm-studio");
    }

    #[test]
    fn a_secret_is_eight_characters_or_more_and_no_placeholder() {
        assert!(is_secret("12345678"));
        assert!(is_secret("sk-proj-abc"));
        assert!(!is_secret("1234567"));
        // Counted in characters, not bytes.
        assert!(!is_secret("ключ-ок"));
        assert!(!is_secret("sk-no-key-required"));
        assert!(!is_secret("NOT-NEEDED"));
    }

    #[test]
    fn redact_fields_keeps_numbers_structure_and_verbatim_fields() {
        register("sk-test-fields-0987654321");
        // JSON text would show this one as `sk-\"quoted\"-key`.
        register("sk-\"quoted\"-key");
        let mut fields = serde_json::json!({
            "n": 12345,
            "error": "bad key sk-test-fields-0987654321",
            "escaped": "a key sk-\"quoted\"-key",
            "body": {"messages": [{"content": "a \"quoted\" sk-test-fields-0987654321"}]},
            "content": "the model said sk-test-fields-0987654321",
        });
        redact_fields(fields.as_object_mut().unwrap(), &["content"]);
        assert_eq!(
            fields,
            serde_json::json!({
                "n": 12345,
                "error": "bad key [redacted]",
                "escaped": "a key [redacted]",
                "body": {"messages": [{"content": "a \"quoted\" [redacted]"}]},
                "content": "the model said sk-test-fields-0987654321",
            })
        );
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
