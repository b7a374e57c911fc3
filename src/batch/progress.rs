//! What a batch says while it runs (design §11.5): the counts every part
//! of it adds to, a one-line view redrawn on a terminal (done / total,
//! failed, skipped, rate, tokens, time left), and under `--verbose` a line
//! per input that ended. The view is a frame on stderr's one writer, as the
//! run's live view is (design §7.4), erased when the batch ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::report::progress::Redraw;

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// The batch's counts so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Inputs whose line was made (answered, failed or skipped).
    pub done: AtomicU64,
    pub failed: AtomicU64,
    pub skipped: AtomicU64,
    /// Inputs passed over because `--resume`'s file has them.
    pub resumed: AtomicU64,
    /// Tokens (input plus output) of every input that ended.
    pub tokens: AtomicU64,
    /// What the inputs that ran cost, in picodollars (design §7.8).
    pub cost: AtomicU64,
    /// Some input used a model with no price: the cost is not known.
    pub unpriced: std::sync::atomic::AtomicBool,
    /// The worst exit code of an input that did not succeed.
    pub worst: std::sync::atomic::AtomicU8,
    /// A provider's batch (`--provider-batch`, design §11.8), as the
    /// provider counts it while axe waits: succeeded, failed, of total.
    pub provider: std::sync::Mutex<Option<(u64, u64, u64)>>,
}

/// The view, drawn while it lives.
pub struct View {
    _drawn: Redraw,
}

impl Counts {
    /// An input ended: answered (`code` 0), failed or skipped, having spent
    /// `tokens`.
    pub fn ended(&self, code: u8, skipped: bool, tokens: u64) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.tokens.fetch_add(tokens, Ordering::Relaxed);
        if skipped {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        } else if code != 0 {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.worst.fetch_max(code, Ordering::Relaxed);
    }
}

impl Counts {
    /// An input's tree cost `cost`.
    pub fn spent(&self, cost: crate::cost::Cost) {
        self.cost.fetch_add(cost.pico, Ordering::Relaxed);
        if cost.unpriced {
            self.unpriced.store(true, Ordering::Relaxed);
        }
    }

    /// What the batch has cost so far.
    pub fn cost(&self) -> crate::cost::Cost {
        crate::cost::Cost {
            pico: self.cost.load(Ordering::Relaxed),
            unpriced: self.unpriced.load(Ordering::Relaxed),
        }
    }
}

impl View {
    /// Draws `counts` of `total` inputs (when known) until dropped.
    pub fn start(counts: Arc<Counts>, total: Option<u64>) -> View {
        let drawn = Redraw::start("axe-batch-view", TICK, move |elapsed| {
            Some(format!("{}\n", line(&counts, total, elapsed)))
        });
        View { _drawn: drawn }
    }
}

/// `axe: 120/1000 done, 3 failed, 1 skipped, 12.5/s, 45210 tokens, $0.012345,
/// 70s left` (the cost once some is known, design §7.8).
pub fn line(counts: &Counts, total: Option<u64>, took: Duration) -> String {
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let done = n(&counts.done);
    let secs = took.as_secs_f64().max(0.001);
    let rate = done as f64 / secs;
    let mut s = match total {
        Some(t) => format!("axe: {}/{t} done", done + n(&counts.resumed)),
        None => format!("axe: {done} done"),
    };
    s.push_str(&format!(
        ", {} failed, {} skipped, {rate:.1}/s, {} tokens",
        n(&counts.failed),
        n(&counts.skipped),
        n(&counts.tokens)
    ));
    let provider = *counts
        .provider
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((ok, failed, of)) = provider.filter(|_| done == 0) {
        s.push_str(&format!(
            ", at the provider {}/{of} answered ({failed} failed)",
            ok + failed
        ));
    }
    let cost = counts.cost();
    if cost.pico > 0 || cost.unpriced {
        s.push_str(&format!(", cost {}", cost.column()));
    }
    if let Some(t) = total {
        let left = t.saturating_sub(done + n(&counts.resumed));
        if rate > 0.0 && done > 0 {
            s.push_str(&format!(", {}s left", (left as f64 / rate).ceil() as u64));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_and_estimates() {
        let c = Counts::default();
        c.ended(0, false, 10);
        c.ended(3, false, 5);
        c.ended(4, true, 0);
        c.resumed.store(1, Ordering::Relaxed);
        assert_eq!(
            line(&c, Some(10), Duration::from_secs(1)),
            "axe: 4/10 done, 1 failed, 1 skipped, 3.0/s, 15 tokens, 2s left"
        );
        assert_eq!(c.worst.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_provider_batch_shows_the_providers_counts_while_it_waits() {
        let c = Counts::default();
        *c.provider.lock().unwrap() = Some((118, 2, 1000));
        assert_eq!(
            line(&c, Some(1000), Duration::from_secs(60)),
            "axe: 0/1000 done, 0 failed, 0 skipped, 0.0/s, 0 tokens, \
             at the provider 120/1000 answered (2 failed)"
        );
    }
}
