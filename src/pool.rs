//! The fan-out: running the calls of one response at the same time, each on
//! a thread of a pool built for them (design D4), results in call order,
//! a panic kept inside its call. It knows nothing of what the calls are.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

/// A one-shot gate: [`Gate::wait`] blocks until [`Gate::open`].
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let _open = self
            .cv
            .wait_while(open, |open| !*open)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Counts one finished call when dropped, and opens `gate` at the last.
struct Countdown<'a> {
    done: &'a AtomicUsize,
    of: usize,
    gate: &'a Gate,
}

impl Drop for Countdown<'_> {
    fn drop(&mut self) {
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.of {
            self.gate.open();
        }
    }
}

/// How many threads one fan-out may use.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    /// At most this many calls run at once.
    pub max: usize,
    /// At most this many threads can be started per pool: the tests'
    /// stand-in for a machine out of threads.
    pub spawnable: usize,
}

impl Threads {
    pub fn at_most(max: usize) -> Threads {
        Threads {
            max,
            spawnable: usize::MAX,
        }
    }
}

/// Runs `run` for every call and collects the results in call order. With
/// `parallel` and more than one call, the calls run on a rayon pool built
/// for this fan-out with one thread per call (at most `threads.max`; a
/// thread that finishes takes the next waiting call); a single call runs on
/// the current thread. A panic in one call becomes that call's result, made
/// by `panicked` from the panic's payload; its siblings and the caller go on
/// (design D4).
///
/// Every worker is handed its work by [`rayon::ThreadPool::broadcast`] and
/// takes calls by index from a shared counter, so no job ever sits in a
/// rayon queue. That matters twice. Stealing 256 jobs out of one deque
/// costs 256 threads × 256 deques of probes, each pinning crossbeam's epoch
/// (measured: half of axe's CPU at N = 256, and the last sub-agent request
/// left 170 ms after the first). And a worker that waits for a nested
/// fan-out inside rayon would run a queued sibling call meanwhile, then
/// finish its own call only when the sibling does; with no queued jobs it
/// has nothing to pick up.
pub fn fan_out<T, R, F, P>(
    calls: &[T],
    parallel: bool,
    threads: Threads,
    run: F,
    panicked: P,
) -> Vec<R>
where
    T: Sync,
    R: Send + Sync,
    F: Fn(usize, &T) -> R + Sync,
    P: Fn(&T, &(dyn Any + Send)) -> R + Sync,
{
    let guarded = |i: usize, call: &T| {
        catch_unwind(AssertUnwindSafe(|| run(i, call)))
            .unwrap_or_else(|p| panicked(call, p.as_ref()))
    };
    let in_order = || {
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| guarded(i, c))
            .collect()
    };
    if !parallel || calls.len() < 2 {
        return in_order();
    }
    // Fewer threads than wanted (a machine short of them) still beats one
    // call at a time: try again with as many as could be started.
    let mut count = calls.len().min(threads.max.max(1));
    let slots = loop {
        if count < 2 {
            return in_order();
        }
        match on_pool(calls, count, threads.spawnable, &guarded) {
            Ok(slots) => break slots,
            Err(started) => count = started.min(count - 1),
        }
    };
    calls
        .iter()
        .zip(slots)
        .map(|(call, slot)| {
            slot.into_inner()
                .unwrap_or_else(|| panicked(call, &"the call returned no result"))
        })
        .collect()
}

