//! The calls' threads (design §9.6), kept for the next call: a thread
//! made per call and ended after it cost a quarter of the serving
//! process's CPU for 64 calls at once (the 8 MiB stack mapped, its pages
//! faulted in, unmapped at the end with every core's TLB flushed). A call
//! goes to an idle thread when one waits, else to a new one; a thread
//! idle for [`IDLE`] ends, so a server at rest holds none.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// A call's thread's stack: a run's top-level agent runs on it.
const CALL_STACK: usize = 8 * 1024 * 1024;
/// How long a thread with nothing to do waits for a call before it ends.
const IDLE: Duration = Duration::from_secs(10);

/// One call's work.
pub type Job = Box<dyn FnOnce() + Send>;

/// The threads that run calls.
#[derive(Default)]
pub struct Pool {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    /// Jobs handed to idle threads, not yet taken.
    queue: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pool {
    /// Runs `job` on an idle thread, else on a new one; the error is the
    /// system's refusal of a new thread.
    pub fn run(&self, job: Job) -> std::io::Result<()> {
        let mut s = self.inner.lock();
        if s.idle > s.queue.len() {
            s.queue.push_back(job);
            self.inner.ready.notify_one();
            return Ok(());
        }
        drop(s);
        let inner = self.inner.clone();
        std::thread::Builder::new()
            .name("axe-mcp-call".into())
            .stack_size(CALL_STACK)
            .spawn(move || work(&inner, job))
            .map(drop)
    }
}

/// A thread's life: `first`, then whatever calls come while it waits, until
/// it has waited [`IDLE`] for none.
fn work(inner: &Inner, first: Job) {
    first();
    loop {
        let mut s = inner.lock();
        s.idle += 1;
        while s.queue.is_empty() {
            let (next, waited) = inner
                .ready
                .wait_timeout(s, IDLE)
                .unwrap_or_else(PoisonError::into_inner);
            s = next;
            if waited.timed_out() && s.queue.is_empty() {
                s.idle -= 1;
                return;
            }
        }
        s.idle -= 1;
        let job = s.queue.pop_front();
        drop(s);
        if let Some(job) = job {
            job();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_thread_that_finished_a_call_runs_the_next() {
        let pool = Pool::default();
        let (tx, rx) = mpsc::channel();
        let job = |tx: mpsc::Sender<std::thread::ThreadId>| -> Job {
            Box::new(move || tx.send(std::thread::current().id()).unwrap())
        };
        pool.run(job(tx.clone())).unwrap();
        let first = rx.recv().unwrap();
        for _ in 0..3 {
            // Idle once its job is done: the next call finds it waiting,
            // and no second thread is made.
            while pool.inner.lock().idle == 0 {
                std::thread::yield_now();
            }
            pool.run(job(tx.clone())).unwrap();
            assert_eq!(rx.recv().unwrap(), first);
        }
    }

    #[test]
    fn calls_at_once_each_get_a_thread() {
        let pool = Pool::default();
        let gate = Arc::new(std::sync::Barrier::new(9));
        let (tx, rx) = mpsc::channel();
        for _ in 0..8 {
            let (gate, tx) = (gate.clone(), tx.clone());
            pool.run(Box::new(move || {
                gate.wait();
                tx.send(()).unwrap();
            }))
            .unwrap();
        }
        // All eight wait at the barrier together: none queued behind another.
        gate.wait();
        for _ in 0..8 {
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
    }
}
