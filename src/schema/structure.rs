//! The keywords that walk into an answer's arrays and objects: items,
//! `contains`, uniqueness, properties (by name, by pattern, the rest),
//! property names and dependencies. Part of the walk in `check`.

use serde_json::{Map, Value};

use super::check::{Ident, Stop, Tok, Walk, ident};
use super::compile::{Id, Node, Rules};
use super::quote;
use super::value::first_repeat;

impl<'v> Walk<'_, 'v> {
    pub(super) fn array(&mut self, r: &Rules, items: &'v [Value], list: bool) -> bool {
        let mut ok = self.counts(r.min_items, r.max_items, items.len() as u64, "items", list);
        if !ok && !self.more(list) {
            return false;
        }
        if r.unique_items {
            if !self.step(items.len() as u64) {
                return false;
            }
            if let Some(i) = first_repeat(items) {
                ok = self.fail(list, || format!("item {i} repeats an earlier one"));
                if !self.more(list) {
                    return false;
                }
            }
        }
        for (i, item) in items.iter().enumerate() {
            let node = r
                .prefix_items
                .get(i)
                .copied()
                .or(if i >= r.prefix_items.len() {
                    r.items
                } else {
                    None
                });
            if let Some(node) = node {
                self.path.push(Tok::Index(i));
                let good = self.eval(node, item, ident(item), list);
                self.path.pop();
                ok &= good;
                if !good && !self.more(list) {
                    return false;
                }
            }
        }
        if let Some(node) = r.contains {
            let mut matching: u64 = 0;
            for item in items {
                if self.eval(node, item, ident(item), false) {
                    matching += 1;
                }
                if self.stop.is_some() {
                    return false;
                }
            }
            let min = r.min_contains.unwrap_or(1);
            if matching < min || r.max_contains.is_some_and(|m| matching > m) {
                let wanted = r
                    .max_contains
                    .map_or(" or more".to_string(), |m| format!(" to {m}"));
                ok = self.fail(list, || {
                    format!("{matching} items match \"contains\", wanted {min}{wanted}")
                });
            }
        }
        ok
    }

    pub(super) fn object(&mut self, r: &Rules, fields: &'v Map<String, Value>, list: bool) -> bool {
        let n = fields.len() as u64;
        let mut ok = self.counts(r.min_properties, r.max_properties, n, "properties", list);
        if !ok && !self.more(list) {
            return false;
        }
        for name in &r.required {
            if !fields.contains_key(name) {
                ok = self.fail(list, || {
                    format!("missing property \"{}\"", quote::name(name))
                });
                if !self.more(list) {
                    return false;
                }
            }
        }
        for (name, needs) in &r.dependent_required {
            if !fields.contains_key(name) {
                continue;
            }
            for need in needs.iter().filter(|n| !fields.contains_key(*n)) {
                ok = self.fail(list, || {
                    format!(
                        "property \"{}\" requires property \"{}\"",
                        quote::name(name),
                        quote::name(need)
                    )
                });
                if !self.more(list) {
                    return false;
                }
            }
        }
        for (name, v) in fields {
            if !self.field(r, name, v, list) {
                ok = false;
                if !self.more(list) {
                    return false;
                }
            }
        }
        ok
    }

    /// `properties`, `patternProperties`, `additionalProperties` and
    /// `propertyNames` for one field.
    fn field(&mut self, r: &Rules, name: &'v String, v: &'v Value, list: bool) -> bool {
        let mut ok = true;
        let mut matched = false;
        self.path.push(Tok::Key(name));
        if let Some(&node) = r.properties.get(name.as_str()) {
            matched = true;
            ok &= self.eval(node, v, ident(v), list);
        }
        for (_, re, node) in &r.pattern_properties {
            if !ok && !self.more(list) {
                break;
            }
            if !self.step(1 + name.len() as u64 / 64) {
                break;
            }
            if re.is_match(name.as_bytes()) {
                matched = true;
                ok &= self.eval(*node, v, ident(v), list);
            }
        }
        if !matched && (ok || self.more(list)) {
            match r.additional_properties.map(|n| (n, &self.c.nodes[n])) {
                Some((_, Node::Always(false))) => {
                    self.path.pop();
                    ok = self.fail(list, || {
                        format!("property \"{}\" is not allowed", quote::name(name))
                    });
                    self.path.push(Tok::Key(name));
                }
                Some((node, _)) => ok &= self.eval(node, v, ident(v), list),
                None => {}
            }
        }
        if let Some(node) = r.property_names
            && (ok || self.more(list))
        {
            let key = Value::String(name.clone());
            let at = (name as *const String as usize, true);
            // Problems are found on a copy of the name; the walk reports
            // them at the field's place.
            ok &= self.eval_name(node, &key, at, list);
        }
        self.path.pop();
        ok
    }

    /// Checks an object's key against `propertyNames`' node. The key is
    /// copied into a value that lives only for this call, so it is walked
    /// by a walk of its own (a string has no places below it) that shares
    /// the budget, the memory of results and the depth; its problems are
    /// reported at the field's place.
    fn eval_name(&mut self, node: Id, key: &Value, at: Ident, list: bool) -> bool {
        let mut sub = Walk {
            c: self.c,
            limit: self.limit,
            deadline: self.deadline,
            steps: self.steps,
            depth: self.depth,
            memo: std::mem::take(&mut self.memo),
            path: Vec::new(),
            problems: Vec::new(),
            stop: None,
        };
        let good = sub.eval(node, key, at, list);
        self.steps = sub.steps;
        self.memo = sub.memo;
        if let Some(stop) = sub.stop.filter(|s| *s != Stop::Enough) {
            self.stop = Some(stop);
        }
        for p in sub.problems {
            let what = p.strip_prefix("at /: ").unwrap_or(&p).to_string();
            self.fail(list, || what);
        }
        good
    }
}
