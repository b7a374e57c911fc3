//! `read_file`: a text file beneath the workdir, as numbered lines
//! (`N: text`), from line `offset` (1-based) for at most `limit` lines. A
//! binary file (a NUL in its first 8 KiB) is said to be binary; reading
//! stops at the deadline and at the result cap. With `artifact` true, a
//! file beneath the artifact directory (design §8.9).

use std::io::{BufRead, BufReader, Read};

use super::{ARTIFACT_PARAM, Args, Done, Env, MAX_RESULT_BYTES, number, required, tool};
use crate::provider::Tool;

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

/// Bytes looked at for a NUL before a file counts as binary.
const SNIFF: usize = 8 * 1024;

pub fn define() -> Tool {
    tool(
        "read_file",
        "Read a text file in the working directory. Returns numbered lines, 'N: text'.",
        &[
            (
                "path",
                "string",
                true,
                "Path of the file, relative to the working directory.",
            ),
            (
                "offset",
                "integer",
                false,
                "First line to return, counting from 1 (default 1).",
            ),
            (
                "limit",
                "integer",
                false,
                "Most lines to return (default 2000).",
            ),
            ARTIFACT_PARAM,
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    match read(args, env) {
        Ok(done) | Err(done) => done,
    }
}

fn read(args: &Args, env: &Env) -> Result<Done, Done> {
    let path = required(args, "path")?;
    let offset = number(args, "offset", 1)?.max(1);
    let limit = number(args, "limit", DEFAULT_LIMIT)?;
    if limit == 0 {
        return Err(Done::error("\"limit\" must be at least 1"));
    }
    let (root, _) = env.place(args, false)?;
    let file = root
        .open_file(path)
        .map_err(|e| Done::error(format!("{path}: {e}")))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| Done::error(format!("{path}: {e}")))?;
    if head[..head.len().min(SNIFF)].contains(&0) {
        return Err(Done::error(format!(
            "{path}: a binary file ({size} bytes); not shown"
        )));
    }
    let mut out = String::new();
    let (mut n, mut shown) = (0u64, 0u64);
    let mut line = Vec::new();
    let mut more = false;
    loop {
        line.clear();
        let got = (&mut reader)
            .take(u64::try_from(MAX_RESULT_BYTES).unwrap_or(u64::MAX) * 4)
            .read_until(b'\n', &mut line)
            .map_err(|e| Done::error(format!("{path}: {e}")))?;
        if got == 0 {
            break;
        }
        n += 1;
        if n % 4096 == 0 && std::time::Instant::now() >= env.deadline {
            return Err(Done::error(format!(
                "{path}: the deadline passed while reading"
            )));
        }
        if n < offset {
            continue;
        }
        if shown == limit || out.len() > MAX_RESULT_BYTES {
            more = true;
            break;
        }
        let text = String::from_utf8_lossy(&line);
        out.push_str(&format!("{n}: {}\n", text.trim_end_matches(['\n', '\r'])));
        shown += 1;
    }
    if n < offset && !(n == 0 && offset == 1) {
        return Err(Done::error(format!(
            "{path}: offset {offset} is past the end ({n} lines)"
        )));
    }
    if more {
        let last = offset + shown - 1;
        out.push_str(&format!(
            "[lines {offset}-{last} shown; the file goes on: read on with offset {}]\n",
            last + 1
        ));
    }
    Ok(Done::ok(out, size))
}
