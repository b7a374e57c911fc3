//! The MCP bench's 64 callers (`benches/mcp.rs`): threads started once and
//! kept for every round, each woken for a round as a fan-out's helper is,
//! each noting when it began and when its answer came.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use axe::mcp::Server;

use super::cpu;

/// 64 caller threads, started once and kept for every round, so that
/// the bench's own thread starts and ends (their stacks mapped and
/// unmapped, and the other core's TLB flushed) are in no round. A round
/// wakes each (one `unpark` each, as a fan-out's pool sends each helper
/// its job: a `Barrier` would wake them all onto one mutex, in a row);
/// each calls once and notes when it began and when its answer came, and
/// the last to finish wakes the bench.
pub struct Round {
    /// How many rounds have been let go.
    go: AtomicUsize,
    /// Callers of this round not yet finished.
    left: AtomicUsize,
    bench: Thread,
    callers: Mutex<Vec<Thread>>,
    /// When each caller began, this round.
    begun: Vec<Mutex<Option<Instant>>>,
    /// When each caller's answer came (or what failed), this round.
    ends: Vec<Mutex<Option<Result<Instant, String>>>>,
    stop: AtomicBool,
}

/// What one round took: from the go to the last answer, to the last
/// caller's start, and this process's CPU.
pub struct Took {
    pub wall: Duration,
    pub let_go: Duration,
    pub cpu: Duration,
}

impl Round {
    pub fn new() -> Round {
        Round {
            go: AtomicUsize::new(0),
            left: AtomicUsize::new(0),
            bench: std::thread::current(),
            callers: Mutex::new(Vec::new()),
            begun: (0..64).map(|_| Mutex::new(None)).collect(),
            ends: (0..64).map(|_| Mutex::new(None)).collect(),
            stop: AtomicBool::new(false),
        }
    }

    /// Caller `i`: one call of `args` a round, until [`Round::finish`].
    pub fn caller(&self, i: usize, server: &Server, args: &serde_json::Value, deadline: Instant) {
        self.callers
            .lock()
            .expect("the callers")
            .push(std::thread::current());
        let mut seen = 0;
        loop {
            while self.go.load(Ordering::Acquire) == seen {
                std::thread::park();
            }
            seen = self.go.load(Ordering::Acquire);
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            *self.begun[i].lock().expect("a caller's slot") = Some(Instant::now());
            let out = server.call("echo", args.clone(), deadline);
            let end = Instant::now();
            // Said by the round, not here: a caller that panicked would
            // leave the bench waiting.
            let end = if out.is_error { Err(out.text) } else { Ok(end) };
            *self.ends[i].lock().expect("a caller's slot") = Some(end);
            if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.bench.unpark();
            }
        }
    }

    /// Waits until all 64 callers are parked for their first round.
    pub fn ready(&self) {
        while self.callers.lock().expect("the callers").len() < 64 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Lets the callers go, each woken in turn.
    fn let_go(&self) {
        self.go.fetch_add(1, Ordering::Release);
        for caller in self.callers.lock().expect("the callers").iter() {
            caller.unpark();
        }
    }

    /// One round, timed from just before the go.
    pub fn run(&self) -> Took {
        self.left.store(64, Ordering::Release);
        let cpu_at = cpu();
        let started = Instant::now();
        self.let_go();
        while self.left.load(Ordering::Acquire) > 0 {
            std::thread::park();
        }
        let cpu = cpu().saturating_sub(cpu_at);
        let last_end = self.ends.iter().map(|e| {
            let end = taken(e).expect("a caller");
            end.expect("an answer")
        });
        let last_begun = self.begun.iter().filter_map(taken);
        Took {
            wall: last_end
                .max()
                .expect("64")
                .saturating_duration_since(started),
            let_go: last_begun
                .max()
                .expect("64")
                .saturating_duration_since(started),
            cpu,
        }
    }

    /// Lets the callers end.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Release);
        self.let_go();
    }
}

/// What a caller's slot holds, taken out for the next round.
fn taken<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().expect("a caller's slot").take()
}
