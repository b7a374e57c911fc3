//! W3C trace context: a span's identity (trace id, span id, flags), the
//! `traceparent` header read strictly and written, and new random ids
//! (design §7.9).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a span sits: its trace and its own id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// Made in another process (`TRACEPARENT`, a request's header).
    pub remote: bool,
}

impl SpanContext {
    /// A new span in the trace of `parent`, or in a new trace.
    pub fn child_of(parent: Option<&SpanContext>) -> SpanContext {
        SpanContext {
            trace_id: parent.map_or_else(new_trace_id, |p| p.trace_id),
            span_id: new_span_id(),
            flags: parent.map_or(1, |p| p.flags),
            remote: false,
        }
    }

    /// The `traceparent` header naming this span:
    /// `00-<trace id>-<span id>-<flags>`, its 55 bytes (ASCII). Written
    /// digit by digit into an array, not a string: one is made for each
    /// request a provider is sent, whose header copies it once (design
    /// §7.9).
    pub fn traceparent(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        crate::text::hex::encode_to_slice(&mut out[3..35], &self.trace_id);
        crate::text::hex::encode_to_slice(&mut out[36..52], &self.span_id);
        crate::text::hex::encode_to_slice(&mut out[53..55], &[self.flags]);
        out
    }
}

/// A `traceparent` header's length, version `00`.
pub const TRACEPARENT_LEN: usize = 55;

/// `text` read as a W3C `traceparent`: version `00` exactly four fields (a
/// later version: its first four, as the recommendation says), lowercase
/// hex of the right lengths, neither id all zeros, version `ff` refused.
/// The error says what was wrong.
pub fn parse_traceparent(text: &str) -> Result<SpanContext, String> {
    let text = text.trim();
    let fields: Vec<&str> = text.split('-').collect();
    let version = fields.first().copied().unwrap_or("");
    if version.len() != 2 || !is_hex(version) || version == "ff" {
        return Err(format!("bad version {version:?}"));
    }
    if fields.len() < 4 || (version == "00" && fields.len() != 4) {
        return Err("not four fields separated by '-'".to_string());
    }
    let trace_id: [u8; 16] =
        unhex(fields[1]).ok_or("the trace id is not 32 lowercase hex digits")?;
    let span_id: [u8; 8] =
        unhex(fields[2]).ok_or("the parent id is not 16 lowercase hex digits")?;
    let [flags]: [u8; 1] = unhex(fields[3]).ok_or("the flags are not 2 lowercase hex digits")?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return Err("an id is all zeros".to_string());
    }
    Ok(SpanContext {
        trace_id,
        span_id,
        flags,
        remote: true,
    })
}

/// A random trace id, never all zeros.
pub fn new_trace_id() -> [u8; 16] {
    fastrand::u128(1..).to_be_bytes()
}

/// A random span id, never all zeros: a process-wide counter from a
/// random start, through SplitMix64's mixing (a bijection, so no two of a
/// process's spans share one). Not a thread's own generator: seeding one
/// asks the kernel for randomness on each of a fan-out's helper threads,
/// a syscall per thread that export added (measured, design §7.9).
pub fn new_span_id() -> [u8; 8] {
    static SEED: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| fastrand::u64(..));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut z = seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // One count in 2^64 mixes to zero, which is not an id.
    z.max(1).to_be_bytes()
}

fn is_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `s`, exactly `2 * N` lowercase hex digits, as bytes.
fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !is_hex(s) {
        return None;
    }
    let mut out = [0; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_strictly_and_written_back() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let ctx = parse_traceparent(tp).unwrap();
        assert_eq!(&ctx.traceparent()[..], tp.as_bytes());
        assert!(ctx.remote);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-xx",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
        ] {
            assert!(parse_traceparent(bad).is_err(), "{bad}");
        }
        // A later version may add fields.
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra";
        assert!(parse_traceparent(later).is_ok());
    }

    #[test]
    fn span_ids_are_never_zero_nor_repeated() {
        let ids: std::collections::HashSet<[u8; 8]> = (0..10_000).map(|_| new_span_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(!ids.contains(&[0; 8]));
    }
}
