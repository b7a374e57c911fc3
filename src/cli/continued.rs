//! A run that goes on with an earlier one's conversation (`axe run AGENT
//! --continue [RUN_ID]`, design §7.7): the run found in the log and its
//! conversation read back; `--json-messages`' `messages`; and the
//! conversation as `axe runs show` prints it.

use std::sync::Arc;

use super::run_args::{LAST, RunCmd};
use crate::error::Error;
use crate::provider::Message;
use crate::text::one_line;
use crate::trace::run_log::messages::{self, Kept, Saved};
use crate::trace::run_log::{self, Record, RunLog, Settings};

/// The run's conversation keeper: with the conversation it goes on with
/// (`--continue`), or empty when its conversation is kept (the log and
/// `[run_log] messages` on) or printed (`--json-messages`); none else.
/// `log` is told, so that the record says what it continues.
pub(super) fn conversation(
    cmd: &RunCmd,
    settings: &Settings,
    log: &RunLog,
) -> Result<Option<Arc<Kept>>, Error> {
    let kept = match &cmd.continues {
        Some(which) => {
            let saved = find(&cmd.agent, which)?;
            let id = saved.run_id.clone();
            Kept::continuing(saved).map_err(|e| {
                Error::config(format!("run {id}'s conversation cannot be read: {e}"))
            })?
        }
        None if cmd.json_messages || (settings.enabled && settings.messages && !cmd.no_log) => {
            Kept::default()
        }
        None => return Ok(None),
    };
    let kept = Arc::new(kept);
    let continues = (!kept.prior_run.is_empty()).then_some(kept.prior_run.as_str());
    log.conversation(&kept, continues);
    Ok(Some(kept))
}

/// The conversation of `which` (a run id's unique prefix, or [`LAST`]: the
/// newest run of `agent`), which must be a run of `agent`. Exit 2 when
/// there is none, it is another agent's, or it kept no conversation.
fn find(agent: &str, which: &str) -> Result<Saved, Error> {
    let record: Record = if which == LAST {
        super::runs::records()?
            .into_iter()
            .find(|r| r.agent == agent)
            .ok_or_else(|| {
                Error::config(format!(
                    "--continue: agent \"{}\" has no run in the run log to go on with \
                     (a run with --no-log leaves none; axe runs lists them)",
                    one_line(agent)
                ))
            })?
    } else {
        let r = super::runs::find(which)?;
        if r.agent != agent {
            return Err(Error::config(format!(
                "--continue: run {} is a run of agent \"{}\", not of \"{}\"",
                r.run_id,
                one_line(&r.agent),
                one_line(agent)
            )));
        }
        r
    };
    let dir = run_log::dir()?;
    let id = &record.run_id;
    match messages::load(&dir, id) {
        Ok(Some(saved)) => Ok(saved),
        Ok(None) => Err(Error::config(format!(
            "--continue: run {id} of agent \"{}\" kept no conversation ([run_log] messages = \
             false when it ran, one over {} MiB, or dropped with the log's rotation)",
            one_line(agent),
            messages::MAX_BYTES >> 20
        ))),
        Err(e) => Err(Error::config(format!(
            "--continue: cannot read run {id}'s conversation: {e}"
        ))),
    }
}

/// `--dry-run`'s section for a run that goes on with another: which, and
/// how many messages are sent before the prompt.
pub(super) fn dry_run(kept: Option<&Kept>) -> String {
    match kept {
        Some(k) if !k.prior_run.is_empty() => format!(
            "\n--- Continues ---\nRun: {}\nMessages: {} before the prompt\n",
            one_line(&k.prior_run),
            k.prior.len()
        ),
        _ => String::new(),
    }
}

/// `--json`'s object, `json`, with the run's `messages` last.
pub(super) fn with_messages(json: String, kept: &Kept) -> String {
    let (_, history) = kept.snapshot();
    // Serializing JSON values cannot fail.
    let list = serde_json::to_string(&messages::to_json(&history)).unwrap_or_default();
    match json.strip_suffix('}') {
        Some(head) => format!("{head},\"messages\":{list}}}"),
        None => json,
    }
}

/// Run `id`'s conversation as `axe runs show` prints it, when it kept
/// one: each message under its role, each call and result on a line of
/// its own; a reasoning item is counted, not shown (it is the wire's own,
/// often encrypted).
pub(super) fn printed(id: &str) -> Option<String> {
    let dir = run_log::dir().ok()?;
    let saved = match messages::load(&dir, id) {
        Ok(Some(saved)) => saved,
        Ok(None) => return None,
        Err(e) => return Some(format!("\n(the conversation cannot be read: {e})\n")),
    };
    let history = match messages::from_json(saved.messages) {
        Ok(h) => h,
        Err(e) => return Some(format!("\n(the conversation cannot be read: {e})\n")),
    };
    let mut out = format!("\n--- conversation ({} messages) ---\n", history.len());
    for m in &history {
        out.push_str(&message(m));
    }
    Some(out)
}

/// One message of [`printed`].
fn message(m: &Message) -> String {
    let body = |text: &str| match text.is_empty() || text.ends_with('\n') {
        true => text.to_string(),
        false => format!("{text}\n"),
    };
    match m {
        Message::User(text) => format!("[user]\n{}", body(text)),
        Message::Attached {
            content,
            attachments,
        } => {
            let names: Vec<String> = attachments.iter().map(|a| one_line(&a.name)).collect();
            format!("[user, with {}]\n{}", names.join(", "), body(content))
        }
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } => {
            let mut s = "[assistant]\n".to_string();
            if !reasoning.is_empty() {
                s.push_str(&format!("({} reasoning items)\n", reasoning.len()));
            }
            s.push_str(&body(content));
            for c in tool_calls {
                s.push_str(&format!(
                    "-> {} ({}): {}\n",
                    one_line(&c.name),
                    one_line(&c.id),
                    one_line(&c.arguments_text())
                ));
            }
            s
        }
        Message::ToolResults(results) => results
            .iter()
            .map(|r| {
                let error = if r.is_error { ", error" } else { "" };
                format!(
                    "[tool {} ({}{error})]\n{}",
                    one_line(&r.tool_name),
                    one_line(&r.call_id),
                    body(&r.content)
                )
            })
            .collect(),
        Message::Paused(_) => "[assistant, paused by the server]\n".to_string(),
    }
}
