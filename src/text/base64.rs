//! Standard base64 (RFC 4648 §4), the one codec: an attachment's bytes
//! in a request and in a kept conversation, a `data:` URL `axe serve` is
//! sent, and MCP header values that are not plain ASCII, both ways.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 §4).
pub fn encode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                ALPHABET[(n >> (18 - 6 * i)) as usize & 63]
            } else {
                b'='
            });
        }
    }
    // Every byte pushed is one of ALPHABET's or '='.
    String::from_utf8(out).unwrap_or_default()
}

/// Standard base64 decoded (padding optional, no whitespace); none when
/// `text` is not base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let mut value = [255u8; 256];
    for (i, c) in ALPHABET.iter().enumerate() {
        value[usize::from(*c)] = u8::try_from(i).ok()?;
    }
    let body = text.strip_suffix("==").or_else(|| text.strip_suffix('='));
    let body = body.unwrap_or(text).as_bytes();
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        let v = value[usize::from(c)];
        if v == 255 {
            return None;
        }
        acc = (acc << 6 | u32::from(v)) & 0xff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_goes_both_ways() {
        for (plain, coded) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\xfe\x00", "//4A"),
        ] {
            assert_eq!(encode(plain), coded);
            assert_eq!(decode(coded).as_deref(), Some(plain));
        }
        assert_eq!(decode("Zm9v!"), None);
        assert_eq!(decode("Z"), None);
    }
}
