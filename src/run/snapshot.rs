//! What one run read of its sub-agents (design D20): the first call to an
//! agent loads it; the calls that arrive while it loads wait for that load,
//! each no longer than its own deadline, and share its outcome, a failure
//! as much as a success; a call after a failed load tries afresh. The
//! files come from the run's catalog, read at its start (design §8.8);
//! one that did not load there is read afresh, unless the catalog is
//! sealed (axe serve), when nothing is read after the start.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::agent::{Agent, Catalog};
use crate::deadline::Deadline;
use crate::error::Error;
use crate::provider::{ModelRef, Provider, Wire};
use crate::resolve::Resolved;

/// Why an agent could not be loaded (design §3.4 steps 7–10): what its
/// loading call, and every call that waited for that load, reports.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadError {
    /// Its file could not be used, so the call is rejected (steps 7 and 9):
    /// the whole `call_agent error: ...` text.
    Rejected(String),
    /// Resolving it failed: what went wrong, for `Error: sub-agent ...`.
    Failed(String),
}

/// The agents one run has loaded, or is loading. A new run starts empty.
#[derive(Debug, Default)]
pub struct Snapshot {
    agents: Mutex<HashMap<String, Slot>>,
    /// The agent files read so far, parsed: what a parent's tool
    /// description reads of its sub-agents (their output schemas) and what
    /// their first call resolves, so that a file is read once per run.
    files: Mutex<HashMap<String, Arc<Agent>>>,
    /// The agent files read at the run's start; none: every file is read
    /// when first asked for.
    catalog: Option<Arc<Catalog>>,
    /// The providers made so far, by model: what each agent run of the tree
    /// clones (see [`Snapshot::provider`]).
    providers: Mutex<Vec<(ModelRef, Provider)>>,
}

/// One agent of a [`Snapshot`]. An agent that was never loaded, or whose
/// last load failed, has none.
#[derive(Debug)]
enum Slot {
    Loading(Arc<Load>),
    Loaded(Arc<Resolved>),
}

/// One load of an agent, watched by the calls that wait for it.
#[derive(Debug, Default)]
struct Load {
    outcome: Mutex<Option<Outcome>>,
    done: Condvar,
}

/// How a load ended.
#[derive(Debug, Clone)]
enum Outcome {
    Loaded(Arc<Resolved>),
    /// What every call that waited for it reports.
    Failed(LoadError),
    /// It failed after its own call's deadline (a waiter's may be later),
    /// or it panicked: nothing is known of the agent, so its waiters try
    /// afresh.
    Abandoned,
}

impl Snapshot {
    /// A run's snapshot whose files come from `catalog` first.
    pub fn of(catalog: Arc<Catalog>) -> Snapshot {
        Snapshot {
            catalog: Some(catalog),
            ..Snapshot::default()
        }
    }

    /// The file of agent `name` as this run read it (its catalog's, else
    /// one read since), else `read`'s result, kept when it loads. A file
    /// that did not load is read afresh next time, as a failed load is
    /// (design D20), unless the catalog is sealed: then its failure stands.
    pub fn file(
        &self,
        name: &str,
        read: impl FnOnce() -> Result<Agent, Error>,
    ) -> Result<Arc<Agent>, Error> {
        if let Some(catalog) = &self.catalog {
            if let Some(agent) = catalog.loaded(name) {
                return Ok(agent);
            }
            if catalog.sealed() {
                return catalog.agent(name);
            }
        }
        let files = || self.files.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(agent) = files().get(name) {
            return Ok(agent.clone());
        }
        // Read without the lock: another agent's read never waits for it.
        let agent = Arc::new(read()?);
        Ok(files()
            .entry(name.to_string())
            .or_insert_with(|| agent.clone())
            .clone())
    }

