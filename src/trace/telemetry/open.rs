//! The spans open in a run, by agent run (design §7.9): each agent run's
//! place holds its own [`AgentSpans`] — its `invoke_agent` span, its
//! `chat` span and its `execute_tool` spans by call id — so that an event
//! finds its spans through the place it comes with. No map of the run's
//! agent runs is kept: hashing an agent run's path to find its entry, a
//! shard's lock and the entry's key were a fifth of a fan-out's export
//! (measured, design §7.9).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::context::SpanContext;
use super::otlp::Span;

/// How the map of an agent run's tool spans hashes a call's id: foldhash,
/// seeded at random once a process, not std's SipHash, which with its
/// finish was ~300 instructions a call's id, three times a call (callgrind,
/// design §7.9). An id is the model's; one response's calls are too few,
/// and the seed unknown to it, for collisions to cost more than a search.
pub type ToolKeys = foldhash::fast::RandomState;

/// Which of an agent run's spans.
#[derive(Debug, Clone, Copy)]
pub enum Slot<'a> {
    Agent,
    Chat,
    /// A tool call's, by its id.
    Tool(&'a str),
}

/// One agent run's spans open but its tool calls', and the span it runs
/// under.
#[derive(Debug, Default)]
pub struct Spans {
    /// The `execute_tool` span of the `call_agent` call that runs it (a
    /// sub-agent's), said by its caller as it starts it.
    pub under: Option<SpanContext>,
    pub agent: Option<Box<Span>>,
    pub chat: Option<Box<Span>>,
}

impl Spans {
    fn get(&mut self, slot: Slot) -> Option<&mut Span> {
        match slot {
            Slot::Agent => self.agent.as_deref_mut(),
            Slot::Chat => self.chat.as_deref_mut(),
            Slot::Tool(_) => None,
        }
    }

    fn take(&mut self, slot: Slot) -> Option<Box<Span>> {
        match slot {
            Slot::Agent => self.agent.take(),
            Slot::Chat => self.chat.take(),
            Slot::Tool(_) => None,
        }
    }
}

/// Tool spans open by call id, in one shard of [`SHARDS`].
type Tools = HashMap<Arc<str>, Box<Span>, ToolKeys>;

/// The shards an agent run's tool spans are kept in, by their call id:
/// the calls of a fan-out open, mark and close their spans from their
/// helper threads at once, and under one lock they waited on one another
/// in the kernel (`perf`: ~30 futex calls a 256-way fan-out, design §7.9).
const SHARDS: usize = 16;

/// An agent run's spans open, held by its place (and so by the clones of
/// its place: the ledger's list of the runs going on, which ends them when
/// the run is interrupted), in the place's own allocation: an agent run's
/// spans cost no allocation of their own (design §7.9). Its tool calls'
/// spans are apart, in shards made with its first call.
#[derive(Debug, Default)]
pub struct AgentSpans {
    main: Mutex<Spans>,
    tools: OnceLock<Box<[Mutex<Tools>; SHARDS]>>,
}

impl AgentSpans {
    /// `f` on the spans open but its tool calls'.
    pub fn update<T>(&self, f: impl FnOnce(&mut Spans) -> T) -> T {
        f(&mut self.main.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The shard the tool span of the call `id` is in, if any was made.
    fn tools(&self, id: &str) -> Option<MutexGuard<'_, Tools>> {
        let shards = self.tools.get()?;
        // Which shard, by a hash of fixed keys: a model's ids that fell in
        // one would cost what one lock did, never more.
        let n = foldhash::fast::FixedState::default().hash_one(id) as usize % SHARDS;
        Some(shards[n].lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `f` on the span open in `slot`, if there is one.
    pub fn with<T>(&self, slot: Slot, f: impl FnOnce(&mut Span) -> T) -> Option<T> {
        match slot {
            Slot::Tool(id) => self.tools(id)?.get_mut(id).map(|s| f(s)),
            _ => self.update(|s| s.get(slot).map(f)),
        }
    }

    /// The span open in `slot`, no longer open.
    pub fn take(&self, slot: Slot) -> Option<Box<Span>> {
        match slot {
            Slot::Tool(id) => self.tools(id)?.remove(id),
            _ => self.update(|s| s.take(slot)),
        }
    }

    /// `span`, the tool span of the call `id` (its id shared with the
    /// span's attribute, not copied); the shards, when they are made, with
    /// `keys`: made with keys of their own they read the thread's, which
    /// the first time on each of a fan-out's helper threads asks the kernel
    /// for random bytes (measured).
    pub fn put_tool(&self, id: Arc<str>, span: Box<Span>, keys: &ToolKeys) {
        self.tools.get_or_init(|| {
            Box::new(std::array::from_fn(|_| {
                Mutex::new(HashMap::with_hasher(keys.clone()))
            }))
        });
        if let Some(mut tools) = self.tools(&id) {
            tools.insert(id, span);
        }
    }
}

/// Places are equal by where they are, not by the spans they hold.
impl PartialEq for AgentSpans {
    fn eq(&self, _: &AgentSpans) -> bool {
        true
    }
}

impl Eq for AgentSpans {}
