//! Where an agent run sits in the tree ([`Place`]): its agent, its path
//! (`lead/researcher#2`, the second `researcher` call `lead` made), its
//! depth, and its OpenTelemetry spans open while it runs (design §7.9).
//! One allocation of its own, shared by its clones: the ledger's list of
//! the runs going on and a built-in tool's running note each hold one, and
//! a fan-out makes hundreds (design §7.9).

use std::io::Write;
use std::ops::Deref;
use std::sync::Arc;

use crate::trace::telemetry::AgentSpans;

/// Where one agent run sits in the tree; a clone is the same place (a
/// count, not a copy). Equal by where it is, not by the spans it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place(Arc<Where>);

/// What a [`Place`] holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Where {
    /// The agent's name (its file stem).
    pub agent: Arc<str>,
    /// `lead`, `lead/researcher#1`, `lead/researcher#1/fetcher#3`, ...
    pub path: Arc<str>,
    pub depth: u32,
    /// Its OpenTelemetry spans open (design §7.9), found by the place an
    /// event comes with, not looked up; empty when none are exported.
    pub spans: AgentSpans,
}

impl Deref for Place {
    type Target = Where;

    fn deref(&self) -> &Where {
        &self.0
    }
}

impl Place {
    /// A place `path` deep `depth` of the agent `agent` (the tree's places
    /// are made by [`Place::root`] and [`Place::child`]; this, for a view's
    /// tests).
    pub fn new(agent: &str, path: &str, depth: u32) -> Place {
        Place(Arc::new(Where {
            agent: agent.into(),
            path: path.into(),
            depth,
            spans: AgentSpans::default(),
        }))
    }

    /// Whether `other` is this place (a clone of it), not merely one at
    /// the same path.
    pub fn is(&self, other: &Place) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The top-level agent.
    pub fn root(agent: &str) -> Place {
        let agent: Arc<str> = agent.into();
        Place(Arc::new(Where {
            path: agent.clone(),
            agent,
            depth: 0,
            spans: AgentSpans::default(),
        }))
    }

    /// The same place for another run (a batch's next input): its own
    /// spans, where a clone shares them.
    pub fn again(&self) -> Place {
        Place(Arc::new(Where {
            agent: self.agent.clone(),
            path: self.path.clone(),
            depth: self.depth,
            spans: AgentSpans::default(),
        }))
    }

    /// The `seq`-th call (from 1) this place makes to the agent `name`.
    pub fn child(&self, name: &str, seq: u32) -> Place {
        Place(Arc::new(Where {
            agent: name.into(),
            path: child_path(&self.path, name, seq),
            depth: self.depth + 1,
            spans: AgentSpans::default(),
        }))
    }
}

/// `parent/name#seq` (`name#seq` under an empty path), written on the
/// stack and copied once into its counted string, not formatted into a
/// `String` first (one allocation an agent run, not two).
fn child_path(parent: &str, name: &str, seq: u32) -> Arc<str> {
    let sep = if parent.is_empty() { "" } else { "/" };
    let mut buf = [0u8; 256];
    let mut w = &mut buf[..];
    if write!(w, "{parent}{sep}{name}#{seq}").is_ok() {
        let n = 256 - w.len();
        if let Ok(path) = std::str::from_utf8(&buf[..n]) {
            return path.into();
        }
    }
    format!("{parent}{sep}{name}#{seq}").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_path_names_its_call_however_long() {
        // (Short paths: ledger::tests.) Under an empty path, no slash.
        assert_eq!(&*Place::default().child("a", 1).path, "a#1");
        // Past the stack's 256 bytes: formatted instead.
        let long = "x".repeat(300);
        let deep = Place::new("x", &long, 3).child("y", 10);
        assert_eq!(*deep.path, format!("{long}/y#10"));
        // A clone is the same place, and again() an equal one but not it.
        assert!(deep.clone().is(&deep));
        assert_eq!(deep.clone(), deep.again());
        assert!(!deep.again().is(&deep));
    }
}
