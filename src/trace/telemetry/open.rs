//! The spans open in a run, by agent run (design §7.9): one entry per
//! agent run's path holds its `invoke_agent` span, its `chat` span and its
//! `execute_tool` spans by call id, so that an event finds its span by the
//! path it already has, with no key built for it (a key per event was
//! most of a span's allocations, measured).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher, RandomState};
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
#[derive(Debug)]
pub struct Spans {
    pub agent: Option<Open>,
    pub chat: Option<Open>,
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

    /// `open`, the tool span of the call `id` (its id shared, not copied).
    pub fn put_tool(&mut self, id: Arc<str>, open: Open) {
        self.tools.insert(id, open);
    }

    fn is_empty(&self) -> bool {
        self.agent.is_none() && self.chat.is_none() && self.tools.is_empty()
    }
}

/// The shards of [`OpenSpans`].
const SHARDS: usize = 16;

/// FNV-1a over a key's bytes: an agent run's path is axe's own (agent
/// names from the agents' files, call numbers), never a model's, so it
/// needs no SipHash against chosen collisions, which cost a fan-out's
/// open spans more than the rest of their map (measured, design §7.9).
/// Call ids, which a model writes, stay under SipHash ([`Spans::tools`]).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        self.0 = bytes
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One shard: agent runs' paths to their spans open, boxed: an agent
/// run's entry (two spans and a map, about 500 bytes) was moved whole at
/// each insert, removal and growth of its shard, and a fan-out's shards
/// see one of each for every sub-agent (measured, design §7.9).
type Shard = HashMap<String, Box<Spans>, BuildHasherDefault<Fnv>>;

/// A run's spans open, in shards by agent run, so that the threads of a
/// wide fan-out seldom wait on one another's spans.
#[derive(Debug)]
pub struct OpenSpans {
    shards: [Mutex<Shard>; SHARDS],
    /// The keys of every agent run's map of tool spans, made once: a map
    /// made with keys of its own reads the thread's, which the first time
    /// on each of a fan-out's helper threads asks the kernel for random
    /// bytes (measured, design §7.9).
    keys: RandomState,
}

impl Default for OpenSpans {
    fn default() -> OpenSpans {
        OpenSpans {
            shards: std::array::from_fn(|_| Mutex::default()),
            keys: RandomState::new(),
        }
    }
}

impl OpenSpans {
    fn shard(&self, path: &str) -> MutexGuard<'_, Shard> {
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

    fn put_with(&self, path: &str, f: impl FnOnce(&mut Spans)) {
        self.update(path, f);
    }

    /// `f` on the spans open at `path` (none yet: an entry made for it),
    /// in one look-up where an event reads one of them and puts or takes
    /// another (a chat span under its agent's, both taken at the run's
    /// end): each look-up locks a shard and hashes the path (design §7.9).
    pub fn update<T>(&self, path: &str, f: impl FnOnce(&mut Spans) -> T) -> T {
        let mut shard = self.shard(path);
        if let Some(spans) = shard.get_mut(path) {
            let out = f(spans);
            if spans.is_empty() {
                shard.remove(path);
            }
            return out;
        }
        let mut spans = Box::new(Spans {
            agent: None,
            chat: None,
            tools: HashMap::with_hasher(self.keys.clone()),
        });
        let out = f(&mut spans);
        if !spans.is_empty() {
            shard.insert(path.to_string(), spans);
        }
        out
    }
}
