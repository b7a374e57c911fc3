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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
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
/// `kept`: where the batch's id is kept while it runs.
pub fn run(
    batch: &Batch,
    inputs: impl Iterator<Item = Input>,
    again: &dyn Fn() -> Result<Box<dyn Iterator<Item = Input>>, Error>,
    wait: Duration,
    kept: Option<&Kept>,
) -> Result<(), Error> {
    let earlier = kept.and_then(read_kept);
    let mut requests = tempfile()?;
    let write = earlier.is_none();
    let (provider, sent) = write_requests(batch, inputs, write.then_some(&mut requests))?;
    let Some(provider) = provider else {
        return Ok(()); // Nothing to send: every input was done before.
    };
    let id = match earlier {
        Some(id) => id,
        None => submit(&provider, requests, kept)?,
    };
    batch.verbose.line(&format!(
        "[batch] {} batch {id}: {sent} requests",
        provider.name
    ));
    let polled = match poll(batch, &provider, &id, wait) {
        Ok(p) => p,
        Err(Waited::Failed(e)) => {
            forget(kept);
            return Err(e);
        }
        Err(Waited::TooLong) => {
            let why = "it had not ended when --batch-wait passed; run the same command with \
                 --resume to pick it up"
                .to_string();
            for input in again()? {
                batch.one_seeded(input, Some(Err(why.clone())), &id);
            }
            return Ok(());
        }
    };
    let mut results = tempfile()?;
    collect(&provider, &polled, &mut results)?;
    let answers = index(&provider, &mut results)?;
    for input in again()? {
        let key = format!("axe-{}", input.seq);
        let seed = answers
            .get(&key)
            .map(|a| read_answer(&provider, &mut results, *a));
        batch.one_seeded(input, seed, &id);
    }
    forget(kept);
    Ok(())
}

/// Submits the requests written to `requests`, keeping the batch's id.
fn submit(
    provider: &Provider,
    mut requests: std::fs::File,
    kept: Option<&Kept>,
) -> Result<String, Error> {
    let len = requests
        .seek(SeekFrom::End(0))
        .and_then(|n| requests.seek(SeekFrom::Start(0)).map(|_| n))
        .map_err(|e| Error::general(format!("cannot read the batch's requests: {e}")))?;
    let id = provider
        .batch_submit(requests, len)
        .map_err(Error::general)?;
    if let Some(k) = kept {
        keep(k, &id)?;
    }
    Ok(id)
}

/// The id of a batch an earlier run submitted and did not finish.
fn read_kept(kept: &Kept) -> Option<String> {
    let bytes = crate::sandbox::read::bytes_in(&kept.dir, &kept.name, 4096).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["id"].as_str().map(str::to_string)
}

/// Keeps `id` beside the output, whole or not at all.
fn keep(kept: &Kept, id: &str) -> Result<(), Error> {
    let text = serde_json::json!({"id": id}).to_string();
    crate::sandbox::write::replace(&kept.dir, &kept.name, text.as_bytes(), 0o644)
        .map_err(|e| Error::general(format!("cannot keep the batch's id in {}: {e}", kept.name)))
}

/// The batch is done with: its id is no longer kept.
fn forget(kept: Option<&Kept>) {
    if let Some(k) = kept {
        let _ = k.dir.remove(&k.name);
    }
}

/// Why the wait for a batch ended without its results.
enum Waited {
    Failed(Error),
    TooLong,
}

/// Writes each input's request to `file`: the provider they go to (none
/// when every input was done before) and how many.
fn write_requests(
    batch: &Batch,
    inputs: impl Iterator<Item = Input>,
    file: Option<&mut std::fs::File>,
) -> Result<(Option<Provider>, u64), Error> {
    let mut sink = std::io::sink();
    let file: &mut dyn Write = match file {
        Some(f) => f,
        None => &mut sink,
    };
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
    let mut provider: Option<Provider> = None;
    let mut sent = 0u64;
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
        let wrote = serde_json::to_writer(&mut out, &line)
            .and_then(|()| out.write_all(b"\n").map_err(serde_json::Error::io));
        wrote.map_err(|e| Error::general(format!("cannot write the batch's requests: {e}")))?;
        sent += 1;
        provider.get_or_insert(p);
    }
    out.flush()
        .map_err(|e| Error::general(format!("cannot write the batch's requests: {e}")))?;
    Ok((provider, sent))
}

