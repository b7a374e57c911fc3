//! A connection's buffers, the input one grown as it fills (design §3.15,
//! sixth round).
//!
//! ureq's `LazyBuffers` zeroes the whole input buffer (the response head's
//! bound, 8 KiB) when a connection opens, and grows it to 10 KiB more
//! than it holds before every request with a body, zeroing that too, for
//! a scratch area only a chunked body uses: five pages written per
//! connection, about 1.3 MiB at a 256-way fan-out, for answers of a few
//! hundred bytes. Here the input buffer starts at 2 KiB and doubles when
//! less than a quarter of it is free or a read filled all that was free
//! (more is likely waiting: a fast stream is read 8 KiB at a time, as
//! `streamed.rs` expects), up to the same bound, so a longer head still
//! fails as too big at the same length; the scratch area is what is free
//! of it, grown only when less than 1 KiB is.

use ureq::unversioned::transport::Buffers;

/// The input buffer's first size.
const FIRST: usize = 2 * 1024;
/// The least scratch area handed out for a chunked body's piece.
const LEAST_SCRATCH: usize = 1024;

/// Input and output buffers; the input holds `consumed..filled` unread.
#[derive(Debug)]
pub(super) struct Grown {
    input: Vec<u8>,
    filled: usize,
    consumed: usize,
    /// The input buffer's bound.
    limit: usize,
    output: Vec<u8>,
    output_size: usize,
    /// The last consume took something (ureq's `can_use_input`).
    progress: bool,
    /// The last read filled all the room it was given.
    filled_up: bool,
}

impl Grown {
    pub(super) fn new(limit: usize, output_size: usize) -> Grown {
        Grown {
            input: Vec::new(),
            filled: 0,
            consumed: 0,
            limit: limit.max(1),
            output: Vec::new(),
            output_size: output_size.max(1),
            progress: false,
            filled_up: false,
        }
    }

    /// Moves what is unread to the front when all of it was read or it
    /// sits in the back half, as ureq's buffer does.
    fn shift(&mut self) {
        if self.consumed == 0 {
            return;
        }
        if self.consumed == self.filled {
            (self.consumed, self.filled) = (0, 0);
        } else if self.filled > self.input.len() / 2 {
            self.input.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
    }

    /// Grows the input buffer to `size` (never shrinks it).
    #[inline(never)]
    fn grow_to(&mut self, size: usize) {
        if size > self.input.len() {
            self.input.resize(size, 0);
        }
    }
}

impl Buffers for Grown {
    fn output(&mut self) -> &mut [u8] {
        if self.output.is_empty() {
            self.output = vec![0; self.output_size];
        }
        &mut self.output
    }

    fn input(&self) -> &[u8] {
        &self.input[self.consumed..self.filled]
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.shift();
        let len = self.input.len();
        if len < self.limit && (self.filled_up || len - self.filled < len / 4 + 1) {
            self.filled_up = false;
            self.grow_to((len * 2).max(FIRST).min(self.limit));
        }
        &mut self.input[self.filled..]
    }

    fn input_appended(&mut self, amount: usize) {
        self.filled_up = amount > 0 && self.filled + amount >= self.input.len();
        self.filled = (self.filled + amount).min(self.input.len());
    }

    fn input_consume(&mut self, amount: usize) {
        self.progress = amount > 0;
        self.consumed = (self.consumed + amount).min(self.filled);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        self.shift();
        if self.input.len() - self.filled < LEAST_SCRATCH {
            // At least the first read's size: ureq asks for this scratch
            // before every request with a body, before the answer's first
            // read, which would otherwise find 1 KiB and read a head in two.
            self.grow_to((self.filled + LEAST_SCRATCH).max(FIRST.min(self.limit)));
        }
        if self.output.is_empty() {
            self.output = vec![0; self.output_size];
        }
        (&mut self.input[self.filled..], &mut self.output)
    }

    fn can_use_input(&self) -> bool {
        self.filled > self.consumed && self.progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends `bytes` as a transport does: into the free part, then told.
    fn append(b: &mut Grown, bytes: &[u8]) -> usize {
        let free = b.input_append_buf();
        let n = free.len().min(bytes.len());
        free[..n].copy_from_slice(&bytes[..n]);
        b.input_appended(n);
        n
    }

    #[test]
    fn the_input_grows_to_its_bound_and_no_further() {
        let mut b = Grown::new(8 * 1024 + 1, 4096);
        assert_eq!(b.input_append_buf().len(), FIRST);
        let head = vec![b'h'; 20_000];
        let mut read = 0;
        loop {
            let n = append(&mut b, &head[read..]);
            if n == 0 {
                break;
            }
            read += n;
        }
        // Nothing consumed: the buffer holds exactly its bound, as ureq's
        // fixed one did, and offers no more room.
        assert_eq!(read, 8 * 1024 + 1);
        assert_eq!(b.input(), &head[..read]);
        assert!(b.input_append_buf().is_empty());
    }

    #[test]
    fn a_request_with_a_body_leaves_the_answers_first_read_its_whole_size() {
        let mut b = Grown::new(8 * 1024 + 1, 4096);
        let (scratch, _) = b.tmp_and_output();
        assert!(scratch.len() >= LEAST_SCRATCH);
        assert_eq!(b.input_append_buf().len(), FIRST);
    }

    #[test]
    fn what_is_unread_stays_in_order_across_consumes_and_shifts() {
        let mut b = Grown::new(64, 16);
        let data: Vec<u8> = (0..200u8).collect();
        let (mut written, mut seen) = (0, Vec::new());
        while seen.len() < data.len() {
            written += append(&mut b, &data[written..]);
            let unread = b.input().to_vec();
            // Read at most 10 bytes each time, as a parser that needs more.
            let take = unread.len().min(10);
            seen.extend_from_slice(&unread[..take]);
            b.input_consume(take);
            assert_eq!(b.can_use_input(), take > 0 && take < unread.len());
        }
        assert_eq!(seen, data);
        assert!(b.input.len() <= 64);
    }

    #[test]
    fn reads_that_fill_it_grow_it_though_each_is_consumed_at_once() {
        // A fast stream: every read fills the room given and is read out
        // whole before the next.
        let mut b = Grown::new(8 * 1024 + 1, 4096);
        let mut sizes = Vec::new();
        for _ in 0..5 {
            let n = append(&mut b, &[b'x'; 20_000]);
            sizes.push(n);
            b.input_consume(n);
        }
        assert_eq!(sizes, [2048, 4096, 8192, 8193, 8193]);
    }

    #[test]
    fn a_chunked_pieces_scratch_area_is_never_empty() {
        let mut b = Grown::new(4, 16);
        append(&mut b, b"abcd");
        let (tmp, output) = b.tmp_and_output();
        assert!(tmp.len() >= LEAST_SCRATCH);
        assert_eq!(output.len(), 16);
        assert_eq!(b.input(), b"abcd");
    }
}
