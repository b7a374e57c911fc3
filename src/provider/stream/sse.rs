//! Server-sent events framing (the WHATWG `text/event-stream` format), fed
//! arbitrary byte chunks: lines end in CRLF, LF or CR (a CRLF split across
//! two chunks is one line end), `:` lines are comments, `data:` lines are
//! joined with newlines, `event:` names the event, other fields are
//! ignored, and a blank line dispatches the event. Bytes are kept until
//! their line is whole, so a chunk may end anywhere, inside a UTF-8
//! character or inside a field name. A line or an event over the limit is
//! an error, never a growing buffer (design §4.11). The one decoder of
//! server-sent events: a provider's stream (`stream/mod.rs`, 4 MiB an
//! event) and an MCP server's over either HTTP transport (`mcp/http.rs`,
//! 16 MiB an event, design §9.2) are read through it.

/// One event: its name (`message` when none was given) and its data,
/// borrowed from the decoder: its buffers are kept from one event to the
/// next, so that an event costs no allocation (a provider's stream is an
/// event a token, design §4.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    pub name: &'a str,
    pub data: &'a str,
}

/// An event's data buffer over this many bytes is not kept for the next
/// (an MCP server's event may have 16 MiB).
const KEEP_BYTES: usize = 64 << 10;

/// The decoder's state between chunks.
#[derive(Debug)]
pub struct Sse {
    /// The line being read (without its end).
    line: Vec<u8>,
    /// The last byte seen was a CR: an LF right after it ends nothing.
    after_cr: bool,
    /// The event being read: its data lines joined, and its name.
    data: Vec<u8>,
    has_data: bool,
    name: String,
    /// The most bytes a line, or an event's data, may have.
    limit: usize,
}

impl Sse {
    pub fn new(limit: usize) -> Sse {
        Sse {
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            name: String::new(),
            limit,
        }
    }

    /// Reads `bytes`, handing each event completed to `on_event`; the
    /// first error (the limit, or `on_event`'s) ends the stream.
    pub fn feed<E>(
        &mut self,
        bytes: &[u8],
        on_event: &mut dyn FnMut(Event<'_>) -> Result<(), E>,
        too_long: impl Fn() -> E,
    ) -> Result<(), E> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            let Some(end) = line_end(rest, true) else {
                if self.line.len().saturating_add(rest.len()) > self.limit {
                    return Err(too_long());
                }
                self.line.extend_from_slice(rest);
                return Ok(());
            };
            if self.line.len().saturating_add(end) > self.limit {
                return Err(too_long());
            }
            self.after_cr = rest[end] == b'\r';
            let ended = if self.line.is_empty() {
                // A line whole in this chunk (most are) is read where it
                // is, not copied.
                self.take_line(&rest[..end], &too_long)
            } else {
                self.line.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.line);
                let ended = self.take_line(&line, &too_long);
                // The buffer is used again for the next line.
                self.line = line;
                self.line.clear();
                ended
            };
            rest = &rest[end + 1..];
            if ended? {
                self.dispatch(on_event)?;
            }
        }
        Ok(())
    }

    /// One whole line: a field added to the event, or (blank, true) the
    /// end of the event.
    fn take_line<E>(&mut self, line: &[u8], too_long: &impl Fn() -> E) -> Result<bool, E> {
        if line.is_empty() {
            return Ok(true);
        }
        if line[0] == b':' {
            return Ok(false);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let grown = self
                    .data
                    .len()
                    .saturating_add(value.len())
                    .saturating_add(1);
                if grown > self.limit {
                    return Err(too_long());
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.name.clear();
                self.name.push_str(&String::from_utf8_lossy(value));
            }
            // `id`, `retry` and unknown fields mean nothing here.
            _ => {}
        }
        Ok(false)
    }

    /// The event read so far to `on_event`, if it has data; the state is
    /// reset either way, the buffers kept (unless a long event grew them).
    fn dispatch<E>(
        &mut self,
        on_event: &mut dyn FnMut(Event<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            let data = utf8(&self.data);
            let name = if self.name.is_empty() {
                "message"
            } else {
                self.name.as_str()
            };
            on_event(Event { name, data: &data })
        } else {
            Ok(())
        };
        self.name.clear();
        self.data.clear();
        self.has_data = false;
        if self.data.capacity() > KEEP_BYTES {
            self.data = Vec::new();
        }
        result
    }
}

/// `bytes` as text, borrowed when they are valid UTF-8, as a stream's
/// events are: `from_utf8` first, since it takes ASCII a word at a time
/// where the lossy reading goes a byte at a time.
pub(crate) fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Where the first line end is in `bytes`: the first LF, or CR as well
/// with `cr`. The C library's `memchr` (vectorised in glibc, a word at a
/// time in musl), once for LF and once for a CR before it: a byte at a
/// time was a quarter of a stream's decoding, eight bytes a step (written
/// here at opt-level "z") still ~400 instructions an event (design §4.11).
/// Not the memchr crate: a dependency renames every symbol of axe's and
/// leaves the link order file behind (`build.rs`).
pub(crate) fn line_end(bytes: &[u8], cr: bool) -> Option<usize> {
    let lf = find(bytes, b'\n');
    if !cr {
        return lf;
    }
    find(lf.map_or(bytes, |i| &bytes[..i]), b'\r').or(lf)
}

