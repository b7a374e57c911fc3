//! `search_files`: a regular expression over the text files beneath a
//! directory of the workdir, as ripgrep does it: `.gitignore`, `.ignore`
//! and hidden files skipped (the `ignore` crate, ripgrep's own walker),
//! binary files skipped, each match as `path:line: text`. The walk lists
//! names; every file is then opened through `openat2` beneath the workdir,
//! so a symlink or a swapped directory never leads the search outside.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use regex_automata::meta::Regex;

use super::{Args, Done, Env, MAX_RESULT_BYTES, required, tool};
use crate::provider::Tool;

/// Matches listed at most.
const MAX_MATCHES: usize = 500;

/// The largest file searched; larger ones are skipped (and counted).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Characters of a matching line shown.
const MAX_LINE_CHARS: usize = 300;

pub fn define() -> Tool {
    tool(
        "search_files",
        "Search the text files under a directory of the working directory for a regular expression (Rust regex syntax; (?i) for any case), skipping what .gitignore ignores, hidden and binary files. Returns 'path:line: text' for each matching line.",
        &[
            (
                "pattern",
                "string",
                true,
                "The regular expression to look for.",
            ),
            (
                "path",
                "string",
                false,
                "Directory to search, relative to the working directory (default: all of it).",
            ),
            (
                "glob",
                "string",
                false,
                "Only files whose path matches this glob, e.g. '*.rs' or 'src/**/*.py'.",
            ),
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    match search(args, env) {
        Ok(done) | Err(done) => done,
    }
}

/// What a search found, and what it passed over.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    bytes: usize,
    files: u64,
    skipped: u64,
    more: bool,
}

fn search(args: &Args, env: &Env) -> Result<Done, Done> {
    let pattern = required(args, "pattern")?;
    let re = regex(pattern).map_err(|e| Done::error(format!("not a pattern: {e}")))?;
    let dir = args
        .get("path")
        .map(String::as_str)
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".");
    let dir = env.root.relative(dir).to_string();
    // The kernel decides whether the directory is beneath the workdir.
    env.root
        .list(&dir)
        .map_err(|e| Done::error(format!("{dir}: {e}")))?;
    let glob = match args
        .get("glob")
        .map(String::as_str)
        .filter(|g| !g.trim().is_empty())
    {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| Done::error(format!("not a glob: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let base = env.root.path().join(&dir);
    let mut found = Found::default();
    let walk = ignore::WalkBuilder::new(&base)
        .require_git(false)
        .follow_links(false)
        .build();
    for entry in walk {
        if Instant::now() >= env.deadline {
            return Err(Done::error("the deadline passed while searching"));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(env.root.path()) else {
            continue;
        };
        if glob
            .as_ref()
            .is_some_and(|g| !g.is_match(rel) && !rel.file_name().is_some_and(|n| g.is_match(n)))
        {
            continue;
        }
        search_file(env, rel, &re, &mut found);
        if found.more {
            break;
        }
    }
    Ok(report(found, pattern))
}

/// Searches one file, opened beneath the root (never by its path).
fn search_file(env: &Env, rel: &Path, re: &Regex, found: &mut Found) {
    let Some(name) = rel.to_str() else { return };
    let Ok(file) = env.root.open_file(name) else {
        return;
    };
    let mut bytes = Vec::new();
    if file
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
        || bytes.len() as u64 > MAX_FILE_BYTES
    {
        found.skipped += 1;
        return;
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return;
    }
    found.files += 1;
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if !re.is_match(line) {
            continue;
        }
        if found.lines.len() >= MAX_MATCHES || found.bytes > MAX_RESULT_BYTES {
            found.more = true;
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text: String = text
            .trim_end_matches('\r')
            .chars()
            .take(MAX_LINE_CHARS)
            .collect();
        let entry = format!("{name}:{}: {text}", i + 1);
        found.bytes += entry.len() + 1;
        found.lines.push(entry);
    }
}

fn report(found: Found, pattern: &str) -> Done {
    let mut out = found.lines.join("\n");
    if found.lines.is_empty() {
        out = format!("no match for {pattern:?} in {} files", found.files);
    }
    if found.more {
        out.push_str(&format!(
            "\n[the first {} matches shown; narrow the pattern or the path for the rest]",
            found.lines.len()
        ));
    }
    if found.skipped > 0 {
        out.push_str(&format!(
            "\n[{} files over {MAX_FILE_BYTES} bytes not searched]",
            found.skipped
        ));
    }
    Done::ok(out, found.files)
}

/// A pattern in Rust's regex syntax, matched on bytes (a file need not be
/// UTF-8); without Unicode tables in the build, classes are ASCII.
fn regex(pattern: &str) -> Result<Regex, String> {
    let syntax = regex_automata::util::syntax::Config::new()
        .unicode(false)
        .utf8(false);
    Regex::builder()
        .syntax(syntax)
        .build(pattern)
        .map_err(|e| crate::text::one_line(&e.to_string()))
}
