//! The fan-out: running the calls of one response at the same time on the
//! run's helper threads (design D4), results in call order, a panic kept
//! inside its call. It knows nothing of what the calls are.
//!
//! Helper threads are started when a fan-out needs more than are idle, and
//! kept for the rest of the process, parked on a channel: a second fan-out
//! (the next turn, a sibling's nested one) starts no thread, and none is
//! torn down between the last answer and the parent's next request. A new
//! helper starts on its first call at once, so the first sub-agent request
//! leaves while later helpers are still being started. An axe process is
//! one run, so the helpers are the run's.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

/// How many threads one fan-out may use.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    /// At most this many calls run at once.
    pub max: usize,
    /// At most this many helper threads can be had per fan-out: the tests'
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

/// Counts the helpers still working on a fan-out; [`Latch::wait`] returns
/// when none is.
#[derive(Default)]
struct Latch {
    busy: Mutex<usize>,
    cv: Condvar,
}

impl Latch {
    fn add(&self) {
        *self.busy.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }

    fn done(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        *busy = busy.saturating_sub(1);
        if *busy == 0 {
            self.cv.notify_all();
        }
    }

    fn wait(&self) {
        let busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        let _idle = self
            .cv
            .wait_while(busy, |busy| *busy > 0)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Waits on its latch when dropped: the fan-out cannot return, nor unwind,
/// while a helper may still use what it lent them.
struct WaitForHelpers(Arc<Latch>);

impl Drop for WaitForHelpers {
    fn drop(&mut self) {
        self.0.wait();
    }
}

/// A fan-out's work lent to one helper: take calls until none is left,
/// then count `done` down.
struct Job {
    /// Borrowed from the fan-out's stack, its lifetime erased: see
    /// [`on_helpers`] for why that is sound.
    work: &'static (dyn Fn() + Sync),
    done: Arc<Latch>,
}

/// Idle helpers, each waiting on its channel for its next job.
static IDLE: Mutex<Vec<Sender<Job>>> = Mutex::new(Vec::new());

/// The most threads one fan-out uses, and the most idle helpers kept (more
/// end instead): one fan-out at the cap never needs more (design §1.4).
pub const MAX_THREADS: usize = 256;

/// Runs `run` for every call and collects the results in call order. With
/// `parallel` and more than one call, up to `threads.max` calls run at
/// once: the calling thread takes calls too, with one helper thread per
/// further call (idle ones first, new ones when there are none), every
/// thread taking the next call by index until all have started. Without
/// `parallel`, or for a single call, the calls run in order on the calling
/// thread. A panic in one call becomes that call's result, made by
/// `panicked` from the panic's payload; its siblings and the caller go on
/// (design D4).
///
/// A thread waiting for a nested fan-out works on that fan-out's calls, and
/// only those: it never picks up a sibling of its own call meanwhile.
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
    if !parallel || calls.len() < 2 || threads.max < 2 {
        return calls
            .iter()
            .enumerate()
            .map(|(i, c)| guarded(i, c))
            .collect();
    }
    let helpers = (calls.len().min(threads.max) - 1).min(threads.spawnable);
    let slots = on_helpers(calls, helpers, &guarded);
    calls
        .iter()
        .zip(slots)
        .map(|(call, slot)| {
            slot.into_inner()
                .unwrap_or_else(|| panicked(call, &"the call returned no result"))
        })
        .collect()
}

/// Runs `calls` on the calling thread and up to `helpers` helper threads;
/// fewer when threads cannot be started (with none, the calling thread runs
/// them all, in order).
fn on_helpers<T, R, G>(calls: &[T], helpers: usize, guarded: &G) -> Vec<OnceLock<R>>
where
    T: Sync,
    R: Send + Sync,
    G: Fn(usize, &T) -> R + Sync,
{
    let slots: Vec<OnceLock<R>> = calls.iter().map(|_| OnceLock::new()).collect();
    let next = AtomicUsize::new(0);
    let take_calls = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let (Some(call), Some(slot)) = (calls.get(i), slots.get(i)) else {
                break;
            };
            let _ = slot.set(guarded(i, call));
        }
    };
    let latch = Arc::new(Latch::default());
    {
        // Declared after everything `take_calls` borrows, so dropped (and
        // waited on) before any of it, on return and on unwinding alike.
        let _wait = WaitForHelpers(latch.clone());
        let work: &(dyn Fn() + Sync) = &take_calls;
        // SAFETY: `work` borrows this frame. A helper given it calls it,
        // drops its `Job` and only then counts `latch` down (`helper`);
        // `_wait` blocks until every helper handed a job has counted down,
        // and is dropped before anything `work` borrows, whether this
        // function returns or unwinds. So no helper uses `work` after the
        // frame is gone, and the 'static lifetime is never relied on.
        let work: &'static (dyn Fn() + Sync) = unsafe { std::mem::transmute(work) };
        for _ in 0..helpers {
            // No more calls left to start: further helpers would find none.
            if next.load(Ordering::Relaxed) >= calls.len() {
                break;
            }
            latch.add();
            let job = Job {
                work,
                done: latch.clone(),
            };
            if !hand_out(job) {
                latch.done();
                break;
            }
        }
        take_calls();
    }
    slots
}