/// Where the first `byte` is in `bytes`.
fn find(bytes: &[u8], byte: u8) -> Option<usize> {
    // SAFETY: memchr reads at most `bytes.len()` bytes of a live slice and
    // returns null or a pointer into them.
    let at = unsafe { libc::memchr(bytes.as_ptr().cast(), i32::from(byte), bytes.len()) };
    (!at.is_null()).then(|| at as usize - bytes.as_ptr() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event as the tests keep it.
    #[derive(Debug, PartialEq)]
    struct Owned {
        name: String,
        data: String,
    }

    fn events(chunks: &[&[u8]], limit: usize) -> Result<Vec<Owned>, &'static str> {
        let mut sse = Sse::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            sse.feed(
                c,
                &mut |e| {
                    out.push(ev(e.name, e.data));
                    Ok(())
                },
                || "too long",
            )?;
        }
        Ok(out)
    }

    fn ev(name: &str, data: &str) -> Owned {
        Owned {
            name: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn every_line_end_comments_names_and_multi_line_data_are_read() {
        let text = b": keep-alive\r\nevent: ping\r\ndata: {}\r\n\r\ndata: a\rdata:b\r\rid: 7\nretry: 10\ndata: \xc3\xa9\n\nevent: lone\n\n";
        let want = vec![ev("ping", "{}"), ev("message", "a\nb"), ev("message", "é")];
        assert_eq!(events(&[text], 1024).unwrap(), want);
    }

    #[test]
    fn a_stream_split_at_any_byte_gives_the_same_events() {
        let text: &[u8] =
            "event: x\r\ndata: {\"t\":\"héllo ✓\"}\r\n\r\n: c\r\ndata: [DONE]\r\n\r\n".as_bytes();
        let whole = events(&[text], 1024).unwrap();
        assert_eq!(whole.len(), 2);
        for i in 0..=text.len() {
            for j in i..=text.len() {
                let split = events(&[&text[..i], &text[i..j], &text[j..]], 1024).unwrap();
                assert_eq!(split, whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn a_line_or_an_event_over_the_limit_is_an_error() {
        assert_eq!(events(&[&[b'x'; 65]], 64), Err("too long"));
        assert_eq!(events(&[&[b'x'; 40], &[b'x'; 40]], 64), Err("too long"));
        let many = "data: 0123456789\n".repeat(10);
        assert_eq!(events(&[many.as_bytes()], 64), Err("too long"));
        assert!(events(&[b"data: 0123456789\n\n"], 64).is_ok());
    }

    /// `text` with its LF line ends made `end`.
    fn ended(text: &str, end: &str) -> String {
        text.replace('\n', end)
    }

    #[test]
    fn an_mcp_servers_streams_read_alike_with_every_line_end() {
        let legacy = include_str!("../../../fixtures/streams/mcp_legacy.sse");
        let answer = include_str!("../../../fixtures/streams/mcp_streamable.sse");
        // MCP's limit (`mcp::stdio::MAX_LINE`).
        let limit = 16 << 20;
        for end in ["\n", "\r", "\r\n"] {
            let got = events(&[ended(legacy, end).as_bytes()], limit).unwrap();
            let names: Vec<&str> = got.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(names, ["endpoint", "message", "message"], "{end:?}");
            assert_eq!(got[0].data, "/message?sessionId=3f2a");
            assert!(got[2].data.starts_with("[{") && got[2].data.ends_with("}]"));
            let got = events(&[ended(answer, end).as_bytes()], limit).unwrap();
            assert_eq!(got.len(), 3, "{end:?}");
            assert!(got.iter().all(|e| e.name == "message"));
            assert!(got[0].data.contains("héllo ✓"));
            // Two data: lines are one message, joined by a newline.
            let last: serde_json::Value = serde_json::from_str(&got[2].data).unwrap();
            assert_eq!(last["result"]["content"][0]["text"], "echo: hi");
            assert!(got[2].data.contains(",\n \"result\""));
        }
    }

    #[test]
    fn line_ends_are_found_as_a_byte_at_a_time_finds_them() {
        let mut text: Vec<u8> = (0..=255u8).cycle().take(600).collect();
        text.retain(|&b| b != b'\n' && b != b'\r');
        for at in 0..40 {
            for (end, cr) in [(b'\n', false), (b'\n', true), (b'\r', true)] {
                let mut t = text[..at + 20].to_vec();
                t.insert(at, end);
                t.insert(at + 3, b'\n');
                assert_eq!(line_end(&t, cr), Some(at), "{at} {end} {cr}");
                assert_eq!(line_end(&t[at + 1..at + 3], cr), None);
            }
            let mut t = text[..at + 20].to_vec();
            t.insert(at, b'\r');
            assert_eq!(line_end(&t, false), None, "{at}");
        }
        assert_eq!(line_end(b"", true), None);
    }

    #[test]
    fn an_event_not_ended_by_a_blank_line_is_not_dispatched() {
        assert_eq!(events(&[b"data: half"], 64).unwrap(), vec![]);
        assert_eq!(events(&[b"data: half\n"], 64).unwrap(), vec![]);
    }
}
