//! AWS's binary event-stream framing (`application/vnd.amazon.eventstream`,
//! Bedrock's `converse-stream`, design §4.13), fed arbitrary byte chunks.
//! A message is a prelude (its total length and its headers' length, four
//! bytes each, big-endian, then the CRC32 of those eight bytes), its
//! headers (a name of one length byte, a value type byte, the value), its
//! payload, and the CRC32 of all before it. Bytes are kept until their
//! message is whole. The stream is untrusted: a declared length over the
//! limit is an error before a byte of it is kept, a CRC that does not match
//! or a header that runs past its message is an error, never a panic.

/// One message: the headers axe reads, and its payload, borrowed from the
/// decoder.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Message<'a> {
    /// `:message-type`: `event`, `exception` or `error`.
    pub message_type: &'a str,
    /// `:event-type` (an event's name), or `:exception-type`, or
    /// `:error-code`: what the message is.
    pub kind: &'a str,
    /// `:error-message`, on an `error` message.
    pub error_message: &'a str,
    pub payload: &'a [u8],
}

/// The prelude's and the message CRC's bytes: the smallest message.
const OVERHEAD: usize = 16;

/// The decoder's state between chunks.
#[derive(Debug)]
pub struct EventStream {
    /// The bytes of the message being read (and of any after it).
    buf: Vec<u8>,
    /// The most bytes one message may have.
    limit: usize,
}

impl EventStream {
    pub fn new(limit: usize) -> EventStream {
        EventStream {
            buf: Vec::new(),
            limit,
        }
    }

    /// Reads `bytes`, handing each message completed to `on_message`; the
    /// first error (a bad frame, or `on_message`'s) ends the stream.
    pub fn feed<E>(
        &mut self,
        bytes: &[u8],
        on_message: &mut dyn FnMut(Message<'_>) -> Result<(), E>,
        bad: impl Fn(String) -> E,
    ) -> Result<(), E> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        let result = loop {
            let rest = &self.buf[start..];
            if rest.len() < 12 {
                break Ok(());
            }
            let total = match prelude(rest, self.limit) {
                Ok(total) => total,
                Err(e) => break Err(bad(e)),
            };
            if rest.len() < total {
                break Ok(());
            }
            let message = match message(&rest[..total]) {
                Ok(m) => m,
                Err(e) => break Err(bad(e)),
            };
            if let Err(e) = on_message(message) {
                break Err(e);
            }
            start += total;
        };
        self.buf.drain(..start);
        result
    }

    /// Whether the stream stopped in the middle of a message.
    pub fn cut(&self) -> bool {
        !self.buf.is_empty()
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A message's total length from its prelude (at least 12 bytes), checked:
/// the prelude's CRC, the bounds of both lengths.
fn prelude(b: &[u8], limit: usize) -> Result<usize, String> {
    if crc32(&b[..8]) != be32(&b[8..12]) {
        return Err("an event-stream message whose prelude CRC does not match".into());
    }
    let total = usize::try_from(be32(b)).unwrap_or(usize::MAX);
    let headers = usize::try_from(be32(&b[4..8])).unwrap_or(usize::MAX);
    if total > limit {
        return Err(format!(
            "an event-stream message of {total} bytes (the most is {limit})"
        ));
    }
    if total < OVERHEAD || headers > total - OVERHEAD {
        return Err(format!(
            "an event-stream message of {total} bytes with {headers} bytes of headers"
        ));
    }
    Ok(total)
}

/// One whole message (its prelude checked), its CRC checked.
fn message(b: &[u8]) -> Result<Message<'_>, String> {
    let (body, crc) = b.split_at(b.len() - 4);
    if crc32(body) != be32(crc) {
        return Err("an event-stream message whose CRC does not match".into());
    }
    let headers_len = usize::try_from(be32(&b[4..8])).unwrap_or(usize::MAX);
    let headers = &body[12..12 + headers_len];
    let mut out = Message {
        payload: &body[12 + headers_len..],
        ..Message::default()
    };
    read_headers(headers, &mut out)?;
    Ok(out)
}

/// The string headers axe reads into `out`; every other header skipped by
/// its type's size.
fn read_headers<'a>(mut h: &'a [u8], out: &mut Message<'a>) -> Result<(), String> {
    let short = || "an event-stream header runs past its message".to_string();
    while !h.is_empty() {
        let name_len = usize::from(h[0]);
        let name = h.get(1..1 + name_len).ok_or_else(short)?;
        let kind = *h.get(1 + name_len).ok_or_else(short)?;
        h = &h[2 + name_len..];
        let size = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let n = h.get(..2).ok_or_else(short)?;
                2 + usize::from(u16::from_be_bytes([n[0], n[1]]))
            }
            other => return Err(format!("an event-stream header of unknown type {other}")),
        };
        let value = h.get(..size).ok_or_else(short)?;
        h = &h[size..];
        if kind != 7 {
            continue;
        }
        let text = std::str::from_utf8(&value[2..])
            .map_err(|_| "an event-stream header that is not UTF-8".to_string())?;
        match name {
            b":message-type" => out.message_type = text,
            b":event-type" | b":exception-type" | b":error-code" => out.kind = text,
            b":error-message" => out.error_message = text,
            _ => {}
        }
    }
    Ok(())
}

/// The CRC-32 of zlib and Ethernet (reflected, polynomial `0xEDB88320`),
/// which the framing uses.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[usize::from((crc as u8) ^ b)] ^ (crc >> 8);
    }
    !crc
}

