//! What a run's spans share (design §7.9): the names they repeat (agents,
//! models, providers, tools), the run's id, and the attribute lists many
//! spans have alike — a fan-out's 256 sub-agents' `invoke_agent` spans
//! one, their `chat` spans another, their callers' `execute_tool` spans a
//! third. Each is kept once and counted, not built and copied into every
//! span: a span so built held its own list of a dozen attributes while it
//! was open, and a wide fan-out's open spans were most of export's memory
//! and of its cost (measured, design §7.9).

use std::sync::{Arc, PoisonError, RwLock};

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
    /// the same few), so under locks they read at once: a mutex here made
    /// them wait on one another in the kernel (measured, design §7.9).
    names: RwLock<Vec<Arc<str>>>,
    lists: RwLock<Vec<List>>,
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
        let find = |names: &[Arc<str>]| names.iter().find(|n| &***n == v).cloned();
        let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = find(&names) {
            return n;
        }
        drop(names);
        let mut names = self.names.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = find(&names) {
            return n;
        }
        let n: Arc<str> = Arc::from(v);
        if names.len() < KEPT {
            names.push(n.clone());
        }
        n
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
            names: RwLock::default(),
            lists: RwLock::default(),
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
        let find = |lists: &[List]| {
            let l = lists.iter().find(|l| l.is(op, parts, nums))?;
            Some((l.of.clone(), l.attrs.clone()))
        };
        let lists = self.lists.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = find(&lists) {
            return found;
        }
        drop(lists);
        let (of, attrs) = make(self);
        let attrs = Arc::new(SharedAttrs::new(attrs));
        let mut lists = self.lists.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = find(&lists) {
            return found;
        }
        if lists.len() < KEPT {
            lists.push(List {
                op,
                parts: parts.iter().map(|p| Box::from(*p)).collect(),
                nums,
                of: of.clone(),
                attrs: attrs.clone(),
            });
        }
        (of, attrs)
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
}
