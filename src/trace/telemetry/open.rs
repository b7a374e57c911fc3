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

/// A span open, and the tool span its thread had open before it.
#[derive(Debug)]
pub struct Open {
    pub span: Box<Span>,
    pub outer: Option<Current>,
}

/// A tool span open on a thread: its context, its agent run's spans and
/// its call's id (counted, shared with the span and the map).
#[derive(Debug, Clone)]
pub struct Current {
    pub ctx: SpanContext,
    pub spans: AgentSpans,
    pub id: Arc<str>,
}

/// One agent run's spans open.
#[derive(Debug, Default)]
pub struct Spans {
    pub agent: Option<Open>,
    pub chat: Option<Open>,
    /// By call id: a fan-out's caller has hundreds open at once, which a
    /// list searched would make quadratic (measured). Made with the first.
    tools: Option<HashMap<Arc<str>, Open>>,
}

impl Spans {
    fn get(&mut self, slot: Slot) -> Option<&mut Open> {
        match slot {
            Slot::Agent => self.agent.as_mut(),
            Slot::Chat => self.chat.as_mut(),
            Slot::Tool(id) => self.tools.as_mut()?.get_mut(id),
        }
    }

    fn take(&mut self, slot: Slot) -> Option<Open> {
        match slot {
            Slot::Agent => self.agent.take(),
            Slot::Chat => self.chat.take(),
            Slot::Tool(id) => self.tools.as_mut()?.remove(id),
        }
    }

    /// `open`, the tool span of the call `id` (its id shared, not copied);
    /// the map, when it is made, with `keys`: made with keys of its own it
    /// reads the thread's, which the first time on each of a fan-out's
    /// helper threads asks the kernel for random bytes (measured).
    pub fn put_tool(&mut self, id: Arc<str>, open: Open, keys: &RandomState) {
        self.tools
            .get_or_insert_with(|| HashMap::with_hasher(keys.clone()))
            .insert(id, open);
    }
}

/// An agent run's spans open, held by its place (and by the places cloned
/// from it: the ledger's list of the runs going on, which ends them when
/// the run is interrupted). Empty when no spans are exported.
#[derive(Debug, Clone, Default)]
pub struct AgentSpans(Option<Arc<Mutex<Spans>>>);

impl AgentSpans {
    /// A new agent run's: room for its spans when they are exported.
    pub fn new() -> AgentSpans {
        AgentSpans(super::export::exporter().map(|_| Arc::default()))
    }

    /// `f` on the spans open; `T`'s default when spans are not exported.
    /// Not wrapped in an `Option`: each layer was one more copy of what
    /// `f` returns at opt-level "z" (measured when an open span was moved
    /// whole, before spans were boxed).
    pub fn update<T: Default>(&self, f: impl FnOnce(&mut Spans) -> T) -> T {
        match &self.0 {
            Some(spans) => f(&mut spans.lock().unwrap_or_else(PoisonError::into_inner)),
            None => T::default(),
        }
    }

    /// `f` on the span open in `slot`, if there is one.
    pub fn with<T>(&self, slot: Slot, f: impl FnOnce(&mut Open) -> T) -> Option<T> {
        self.update(|s| s.get(slot).map(f))
    }

    /// The span open in `slot`, no longer open.
    pub fn take(&self, slot: Slot) -> Option<Open> {
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