    /// The provider `model` runs on in this run: `make`'s the first time,
    /// a clone of it after, so that the agent runs of a fan-out do not
    /// each read config.toml's settings and the environment again (design
    /// §3.15). A failure is not kept, nor a Bedrock provider, whose AWS
    /// keys are read afresh for each agent run (a credentials file may be
    /// renewed during a long run).
    pub fn provider(
        &self,
        model: &ModelRef,
        make: impl FnOnce() -> Result<Provider, Error>,
    ) -> Result<Provider, Error> {
        let made = || {
            self.providers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some((_, provider)) = made().iter().find(|(m, _)| m == model) {
            return Ok(provider.clone());
        }
        let provider = make()?;
        if provider.wire != Wire::Bedrock {
            let mut made = made();
            if !made.iter().any(|(m, _)| m == model) {
                made.push((model.clone(), provider.clone()));
            }
        }
        Ok(provider)
    }

    /// The agent `name` as loaded in this run: the loaded agent if there is
    /// one, else the outcome of the load under way, waited for until
    /// `deadline` at most, else `load`'s result. A failure is handed to the
    /// calls that waited for it and not kept for later ones (design D20).
    pub fn get_or_load(
        &self,
        name: &str,
        deadline: &Deadline,
        load: impl FnOnce() -> Result<Resolved, LoadError>,
    ) -> Result<Arc<Resolved>, LoadError> {
        loop {
            let pending = {
                let mut agents = self.agents.lock().unwrap_or_else(PoisonError::into_inner);
                match agents.get(name) {
                    Some(Slot::Loaded(resolved)) => return Ok(resolved.clone()),
                    Some(Slot::Loading(pending)) => pending.clone(),
                    None => {
                        let mine = Arc::new(Load::default());
                        agents.insert(name.to_string(), Slot::Loading(mine.clone()));
                        drop(agents);
                        return self.load_first(name, &mine, deadline, load);
                    }
                }
            };
            match pending.wait(deadline) {
                Some(Outcome::Loaded(resolved)) => return Ok(resolved),
                Some(Outcome::Failed(e)) => return Err(e),
                Some(Outcome::Abandoned) if !deadline.passed() => continue,
                Some(Outcome::Abandoned) | None => {
                    return Err(LoadError::Failed(format!(
                        "timeout after {}s",
                        deadline.secs
                    )));
                }
            }
        }
    }

    /// Runs `load` as the agent's first call (`mine` is its slot's load)
    /// and hands the outcome to the snapshot and the waiters, also if
    /// `load` panics. Out of line: only one call per agent runs it, and
    /// its frame would otherwise be on every waiting call's stack.
    #[inline(never)]
    fn load_first(
        &self,
        name: &str,
        mine: &Arc<Load>,
        deadline: &Deadline,
        load: impl FnOnce() -> Result<Resolved, LoadError>,
    ) -> Result<Arc<Resolved>, LoadError> {
        let mut hand_over = HandOver {
            snapshot: self,
            name,
            load: mine,
            outcome: Outcome::Abandoned,
        };
        let result = load().map(Arc::new);
        hand_over.outcome = match &result {
            Ok(resolved) => Outcome::Loaded(resolved.clone()),
            Err(_) if deadline.passed() => Outcome::Abandoned,
            Err(e) => Outcome::Failed(e.clone()),
        };
        result
    }
}

impl Load {
    /// The outcome, once there is one; None if `deadline` passes first.
    fn wait(&self, deadline: &Deadline) -> Option<Outcome> {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(done) = &*outcome {
                return Some(done.clone());
            }
            let left = deadline.left();
            if left.is_zero() {
                return None;
            }
            outcome = self
                .done
                .wait_timeout(outcome, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A load's outcome on its way to the snapshot and the waiters: handed
/// over when the loading call drops it, so a panic in `load` hands over
/// [`Outcome::Abandoned`] instead of leaving the waiters to their deadlines.
struct HandOver<'a> {
    snapshot: &'a Snapshot,
    name: &'a str,
    load: &'a Arc<Load>,
    outcome: Outcome,
}

impl Drop for HandOver<'_> {
    fn drop(&mut self) {
        // The slot first: a waiter told to try afresh must find it empty.
        {
            let mut agents = self
                .snapshot
                .agents
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let ours = matches!(agents.get(self.name), Some(Slot::Loading(l)) if Arc::ptr_eq(l, self.load));
            if ours {
                match &self.outcome {
                    Outcome::Loaded(resolved) => {
                        agents.insert(self.name.to_string(), Slot::Loaded(resolved.clone()));
                    }
                    Outcome::Failed(_) | Outcome::Abandoned => {
                        agents.remove(self.name);
                    }
                }
            }
        }
        let mut outcome = self
            .load
            .outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *outcome = Some(self.outcome.clone());
        self.load.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::thread;
    use std::time::{Duration, Instant};

    fn agent_w() -> Result<Resolved, LoadError> {
        let text = "name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"You are w.\"\n";
        let agent = crate::agent::parse("w", Path::new("w.toml"), text).unwrap();
        Ok(crate::resolve::resolve(
            agent,
            &crate::resolve::Overrides::default(),
            &crate::config::GlobalConfig::default(),
            Path::new("."),
            &later(),
        )
        .unwrap())
    }

    fn broken() -> Result<Resolved, LoadError> {
        Err(LoadError::Failed("broken".into()))
    }

    fn later() -> Deadline {
        Deadline::after(60)
    }

    fn never_called() -> Result<Resolved, LoadError> {
        panic!("this call should not load")
    }

    /// How many calls hold the load under way of `name`: its loader and
    /// its waiters (the slot's own reference not counted).
    fn holding(snapshot: &Snapshot, name: &str) -> usize {
        match snapshot.agents.lock().unwrap().get(name) {
            Some(Slot::Loading(l)) => Arc::strong_count(l) - 1,
            _ => 0,
        }
    }

    /// What a test sends a waiting load to end it with.
    type Release = mpsc::Sender<Result<Resolved, LoadError>>;

    /// Starts loading `w` on a thread whose load returns what `release`
    /// sends, once the load has begun; its result comes back on the handle.
    fn slow_load(
        snapshot: &Arc<Snapshot>,
    ) -> (
        Release,
        thread::JoinHandle<Result<Arc<Resolved>, LoadError>>,
    ) {
        let (release, wait) = mpsc::channel();
        let (began, begun) = mpsc::channel();
        let s = snapshot.clone();
        let handle = thread::spawn(move || {
            s.get_or_load("w", &later(), || {
                began.send(()).unwrap();
                wait.recv().unwrap()
            })
        });
        begun.recv().unwrap();
        (release, handle)
    }

    #[test]
    fn a_loaded_agent_is_shared_and_a_failure_is_not_kept() {
        let snapshot = Snapshot::default();
        assert_eq!(
            snapshot.get_or_load("w", &later(), broken).unwrap_err(),
            LoadError::Failed("broken".into())
        );
        let first = snapshot.get_or_load("w", &later(), agent_w).unwrap();
        let again = snapshot.get_or_load("w", &later(), never_called).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn calls_waiting_for_a_failed_load_get_its_error_and_do_not_load() {
        let snapshot = Arc::new(Snapshot::default());
        let (release, loader) = slow_load(&snapshot);
        let loads = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let (s, loads) = (snapshot.clone(), loads.clone());
                thread::spawn(move || {
                    s.get_or_load("w", &later(), || {
                        loads.fetch_add(1, Ordering::SeqCst);
                        agent_w()
                    })
                })
            })
            .collect();
        while holding(&snapshot, "w") < 9 {
            thread::sleep(Duration::from_millis(1));
        }
        release.send(broken()).unwrap();
        let failed = LoadError::Failed("broken".into());
        assert_eq!(loader.join().unwrap().unwrap_err(), failed);
        for waiter in waiters {
            assert_eq!(waiter.join().unwrap().unwrap_err(), failed);
        }
        assert_eq!(loads.load(Ordering::SeqCst), 0);
        // A later call loads afresh.
        assert!(snapshot.get_or_load("w", &later(), agent_w).is_ok());
    }

    #[test]
    fn a_waiter_gives_up_at_its_own_deadline() {
        let snapshot = Arc::new(Snapshot::default());
        let (release, loader) = slow_load(&snapshot);
        let started = Instant::now();
        let soon = Deadline {
            at: started + Duration::from_millis(50),
            secs: 7,
        };
        let err = snapshot.get_or_load("w", &soon, never_called).unwrap_err();
        assert_eq!(err, LoadError::Failed("timeout after 7s".into()));
        assert!(started.elapsed() < Duration::from_secs(5));
        // The load goes on, and what it loads is kept.
        release.send(agent_w()).unwrap();
        let loaded = loader.join().unwrap().unwrap();
        let again = snapshot.get_or_load("w", &later(), never_called).unwrap();
        assert!(Arc::ptr_eq(&loaded, &again));
    }

    #[test]
    fn a_load_that_panics_sends_its_waiters_to_load_afresh() {
        let snapshot = Arc::new(Snapshot::default());
        let (release, wait) = mpsc::channel::<()>();
        let (began, begun) = mpsc::channel();
        let s = snapshot.clone();
        let loader = thread::spawn(move || {
            s.get_or_load("w", &later(), || {
                began.send(()).unwrap();
                wait.recv().unwrap();
                panic!("a bug while loading")
            })
        });
        begun.recv().unwrap();
        let s = snapshot.clone();
        let waiter = thread::spawn(move || s.get_or_load("w", &later(), agent_w));
        while holding(&snapshot, "w") < 2 {
            thread::sleep(Duration::from_millis(1));
        }
        release.send(()).unwrap();
        assert!(loader.join().is_err());
        assert!(waiter.join().unwrap().is_ok());
    }

    #[test]
    fn a_load_that_failed_after_its_own_deadline_is_not_handed_on() {
        let snapshot = Arc::new(Snapshot::default());
        let (release, wait) = mpsc::channel();
        let (began, begun) = mpsc::channel();
        let s = snapshot.clone();
        let soon = Deadline {
            at: Instant::now() + Duration::from_millis(20),
            secs: 1,
        };
        let loader = thread::spawn(move || {
            s.get_or_load("w", &soon, || {
                began.send(()).unwrap();
                wait.recv().unwrap()
            })
        });
        begun.recv().unwrap();
        let s = snapshot.clone();
        let waiter = thread::spawn(move || s.get_or_load("w", &later(), agent_w));
        while holding(&snapshot, "w") < 2 || !soon.passed() {
            thread::sleep(Duration::from_millis(1));
        }
        let timed_out = LoadError::Failed("timeout after 1s".into());
        release.send(Err(timed_out.clone())).unwrap();
        assert_eq!(loader.join().unwrap().unwrap_err(), timed_out);
        // The waiter, with time left, loaded it itself.
        assert!(waiter.join().unwrap().is_ok());
    }

    #[test]
    fn a_provider_is_made_once_per_model_and_a_failure_is_not_kept() {
        let snapshot = Snapshot::default();
        let made = AtomicUsize::new(0);
        let make = |url: &str| {
            made.fetch_add(1, Ordering::SeqCst);
            Ok(Provider::new(Wire::OpenAi, url, None))
        };
        let gpt = ModelRef::parse("openai/gpt-4o").unwrap();
        let mini = ModelRef::parse("openai/gpt-4o-mini").unwrap();
        let failed = snapshot.provider(&gpt, || Err(Error::general("no key")));
        assert!(failed.is_err());
        let first = snapshot.provider(&gpt, || make("http://a")).unwrap();
        let again = snapshot.provider(&gpt, || make("http://b")).unwrap();
        assert_eq!(
            (first.base_url.as_str(), again.base_url.as_str()),
            ("http://a", "http://a")
        );
        let other = snapshot.provider(&mini, || make("http://c")).unwrap();
        assert_eq!(other.base_url, "http://c");
        assert_eq!(made.load(Ordering::SeqCst), 2);
        // Bedrock's keys are read for each run.
        let bedrock = ModelRef::parse("bedrock/anthropic.claude").unwrap();
        for _ in 0..2 {
            let p = snapshot.provider(&bedrock, || {
                Ok(Provider::new(Wire::Bedrock, "http://d", None))
            });
            assert!(p.is_ok());
        }
        assert_eq!(snapshot.providers.lock().unwrap().len(), 2);
    }
}