/// Polls batch `id` until it ends, fails, or `wait` passes.
fn poll(batch: &Batch, provider: &Provider, id: &str, wait: Duration) -> Result<Polled, Waited> {
    let until = Instant::now() + wait;
    let mut pause = FIRST_POLL;
    let mut last = None;
    loop {
        let polled = provider
            .batch_poll(id)
            .map_err(|e| Waited::Failed(Error::general(e)))?;
        match &polled {
            Polled::Running(c) => {
                if last != Some(*c) {
                    batch.verbose.line(&format!(
                        "[batch] {id}: {} of {} done, {} failed",
                        c.succeeded + c.failed,
                        c.total,
                        c.failed
                    ));
                    last = Some(*c);
                }
            }
            Polled::Failed(why) => {
                return Err(Waited::Failed(Error::general(format!("batch {id}: {why}"))));
            }
            Polled::Ended { .. } => return Ok(polled),
        }
        if Instant::now() + pause > until {
            return Err(Waited::TooLong);
        }
        std::thread::sleep(pause);
        pause = (pause * 3 / 2).min(LONGEST_POLL);
    }
}

/// Where an answer lies in the results file: its line's offset.
type Answers = HashMap<String, u64>;

/// Downloads the results (and failures) of an ended batch into `into`:
/// the files it read.
fn collect(provider: &Provider, polled: &Polled, into: &mut std::fs::File) -> Result<u64, Error> {
    let Polled::Ended {
        results, errors, ..
    } = polled
    else {
        return Ok(0);
    };
    let mut n = 0;
    for at in [results, errors].into_iter().flatten() {
        n += provider.batch_results(at, into).map_err(Error::general)?;
    }
    Ok(n)
}

/// The offset of each answer's line in `results`, by `custom_id`.
fn index(provider: &Provider, results: &mut std::fs::File) -> Result<Answers, Error> {
    results
        .seek(SeekFrom::Start(0))
        .map_err(|e| Error::general(format!("cannot read the batch's results: {e}")))?;
    let mut answers = Answers::new();
    let mut r = BufReader::with_capacity(64 * 1024, &*results);
    let mut at = 0u64;
    let mut line = String::new();
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .map_err(|e| Error::general(format!("cannot read the batch's results: {e}")))?;
        if n == 0 {
            return Ok(answers);
        }
        if let Ok(item) = provider.batch_item(line.trim_end()) {
            answers.insert(item.custom_id, at);
        }
        at += n as u64;
    }
}

/// The answer whose line starts at `at`.
fn read_answer(
    provider: &Provider,
    results: &mut std::fs::File,
    at: u64,
) -> Result<Arc<Seed>, String> {
    results
        .seek(SeekFrom::Start(at))
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(&*results)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let item = provider.batch_item(line.trim_end())?;
    item.answer.map(|r| Arc::new(Seed::new(r)))
}

/// An unnamed file in the temporary directory, gone when closed; where
/// the file system has no `O_TMPFILE`, a new private file, unlinked at once.
fn tempfile() -> Result<std::fs::File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    let cannot =
        |e: std::io::Error| Error::general(format!("cannot make a file in {}: {e}", dir.display()));
    let unnamed = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir);
    match unnamed {
        Ok(f) => Ok(f),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {
            let path = dir.join(format!("axe-batch-{:016x}", fastrand::u64(..)));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(cannot)?;
            let _ = std::fs::remove_file(&path);
            Ok(file)
        }
        Err(e) => Err(cannot(e)),
    }
}
