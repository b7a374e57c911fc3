//! An answer checked against a compiled schema (design D22), with every
//! failure named by its place in the answer, and bounded like everything
//! else axe does: a budget of steps, the run's deadline, a depth limit, and
//! results remembered for the nodes a `$ref` can reach twice, so that no
//! schema makes a small answer exponential work.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;

use super::compile::{Compiled, Id, Node, Rules, TYPES, place};
use super::number::Decimal;
use super::quote;
use super::value::{is_type, same, type_of};

/// How many problems are listed before the check stops looking.
pub(super) const MAX_PROBLEMS: usize = 32;

/// How deep the check may recurse: the answer's own nesting (at most 128,
/// serde_json's limit) times the few schemas that apply at each level.
const MAX_DEPTH: usize = 1000;

/// Steps between two looks at the clock.
const CLOCK_EVERY: u64 = 4096;

/// What checking an answer came to.
#[derive(Debug)]
pub enum Outcome {
    Valid,
    /// What is wrong, first things first, each `at <place>: <what>`.
    Invalid(Vec<String>),
    /// The deadline passed first.
    TimedOut,
}

/// Checks `value` against `c`, in at most `limit` steps and until `deadline`.
pub fn check(c: &Compiled, value: &Value, limit: u64, deadline: Option<Instant>) -> Outcome {
    let mut w = Walk {
        c,
        limit,
        deadline,
        steps: 0,
        depth: 0,
        memo: HashMap::new(),
        path: Vec::new(),
        problems: Vec::new(),
        stop: None,
    };
    let valid = w.eval(0, value, ident(value), true);
    match w.stop {
        Some(Stop::Deadline) => Outcome::TimedOut,
        Some(Stop::Steps) => Outcome::Invalid(vec![format!(
            "at /: could not be checked in {limit} steps: the schema is too costly for an \
             answer like this one"
        )]),
        Some(Stop::Depth) => Outcome::Invalid(vec![format!(
            "at {}: the answer and the schema nest too deep to check ({MAX_DEPTH} levels)",
            w.place()
        )]),
        Some(Stop::Enough) | None if !valid || !w.problems.is_empty() => {
            Outcome::Invalid(w.problems)
        }
        _ => Outcome::Valid,
    }
}

/// Why the walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Stop {
    Steps,
    Deadline,
    Depth,
    /// [`MAX_PROBLEMS`] found: the answer is wrong, and the list is long enough.
    Enough,
}

/// A remembered result for one node at one place in the answer.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Memo {
    Valid,
    /// Invalid, found without listing why.
    Invalid,
    /// Invalid, and its problems are listed already.
    Listed,
}

/// A place in the answer: the value's address (the answer is borrowed for
/// the whole walk, so it does not move), and whether it is an object's key
/// checked by `propertyNames` rather than a value.
pub(super) type Ident = (usize, bool);

pub(super) fn ident(v: &Value) -> Ident {
    (v as *const Value as usize, false)
}

/// One step down into the answer, for the place a problem is at.
#[derive(Clone, Copy)]
pub(super) enum Tok<'v> {
    Key(&'v str),
    Index(usize),
}

pub(super) struct Walk<'c, 'v> {
    pub(super) c: &'c Compiled,
    pub(super) limit: u64,
    pub(super) deadline: Option<Instant>,
    pub(super) steps: u64,
    pub(super) depth: usize,
    pub(super) memo: HashMap<(Id, Ident), Memo>,
    pub(super) path: Vec<Tok<'v>>,
    pub(super) problems: Vec<String>,
    pub(super) stop: Option<Stop>,
}