/// Gives `job` to an idle helper, else to a new one; false when no thread
/// could be started (the job is dropped unrun).
fn hand_out(mut job: Job) -> bool {
    loop {
        let idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let Some(helper) = idle else { break };
        match helper.send(job) {
            Ok(()) => return true,
            // That helper has ended; try the next.
            Err(returned) => job = returned.0,
        }
    }
    let (tx, rx) = channel();
    super::thread::spawn(Box::new(move || helper(job, &rx, tx)))
}

/// A helper thread: runs `first`, then every job sent on `jobs`, parked
/// in [`IDLE`] between them.
fn helper(first: Job, jobs: &Receiver<Job>, me: Sender<Job>) {
    let stack = Stack::own();
    let mut job = first;
    loop {
        // The work catches each call's panic; this is for a bug in the
        // loop itself, which must still count down or its fan-out waits
        // for ever.
        let _ = catch_unwind(AssertUnwindSafe(job.work));
        let Job { done, .. } = job;
        // Parked before counting down, so that the fan-out's next turn
        // finds this helper idle instead of starting another; a job sent
        // meanwhile waits in the channel.
        let parked = {
            let mut idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
            let room = idle.len() < MAX_THREADS;
            if room {
                idle.push(me.clone());
            }
            room
        };
        done.done();
        if !parked {
            return;
        }
        stack.release_below_here();
        match jobs.recv() {
            Ok(next) => job = next,
            Err(_) => return,
        }
    }
}

/// A helper's own stack, for giving back what a call left touched.
///
/// A call goes 28 KiB deep into its helper's stack (ureq's request, design
/// §3.15) and a parked helper needs a few KiB of it; the pages in between
/// would stay resident, 4 MiB after a 256-way fan-out, until the process
/// ends.
/// Given back when the helper parks, they are the kernel's again, and
/// the next call that goes as deep faults in zeroed pages.
struct Stack {
    /// The lowest address of the stack, above its guard page; 0 when it
    /// could not be had (nothing is then given back).
    low: usize,
    page: usize,
}

impl Stack {
    #[cfg(target_os = "linux")]
    fn own() -> Stack {
        // SAFETY: `attr` is filled by pthread_getattr_np before it is read
        // and destroyed after; `addr` and `size` are written by
        // pthread_attr_getstack alone. sysconf only reads a setting.
        unsafe {
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(0);
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                return Stack { low: 0, page };
            }
            let mut addr = std::ptr::null_mut();
            let mut size = 0;
            let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            let low = if got == 0 { addr as usize } else { 0 };
            Stack { low, page }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn own() -> Stack {
        Stack { low: 0, page: 0 }
    }

    /// Gives back this stack's pages from a page below this frame's down
    /// to the bottom: the parked helper's wait runs in the page kept.
    #[inline(never)]
    fn release_below_here(&self) {
        let here = std::ptr::from_ref(self) as usize;
        if self.low == 0 || !self.page.is_power_of_two() || here < self.low {
            return;
        }
        let end = (here & !(self.page - 1)).saturating_sub(self.page);
        if end > self.low {
            Self::give_back(self.low, end - self.low);
        }
    }

    #[cfg(target_os = "linux")]
    fn give_back(low: usize, len: usize) {
        // SAFETY: [low, low + len) lies in this thread's own stack, above
        // its guard page, and ends at least a page below the parked
        // helper's frame (`release_below_here`): nothing there is live,
        // since only that call and this one, a few hundred bytes, run
        // below the helper's frame now. Those pages read as zeroes when
        // touched next, as a fresh stack's do.
        unsafe {
            libc::madvise(low as *mut libc::c_void, len, libc::MADV_DONTNEED);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn give_back(_low: usize, _len: usize) {}
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
    /// could be had: the helpers and the calling thread.
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
                // Held until four have run at once (at most 10 s): a helper
                // slow to get a processor still finds a call left for it,
                // where a fixed 50 ms let the others take them all.
                let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while most.load(Ordering::SeqCst) < 4 && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                now.fetch_sub(1, Ordering::SeqCst);
                c.clone()
            },
            panicked,
        );
        assert_eq!(results, named(6));
        assert_eq!(most.load(Ordering::SeqCst), 4);
    }
}