/// The CRC of each byte value, built at compile time (1 KiB).
static TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message of string headers and `payload`, as AWS frames one.
    fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for (name, value) in headers {
            h.push(name.len() as u8);
            h.extend_from_slice(name.as_bytes());
            h.push(7);
            h.extend_from_slice(&(value.len() as u16).to_be_bytes());
            h.extend_from_slice(value.as_bytes());
        }
        let total = (16 + h.len() + payload.len()) as u32;
        let mut m = total.to_be_bytes().to_vec();
        m.extend_from_slice(&(h.len() as u32).to_be_bytes());
        m.extend_from_slice(&crc32(&m).to_be_bytes());
        m.extend_from_slice(&h);
        m.extend_from_slice(payload);
        let crc = crc32(&m);
        m.extend_from_slice(&crc.to_be_bytes());
        m
    }

    type Owned = (String, String, Vec<u8>);

    fn read(chunks: &[&[u8]], limit: usize) -> Result<(Vec<Owned>, bool), String> {
        let mut es = EventStream::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            es.feed(
                c,
                &mut |m| {
                    out.push((m.message_type.into(), m.kind.into(), m.payload.to_vec()));
                    Ok(())
                },
                |e| e,
            )?;
        }
        Ok((out, es.cut()))
    }

    #[test]
    fn the_crc_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    /// AWS's published event-stream test vectors: `int32_header` (one
    /// header of type 4), `payload_one_str_header` (`content-type`), and
    /// `corrupted_length` and `corrupted_payload`, which must fail.
    #[test]
    fn awss_test_vectors_read_as_published() {
        let int32_header: [u8; 45] = [
            0, 0, 0, 45, 0, 0, 0, 16, 65, 196, 36, 184, 10, 101, 118, 101, 110, 116, 45, 116, 121,
            112, 101, 4, 0, 0, 160, 12, 123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 125,
            54, 244, 128, 160,
        ];
        let one_str_header: [u8; 61] = [
            0, 0, 0, 61, 0, 0, 0, 32, 7, 253, 131, 150, 12, 99, 111, 110, 116, 101, 110, 116, 45,
            116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47,
            106, 115, 111, 110, 123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 125, 141, 156,
            8, 177,
        ];
        let foo = b"{'foo':'bar'}".to_vec();
        for vector in [&int32_header[..], &one_str_header[..]] {
            let (got, cut) = read(&[vector], 1024).unwrap();
            assert_eq!(got, vec![(String::new(), String::new(), foo.clone())]);
            assert!(!cut);
        }
        let payload_no_headers: [u8; 29] = [
            0, 0, 0, 29, 0, 0, 0, 0, 253, 82, 140, 90, 123, 39, 102, 111, 111, 39, 58, 39, 98, 97,
            114, 39, 125, 195, 101, 57, 54,
        ];
        assert_eq!(read(&[&payload_no_headers], 1024).unwrap().0[0].2, foo);
        let mut corrupted_length = payload_no_headers;
        corrupted_length[0] = 1;
        assert!(read(&[&corrupted_length], 1 << 30).is_err());
        let mut corrupted_payload = payload_no_headers;
        corrupted_payload[24] = 141;
        assert!(read(&[&corrupted_payload], 1024).is_err());
    }

    #[test]
    fn messages_split_at_any_byte_read_alike() {
        let mut bytes = frame(
            &[(":message-type", "event"), (":event-type", "messageStart")],
            br#"{"role":"assistant"}"#,
        );
        let first = bytes.len();
        bytes.extend(frame(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            b"{}",
        ));
        let (whole, _) = read(&[&bytes], 1024).unwrap();
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[1].1, "throttlingException");
        for i in 0..=bytes.len() {
            let (split, cut) = read(&[&bytes[..i], &bytes[i..]], 1024).unwrap();
            assert_eq!(split, whole, "split at {i}");
            assert!(!cut);
            let (_, cut) = read(&[&bytes[..i]], 1024).unwrap();
            assert_eq!(cut, ![0, first, bytes.len()].contains(&i), "cut at {i}");
        }
    }

    #[test]
    fn a_bad_crc_a_long_frame_or_a_header_past_its_message_is_an_error() {
        let good = frame(&[(":event-type", "x")], b"{}");
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(read(&[&bad], 1024).unwrap_err().contains("CRC"));
        let mut bad = good.clone();
        bad[9] ^= 1;
        assert!(read(&[&bad], 1024).unwrap_err().contains("prelude CRC"));
        // Refused on its prelude alone: nothing more is waited for.
        assert!(
            read(&[&good[..12]], 20)
                .unwrap_err()
                .contains("the most is 20")
        );
        // Headers longer than the message, with a prelude CRC that matches.
        let mut lying = 20u32.to_be_bytes().to_vec();
        lying.extend_from_slice(&9u32.to_be_bytes());
        lying.extend_from_slice(&crc32(&lying).to_be_bytes());
        assert!(read(&[&lying], 1024).unwrap_err().contains("headers"));
        // A header whose string runs past the headers.
        let mut m = 21u32.to_be_bytes().to_vec();
        m.extend_from_slice(&5u32.to_be_bytes());
        m.extend_from_slice(&crc32(&m).to_be_bytes());
        m.extend_from_slice(&[1, b'a', 7, 0, 9]);
        m.extend_from_slice(&crc32(&m).to_be_bytes());
        assert!(read(&[&m], 1024).unwrap_err().contains("runs past"));
    }
}