impl<'v> Walk<'_, 'v> {
    /// Whether `v` matches node `id`; with `list`, every problem found is
    /// listed, else the first one ends the walk of this node.
    pub(super) fn eval(&mut self, id: Id, v: &'v Value, at: Ident, list: bool) -> bool {
        if self.stop.is_some() || !self.step(1) {
            return false;
        }
        let shared = self.c.shared[id];
        if shared {
            match self.memo.get(&(id, at)) {
                Some(Memo::Valid) => return true,
                Some(Memo::Listed) => return false,
                Some(Memo::Invalid) if !list => return false,
                _ => {}
            }
        }
        if self.depth >= MAX_DEPTH {
            self.stop = Some(Stop::Depth);
            return false;
        }
        self.depth += 1;
        let c = self.c;
        let valid = match &c.nodes[id] {
            Node::Always(true) => true,
            Node::Always(false) => self.fail(list, || "no value is allowed here".into()),
            Node::Rules(r) => self.rules(r, v, at, list),
        };
        self.depth -= 1;
        if shared && self.stop.is_none() {
            let memo = match (valid, list) {
                (true, _) => Memo::Valid,
                (false, true) => Memo::Listed,
                (false, false) => Memo::Invalid,
            };
            self.memo.insert((id, at), memo);
        }
        valid
    }

    /// Counts `n` steps; false (and the walk stops) past the budget or the
    /// deadline.
    pub(super) fn step(&mut self, n: u64) -> bool {
        let before = self.steps;
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.limit {
            self.stop = Some(Stop::Steps);
            return false;
        }
        if before / CLOCK_EVERY != self.steps / CLOCK_EVERY
            && self.deadline.is_some_and(|d| Instant::now() >= d)
        {
            self.stop = Some(Stop::Deadline);
            return false;
        }
        true
    }

    /// Records a problem at the current place when listing; always false.
    pub(super) fn fail(&mut self, list: bool, what: impl FnOnce() -> String) -> bool {
        if list && self.stop.is_none() {
            let line = format!("at {}: {}", self.place(), what());
            self.problems.push(line);
            if self.problems.len() >= MAX_PROBLEMS {
                self.stop = Some(Stop::Enough);
            }
        }
        false
    }

    /// The current place as a JSON Pointer.
    pub(super) fn place(&self) -> String {
        let mut s = String::new();
        for t in &self.path {
            s.push('/');
            match t {
                Tok::Key(k) => s.push_str(&super::compile::escape(k)),
                Tok::Index(i) => s.push_str(&i.to_string()),
            }
        }
        place(&s).to_string()
    }

    /// Goes on after a failure only when listing and not stopped.
    pub(super) fn more(&self, list: bool) -> bool {
        list && self.stop.is_none()
    }

    fn rules(&mut self, r: &Rules, v: &'v Value, at: Ident, list: bool) -> bool {
        if let Some(types) = &r.types
            && !types.iter().any(|i| is_type(v, TYPES[*i]))
        {
            let names: Vec<&str> = types.iter().map(|i| TYPES[*i]).collect();
            // The other keywords would only repeat this.
            return self.fail(list, || {
                format!("expected {}, got {}", names.join(" or "), type_of(v))
            });
        }
        let mut ok = true;
        if let Some(allowed) = &r.enumeration {
            if !self.step(allowed.len() as u64) {
                return false;
            }
            if !allowed.iter().any(|a| same(a, v)) {
                ok = self.fail(list, || {
                    format!("{} is not one of {}", quote::value(v), quote::list(allowed))
                });
                if !self.more(list) {
                    return false;
                }
            }
        }
        if let Some(c) = &r.constant
            && !same(c, v)
        {
            ok = self.fail(list, || format!("must be {}", quote::value(c)));
            if !self.more(list) {
                return false;
            }
        }
        let here = match v {
            Value::String(s) => self.string(r, v, s, list),
            Value::Number(n) => self.number(r, v, n, list),
            Value::Array(items) => self.array(r, items, list),
            Value::Object(fields) => self.object(r, fields, list),
            _ => true,
        };
        ok &= here;
        if !ok && !self.more(list) {
            return false;
        }
        ok &= self.combinators(r, v, at, list);
        ok
    }

    fn string(&mut self, r: &Rules, v: &Value, s: &str, list: bool) -> bool {
        let mut ok = true;
        if r.min_length.is_some() || r.max_length.is_some() {
            let n = s.chars().count() as u64;
            ok &= self.counts(r.min_length, r.max_length, n, "characters", list);
            if !ok && !self.more(list) {
                return false;
            }
        }
        if let Some((p, re)) = &r.pattern {
            if !self.step(1 + s.len() as u64 / 64) {
                return false;
            }
            if !re.is_match(s.as_bytes()) {
                ok = self.fail(list, || {
                    format!(
                        "{} does not match the pattern {}",
                        quote::value(v),
                        quote::text(p)
                    )
                });
            }
        }
        ok
    }

    fn number(&mut self, r: &Rules, v: &Value, n: &serde_json::Number, list: bool) -> bool {
        let d = Decimal::of(n);
        let checks = [
            (&r.minimum, "is less than"),
            (&r.maximum, "is more than"),
            (&r.exclusive_minimum, "is not more than"),
            (&r.exclusive_maximum, "is not less than"),
            (&r.multiple_of, "is not a multiple of"),
        ];
        let mut ok = true;
        for (i, (bound, what)) in checks.into_iter().enumerate() {
            let Some(b) = bound else { continue };
            let good = match i {
                0 => d >= b.value,
                1 => d <= b.value,
                2 => d > b.value,
                3 => d < b.value,
                _ => d.is_multiple_of(&b.value),
            };
            if !good {
                ok = self.fail(list, || format!("{} {what} {}", quote::value(v), b.text));
                if !self.more(list) {
                    return false;
                }
            }
        }
        ok
    }

    pub(super) fn counts(
        &mut self,
        min: Option<u64>,
        max: Option<u64>,
        n: u64,
        what: &str,
        list: bool,
    ) -> bool {
        let mut ok = true;
        if let Some(m) = min.filter(|m| n < *m) {
            ok = self.fail(list, || format!("{n} {what}, fewer than {m}"));
            if !self.more(list) {
                return false;
            }
        }
        if let Some(m) = max.filter(|m| n > *m) {
            ok = self.fail(list, || format!("{n} {what}, more than {m}"));
        }
        ok
    }

    fn combinators(&mut self, r: &Rules, v: &'v Value, at: Ident, list: bool) -> bool {
        let mut ok = true;
        if let Some(node) = r.reference {
            ok &= self.eval(node, v, at, list);
            if !ok && !self.more(list) {
                return false;
            }
        }
        for &node in &r.all_of {
            ok &= self.eval(node, v, at, list);
            if !ok && !self.more(list) {
                return false;
            }
        }
        if !r.any_of.is_empty() {
            let mut any = false;
            for &node in &r.any_of {
                if self.eval(node, v, at, false) {
                    any = true;
                    break;
                }
            }
            if !any {
                let n = r.any_of.len();
                ok = self.fail(list, || format!("matches none of the {n} schemas of anyOf"));
                if !self.more(list) {
                    return false;
                }
            }
        }
        if !r.one_of.is_empty() {
            // Two matches settle it: the rest need not be checked.
            let mut n = 0;
            let mut looked = 0;
            for &node in &r.one_of {
                looked += 1;
                if self.eval(node, v, at, false) {
                    n += 1;
                    if n > 1 {
                        break;
                    }
                }
            }
            if n != 1 {
                let more = if looked < r.one_of.len() {
                    " or more"
                } else {
                    ""
                };
                let what = format!("{n}{more}");
                ok = self.fail(list, || {
                    format!("matches {what} of the schemas of oneOf, not exactly one")
                });
                if !self.more(list) {
                    return false;
                }
            }
        }
        if let Some(node) = r.not
            && self.eval(node, v, at, false)
        {
            ok = self.fail(list, || "matches the schema of \"not\"".into());
            if !self.more(list) {
                return false;
            }
        }
        if let Some((cond, then, other)) = r.if_then_else {
            let branch = if self.eval(cond, v, at, false) {
                then
            } else {
                other
            };
            if let Some(node) = branch {
                ok &= self.eval(node, v, at, list);
            }
        }
        if let Value::Object(fields) = v {
            for (name, node) in &r.dependent_schemas {
                if fields.contains_key(name) && (ok || self.more(list)) {
                    ok &= self.eval(*node, v, at, list);
                }
            }
        }
        ok
    }
}
