//! How a batch's inputs are run (design §11.2): a rayon pool of `--jobs`
//! threads maps over the inputs as they are read (`par_bridge`, which takes
//! the next input when a thread is free), and two bounds keep it within its
//! means. [`Gate`] shares `--max-tokens` and `--max-turns` across the
//! batch: an input that would pass what is left is not started. [`Order`]
//! writes the lines in input order, holding a finished line until those
//! before it are written, and holds back a thread whose input is too far
//! ahead of the oldest one not yet written, so that a slow input never makes
//! the lines waiting behind it grow without bound.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use rayon::iter::{ParallelBridge, ParallelIterator};

use super::inputs::Input;

/// How far ahead of the oldest unwritten input a thread may start one, per
/// thread: the most lines held waiting is this times `--jobs`.
const WINDOW_PER_JOB: u64 = 16;

/// `--max-tokens` and `--max-turns` over the whole batch, and what the
/// inputs that ended spent.
pub struct Gate {
    max_tokens: Option<u64>,
    max_turns: Option<u64>,
    state: Mutex<Spent>,
    cv: Condvar,
}

#[derive(Default)]
struct Spent {
    running: u64,
    tokens: u64,
    turns: u64,
    /// The most an input that ended spent; none until one ended.
    most_tokens: Option<u64>,
    most_turns: u64,
}

/// Whether an input may start.
pub enum Admit {
    Go,
    /// Not started: why, on its line.
    Skip(String),
}

/// The lines, written in input order.
pub struct Order {
    state: Mutex<Waiting>,
    cv: Condvar,
    /// None with `--unordered`: no window, lines written as they come.
    window: Option<u64>,
}

struct Waiting {
    /// The next input whose line is to be written.
    next: u64,
    lines: BTreeMap<u64, Option<String>>,
}

impl Gate {
    pub fn new(max_tokens: Option<u64>, max_turns: Option<u64>) -> Gate {
        Gate {
            max_tokens,
            max_turns,
            state: Mutex::new(Spent::default()),
            cv: Condvar::new(),
        }
    }

    /// Whether the next input may start. With a bound, the first input runs
    /// alone, to learn what one costs; then an input starts only when what
    /// the ended inputs spent, plus the most one has spent for it and for
    /// each input running, stays within the bound. The budget inside each
    /// run still stops a request past it (exit 4 on that input's line).
    pub fn admit(&self) -> Admit {
        if self.max_tokens.is_none() && self.max_turns.is_none() {
            return Admit::Go;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.most_tokens.is_none() && s.running > 0 {
            s = self.cv.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        let inputs = s.running.saturating_add(1);
        if let Some(max) = self.max_tokens {
            let each = s.most_tokens.unwrap_or(0);
            let would = s.tokens.saturating_add(inputs.saturating_mul(each));
            if s.tokens >= max || would > max {
                return Admit::Skip(format!(
                    "not started: the batch's token budget would be passed (used {} of {max}, \
                     an input spends up to {each})",
                    s.tokens
                ));
            }
        }
        if let Some(max) = self.max_turns {
            let each = s.most_turns.max(1);
            let would = s.turns.saturating_add(inputs.saturating_mul(each));
            if would > max {
                return Admit::Skip(format!(
                    "not started: the batch's turn budget would be passed (used {} of {max}, \
                     an input takes up to {each})",
                    s.turns
                ));
            }
        }
        s.running += 1;
        Admit::Go
    }

    /// An input admitted by [`Gate::admit`] ended, having spent `tokens`
    /// (input plus output, the whole tree) and `turns`.
    pub fn ended(&self, tokens: u64, turns: u64) {
        if self.max_tokens.is_none() && self.max_turns.is_none() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.running = s.running.saturating_sub(1);
        s.tokens = s.tokens.saturating_add(tokens);
        s.turns = s.turns.saturating_add(turns);
        s.most_tokens = Some(s.most_tokens.unwrap_or(0).max(tokens));
        s.most_turns = s.most_turns.max(turns);
        self.cv.notify_all();
    }
}

impl Order {
    /// In input order with a window of `jobs` threads; as they finish
    /// when `unordered`.
    pub fn new(jobs: usize, unordered: bool) -> Order {
        Order {
            state: Mutex::new(Waiting {
                next: 0,
                lines: BTreeMap::new(),
            }),
            cv: Condvar::new(),
            window: (!unordered).then(|| (jobs as u64).saturating_mul(WINDOW_PER_JOB).max(64)),
        }
    }

    /// Waits until input `seq` is within the window of the oldest line not
    /// yet written.
    pub fn wait_turn(&self, seq: u64) {
        let Some(window) = self.window else { return };
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while seq >= s.next.saturating_add(window) {
            s = self.cv.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Input `seq` is done, with its line (none: it had nothing to write,
    /// it was done before `--resume`). `write` is called for every line
    /// that can now be written, in order, under the lock, so that lines
    /// never interleave.
    pub fn done(&self, seq: u64, line: Option<String>, write: &mut dyn FnMut(&str)) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if self.window.is_none() {
            if let Some(l) = line {
                write(&l);
            }
            return;
        }
        s.lines.insert(seq, line);
        let mut moved = false;
        loop {
            let next = s.next;
            let Some(line) = s.lines.remove(&next) else {
                break;
            };
            if let Some(l) = line {
                write(&l);
            }
            s.next += 1;
            moved = true;
        }
        if moved {
            self.cv.notify_all();
        }
    }
}

/// Runs `each` on every input of `inputs` on a pool of `jobs` threads,
/// taking inputs as threads are free, until the inputs end or `stop` is
/// set (stdout closed, a write failed). A pool that cannot be built (no
/// threads to be had) runs the inputs on this thread, one at a time.
pub fn run(
    jobs: usize,
    inputs: impl Iterator<Item = Input> + Send,
    stop: &AtomicBool,
    each: &(dyn Fn(Input) + Sync),
) {
    let inputs = inputs.take_while(|_| !stop.load(Ordering::Relaxed));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("axe-batch-{i}"))
        .build();
    match pool {
        Ok(pool) => pool.install(|| inputs.par_bridge().for_each(each)),
        Err(_) => inputs.for_each(each),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_in_input_order_whatever_order_they_end_in() {
        let order = Order::new(2, false);
        let mut out = Vec::new();
        let mut write = |l: &str| out.push(l.to_string());
        order.done(2, Some("c".into()), &mut write);
        order.done(0, Some("a".into()), &mut write);
        order.done(1, None, &mut write);
        order.done(3, Some("d".into()), &mut write);
        assert_eq!(out, ["a", "c", "d"]);
    }

    #[test]
    fn a_bound_lets_the_first_input_alone_then_what_fits() {
        let gate = Gate::new(Some(50), None);
        assert!(matches!(gate.admit(), Admit::Go));
        gate.ended(10, 1);
        // 10 spent, 10 each: four more fit (10 + 4 * 10 = 50), a fifth not.
        for _ in 0..4 {
            assert!(matches!(gate.admit(), Admit::Go));
        }
        assert!(matches!(gate.admit(), Admit::Skip(why) if why.contains("used 10 of 50")));
    }
}
