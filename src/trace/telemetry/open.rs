//! The spans open in a run, by agent run (design §7.9): each agent run's
//! place holds its own [`AgentSpans`] — its `invoke_agent` span, its
//! `chat` span and its `execute_tool` spans by call id — so that an event
//! finds its spans through the place it comes with. No map of the run's
//! agent runs is kept: hashing an agent run's path to find its entry, a
//! shard's lock and the entry's key were a fifth of a fan-out's export
//! (measured, design §7.9).

use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::{Arc, Mutex, PoisonError};

use super::context::SpanContext;
use super::otlp::Span;

/// Which of an agent run's spans.
#[derive(Debug, Clone, Copy)]
pub enum Slot<'a> {
    Agent,
    Chat,
    /// A tool call's, by its id.
    Tool(&'a str),
}

/// One agent run's spans open, and the span it runs under.
#[derive(Debug, Default)]
pub struct Spans {
    /// The `execute_tool` span of the `call_agent` call that runs it (a
    /// sub-agent's), said by its caller as it starts it.
    pub under: Option<SpanContext>,
    pub agent: Option<Box<Span>>,
    pub chat: Option<Box<Span>>,
    /// By call id: a fan-out's caller has hundreds open at once, which a
    /// list searched would make quadratic (measured). Made with the first.
    tools: Option<HashMap<Arc<str>, Box<Span>>>,
}

impl Spans {
    fn get(&mut self, slot: Slot) -> Option<&mut Span> {
        match slot {
            Slot::Agent => self.agent.as_deref_mut(),
            Slot::Chat => self.chat.as_deref_mut(),
            Slot::Tool(id) => self.tools.as_mut()?.get_mut(id).map(|s| &mut **s),
        }
    }

    fn take(&mut self, slot: Slot) -> Option<Box<Span>> {
        match slot {
            Slot::Agent => self.agent.take(),
            Slot::Chat => self.chat.take(),
            Slot::Tool(id) => self.tools.as_mut()?.remove(id),
        }
    }

    /// `span`, the tool span of the call `id` (its id shared with the
    /// span's attribute, not copied); the map, when it is made, with
    /// `keys`: made with keys of its own it reads the thread's, which the
    /// first time on each of a fan-out's helper threads asks the kernel for
    /// random bytes (measured).
    pub fn put_tool(&mut self, id: Arc<str>, span: Box<Span>, keys: &RandomState) {
        self.tools
            .get_or_insert_with(|| HashMap::with_hasher(keys.clone()))
            .insert(id, span);
    }
}

/// An agent run's spans open, held by its place (and so by the clones of
/// its place: the ledger's list of the runs going on, which ends them when
/// the run is interrupted), in the place's own allocation: an agent run's
/// spans cost no allocation of their own (design §7.9).
#[derive(Debug, Default)]
pub struct AgentSpans(Mutex<Spans>);

impl AgentSpans {
    /// `f` on the spans open.
    pub fn update<T>(&self, f: impl FnOnce(&mut Spans) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `f` on the span open in `slot`, if there is one.
    pub fn with<T>(&self, slot: Slot, f: impl FnOnce(&mut Span) -> T) -> Option<T> {
        self.update(|s| s.get(slot).map(f))
    }

    /// The span open in `slot`, no longer open.
    pub fn take(&self, slot: Slot) -> Option<Box<Span>> {
        self.update(|s| s.take(slot))
    }
}

/// Places are equal by where they are, not by the spans they hold.
impl PartialEq for AgentSpans {
    fn eq(&self, _: &AgentSpans) -> bool {
        true
    }
}

impl Eq for AgentSpans {}
