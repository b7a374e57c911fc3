//! The files of a provider's batch (design §11.8): the requests, written
//! into parts that each keep within the provider's limits (OpenAI: 50,000
//! requests or 200 MB a file; Anthropic: 100,000 or 256 MB), and the
//! results, downloaded into one file and found by `custom_id`. Both are
//! unnamed temporary files: nothing of a 100,000-input batch is held in
//! memory but an offset per answer.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::sync::Arc;

use serde::Deserialize;

use crate::error::Error;
use crate::provider::{Polled, Provider};
use crate::run::Seed;

/// One part of the requests: one batch at the provider.
pub struct Part {
    /// None when the requests are counted, not written.
    out: Option<BufWriter<File>>,
    pub len: u64,
    pub count: u64,
    /// The `seq` of its first input: parts hold inputs in order.
    pub first: u64,
}

/// The parts the requests are written into.
pub struct Parts {
    pub parts: Vec<Part>,
    /// The most requests and bytes of one part.
    limits: (u64, u64),
    /// Whether the requests are written (not when a kept batch is polled
    /// again: the parts are then counted only, to know which input is in
    /// which).
    write: bool,
}

impl Parts {
    pub fn new(limits: (u64, u64), write: bool) -> Parts {
        Parts {
            parts: Vec::new(),
            limits,
            write,
        }
    }

    /// Adds input `seq`'s request `line` (its JSON, no newline).
    pub fn push(&mut self, seq: u64, line: &[u8]) -> Result<(), Error> {
        let size = line.len() as u64 + 1;
        let full = self.parts.last().is_none_or(|p| {
            p.count >= self.limits.0 || (p.count > 0 && p.len + size > self.limits.1)
        });
        if full {
            let out = match self.write {
                true => Some(BufWriter::with_capacity(64 * 1024, tempfile()?)),
                false => None,
            };
            self.parts.push(Part {
                out,
                len: 0,
                count: 0,
                first: seq,
            });
        }
        let Some(part) = self.parts.last_mut() else {
            return Ok(());
        };
        if let Some(out) = &mut part.out {
            out.write_all(line)
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| Error::general(format!("cannot write the batch's requests: {e}")))?;
        }
        part.len += size;
        part.count += 1;
        Ok(())
    }

    /// Each part's file, back at its start, and its length.
    pub fn finish(self) -> Result<Vec<(File, u64)>, Error> {
        let cannot =
            |e: std::io::Error| Error::general(format!("cannot write the batch's requests: {e}"));
        let mut done = Vec::new();
        for part in self.parts {
            let Some(out) = part.out else { continue };
            let mut file = out.into_inner().map_err(|e| cannot(e.into_error()))?;
            file.seek(SeekFrom::Start(0)).map_err(cannot)?;
            done.push((file, part.len));
        }
        Ok(done)
    }
}

/// Where each answer lies in the results file: its line's offset, by
/// `custom_id`.
pub type Answers = HashMap<String, u64>;

/// Downloads the results (and failures) of an ended batch to the end of
/// `into`.
pub fn collect(provider: &Provider, polled: &Polled, into: &mut File) -> Result<(), Error> {
    let Polled::Ended {
        results, errors, ..
    } = polled
    else {
        return Ok(());
    };
    for at in [results, errors].into_iter().flatten() {
        into.seek(SeekFrom::End(0))
            .map_err(|e| Error::general(format!("cannot write the batch's results: {e}")))?;
        provider.batch_results(at, into).map_err(Error::general)?;
    }
    Ok(())
}

/// A results line's `custom_id`, read without the rest being built.
#[derive(Deserialize)]
struct Id {
    custom_id: String,
}

/// The offset of each answer's line in `results`.
pub fn index(results: &mut File) -> Result<Answers, Error> {
    let cannot =
        |e: std::io::Error| Error::general(format!("cannot read the batch's results: {e}"));
    results.seek(SeekFrom::Start(0)).map_err(cannot)?;
    let mut answers = Answers::new();
    let mut r = BufReader::with_capacity(64 * 1024, &*results);
    let mut at = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).map_err(cannot)?;
        if n == 0 {
            return Ok(answers);
        }
        if let Ok(id) = serde_json::from_slice::<Id>(&line) {
            answers.insert(id.custom_id, at);
        }
        at += n as u64;
    }
}

/// The longest results line read: an answer of the largest a provider
/// gives, with room.
const MAX_LINE: usize = 64 << 20;

/// The answer whose line starts at `at`, read at that offset (threads
/// share the file).
pub fn read_answer(provider: &Provider, results: &File, at: u64) -> Result<Arc<Seed>, String> {
    use std::os::unix::fs::FileExt;
    let mut line = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = results
            .read_at(&mut chunk, at + line.len() as u64)
            .map_err(|e| e.to_string())?;
        let piece = &chunk[..n];
        match piece.iter().position(|&b| b == b'\n') {
            Some(end) => {
                line.extend_from_slice(&piece[..end]);
                break;
            }
            None => line.extend_from_slice(piece),
        }
        if n == 0 || line.len() > MAX_LINE {
            break;
        }
    }
    let item = provider.batch_item(&String::from_utf8_lossy(&line))?;
    item.answer.map(|r| Arc::new(Seed::new(r)))
}

/// An unnamed file in the temporary directory, gone when closed; where
/// the file system has no `O_TMPFILE`, a new private file, unlinked at once.
pub fn tempfile() -> Result<std::fs::File, Error> {
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
