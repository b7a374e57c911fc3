//! AWS Signature Version 4, as Bedrock's requests are signed (design
//! §4.13): the canonical request, the string to sign, the signing key
//! derived from the secret and the `Authorization` header, with SHA-256 and
//! HMAC-SHA256 from `ring` (already linked through rustls). Checked against
//! AWS's published test vectors (`fixtures/sigv4/`).

use std::fmt;
use std::time::SystemTime;

use ring::{digest, hmac};

use crate::text::{hex, redact};

/// AWS's keys and the region they sign for. Its `Debug` shows no secret.
#[derive(Clone)]
pub struct AwsKeys {
    pub access_key_id: String,
    pub secret_access_key: String,
    /// A temporary credential's token, sent as `x-amz-security-token`.
    pub session_token: Option<String>,
    pub region: String,
}

impl AwsKeys {
    /// The keys with every secret among them registered for redaction.
    pub fn registered(self) -> AwsKeys {
        redact::register(&self.secret_access_key);
        redact::register(&self.access_key_id);
        if let Some(t) = &self.session_token {
            redact::register(t);
        }
        self
    }
}

impl fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsKeys")
            .field("access_key_id", &redact::MARK)
            .field("secret_access_key", &redact::MARK)
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| redact::MARK),
            )
            .field("region", &self.region)
            .finish()
    }
}

/// One request as it is signed: the method, the path and query as sent,
/// the headers to sign (`host` and `x-amz-date` among them) and the body.
pub struct Unsigned<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub payload: &'a [u8],
}

/// A signature and the texts it was computed from (the test vectors
/// check each).
#[derive(Debug, PartialEq, Eq)]
pub struct Signed {
    pub canonical_request: String,
    pub string_to_sign: String,
    pub authorization: String,
}

/// Signs `req` for `service` at `amz_date` (`20150830T123600Z`).
pub fn sign(keys: &AwsKeys, service: &str, req: &Unsigned<'_>, amz_date: &str) -> Signed {
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), collapse(v)))
        .collect();
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    // Headers of one name are one line, their values joined by commas.
    let mut lines: Vec<(String, String)> = Vec::new();
    for (k, v) in headers {
        match lines.last_mut() {
            Some((last, joined)) if *last == k => {
                joined.push(',');
                joined.push_str(&v);
            }
            _ => lines.push((k, v)),
        }
    }
    let signed_headers = lines
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = lines.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        req.method.to_ascii_uppercase(),
        canonical_uri(req.path),
        canonical_query(req.query),
        hex::encode(digest::digest(&digest::SHA256, req.payload).as_ref()),
    );
    let date = &amz_date[..amz_date.len().min(8)];
    let scope = format!("{date}/{}/{service}/aws4_request", keys.region);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let secret = format!("AWS4{}", keys.secret_access_key);
    let mut key = mac(secret.as_bytes(), date);
    for part in [keys.region.as_str(), service, "aws4_request"] {
        key = mac(&key, part);
    }
    let signature = hex::encode(&mac(&key, &string_to_sign));
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, \
         Signature={signature}",
        keys.access_key_id
    );
    Signed {
        canonical_request,
        string_to_sign,
        authorization,
    }
}

/// The headers that sign a JSON POST of `body` to `url` now: `x-amz-date`,
/// `x-amz-security-token` when there is one, and `authorization`. The
/// `content-type` and `host` they sign are those the request carries.
pub fn post_headers(
    keys: &AwsKeys,
    service: &str,
    url: &str,
    body: &[u8],
    now: SystemTime,
) -> Vec<(&'static str, String)> {
    let amz_date = amz_date(now);
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("host", host),
        ("x-amz-date", amz_date.as_str()),
    ];
    if let Some(token) = &keys.session_token {
        headers.push(("x-amz-security-token", token));
    }
    let req = Unsigned {
        method: "POST",
        path,
        query,
        headers: &headers,
        payload: body,
    };
    let signed = sign(keys, service, &req, &amz_date);
    let mut out = vec![("x-amz-date", amz_date.clone())];
    if let Some(token) = &keys.session_token {
        out.push(("x-amz-security-token", token.clone()));
    }
    out.push(("authorization", signed.authorization));
    out
}

/// `t` as SigV4 writes a time: `20150830T123600Z`, in UTC.
pub fn amz_date(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t.max(SystemTime::UNIX_EPOCH))
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect()
}

/// Each segment of the path as sent, percent-encoded once more (every
/// service but S3 signs it so: a model ID's `%3A` is signed as `%253A`).
fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        return "/".into();
    }
    path.split('/')
        .map(uri_encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// The query's pairs sorted by name, then value, as they were sent.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(&str, &str)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    pairs.sort_unstable();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Every byte but the unreserved ones as `%XX`.
fn uri_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A header value trimmed, its runs of spaces as one.
fn collapse(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn mac(key: &[u8], data: &str) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data.as_bytes()).as_ref().to_vec()
}

#[cfg(test)]
#[path = "sigv4_tests.rs"]
mod tests;
