//! What a run's spans share (design §7.9): the names they repeat (agents,
//! models, providers, tools), the run's id, and the attribute lists many
//! spans have alike — a fan-out's 256 sub-agents' `invoke_agent` spans
//! one, their `chat` spans another, their callers' `execute_tool` spans a
//! third. Each is kept once and counted, not built and copied into every
//! span: a span so built held its own list of a dozen attributes while it
//! was open, and a wide fan-out's open spans were most of export's memory
//! and of its cost (measured, design §7.9).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::otlp::{AttrValue, SharedAttrs};

/// The names, and the lists, kept at most: a run has few; past them a
/// name is copied, and a list built, for each span, as before.
const KEPT: usize = 32;

/// What a run's spans share.
#[derive(Debug)]
pub struct Shared {
    /// The run's id: a ledger's spans are of its one run.
    run_id: Arc<str>,
    /// Read far more often than written (a fan-out's threads all look up
    /// the same few), so read without a lock: a mutex here made them wait
    /// on one another in the kernel, and a read lock is a write to memory
    /// every core shares (measured, design §7.9).
    names: Kept<Arc<str>>,
    lists: Kept<List>,
}

/// Up to [`KEPT`] values, added and never removed: read without a lock
/// (each slot set once), added to under one.
#[derive(Debug)]
struct Kept<T> {
    slots: Box<[OnceLock<T>]>,
    /// How many slots are set: those before it are.
    len: AtomicUsize,
    adding: Mutex<()>,
}

impl<T> Kept<T> {
    fn new() -> Kept<T> {
        Kept {
            slots: (0..KEPT).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
            adding: Mutex::new(()),
        }
    }

    /// The first value kept that `is`.
    fn find(&self, is: impl Fn(&T) -> bool) -> Option<&T> {
        let set = &self.slots[..self.len.load(Ordering::Acquire)];
        set.iter().filter_map(OnceLock::get).find(|t| is(t))
    }

    /// The first value kept that `is`, else `made` kept (the one given
    /// back, when there is no room left).
    fn find_or_add(&self, is: impl Fn(&T) -> bool, made: T) -> Result<&T, T> {
        let _adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = self.find(&is) {
            return Ok(t);
        }
        let n = self.len.load(Ordering::Acquire);
        let Some(slot) = self.slots.get(n) else {
            return Err(made);
        };
        // Empty: slots are set only here, in order, under the lock.
        let kept = slot.get_or_init(|| made);
        self.len.store(n + 1, Ordering::Release);
        Ok(kept)
    }
}

/// An attribute list spans share, and what it was made of.
#[derive(Debug)]
struct List {
    /// The operation of the spans it is for.
    op: &'static str,
    /// The strings it was made of, in the order the maker was given them.
    parts: Box<[Box<str>]>,
    /// The numbers it was made of.
    nums: [u64; 3],
    /// What the spans' names are of (`chat <model>`).
    of: Arc<str>,
    attrs: Arc<SharedAttrs>,
}

impl List {
    fn is(&self, op: &str, parts: &[&str], nums: [u64; 3]) -> bool {
        self.op == op
            && self.nums == nums
            && self.parts.len() == parts.len()
            && self.parts.iter().zip(parts).all(|(a, b)| **a == **b)
    }
}

/// What [`Shared::list`]'s maker gives: what the spans' names are of, and
/// their shared attributes.
pub type Made = (Arc<str>, Vec<(&'static str, AttrValue)>);

impl Shared {
    /// `v`, one of the names spans repeat: shared with the spans before.
    pub fn name(&self, v: &str) -> Arc<str> {
        let is = |n: &Arc<str>| **n == *v;
        if let Some(n) = self.names.find(is) {
            return n.clone();
        }
        match self.names.find_or_add(is, Arc::from(v)) {
            Ok(kept) => kept.clone(),
            Err(made) => made,
        }
    }

    /// `v`, one of the names spans repeat, as an attribute's value.
    pub fn value(&self, v: &str) -> AttrValue {
        AttrValue::Shared(self.name(v))
    }

    /// `gen_ai.provider.name`: the conventions' name for the providers
    /// they list, else the provider's name in axe.
    pub fn provider(&self, name: &str) -> AttrValue {
        match name {
            "bedrock" => AttrValue::Static("aws.bedrock"),
            other => self.value(other),
        }
    }

    /// The run `run_id`'s.
    pub fn new(run_id: &str) -> Shared {
        Shared {
            run_id: run_id.into(),
            names: Kept::new(),
            lists: Kept::new(),
        }
    }

    /// `axe.run_id`: the run's id, shared.
    pub fn run_id(&self) -> AttrValue {
        AttrValue::Shared(self.run_id.clone())
    }

    /// The attributes the spans of `op` made of `parts` and `nums` share,
    /// and what their names are of: the list kept, else `make`'s (kept
    /// while there is room). Everything a list says must be in `parts`
    /// and `nums`, but the run's id (the same in every list of a run).
    pub fn list(
        &self,
        op: &'static str,
        parts: &[&str],
        nums: [u64; 3],
        make: impl FnOnce(&Shared) -> Made,
    ) -> (Arc<str>, Arc<SharedAttrs>) {
        let is = |l: &List| l.is(op, parts, nums);
        let found = |l: &List| (l.of.clone(), l.attrs.clone());
        if let Some(l) = self.lists.find(is) {
            return found(l);
        }
        let (of, attrs) = make(self);
        let made = List {
            op,
            parts: parts.iter().map(|p| Box::from(*p)).collect(),
            nums,
            of,
            attrs: Arc::new(SharedAttrs::new(attrs)),
        };
        match self.lists.find_or_add(is, made) {
            Ok(kept) => found(kept),
            Err(made) => (made.of, made.attrs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list is shared only by spans made of the same parts and numbers.
    #[test]
    fn a_list_is_shared_by_what_it_was_made_of() {
        let shared = Shared::new("r");
        let made = std::cell::Cell::new(0);
        let get = |parts: &[&str], nums| {
            shared.list("chat", parts, nums, |s| {
                made.set(made.get() + 1);
                (s.name(parts[0]), vec![("k", s.value(parts[1]))])
            })
        };
        let (of, a) = get(&["m", "openai"], [0, 0, 0]);
        let (_, b) = get(&["m", "openai"], [0, 0, 0]);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*of, "m");
        assert_eq!(made.get(), 1);
        let (_, c) = get(&["m", "anthropic"], [0, 0, 0]);
        let (_, d) = get(&["m", "openai"], [1, 0, 0]);
        assert_eq!(made.get(), 3);
        assert_eq!(c.list[0].1, AttrValue::Shared("anthropic".into()));
        assert!(!Arc::ptr_eq(&a, &d));
    }

    /// Past its room a name is made for each span, not kept; those kept
    /// stay shared.
    #[test]
    fn past_the_room_a_name_is_made_not_kept() {
        let shared = Shared::new("r");
        for i in 0..KEPT {
            shared.name(&i.to_string());
        }
        let (a, b) = (shared.name("late"), shared.name("late"));
        assert_eq!(&*a, "late");
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(&shared.name("0"), &shared.name("0")));
    }
}
