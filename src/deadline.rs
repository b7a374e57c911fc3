//! The one deadline of a run (`--timeout`, design D5): no request is sent
//! or waited for past it, and reading stdin and context files stops at it.
//! A sub-agent call gets its own, never later than its caller's. A run
//! may also be cancelled before it ([`Cancel`], `axe serve`'s). And
//! durations as the whole milliseconds every report gives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Seconds a top-level run has when neither `--timeout` nor its agent
/// file says (`axe run`, a batch's inputs, a served request).
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// A run's cancel flag, shared by every agent and tool of its tree. Once
/// set it stays set.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// An instant and the seconds it stands for (for the timeout message).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// Nothing is sent or waited for past this instant.
    pub at: Instant,
    /// `--timeout` or the call's own `timeout`: `timeout after <secs>s`.
    pub secs: u64,
}

impl Deadline {
    /// `secs` from now; a timeout too large for the clock is a deadline
    /// that never comes.
    pub fn after(secs: u64) -> Deadline {
        Deadline::since(Instant::now(), secs)
    }

    /// `secs` after `start` (a time in the past: the command's start).
    pub fn since(start: Instant, secs: u64) -> Deadline {
        let now = start;
        let at = now
            .checked_add(Duration::from_secs(secs))
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
            .unwrap_or(now);
        Deadline { at, secs }
    }

    /// A sub-agent call's deadline with its own timeout of `secs` (0: none):
    /// the earlier of this one and `now + secs`.
    pub fn narrowed(&self, secs: u64) -> Deadline {
        if secs == 0 {
            return *self;
        }
        match Instant::now().checked_add(Duration::from_secs(secs)) {
            Some(own) if own < self.at => Deadline { at: own, secs },
            _ => *self,
        }
    }

    /// The time left, zero once passed.
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    pub fn passed(&self) -> bool {
        Instant::now() >= self.at
    }
}

/// Whole milliseconds, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
