//! A top-level run's conversation, kept beside the run log so that a later
//! run can go on with it (`axe run AGENT --continue`, design §7.7): the
//! history as the run has it ([`Kept`], filled by the conversation loop),
//! its one JSON representation (every message variant is one arm of
//! [`stored`] and one of [`message`]), and its file,
//! `<state>/messages/<run_id>.json`, written whole or not at all and
//! removed as the log's rotation drops the run's record.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::{Attachment, Message, ToolCall, ToolResult};
use crate::text::redact::{redact, redact_fields};

/// The directory, beside `runs.jsonl`, that holds one file per run.
pub const DIR: &str = "messages";
/// The largest conversation kept (16 MiB of JSON): a larger one is not
/// kept, and said so (design §7.7).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// A top-level run's conversation: the one it goes on with (`prior`, sent
/// before the new prompt) and the history as the run has it so far, the
/// system prompt left out (it is rebuilt from the agent).
#[derive(Debug, Default)]
pub struct Kept {
    /// The conversation of the run continued, as its file had it.
    pub prior: Vec<Message>,
    /// The wire `prior` was had on: its reasoning items are that wire's own.
    pub prior_wire: String,
    /// The id of the run `prior` is the conversation of.
    pub prior_run: String,
    now: Mutex<Now>,
}

#[derive(Debug, Default)]
struct Now {
    wire: String,
    messages: Vec<Message>,
}

impl Kept {
    /// Going on with `saved`'s conversation; one of its messages that is
    /// not one is the error.
    pub fn continuing(saved: Saved) -> Result<Kept, String> {
        Ok(Kept {
            prior: from_json(saved.messages)?,
            prior_wire: saved.wire,
            prior_run: saved.run_id,
            now: Mutex::default(),
        })
    }

    /// The history is now `messages`, then `answer` when the run has one,
    /// on `wire`. While a conversation goes on it only grows: the messages
    /// past those already held are cloned, not the whole history again.
    pub fn sync(&self, wire: &str, messages: &[Message], answer: Option<Message>) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        if now.wire != wire {
            now.wire = wire.to_string();
        }
        let held = now.messages.len();
        if answer.is_none() && held <= messages.len() {
            now.messages.extend_from_slice(&messages[held..]);
        } else {
            now.messages = messages.to_vec();
            now.messages.extend(answer);
        }
    }

    /// Writes the history as run `run_id`'s file (see [`write_file`]) under the
    /// name of `agent`, continuing run `continues`; whether there was one
    /// to write. Written from the history as it is held: neither copied
    /// nor made a `Value` first (design §3.15).
    pub fn save(
        &self,
        dir: &Path,
        run_id: &str,
        agent: &str,
        continues: Option<&str>,
    ) -> io::Result<bool> {
        let text = {
            let now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
            if now.messages.is_empty() {
                return Ok(false);
            }
            let saved = SavedOut {
                run_id,
                agent,
                wire: &now.wire,
                continues,
                messages: now.messages.iter().map(stored).collect(),
            };
            // Serializing strings and JSON values cannot fail.
            serde_json::to_vec(&saved).unwrap_or_default()
        };
        write_file(dir, run_id, &text).map(|()| true)
    }

    /// The history so far and its wire (empty before the first request).
    pub fn snapshot(&self) -> (String, Vec<Message>) {
        let now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        (now.wire.clone(), now.messages.clone())
    }
}

/// A conversation's file.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Saved {
    pub run_id: String,
    pub agent: String,
    /// The wire the conversation was had on (`anthropic`, `openai`, ...).
    pub wire: String,
    /// The run this one continued, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    pub messages: Vec<Value>,
}

