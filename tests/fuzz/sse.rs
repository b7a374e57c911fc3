//! The one SSE decoder (`provider::stream::sse`) on its own, for both its
//! uses: a provider's stream (4 MiB an event) and an MCP server's (16 MiB
//! an event, each event's data then read as JSON-RPC messages), with a
//! tiny limit besides so that the limit is hit. Seeds: the providers' and
//! MCP's streams of `fixtures/streams/`.

use axe::mcp::rpc;
use axe::provider::stream::MAX_EVENT_BYTES;
use axe::provider::stream::sse::Sse;

use super::bodies::STREAM_TOKENS;
use super::*;

/// MCP's limit on an event (`mcp::stdio::MAX_LINE`, not public).
const MCP_EVENT_BYTES: usize = 16 << 20;

/// An event as the decoder lent it: its name and data.
#[derive(Debug, PartialEq)]
struct Event {
    name: String,
    data: String,
}

/// The events of `chunks` with `limit`, or where the limit stopped them.
fn decode(chunks: &[&[u8]], limit: usize) -> (Vec<Event>, bool) {
    let mut sse = Sse::new(limit);
    let mut out = Vec::new();
    for c in chunks {
        let fed = sse.feed(
            c,
            &mut |e| {
                out.push(Event {
                    name: e.name.to_string(),
                    data: e.data.to_string(),
                });
                Ok(())
            },
            || (),
        );
        if fed.is_err() {
            return (out, true);
        }
    }
    (out, false)
}

/// `b` whole, and cut at three points drawn from the input itself (so
/// that a failure reproduces from it).
fn cut(b: &[u8]) -> [&[u8]; 4] {
    let mut h = b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    });
    let mut cuts = [0usize; 3];
    for c in &mut cuts {
        h = h.rotate_left(17).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        *c = (h % (b.len() as u64 + 1)) as usize;
    }
    cuts.sort_unstable();
    [
        &b[..cuts[0]],
        &b[cuts[0]..cuts[1]],
        &b[cuts[1]..cuts[2]],
        &b[cuts[2]..],
    ]
}

/// Never a panic; for every limit, the same events whether the stream
/// comes whole or cut, none over the limit; with its line ends all made
/// LF, then CR, then CRLF, the same events each time; and each event's
/// data read as MCP's messages without a panic.
fn target(s: &str) {
    for limit in [64, MAX_EVENT_BYTES, MCP_EVENT_BYTES] {
        let whole = decode(&[s.as_bytes()], limit);
        assert_eq!(decode(&cut(s.as_bytes()), limit), whole, "limit {limit}");
        assert!(whole.0.iter().all(|e| e.data.len() <= limit));
    }
    let lf = s.replace("\r\n", "\n").replace('\r', "\n");
    let by_lf = decode(&[lf.as_bytes()], MCP_EVENT_BYTES);
    for end in ["\r", "\r\n"] {
        let other = lf.replace('\n', end);
        assert_eq!(
            decode(&[other.as_bytes()], MCP_EVENT_BYTES),
            by_lf,
            "{end:?}"
        );
    }
    for event in &by_lf.0 {
        let _ = rpc::each_message(event.data.as_bytes(), &mut |m| {
            let _ = m.is_response();
        });
    }
}

#[test]
fn fuzz_sse_decoder_never_panics_and_reads_alike_whatever_the_cuts_and_line_ends() {
    let mut seeds = fixtures_in("streams", "mcp_");
    seeds.extend(fixtures_in("streams", "openai_"));
    seeds.extend(fixtures_in("streams", "anthropic_"));
    let default = seeds.len() * (MUTANTS + EXTRAS);
    fuzz_with("stream::sse::Sse", &seeds, STREAM_TOKENS, default, target);
}
