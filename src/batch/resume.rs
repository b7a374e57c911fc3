//! `--resume OUT.jsonl` (design §11.4): the inputs a previous batch's
//! output says succeeded, known by their `id`, else their file's `path`,
//! else their text, as [`Input::key`](super::inputs::Input::key) computes
//! it for the inputs read now; and the file, opened to append the rest. A
//! last line cut short (a process killed in the middle of a write, by
//! something axe cannot catch) was never a whole line and is cut off.
//!
//! The file may lie where an agent writes: it is opened once, by name in
//! its directory with no link followed (design §8.7), and read, cut and
//! appended to as that inode.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use super::inputs::hash_key;
use crate::error::Error;
use crate::sandbox::beneath::{Anchored, Base};

/// The most bytes of one line of a previous output that is read; a longer
/// one (an enormous answer) is passed over, and its input runs again.
const MAX_LINE_BYTES: u64 = 64 << 20;

/// What the previous output holds.
pub struct Previous {
    /// The keys of the inputs that succeeded.
    pub done: HashSet<u64>,
    /// The file, opened to append.
    pub file: File,
}

/// Reads `path` (relative to the current directory `cwd`; created when
/// missing: nothing done yet) and opens it to append.
pub fn open(path: &str, cwd: &Path) -> Result<Previous, Error> {
    let cannot = |e: std::io::Error| Error::general(format!("cannot read --resume {path}: {e}"));
    let mut file = Anchored::new(Base::Cwd(cwd), path)
        .and_then(|at| Ok(at.parent(false)?))
        .and_then(|(dir, name)| crate::sandbox::write::open_append(&dir, &name, 0o666))
        .map_err(cannot)?;
    let mut done = HashSet::new();
    let mut whole = 0u64;
    {
        let mut r = BufReader::with_capacity(64 * 1024, &file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = (&mut r)
                .take(MAX_LINE_BYTES)
                .read_until(b'\n', &mut line)
                .map_err(cannot)?;
            if n == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                if (n as u64) < MAX_LINE_BYTES {
                    break; // The end, cut short.
                }
                // Over the limit: passed over to its end, never held.
                let (skipped, ended) = skip_line(&mut r).map_err(cannot)?;
                if !ended {
                    break; // The end, cut short.
                }
                whole += (n as u64).saturating_add(skipped);
                continue;
            }
            whole += n as u64;
            if let Some(key) = succeeded(&line) {
                done.insert(key);
            }
        }
    }
    let len = file.seek(SeekFrom::End(0)).map_err(cannot)?;
    if len > whole {
        file.set_len(whole).map_err(cannot)?;
    }
    Ok(Previous { done, file })
}

/// Reads past the rest of a line a buffer at a time: how many bytes that
/// was, and whether its newline came (else the file ended first).
fn skip_line(r: &mut impl BufRead) -> std::io::Result<(u64, bool)> {
    let mut skipped = 0u64;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((skipped, false));
        }
        let (used, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        r.consume(used);
        skipped = skipped.saturating_add(used as u64);
        if ended {
            return Ok((skipped, true));
        }
    }
}

/// The key of the input of `line` when it says `"ok": true`.
fn succeeded(line: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("ok") != Some(&Value::Bool(true)) {
        return None;
    }
    if let Some(id) = v.get("id") {
        return Some(hash_key("id", &text(id)));
    }
    if let Some(Value::String(p)) = v.get("path") {
        return Some(hash_key("path", p));
    }
    v.get("input").map(|i| hash_key("input", &text(i)))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