/// One message as it is stored and printed by `--json-messages`, written
/// straight from the history rather than through a `Value` of each
/// message (design §3.15). Each variant's fields are in the order of their
/// names and `role` among them, as a JSON object's keys are when written
/// from a `Value`: the file's bytes are those of the tree it once went
/// through.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Stored<'a> {
    User {
        /// Files sent with the words (design §4.16), their bytes as
        /// base64, each as a `Value` for its keys' order.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Value>,
        content: String,
        role: &'static str,
    },
    Assistant {
        content: String,
        /// The wire's own reasoning items, exactly as they came.
        #[serde(skip_serializing_if = "no_items")]
        reasoning: &'a [Value],
        role: &'static str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call>,
    },
    Tool {
        results: Vec<Outcome>,
        role: &'static str,
    },
    /// A turn the server paused, its blocks exactly as they came.
    Paused {
        blocks: &'a Value,
        role: &'static str,
    },
}

fn no_items(items: &&[Value]) -> bool {
    items.is_empty()
}

/// A conversation's file as it is written: [`Saved`]'s keys in its order,
/// its messages written straight from the history.
#[derive(Serialize)]
struct SavedOut<'a> {
    run_id: &'a str,
    agent: &'a str,
    wire: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    continues: Option<&'a str>,
    messages: Vec<Stored<'a>>,
}

/// A [`Stored`] message read back: every variant's fields, flat, told
/// apart by `role`. Not the tagged enum's own derive, which holds each
/// message whole in a buffer of serde's first and cost about 30 KB of code
/// (the static binary's budget, D29).
#[derive(Debug, Deserialize)]
struct StoredIn {
    role: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    attachments: Vec<Attachment>,
    #[serde(default)]
    tool_calls: Vec<Call>,
    #[serde(default)]
    reasoning: Vec<Value>,
    #[serde(default)]
    results: Vec<Outcome>,
    blocks: Option<Value>,
}

/// A call, its fields in the order of their names (see [`Stored`]).
#[derive(Debug, Serialize, Deserialize)]
struct Call {
    /// As the wire carried them (a JSON text or an object).
    arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    foreign: Option<Value>,
    id: String,
    name: String,
}

/// A result, its fields in the order of their names (see [`Stored`]).
#[derive(Debug, Serialize, Deserialize)]
struct Outcome {
    call_id: String,
    content: String,
    #[serde(default)]
    is_error: bool,
    tool_name: String,
}

/// The messages as JSON, every string redacted (design §6.7) but the
/// reasoning items' and a paused turn's blocks: those are signed or
/// encrypted by the provider and go back byte for byte or not at all.
pub fn to_json(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| serde_json::to_value(stored(m)).unwrap_or_default())
        .collect()
}

/// The messages of a file back; a message that is not one is an error.
pub fn from_json(values: Vec<Value>) -> Result<Vec<Message>, String> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value::<StoredIn>(v)
                .map_err(|e| e.to_string())
                .and_then(message)
                .map_err(|e| format!("message {}: {e}", i + 1))
        })
        .collect()
}

fn stored(m: &Message) -> Stored<'_> {
    match m {
        Message::User(text) => Stored::User {
            attachments: Vec::new(),
            content: redact(text),
            role: "user",
        },
        Message::Attached {
            content,
            attachments,
        } => Stored::User {
            attachments: attachments
                .iter()
                .map(|a| serde_json::to_value(a).unwrap_or_default())
                .collect(),
            content: redact(content),
            role: "user",
        },
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } => Stored::Assistant {
            content: redact(content),
            reasoning,
            role: "assistant",
            tool_calls: tool_calls.iter().map(call).collect(),
        },
        Message::ToolResults(results) => Stored::Tool {
            role: "tool",
            results: results
                .iter()
                .map(|r| Outcome {
                    call_id: r.call_id.clone(),
                    tool_name: r.tool_name.clone(),
                    content: redact(&r.content),
                    is_error: r.is_error,
                })
                .collect(),
        },
        Message::Paused(blocks) => Stored::Paused {
            blocks,
            role: "paused",
        },
    }
}

