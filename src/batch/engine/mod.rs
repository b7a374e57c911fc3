//! `--provider-batch` (design §11.8): a batch's inputs sent as one of the
//! provider's own batches (OpenAI's Batch API, Anthropic's Message
//! Batches) at its batch price, instead of one request each. Each input's
//! request is made exactly as its run would send it
//! (`run::first_request`), written to a file of requests, and submitted
//! once; the batch is polled, from a second backing off to a minute, until
//! it ends or `--batch-wait` passes; then each input runs as in an ordinary
//! batch, its first answer taken from the results (`run::Seed`), so that
//! its line, its checks and an output schema's repairs (ordinary requests)
//! are those of any run. Only for an agent whose run is that one request.
//!
//! With `--resume OUT`, the batch's id is kept beside it (`OUT.batch`)
//! from its submission until its lines are written: a run stopped while it
//! waits (Ctrl-C, `--batch-wait`) and started again with the same command
//! polls the same batch rather than paying for a second.

mod files;

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Batch;
use super::inputs::Input;
use crate::error::Error;
use crate::provider::{Polled, Provider};
use crate::run::{self, Seed};
use crate::sandbox::beneath::Root;

/// Where a submitted batch's id is kept: `OUT.batch` beside `--resume`'s
/// file.
pub struct Kept {
    pub dir: Root,
    pub name: String,
}

/// The first wait between two polls, and the longest.
pub const FIRST_POLL: Duration = Duration::from_secs(1);
pub const LONGEST_POLL: Duration = Duration::from_secs(60);

/// Why an agent cannot go to a provider's batch engine, if it cannot.
pub fn refused(batch: &Batch) -> Option<String> {
    let config = &batch.resolved.agent.config;
    let why = if !config.sub_agents.is_empty() {
        "it has sub-agents"
    } else if batch.resolved.tools.is_some() {
        "it has tools"
    } else if !config.mcp.is_empty() {
        "it has MCP servers"
    } else {
        return None;
    };
    Some(format!(
        "--provider-batch: agent {} cannot run in a provider's batch: {why}, and a batch \
         sends each input as one request",
        batch.resolved.agent.id
    ))
}

/// Runs `inputs` (read twice: `again` opens them anew) through the
/// provider's batch engine, writing each input's line in input order.
/// `kept`: where the batches' ids are kept while they run.
pub fn run(
    batch: &Batch,
    inputs: impl Iterator<Item = Input>,
    again: &dyn Fn() -> Result<Box<dyn Iterator<Item = Input> + Send>, Error>,
    wait: Duration,
    kept: Option<&Kept>,
    jobs: usize,
) -> Result<(), Error> {
    let earlier = kept.and_then(read_kept);
    let (provider, parts) = write_requests(batch, inputs, earlier.is_none())?;
    let Some(provider) = provider else {
        return Ok(()); // Nothing to send: every input was done before.
    };
    let (ids, firsts) = match earlier {
        Some(e) => e,
        None => {
            let firsts: Vec<u64> = parts.parts.iter().map(|p| p.first).collect();
            for (i, p) in parts.parts.iter().enumerate() {
                let name = &provider.name;
                let n = p.count;
                batch
                    .verbose
                    .line(&format!("[batch] {name} part {}: {n} requests", i + 1));
            }
            (submit(&provider, parts.finish()?, &firsts, kept)?, firsts)
        }
    };
    let ended = wait_all(batch, &provider, &ids, wait)?;
    let mut results = files::tempfile()?;
    for e in &ended {
        if let Ended::Done(polled) = e {
            files::collect(&provider, polled, &mut results)?;
        }
    }
    let answers = files::index(&mut results)?;
    let part_of = |seq: u64| firsts.partition_point(|f| *f <= seq).checked_sub(1);
    // Each input then runs as in an ordinary batch, `jobs` at once (a
    // repair is a request), its line written in input order.
    let each = |input: Input| {
        let key = format!("axe-{}", input.seq);
        let seed = match answers.get(&key) {
            Some(at) => Some(files::read_answer(&provider, &results, *at)),
            None => part_of(input.seq)
                .and_then(|i| ended.get(i))
                .and_then(Ended::why),
        };
        let id = part_of(input.seq)
            .and_then(|i| ids.get(i))
            .map_or("", String::as_str);
        batch.one_seeded(input, seed, id);
    };
    super::schedule::run(jobs, again()?, &batch.out.closed, &each);
    if !ended.iter().any(|e| matches!(e, Ended::Waiting)) {
        forget(kept);
    }
    Ok(())
}

/// Submits each part of the requests as a batch of its own, keeping the
/// ids as they come: their ids, in order.
fn submit(
    provider: &Provider,
    parts: Vec<(std::fs::File, u64)>,
    firsts: &[u64],
    kept: Option<&Kept>,
) -> Result<Vec<String>, Error> {
    let mut ids = Vec::new();
    for (file, len) in parts {
        let id = provider.batch_submit(file, len).map_err(Error::general)?;
        ids.push(id);
        if let Some(k) = kept {
            keep(k, &ids, &firsts[..ids.len()])?;
        }
    }
    Ok(ids)
}

