//! The exporter (design §7.9): finished spans go into a bounded queue
//! without a lock (a span that finds it full is dropped and counted, never
//! waited for), and a thread of their own posts them in batches to the
//! collector with the blocking HTTP client. A run's spans wait for its end
//! and are posted from its own thread then, unless they fill half the
//! queue or the run outlasts the linger: a short run starts no thread. A
//! single run's are written as its last span ends, their answer read at
//! exit ([`ended`]). At exit the queue is flushed within a bound; a
//! collector that is down or slow costs one warning, never the run.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::body::{self, Protobuf};
use super::conn::Client;
use super::oneshot::{self, Exchange, Failed};
use super::otlp::{self, Span};
use super::settings::Settings;
use crate::io::stderr;

/// Spans the queue holds: a 256-way fan-out's tree is 771 spans.
const QUEUE: usize = 4096;
/// Spans posted in one request at most.
const BATCH: usize = 512;
/// How long a span waits for others before its batch is posted (in
/// `axe serve`, and in a run that lasts longer: a shorter run's are posted
/// at its end).
const LINGER: Duration = Duration::from_secs(2);
/// The most the exit waits for the last spans, after the answer.
pub const FLUSH_BOUND: Duration = Duration::from_secs(1);

/// The process's exporter.
pub struct Exporter {
    pub settings: Settings,
    /// Spans ended and not yet posted, sent through a channel: a send
    /// takes no lock (std's channel appends with atomics), where a fan-out's
    /// helper threads, ending their spans at once, waited on one another in
    /// the kernel for the queue's lock (measured, design §7.9).
    tx: Sender<Box<Span>>,
    rx: Mutex<Receiver<Box<Span>>>,
    /// How many are in the channel: its bound, and a batch's fullness.
    waiting: AtomicUsize,
    /// When the first of them came (nanoseconds after [`epoch`]; 0: none).
    since: AtomicU64,
    queue: Mutex<Queue>,
    /// Told when a batch is full or a flush is asked for: never per span,
    /// so that a span's end wakes no thread (design §7.9).
    wake: Condvar,
    thread: OnceLock<()>,
    sent: AtomicBool,
    dropped: AtomicU64,
    /// The last export's body, its capacity kept for the next: one post is
    /// made at a time (the thread's, or the exit's when there is none).
    body: Mutex<Vec<u8>>,
    client: OnceLock<Client>,
}

/// Who waits for the spans queued to be posted; its lock is also the one
/// the thread waits under (a wake is sent holding it, so none is lost).
#[derive(Default)]
struct Queue {
    flushes: Vec<SyncSender<()>>,
}

/// Spans, as the queue hands them over.
#[allow(
    clippy::vec_box,
    reason = "a span is built boxed and moved as a pointer (otlp::Span)"
)]
type Batch = Vec<Box<Span>>;

/// The instant the exporter's times are counted from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`], never 0 (which says "none").
fn stamp() -> u64 {
    let nanos = epoch().elapsed().as_nanos();
    u64::try_from(nanos).unwrap_or(u64::MAX).max(1)
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

static EXPORTER: OnceLock<Exporter> = OnceLock::new();
/// The run's deadline, when a command has one: the flush never passes it.
static DEADLINE: Mutex<Option<Instant>> = Mutex::new(None);
/// The process is one run (or one batch) that ends by a deadline, not a
/// server: its spans may wait for its end.
static ONE_SHOT: AtomicBool = AtomicBool::new(false);
/// A failed export was warned of.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Export with `settings` from now on (the first call wins).
pub fn start(settings: Settings) {
    epoch();
    let _ = EXPORTER.set(Exporter::new(settings));
}

/// The exporter, when spans are exported.
pub fn exporter() -> Option<&'static Exporter> {
    EXPORTER.get()
}

/// The process is a run (or a batch) that ends by `at` at the latest: the
/// flush never waits past it, and its spans may wait for its end. The
/// connection they will be posted on is opened now, when it can be
/// (`conn.rs`), so that its handshake overlaps the run.
pub fn deadline(at: Instant) {
    *DEADLINE.lock().unwrap_or_else(PoisonError::into_inner) = Some(at);
    ONE_SHOT.store(true, Ordering::Relaxed);
    if let Some(direct) = EXPORTER.get().and_then(|e| e.client().direct.as_ref()) {
        direct.open_early();
    }
}

