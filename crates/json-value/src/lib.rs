//! A `serde_json::Value` written to bytes and read from text, compiled in
//! this crate, not in axe's (design §3.15). serde_json's code is generic:
//! it is compiled in the crate that calls it, at that crate's opt-level,
//! and axe's own is built for size ("z"), which the `serde_json` override
//! in axe's Cargo.toml does not reach. Called through these non-generic
//! functions, it is compiled here, at the level axe's Cargo.toml gives
//! this crate (3). `#[inline(never)]` keeps each in this crate's code,
//! whatever fat LTO would inline into a caller built for size.

use serde_json::Value;

/// `value` as JSON bytes, as `serde_json::to_vec` writes them.
#[inline(never)]
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    // Writing a Value to a Vec cannot fail: its keys are strings and a
    // Vec's writes do not fail.
    let _ = serde_json::to_writer(&mut out, value);
    out
}

/// `text` read as one JSON value, as `serde_json::from_str` reads it.
#[inline(never)]
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    serde_json::from_str(text)
}

/// `bytes` read as one JSON value, as `serde_json::from_slice` reads them.
#[inline(never)]
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice(bytes)
}
