//! `--shard K/N` (design §11.7): a batch's share of its inputs when N
//! workers, each given the same input and its own K, cover it together,
//! each input exactly once. An input belongs to a share by a key every
//! worker computes alike, whatever machine or build of axe it runs: a JSON
//! Lines input's `id`, hashed (so a file reordered or grown keeps each id
//! in its share), else its line number, dealt round the shares in turn (so
//! shares are even), and for `--each-file` the file's path, hashed.

use super::inputs::{Body, Input};

/// The most shares a batch may be split into.
pub const MAX_SHARDS: u64 = 1_000_000;

/// Share `k` (from 0) of `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    k: u64,
    n: u64,
}

impl Shard {
    /// Reads `K/N`: `0 <= K < N <= MAX_SHARDS`. K counts from 0, as
    /// Kubernetes' `JOB_COMPLETION_INDEX` does, so that a Job's pod can
    /// pass `$(JOB_COMPLETION_INDEX)` with no shell to add one (an image
    /// `FROM scratch` has none). The error is the one line the command
    /// prints.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = |why: &str| format!("--shard {text}: {why}");
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| bad("give K/N, share K (from 0) of N, e.g. 0/8 to 7/8"))?;
        let number = |s: &str| s.trim().parse::<u64>().ok();
        let (Some(k), Some(n)) = (number(k), number(n)) else {
            return Err(bad("K and N are whole numbers, e.g. 2/8"));
        };
        if n == 0 || n > MAX_SHARDS {
            return Err(bad(&format!("N is 1 to {MAX_SHARDS}")));
        }
        if k >= n {
            return Err(bad(&format!("K is 0 to {} (shares count from 0)", n - 1)));
        }
        Ok(Shard { k, n })
    }

    /// Whether `input` is in this share.
    pub fn keeps(&self, input: &Input) -> bool {
        self.share(input) == self.k
    }

    /// The share of `input`, from 0.
    fn share(&self, input: &Input) -> u64 {
        if let Some(id) = input.id() {
            return self.reduce(hash(&["id", &id]));
        }
        match &input.body {
            Body::File { shown, .. } => self.file_share(shown),
            _ => input.line.saturating_sub(1) % self.n,
        }
    }

    /// Whether the file `--each-file` shows as `shown` is in this share.
    pub fn keeps_file(&self, shown: &str) -> bool {
        self.file_share(shown) == self.k
    }

    fn file_share(&self, shown: &str) -> u64 {
        self.reduce(hash(&["path", shown]))
    }

    /// A hash's share: its high bits, which the finisher has mixed, not
    /// its low ones (multiply and shift rather than a remainder).
    fn reduce(&self, h: u64) -> u64 {
        ((u128::from(h) * u128::from(self.n)) >> 64) as u64
    }
}

/// FNV-1a (64 bits) over `parts`, each followed by a 0 byte, then
/// MurmurHash3's 64-bit finisher: a hash fixed by its definition, unlike
/// std's, which may change between Rust releases and so between two
/// workers' builds. FNV-1a alone mixes too little: the ids 1 to 9 all
/// fell in one share of 3, 10 to 40 in another.
fn hash(parts: &[&str]) -> u64 {
    let mut h = fnv1a(parts);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain(&[0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_of_n_is_read_and_checked() {
        assert_eq!(Shard::parse("2/8"), Ok(Shard { k: 2, n: 8 }));
        assert_eq!(Shard::parse("0/1"), Ok(Shard { k: 0, n: 1 }));
        for bad in ["4/4", "5/4", "1/1", "0/0", "x/4", "3", "-1/4", "1/2000000"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_hash_is_fnv1a_as_published() {
        // FNV-1a 64 of "a" is af63dc4c8601ec8c; ours adds a 0 byte.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        h ^= u64::from(b'a');
        h = h.wrapping_mul(0x0100_0000_01b3);
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(&["a"]), h.wrapping_mul(0x0100_0000_01b3));
        // Fixed for every build: a worker's share never depends on which
        // axe it runs (the figure from a Python rendering of the same).
        assert_eq!(hash(&["a"]), 9_726_698_790_539_242_981);
    }

    #[test]
    fn small_ids_spread_over_the_shares() {
        let shard = Shard { k: 0, n: 3 };
        let shares: std::collections::BTreeSet<u64> = (1..=9)
            .map(|i| shard.reduce(hash(&["id", &i.to_string()])))
            .collect();
        assert_eq!(shares.len(), 3, "{shares:?}");
    }
}
