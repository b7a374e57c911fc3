//! The spans open in a run, by agent run (design §7.9): one entry per
//! agent run's path holds its `invoke_agent` span, its `chat` span and its
//! `execute_tool` spans by call id, so that an event finds its span by the
//! path it already has, with no key built for it (a key per event was
//! most of a span's allocations, measured).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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
    pub span: Span,
    pub outer: Option<Current>,
}

/// A tool span open on a thread: its context, its agent run's path and
/// its call's id (both counted, shared with the span and the map).
#[derive(Debug, Clone)]
pub struct Current {
    pub ctx: SpanContext,
    pub path: Arc<str>,
    pub id: Arc<str>,
}

/// One agent run's spans open.
#[derive(Debug, Default)]
struct Spans {
    agent: Option<Open>,
    chat: Option<Open>,
    /// By call id: a fan-out's caller has hundreds open at once, which a
    /// list searched would make quadratic (measured).
    tools: HashMap<Arc<str>, Open>,
}

impl Spans {
    fn get(&mut self, slot: Slot) -> Option<&mut Open> {
        match slot {
            Slot::Agent => self.agent.as_mut(),
            Slot::Chat => self.chat.as_mut(),
            Slot::Tool(id) => self.tools.get_mut(id),
        }
    }

    fn take(&mut self, slot: Slot) -> Option<Open> {
        match slot {
            Slot::Agent => self.agent.take(),
            Slot::Chat => self.chat.take(),
            Slot::Tool(id) => self.tools.remove(id),
        }
    }

    fn put(&mut self, slot: Slot, open: Open) {
        match slot {
            Slot::Agent => self.agent = Some(open),
            Slot::Chat => self.chat = Some(open),
            Slot::Tool(id) => {
                self.tools.insert(Arc::from(id), open);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.agent.is_none() && self.chat.is_none() && self.tools.is_empty()
    }
}

/// The shards of [`OpenSpans`].
const SHARDS: usize = 16;

/// A run's spans open, in shards by agent run, so that the threads of a
/// wide fan-out seldom wait on one another's spans.
#[derive(Debug)]
pub struct OpenSpans {
    shards: [Mutex<HashMap<String, Spans>>; SHARDS],
}

impl Default for OpenSpans {
    fn default() -> OpenSpans {
        OpenSpans {
            shards: std::array::from_fn(|_| Mutex::default()),
        }
    }
}

impl OpenSpans {
    fn shard(&self, path: &str) -> MutexGuard<'_, HashMap<String, Spans>> {
        // FNV-1a: cheap, and spread enough for picking one of 16.
        let hash = path.bytes().fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        self.shards[hash as usize % SHARDS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `f` on the span open at `path`'s `slot`, if there is one.
    pub fn with<T>(&self, path: &str, slot: Slot, f: impl FnOnce(&mut Open) -> T) -> Option<T> {
        self.shard(path).get_mut(path)?.get(slot).map(f)
    }

    /// The span open at `path`'s `slot`, no longer open.
    pub fn take(&self, path: &str, slot: Slot) -> Option<Open> {
        let mut shard = self.shard(path);
        let spans = shard.get_mut(path)?;
        let open = spans.take(slot);
        if spans.is_empty() {
            shard.remove(path);
        }
        open
    }

    /// `open` at `path`'s `slot` (replacing one there).
    pub fn put(&self, path: &str, slot: Slot, open: Open) {
        self.put_with(path, |spans| spans.put(slot, open));
    }

    /// `open`, the tool span of the call `id`, at `path` (its id shared,
    /// not copied).
    pub fn put_tool(&self, path: &str, id: Arc<str>, open: Open) {
        self.put_with(path, |spans| {
            spans.tools.insert(id, open);
        });
    }

    fn put_with(&self, path: &str, f: impl FnOnce(&mut Spans)) {
        let mut shard = self.shard(path);
        match shard.get_mut(path) {
            Some(spans) => f(spans),
            None => {
                let mut spans = Spans::default();
                f(&mut spans);
                shard.insert(path.to_string(), spans);
            }
        }
    }
}
