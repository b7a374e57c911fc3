//! Lowercase hexadecimal, the one codec for it: a trace context's ids
//! (`traceparent`, OTLP's JSON) and SigV4's digests and signature.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(2 * bytes.len());
    encode_into(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

/// Lowercase hex of `bytes`, after what `out` holds.
pub fn encode_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend(
        bytes
            .iter()
            .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]),
    );
}

/// Lowercase hex of `bytes` over the start of `out`, two digits a byte,
/// in place: a `traceparent` header's value written without an iterator
/// (design §7.9).
pub fn encode_to_slice(out: &mut [u8], bytes: &[u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_two_lowercase_digits_each() {
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::encode(&[]), "");
        let mut out = *b"00-xxxx";
        super::encode_to_slice(&mut out[3..], &[0xa5, 0x0f]);
        assert_eq!(&out, b"00-a50f");
    }
}