impl Exporter {
    fn new(settings: Settings) -> Exporter {
        let (tx, rx) = channel();
        Exporter {
            settings,
            tx,
            rx: Mutex::new(rx),
            waiting: AtomicUsize::new(0),
            since: AtomicU64::new(0),
            queue: Mutex::default(),
            wake: Condvar::new(),
            thread: OnceLock::new(),
            sent: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            body: Mutex::default(),
            client: OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn client(&self) -> &Client {
        self.client.get_or_init(|| Client::new(&self.settings.url))
    }

    /// Queues `span`; dropped and counted when [`QUEUE`] are waiting. The
    /// thread is woken by a batch's first span and a full batch, not by
    /// every span; it starts with a server's first span, and in a run
    /// with the queue half full or a span that ends after the linger (a
    /// run shorter than that posts at its end, [`finish`], from its own
    /// thread: a fan-out's threads then share the machine with no post).
    pub fn send(&'static self, span: Box<Span>) {
        // Read before written: a store by every span would pass the line
        // between the cores.
        if !self.sent.load(Ordering::Relaxed) {
            self.sent.store(true, Ordering::Relaxed);
        }
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        if before >= QUEUE {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // The receiver lives as long as the sender: this cannot fail.
        let _ = self.tx.send(span);
        // The first span of a batch starts its linger; it and a full
        // batch wake the thread, once each.
        let first = before == 0;
        if first {
            self.since.store(stamp(), Ordering::Release);
        }
        let waiting = before + 1;
        let since = self.since.load(Ordering::Acquire);
        let lingered = since != 0 && stamp().saturating_sub(since) >= LINGER.as_nanos() as u64;
        if self.thread.get().is_none() {
            let start = waiting >= QUEUE / 2 || lingered || !ONE_SHOT.load(Ordering::Relaxed);
            if !start {
                return;
            }
            self.thread.get_or_init(|| self.spawn());
            self.wake_thread();
        } else if first || waiting == BATCH {
            self.wake_thread();
        }
    }

    /// Wakes the thread, holding the lock it checks its work under: it is
    /// either before its check (and sees the work) or waiting (and woken).
    fn wake_thread(&self) {
        drop(self.lock());
        self.wake.notify_one();
    }

    /// The spans queued, into `into` (in the order they came); the linger
    /// starts again with the next.
    fn drain(&self, into: &mut Batch) {
        let rx = self.rx.lock().unwrap_or_else(PoisonError::into_inner);
        let before = into.len();
        into.extend(rx.try_iter());
        let n = into.len() - before;
        if self.waiting.fetch_sub(n, Ordering::AcqRel) == n {
            self.since.store(0, Ordering::Release);
        } else {
            // Some came while these were taken: they wait from now.
            self.since.store(stamp(), Ordering::Release);
        }
    }

    fn spawn(&'static self) {
        let spawned = std::thread::Builder::new()
            .name("axe-telemetry".into())
            .stack_size(256 * 1024)
            .spawn(move || self.work());
        if let Err(e) = spawned {
            warn_once(&format!("telemetry: cannot start the exporter: {e}"));
        }
    }

    /// The thread: waits for a full batch, a batch whose first span has
    /// waited [`LINGER`], or a flush; posts what is queued; says so to
    /// the flushes.
    fn work(&self) {
        // Kept from post to post, so that it is not allocated again.
        let mut spans = Vec::new();
        loop {
            let mut q = self.lock();
            loop {
                if !q.flushes.is_empty() || self.waiting.load(Ordering::Acquire) >= BATCH {
                    break;
                }
                q = match self.since.load(Ordering::Acquire) {
                    0 => self.wake.wait(q).unwrap_or_else(PoisonError::into_inner),
                    t => {
                        match LINGER.checked_sub(Duration::from_nanos(stamp().saturating_sub(t))) {
                            Some(left) if !left.is_zero() => {
                                self.wake
                                    .wait_timeout(q, left)
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .0
                            }
                            _ => break,
                        }
                    }
                };
            }
            let flushes = std::mem::take(&mut q.flushes);
            drop(q);
            self.drain(&mut spans);
            for batch in spans.chunks(BATCH) {
                self.post(batch, self.settings.timeout);
            }
            spans.clear();
            for done in flushes {
                let _ = done.try_send(());
            }
        }
    }

    /// Posts `spans` as one request, taking at most `timeout`; a failure
    /// is warned of once.
    fn post(&self, spans: &[Box<Span>], timeout: Duration) {
        if spans.is_empty() {
            return;
        }
        let s = &self.settings;
        // JSON is written whole; protobuf is encoded into the client's
        // buffer as it is sent (`body.rs`), the request saying its length.
        let mut json = self.body.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut whole, mut encoded): (&[u8], Protobuf);
        let (kind, len, body): (_, _, &mut dyn Read) = if s.json {
            otlp::json(&s.resource, spans, &mut json);
            whole = &json;
            ("application/json", whole.len(), &mut whole)
        } else {
            encoded = Protobuf::new(&s.resource, spans);
            ("application/x-protobuf", encoded.len(), &mut encoded)
        };
        let mut req = self
            .client()
            .agent()
            .post(&s.url)
            .header("content-type", kind)
            .config()
            .timeout_global(Some(timeout))
            .build();
        // The user's own, if set, replaces it, as it did ureq's.
        if !s
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        {
            req = req.header("content-length", len);
        }
        for (k, v) in &s.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let failed = match req.send(ureq::SendBody::from_reader(body)) {
            Ok(resp) if resp.status().is_success() => return,
            Ok(resp) => format!("HTTP {}", resp.status().as_u16()),
            Err(e) => e.to_string(),
        };
        warn_once(&format!(
            "telemetry: cannot export spans to {}: {failed} (spans are lost; the run goes on)",
            s.url
        ));
    }
}

fn warn_once(text: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        stderr::warn(text);
    }
}

/// A single run's post written by hand as its last span ended ([`ended`]),
/// its answer read at exit; its spans kept, for a post through ureq should
/// none of the request have gone.
struct Early {
    spans: Batch,
    /// None when the request could not be written by hand: posted through
    /// ureq at exit, as a request none of which went.
    exchange: Option<Exchange>,
}

static EARLY: Mutex<Option<Early>> = Mutex::new(None);

/// A single run's last span has ended (its answer not yet printed): its
/// spans are written to the collector now, on the connection the run
/// opened, so that the collector reads and answers them while axe prints
/// and tears down; [`finish`] reads the answer. Only a run with no export
/// thread, one batch of spans and an open early connection; else the exit
/// posts them, as it did.
pub fn ended() {
    let Some(e) = EXPORTER.get() else {
        return;
    };
    if !ONE_SHOT.load(Ordering::Relaxed) || e.thread.get().is_some() {
        return;
    }
    let Some(direct) = e.client().direct.as_ref() else {
        return;
    };
    let Some(start) = direct.start() else {
        return;
    };
    let queued = e.waiting.load(Ordering::Acquire);
    if queued == 0 || queued > BATCH {
        return;
    }
    let Some(stream) = direct.take_open() else {
        return;
    };
    let mut spans = Vec::with_capacity(queued);
    e.drain(&mut spans);
    let s = &e.settings;
    let mut body = e.body.lock().unwrap_or_else(PoisonError::into_inner);
    let kind = if s.json {
        otlp::json(&s.resource, &spans, &mut body);
        "application/json"
    } else {
        body::protobuf(&s.resource, &spans, &mut body);
        "application/x-protobuf"
    };
    let Some(head) = oneshot::head(start, kind, body.len(), &s.headers) else {
        // Posted at exit instead, through ureq.
        *EARLY.lock().unwrap_or_else(PoisonError::into_inner) = Some(Early {
            spans,
            exchange: None,
        });
        return;
    };
    let exchange = Some(Exchange::start(stream, &head, &body));
    *EARLY.lock().unwrap_or_else(PoisonError::into_inner) = Some(Early { spans, exchange });
}

/// At exit (the process ends next): the spans queued are posted, waiting
/// at most [`FLUSH_BOUND`] and never past the run's deadline; spans dropped
/// are warned of.
pub fn finish() {
    let Some(e) = EXPORTER.get().filter(|e| e.sent.load(Ordering::Relaxed)) else {
        return;
    };
    let mut until = Instant::now() + FLUSH_BOUND;
    if let Some(at) = *DEADLINE.lock().unwrap_or_else(PoisonError::into_inner) {
        until = until.min(at.max(Instant::now()));
    }
    let early = EARLY.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(early) = early {
        early.answered(e, until);
    }
    if e.thread.get().is_some() {
        let (tx, rx) = sync_channel(1);
        e.lock().flushes.push(tx);
        e.wake.notify_one();
        let _ = rx.recv_timeout(until.saturating_duration_since(Instant::now()));
    } else {
        // A run that started no thread: its spans are posted from here.
        let mut spans = Vec::new();
        e.drain(&mut spans);
        for batch in spans.chunks(BATCH) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            e.post(batch, left);
        }
        // The process ends next: its spans are not freed one by one.
        std::mem::forget(spans);
    }
    let dropped = e.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        stderr::warn(&format!(
            "telemetry: {dropped} spans dropped (the export queue was full)"
        ));
    }
}

impl Early {
    /// The early post's answer, by `until`: a failure warned of as ureq's
    /// post's is; a request none of which went is posted through ureq. A
    /// run past its deadline waits for none and says nothing, as a post
    /// with no time left was not made.
    fn answered(self, e: &Exporter, until: Instant) {
        let Early { spans, exchange } = self;
        if until <= Instant::now() {
            std::mem::forget(spans);
            return;
        }
        let answer = match exchange {
            Some(exchange) => exchange.answer(until),
            None => Err(Failed::NotSent),
        };
        let failed = match answer {
            Ok(status) if (200..300).contains(&status) => None,
            Ok(status) => Some(format!("HTTP {status}")),
            Err(Failed::Post(why)) => Some(why),
            Err(Failed::NotSent) => {
                let left = until.saturating_duration_since(Instant::now());
                if !left.is_zero() {
                    e.post(&spans, left);
                }
                None
            }
        };
        if let Some(failed) = failed {
            warn_once(&format!(
                "telemetry: cannot export spans to {}: {failed} (spans are lost; the run goes on)",
                e.settings.url
            ));
        }
        // The process ends next: its spans are not freed one by one.
        std::mem::forget(spans);
    }
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
