//! Output schemas (design D22): an agent's `[output]` schema (or
//! `--output-schema`'s) read and checked, an answer checked against it, and
//! the message that tells the model what to fix. What part of JSON Schema
//! is read is in `compile`, how an answer is checked in `check`.

mod chains;
mod check;
mod compile;
mod nodes;
mod number;
mod pattern;
mod quote;
mod structure;
mod value;

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::error::Error;
use crate::paths;
use crate::sandbox::beneath::{Anchored, Base};
use crate::sandbox::read;

/// The most validation errors a repair message lists.
const MAX_LISTED: usize = 8;

/// Steps the check may take for any answer; a larger answer gets
/// [`STEPS_PER_BYTE`] more for each of its bytes (design D22).
const MIN_STEPS: u64 = 1_000_000;
const STEPS_PER_BYTE: u64 = 8;

/// An output schema that axe can check answers against, with what a run
/// needs of `[output]`.
#[derive(Debug, Clone)]
pub struct OutputSchema {
    /// The schema as written (sent to providers, shown by `--dry-run`).
    pub schema: Value,
    pub max_repairs: u32,
    /// The schema read into nodes, patterns compiled (shared by the copies
    /// a run's sub-agents hold).
    compiled: Arc<compile::Compiled>,
}

impl PartialEq for OutputSchema {
    fn eq(&self, other: &OutputSchema) -> bool {
        self.schema == other.schema && self.max_repairs == other.max_repairs
    }
}

/// What an answer turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// It matches: the value, and its compact JSON text.
    Valid(Value, String),
    /// It does not: what is wrong, first things first, each one line.
    Invalid(Vec<String>),
    /// The deadline passed before the check was done.
    TimedOut,
}

/// Checks that `schema` is one axe can check answers against (design D22).
pub fn compile(schema: Value, max_repairs: u32) -> Result<OutputSchema, Error> {
    let compiled = compile::compile(&schema)
        .map_err(|e| Error::config(format!("output schema: {}", crate::text::one_line(&e))))?;
    Ok(OutputSchema {
        schema,
        max_repairs,
        compiled: Arc::new(compiled),
    })
}

/// Reads a JSON schema file: regular, at most 1 MiB, JSON, `written`
/// against `base` with no link followed (it may lie where an agent
/// writes: design §8.7).
pub fn read_file(base: Base, written: &str, what: &str) -> Result<Value, Error> {
    let path = paths::resolve_against(base.path(), written);
    let text = Anchored::new(base, written)
        .map_err(read::Unreadable::Io)
        .and_then(|at| {
            let (root, rest) = at.parts();
            read::config_text_in(root, rest)
        })
        .map_err(|e| Error::config(format!("{what} {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::config(format!("{what} {}: not JSON: {e}", path.display())))
}

impl OutputSchema {
    /// Checks `answer`, the model's final text: it must be one JSON value
    /// (a fenced ```json block around it is taken off) matching the schema.
    /// The check stops at `deadline`, and after a budget of steps that grows
    /// with the answer (an answer it cannot finish is not accepted).
    pub fn check(&self, answer: &str, deadline: Option<Instant>) -> Checked {
        let text = unfenced(answer);
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return Checked::Invalid(vec![format!("at /: not JSON: {e}")]),
        };
        let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
        let limit = MIN_STEPS.saturating_add(bytes.saturating_mul(STEPS_PER_BYTE));
        match check::check(&self.compiled, &value, limit, deadline) {
            check::Outcome::Valid => {
                let text = value.to_string();
                Checked::Valid(value, text)
            }
            check::Outcome::Invalid(problems) => Checked::Invalid(problems),
            check::Outcome::TimedOut => Checked::TimedOut,
        }
    }

    /// The user turn that asks for a repair: what is wrong, and the schema.
    pub fn repair_message(&self, problems: &[String]) -> String {
        let mut text = String::from("Your answer does not match the required JSON schema:\n");
        for p in problems.iter().take(MAX_LISTED) {
            text.push_str(&format!("- {p}\n"));
        }
        if problems.len() > MAX_LISTED {
            text.push_str(&format!("- ... and {} more\n", problems.len() - MAX_LISTED));
        }
        text.push_str(&format!(
            "Answer again with only a JSON value that matches this schema, and nothing else:\n{}",
            self.schema
        ));
        text
    }
}

/// `text` without surrounding whitespace and without a Markdown code fence
/// around it (models often add one even when asked not to).
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // Drop the info string (`json`) on the opening line.
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[cfg(test)]
mod tests;
