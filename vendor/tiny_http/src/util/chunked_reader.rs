// axe: AXE.md. A chunked request body, its framing bounded. The published
// code decoded it with chunked_transfer's `Decoder`, which read a chunk-size
// line of any length into memory before the body's own limit could count a
// byte of it (600 MiB of hex digits on one connection took `axe serve` from
// 5 to 615 MB), and skipped a chunk extension of any length: a client
// streaming one at full speed held the reading thread for as long as it
// liked, no byte of body ever read.

use std::io::{Error, ErrorKind, Read, Result};

/// The longest chunk-size line (the size, its extensions, without CRLF),
/// and the longest trailer line.
const MAX_LINE: usize = 4096;

/// The most trailer lines after the last chunk.
const MAX_TRAILERS: usize = 100;

/// Reads the data of a `Transfer-Encoding: chunked` body from `source`:
/// `size[;ext]CRLF data CRLF`, ..., `0CRLF`, trailers, `CRLF`.
pub struct ChunkedReader<R> {
    source: R,
    /// Bytes left in the chunk being read; none between chunks.
    left: Option<usize>,
    done: bool,
}

impl<R: Read> ChunkedReader<R> {
    pub fn new(source: R) -> ChunkedReader<R> {
        ChunkedReader {
            source,
            left: None,
            done: false,
        }
    }

    fn byte(&mut self) -> Result<u8> {
        let mut b = [0u8];
        loop {
            match self.source.read(&mut b) {
                Ok(0) => return Err(invalid("the body ended inside its chunked framing")),
                Ok(_) => return Ok(b[0]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// One CRLF-terminated line of at most `MAX_LINE` bytes, without it.
    fn line(&mut self) -> Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            match self.byte()? {
                b'\n' if line.last() == Some(&b'\r') => {
                    line.pop();
                    return Ok(line);
                }
                _ if line.len() > MAX_LINE => {
                    return Err(invalid("a chunk-size or trailer line is too long"));
                }
                b => line.push(b),
            }
        }
    }

    fn size(&mut self) -> Result<usize> {
        let line = self.line()?;
        let digits = line.split(|b| *b == b';').next().unwrap_or(&[]);
        let digits = std::str::from_utf8(digits).map_err(|_| invalid("a bad chunk size"))?;
        let digits = digits.trim_matches(|c| c == ' ' || c == '\t');
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("a bad chunk size"));
        }
        usize::from_str_radix(digits, 16).map_err(|_| invalid("a chunk size too large"))
    }

    /// After the last chunk: trailer lines, ignored, up to the empty one.
    fn trailers(&mut self) -> Result<()> {
        for _ in 0..=MAX_TRAILERS {
            if self.line()?.is_empty() {
                return Ok(());
            }
        }
        Err(invalid("too many trailer lines"))
    }
}

impl<R: Read> Read for ChunkedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let left = match self.left {
            Some(n) => n,
            None => {
                let n = self.size()?;
                if n == 0 {
                    self.trailers()?;
                    self.done = true;
                    return Ok(0);
                }
                n
            }
        };
        let want = buf.len().min(left);
        let read = self.source.read(&mut buf[..want])?;
        if read == 0 {
            return Err(invalid("the body ended inside a chunk"));
        }
        if read == left {
            if !self.line()?.is_empty() {
                return Err(invalid("a chunk longer than its size"));
            }
            self.left = None;
        } else {
            self.left = Some(left - read);
        }
        Ok(read)
    }
}

fn invalid(why: &str) -> Error {
    Error::new(ErrorKind::InvalidData, why.to_string())
}

#[cfg(test)]
mod test {
    use super::ChunkedReader;
    use std::io::Read;

    fn decode(input: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ChunkedReader::new(input).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn chunks_extensions_and_trailers() {
        let got = decode(b"3\r\nhel\r\nB;x=y\r\nlo world!!!\r\n0\r\nX-T: 1\r\n\r\n").unwrap();
        assert_eq!(got, b"hello world!!!");
    }

    #[test]
    fn framing_is_bounded_and_checked() {
        let mut long = vec![b'1'; 10_000];
        long.extend_from_slice(b"\r\n");
        assert!(decode(&long).is_err());
        let mut ext = b"1;".to_vec();
        ext.extend(std::iter::repeat_n(b'a', 10_000));
        assert!(decode(&ext).is_err());
        for bad in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"3\r\nhello\r\n",
            b"3\r\nhe",
            b"1\r\na\r\n",
        ] {
            assert!(decode(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(decode(b"FFFFFFFFFFFFFFFFFF\r\n").is_err());
    }
}