/// Runs `calls` on a pool of `threads` workers, at most `spawnable` of which
/// can be started (the tests' stand-in for a machine out of threads). On
/// failure, returns how many threads did start.
fn on_pool<T, R, G>(
    calls: &[T],
    threads: usize,
    spawnable: usize,
    guarded: &G,
) -> Result<Vec<OnceLock<R>>, usize>
where
    T: Sync,
    R: Send + Sync,
    G: Fn(usize, &T) -> R + Sync,
{
    // rayon's workers look for work while they have none, each probing every
    // other worker's queue: with hundreds of workers on a few cores that
    // spinning, not the calls, takes most of the CPU (measured at N = 256:
    // 489 ms of CPU and 14,561 context switches, against 193 ms and 1,098
    // for the same calls on plain threads). So no worker is idle in rayon
    // here: each waits at `start` until its call is ready for it, and one
    // whose calls are done waits at `finished` until all are.
    let start = Arc::new(Gate::default());
    let finished = Gate::default();
    let start_handler = start.clone();
    let spawned = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .start_handler(move |_| start_handler.wait())
            .spawn_handler(|thread| {
                if spawned.load(Ordering::Relaxed) >= spawnable {
                    return Err(std::io::Error::other("no more threads"));
                }
                std::thread::Builder::new()
                    .name(format!("axe-call-{}", thread.index()))
                    .spawn_scoped(scope, || thread.run())?;
                spawned.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .build();
        let Ok(pool) = built else {
            // rayon has terminated the half-built pool; the threads it did
            // start are waiting at the gate. Let them go, so that they see
            // the termination and end, and this scope can join them.
            start.open();
            return Err(spawned.load(Ordering::Relaxed));
        };
        let slots: Vec<OnceLock<R>> = calls.iter().map(|_| OnceLock::new()).collect();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let run_all = || {
            pool.broadcast(|_| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let (Some(call), Some(slot)) = (calls.get(i), slots.get(i)) else {
                        break;
                    };
                    // Counted even if this unwinds, so `finished` always opens.
                    let _counted = Countdown {
                        done: &done,
                        of: calls.len(),
                        gate: &finished,
                    };
                    let _ = slot.set(guarded(i, call));
                }
                finished.wait();
            });
        };
        start.open();
        // Inside a sub-agent this thread is a worker of its parent's pool,
        // and rayon would keep it polling that pool for work while it
        // waits (measured: 190 ms of CPU for 128 x 2 nested calls, against
        // 60 ms on plain threads). A plain thread's join sleeps instead.
        if rayon::current_thread_index().is_some() {
            std::thread::scope(|inner| {
                match std::thread::Builder::new().spawn_scoped(inner, run_all) {
                    Ok(handle) => {
                        let _ = handle.join();
                    }
                    Err(_) => run_all(),
                }
            });
        } else {
            run_all();
        }
        // Ends the workers, which the scope then joins: no thread outlives
        // its fan-out.
        drop(pool);
        Ok(slots)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the tests run: an item's name, a result naming it.
    fn named(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn panicked(item: &String, payload: &(dyn Any + Send)) -> String {
        let what = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        format!("{item} panicked: {what}")
    }

    #[test]
    fn fan_out_keeps_call_order_and_turns_a_panic_into_that_calls_result() {
        let calls = named(6);
        for parallel in [true, false] {
            let results = fan_out(
                &calls,
                parallel,
                Threads::at_most(8),
                |_, c: &String| {
                    if c == "c3" {
                        panic!("boom in {c}");
                    }
                    // Later calls finish first when run in parallel.
                    let n: u64 = c[1..].parse().unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(60 - 10 * n));
                    format!("done {c}")
                },
                panicked,
            );
            assert_eq!(
                results,
                [
                    "done c0",
                    "done c1",
                    "done c2",
                    "c3 panicked: boom in c3",
                    "done c4",
                    "done c5"
                ]
            );
        }
    }

    /// A fan-out inside a call (a sub-agent delegating in turn) must not
    /// run a queued sibling of that call on the call's own thread while it
    /// waits (rayon's cross-pool wait would), or the call finishes only when
    /// the sibling does. Three calls on two threads leave one queued.
    #[test]
    fn nested_fan_out_never_runs_a_sibling_on_a_busy_thread() {
        use std::cell::Cell;
        thread_local!(static BUSY: Cell<bool> = const { Cell::new(false) });
        let overlaps = AtomicUsize::new(0);
        let enter = || {
            if BUSY.with(|b| b.replace(true)) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
        };
        let leave = || BUSY.with(|b| b.set(false));
        let outer: Vec<String> = ["nested", "slow-1", "slow-2"].map(String::from).to_vec();
        let inner = named(2);
        let results = fan_out(
            &outer,
            true,
            Threads::at_most(2),
            |_, c: &String| {
                enter();
                if c == "nested" {
                    fan_out(
                        &inner,
                        true,
                        Threads::at_most(2),
                        |_, i: &String| {
                            std::thread::sleep(std::time::Duration::from_millis(150));
                            i.clone()
                        },
                        panicked,
                    );
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
                leave();
                c.clone()
            },
            panicked,
        );
        assert_eq!(results.len(), 3);
        assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    }

    /// A machine out of threads must not hang the fan-out (threads that did
    /// start wait at the start gate): the calls run one after another.
    #[test]
    fn fan_out_without_enough_threads_runs_the_calls_in_order() {
        for spawnable in [0, 1, 3] {
            // On a thread of its own, so that a hang fails the test in
            // bounded time instead of hanging the suite.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let calls = named(5);
                let results = fan_out(
                    &calls,
                    true,
                    Threads { max: 8, spawnable },
                    |_, c: &String| format!("done {c}"),
                    panicked,
                );
                let _ = tx.send(results);
            });
            let results = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("the fan-out hung when threads ran out");
            assert_eq!(
                results,
                ["done c0", "done c1", "done c2", "done c3", "done c4"]
            );
        }
    }

    /// Short of threads, the calls still run side by side on as many as
    /// could be started.
    #[test]
    fn fan_out_short_of_threads_runs_on_as_many_as_started() {
        let calls = named(6);
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let results = fan_out(
            &calls,
            true,
            Threads {
                max: 8,
                spawnable: 3,
            },
            |_, c: &String| {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(50));
                now.fetch_sub(1, Ordering::SeqCst);
                c.clone()
            },
            panicked,
        );
        assert_eq!(results, named(6));
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }
}
