//! A span's own attributes (design §7.9): the first eight held in the span
//! itself, any more in a list. A span is one allocation, not two (the span
//! and its list), and every span one size: with its list apart a fan-out's
//! spans were six allocations a sub-agent in five sizes, and malloc's
//! samples grew most in a profile of the fan-out with export on; musl's
//! (whose groups of a size are mapped and unmapped a page at a time) made
//! more system calls of them (counted, design §7.9).

use super::otlp::{AttrValue, Attrs};

/// Held in the span: an `invoke_agent` span's (its path, depth, usage,
/// turns and cost), a `chat` span's usual ones.
const INLINE: usize = 8;

/// A slot not used yet.
const UNUSED: (&str, AttrValue) = ("", AttrValue::Bool(false));

/// A span's own attributes, in the order they were added.
#[derive(Debug, Clone)]
pub struct Own {
    inline: [(&'static str, AttrValue); INLINE],
    len: usize,
    more: Vec<(&'static str, AttrValue)>,
}

impl Default for Own {
    fn default() -> Own {
        Own {
            inline: [UNUSED; INLINE],
            len: 0,
            more: Vec::new(),
        }
    }
}

impl Own {
    pub fn push(&mut self, kv: (&'static str, AttrValue)) {
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = kv;
                self.len += 1;
            }
            None => self.more.push(kv),
        }
    }

    /// Them, as two lists: those held in the span, then the rest.
    pub fn lists(&self) -> [&Attrs; 2] {
        [&self.inline[..self.len], &self.more]
    }

    pub fn iter(&self) -> impl Iterator<Item = &(&'static str, AttrValue)> {
        let [held, more] = self.lists();
        held.iter().chain(more)
    }

    /// The value of `key`, to be set again.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut AttrValue> {
        let held = &mut self.inline[..self.len];
        held.iter_mut()
            .chain(self.more.iter_mut())
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the eight held, they go on in the list, in order.
    #[test]
    fn attributes_past_those_held_are_kept_in_order() {
        let mut own = Own::default();
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        for (n, k) in (0..).zip(keys) {
            own.push((k, AttrValue::Int(n)));
        }
        let seen: Vec<&str> = own.iter().map(|(k, _)| *k).collect();
        assert_eq!(seen, keys);
        assert_eq!(own.lists()[1].len(), 2);
        *own.get_mut("j").unwrap() = AttrValue::Int(99);
        *own.get_mut("b").unwrap() = AttrValue::Int(98);
        assert_eq!(own.lists()[1][1].1, AttrValue::Int(99));
        assert_eq!(own.lists()[0][1].1, AttrValue::Int(98));
        assert!(own.get_mut("z").is_none());
    }
}