/// The batches an earlier run submitted and did not finish: their ids,
/// and the `seq` of each one's first input.
fn read_kept(kept: &Kept) -> Option<(Vec<String>, Vec<u64>)> {
    #[derive(serde::Deserialize)]
    struct Ids {
        ids: Vec<String>,
        firsts: Vec<u64>,
    }
    let bytes = crate::sandbox::read::bytes_in(&kept.dir, &kept.name, 1 << 20).ok()?;
    let k: Ids = serde_json::from_slice(&bytes).ok()?;
    (!k.ids.is_empty() && k.ids.len() == k.firsts.len()).then_some((k.ids, k.firsts))
}

/// Keeps `ids` (each batch's first input `firsts`) beside the output,
/// whole or not at all.
fn keep(kept: &Kept, ids: &[String], firsts: &[u64]) -> Result<(), Error> {
    let text = serde_json::json!({ "ids": ids, "firsts": firsts }).to_string();
    crate::sandbox::write::replace(&kept.dir, &kept.name, text.as_bytes(), 0o644)
        .map_err(|e| Error::general(format!("cannot keep the batch's ids in {}: {e}", kept.name)))
}

/// The batches are done with: their ids are no longer kept.
fn forget(kept: Option<&Kept>) {
    if let Some(k) = kept {
        let _ = k.dir.remove(&k.name);
    }
}

/// How the wait for one batch ended.
enum Ended {
    Done(Polled),
    Failed(String),
    /// Still running when `--batch-wait` passed.
    Waiting,
}

impl Ended {
    /// Why an input of this batch has no answer.
    fn why(&self) -> Option<Result<Arc<Seed>, String>> {
        Some(Err(match self {
            Ended::Done(Polled::Ended {
                early: Some(how), ..
            }) => format!("the batch {how} before this input ran"),
            Ended::Done(_) => "no answer for this input".to_string(),
            Ended::Failed(why) => why.clone(),
            Ended::Waiting => "it had not ended when --batch-wait passed; run the same command \
                               with --resume to pick it up"
                .to_string(),
        }))
    }
}

/// Writes each input's request into parts (or only counts them, when a
/// kept batch is polled again): the provider they go to (none when every
/// input was done before) and the parts.
fn write_requests(
    batch: &Batch,
    inputs: impl Iterator<Item = Input>,
    write: bool,
) -> Result<(Option<Provider>, files::Parts), Error> {
    let mut provider: Option<Provider> = None;
    let mut parts: Option<files::Parts> = None;
    for input in inputs {
        if batch.done.contains(&input.key()) {
            continue;
        }
        // An input that cannot be prepared fails on its own line later.
        let Ok((filled, message)) = batch.prepare(&input) else {
            continue;
        };
        let resolved = filled.as_ref().unwrap_or(batch.resolved);
        let (p, req) = run::first_request(resolved, &message, &batch.proto)?;
        if !p.has_batches() {
            return Err(Error::config(format!(
                "--provider-batch: provider {} has no batch engine axe speaks (openai and \
                 anthropic have)",
                p.name
            )));
        }
        let line = p.batch_request(&format!("axe-{}", input.seq), p.body(&req));
        let bytes = serde_json::to_vec(&line).unwrap_or_default();
        parts
            .get_or_insert_with(|| files::Parts::new(p.batch_limits(), write))
            .push(input.seq, &bytes)?;
        provider.get_or_insert(p);
    }
    Ok((
        provider,
        parts.unwrap_or_else(|| files::Parts::new((1, 1), false)),
    ))
}

/// Polls each batch of `ids` until every one has ended or failed, or
/// `wait` passes.
fn wait_all(
    batch: &Batch,
    provider: &Provider,
    ids: &[String],
    wait: Duration,
) -> Result<Vec<Ended>, Error> {
    let until = Instant::now() + wait;
    let mut pause = FIRST_POLL;
    let mut ended: Vec<Option<Ended>> = ids.iter().map(|_| None).collect();
    let mut last = vec![None; ids.len()];
    loop {
        for (i, id) in ids.iter().enumerate() {
            if ended[i].is_some() {
                continue;
            }
            match provider.batch_poll(id).map_err(Error::general)? {
                Polled::Running(c) => {
                    if last[i] != Some(c) {
                        batch.verbose.line(&format!(
                            "[batch] {id}: {} of {} done, {} failed",
                            c.succeeded + c.failed,
                            c.total,
                            c.failed
                        ));
                        last[i] = Some(c);
                    }
                }
                Polled::Failed(why) => ended[i] = Some(Ended::Failed(format!("batch {id}: {why}"))),
                done @ Polled::Ended { .. } => {
                    if let Polled::Ended { counts, .. } = &done {
                        last[i] = Some(*counts);
                    }
                    ended[i] = Some(Ended::Done(done));
                }
            }
        }
        // The progress view's figure: every part's counts summed.
        let sum = last.iter().flatten().fold((0, 0, 0), |(s, f, t), c| {
            (s + c.succeeded, f + c.failed, t + c.total)
        });
        *batch
            .counts
            .provider
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sum);
        if ended.iter().all(Option::is_some) {
            break;
        }
        if Instant::now() + pause > until {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 3 / 2).min(LONGEST_POLL);
    }
    Ok(ended
        .into_iter()
        .map(|e| e.unwrap_or(Ended::Waiting))
        .collect())
}