fn call(c: &ToolCall) -> Call {
    let mut arguments = match &c.wire_arguments {
        Value::Null => c.arguments_object(),
        v => v.clone(),
    };
    redact_value(&mut arguments);
    let mut foreign = c.foreign.clone();
    if let Some(f) = &mut foreign {
        redact_value(f);
    }
    Call {
        id: c.id.clone(),
        name: c.name.clone(),
        arguments,
        foreign,
    }
}

/// [`redact`] on every string in `v`.
fn redact_value(v: &mut Value) {
    match v {
        Value::String(s) => *s = redact(s),
        Value::Object(map) => redact_fields(map, &[]),
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        _ => {}
    }
}

fn message(s: StoredIn) -> Result<Message, String> {
    Ok(match s.role.as_str() {
        "user" => Message::user_with(s.content, s.attachments),
        "assistant" => Message::Assistant {
            content: s.content,
            tool_calls: s.tool_calls.into_iter().map(tool_call).collect(),
            reasoning: s.reasoning,
        },
        "tool" => Message::ToolResults(
            s.results
                .into_iter()
                .map(|r| ToolResult {
                    call_id: r.call_id,
                    tool_name: r.tool_name,
                    content: r.content,
                    is_error: r.is_error,
                })
                .collect(),
        ),
        "paused" => Message::Paused(s.blocks.unwrap_or_default()),
        other => return Err(format!("unknown role \"{other}\"")),
    })
}

/// A stored call back: its arguments as the wire carried them, and as
/// strings for a tool (design D3: other values as their JSON text, `null`
/// as empty).
fn tool_call(c: Call) -> ToolCall {
    let object = match &c.arguments {
        Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or_default(),
        v => v.clone(),
    };
    let arguments: BTreeMap<String, String> = match object {
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| {
                let s = match v {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    v => v.to_string(),
                };
                (k, s)
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    ToolCall {
        id: c.id,
        name: c.name,
        arguments,
        wire_arguments: c.arguments,
        foreign: c.foreign,
    }
}

/// Whether `id` can name a file: a run id is hex; a log edited by hand
/// must not name a path.
fn plain(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The file of run `id` in the log's directory `dir`.
fn path(dir: &Path, id: &str) -> Option<PathBuf> {
    plain(id).then(|| dir.join(DIR).join(format!("{id}.json")))
}

/// Writes `text` as run `id`'s file: a temporary file (0600) renamed over
/// it, so that a reader finds the whole file or none. A conversation past
/// [`MAX_BYTES`] is refused.
fn write_file(dir: &Path, id: &str, text: &[u8]) -> io::Result<()> {
    let Some(path) = path(dir, id) else {
        return Err(io::Error::other("not a run id"));
    };
    if text.len() > MAX_BYTES {
        return Err(io::Error::other(format!(
            "the conversation ({} MiB) is larger than the {} MiB kept, so it was not kept",
            text.len() >> 20,
            MAX_BYTES >> 20
        )));
    }
    let folder = dir.join(DIR);
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(&folder)?;
    let tmp = folder.join(format!(".{}.tmp-{}", id, std::process::id()));
    let written = write_new(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write_new(path: &Path, text: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // Not synced, as the log's own lines are not: a file lost to a crash
    // is a conversation `--continue` says it cannot find.
    f.write_all(text)
}

/// Run `id`'s conversation, none when its file is missing.
pub fn load(dir: &Path, id: &str) -> Result<Option<Saved>, String> {
    let Some(path) = path(dir, id) else {
        return Ok(None);
    };
    let file = match super::open_read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_BYTES).unwrap_or(u64::MAX) + 1;
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() > MAX_BYTES {
        return Err(format!(
            "{} is larger than {} MiB",
            path.display(),
            MAX_BYTES >> 20
        ));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Removes run `id`'s file, if it has one.
pub fn remove(dir: &Path, id: &str) {
    if let Some(path) = path(dir, id) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
