//! The exporter (design §7.9): finished spans go into a bounded queue
//! (a span that finds it full is dropped and counted, never waited for),
//! and a thread of their own posts them in batches to the collector with
//! the blocking HTTP client. At exit the queue is flushed within a bound;
//! a collector that is down or slow costs one warning, never the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::otlp::{self, Span};
use super::settings::Settings;
use crate::io::stderr;

/// Spans the queue holds: a 256-way fan-out's tree is about 1,300 spans.
const QUEUE: usize = 4096;
/// Spans posted in one request at most.
const BATCH: usize = 512;
/// How long a span waits for others before its batch is posted (in
/// `axe serve`; a run's are flushed at its end).
const LINGER: Duration = Duration::from_secs(2);
/// The most the exit waits for the last spans, after the answer.
pub const FLUSH_BOUND: Duration = Duration::from_secs(1);

enum Msg {
    Span(Box<Span>),
    /// Post what is held, then say so.
    Flush(SyncSender<()>),
}

/// The process's exporter.
pub struct Exporter {
    pub settings: Settings,
    queue: OnceLock<SyncSender<Msg>>,
    sent: AtomicBool,
    dropped: AtomicU64,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

static EXPORTER: OnceLock<Exporter> = OnceLock::new();
/// The run's deadline, when a command has one: the flush never passes it.
static DEADLINE: Mutex<Option<Instant>> = Mutex::new(None);
/// A failed export was warned of.
static WARNED: AtomicBool = AtomicBool::new(false);

/// Export with `settings` from now on (the first call wins).
pub fn start(settings: Settings) {
    let _ = EXPORTER.set(Exporter {
        settings,
        queue: OnceLock::new(),
        sent: AtomicBool::new(false),
        dropped: AtomicU64::new(0),
    });
}

/// The exporter, when spans are exported.
pub fn exporter() -> Option<&'static Exporter> {
    EXPORTER.get()
}

/// The run ends by `at` at the latest: the flush never waits past it.
pub fn deadline(at: Instant) {
    *DEADLINE.lock().unwrap_or_else(PoisonError::into_inner) = Some(at);
}

impl Exporter {
    /// Queues `span`; dropped and counted when the queue is full. The
    /// thread starts with the first span.
    pub fn send(&'static self, span: Span) {
        self.sent.store(true, Ordering::Relaxed);
        let queue = self.queue.get_or_init(|| self.spawn());
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            queue.try_send(Msg::Span(Box::new(span)))
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn spawn(&'static self) -> SyncSender<Msg> {
        let (tx, rx) = sync_channel(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("axe-telemetry".into())
            .stack_size(256 * 1024)
            .spawn(move || self.work(&rx));
        if let Err(e) = spawned {
            warn_once(&format!("telemetry: cannot start the exporter: {e}"));
        }
        tx
    }

    /// The thread: spans gathered into batches, each posted when full, when
    /// its first span has waited [`LINGER`], or when a flush asks.
    fn work(&self, rx: &Receiver<Msg>) {
        let mut batch: Vec<Span> = Vec::new();
        let mut since = Instant::now();
        loop {
            let msg = if batch.is_empty() {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                rx.recv_timeout(LINGER.saturating_sub(since.elapsed()))
            };
            match msg {
                Ok(Msg::Span(span)) => {
                    if batch.is_empty() {
                        since = Instant::now();
                    }
                    batch.push(*span);
                    if batch.len() >= BATCH {
                        self.post(&std::mem::take(&mut batch));
                    }
                }
                Ok(Msg::Flush(done)) => {
                    self.post(&std::mem::take(&mut batch));
                    let _ = done.try_send(());
                }
                Err(RecvTimeoutError::Timeout) => self.post(&std::mem::take(&mut batch)),
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Posts `spans` as one request; a failure is warned of once.
    fn post(&self, spans: &[Span]) {
        if spans.is_empty() {
            return;
        }
        let s = &self.settings;
        let (body, kind) = if s.json {
            (otlp::json(&s.resource, spans), "application/json")
        } else {
            (otlp::protobuf(&s.resource, spans), "application/x-protobuf")
        };
        let mut req = client()
            .post(&s.url)
            .header("content-type", kind)
            .config()
            .timeout_global(Some(s.timeout))
            .build();
        for (k, v) in &s.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let failed = match req.send(&body[..]) {
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

/// The exporter's HTTP client: its own, so that an export never holds a
/// provider's connections.
fn client() -> &'static ureq::Agent {
    static CLIENT: OnceLock<ureq::Agent> = OnceLock::new();
    CLIENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    })
}

/// At exit: the spans queued are posted, waiting at most [`FLUSH_BOUND`]
/// and never past the run's deadline; spans dropped are warned of.
pub fn finish() {
    let Some(e) = EXPORTER.get().filter(|e| e.sent.load(Ordering::Relaxed)) else {
        return;
    };
    let mut until = Instant::now() + FLUSH_BOUND;
    if let Some(at) = *DEADLINE.lock().unwrap_or_else(PoisonError::into_inner) {
        until = until.min(at.max(Instant::now()));
    }
    if let Some(queue) = e.queue.get() {
        let (tx, rx) = sync_channel(1);
        let mut flush = Msg::Flush(tx);
        // A full queue makes room as the thread posts; never past `until`.
        loop {
            match queue.try_send(flush) {
                Ok(()) => {
                    let _ = rx.recv_timeout(until.saturating_duration_since(Instant::now()));
                    break;
                }
                Err(TrySendError::Full(m)) if Instant::now() < until => {
                    flush = m;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(_) => break,
            }
        }
    }
    let dropped = e.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        stderr::warn(&format!(
            "telemetry: {dropped} spans dropped (the export queue was full)"
        ));
    }
}
