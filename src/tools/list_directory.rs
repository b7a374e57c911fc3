//! `list_directory`: the entries of a directory beneath the workdir, one
//! per line, sorted: directories end in `/`, symbolic links in `@`; axe's
//! own temporary files left out. With `artifact` true, beneath the
//! artifact directory (design §8.9).

use super::{ARTIFACT_PARAM, Args, Done, Env, tool};
use crate::provider::Tool;
use crate::sandbox::beneath::Kind;
use crate::sandbox::write::is_temp_name;

/// Entries listed at most.
const MAX_ENTRIES: usize = 2000;

pub fn define() -> Tool {
    tool(
        "list_directory",
        "List the entries of a directory in the working directory, one per line; directories end in '/', symbolic links in '@'.",
        &[
            (
                "path",
                "string",
                false,
                "Path of the directory, relative to the working directory (default: the working directory itself).",
            ),
            ARTIFACT_PARAM,
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    let path = args
        .get("path")
        .map(String::as_str)
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".");
    let root = match env.place(args, false) {
        Ok((root, _)) => root,
        Err(e) => return e,
    };
    let mut entries = match root.list(path) {
        Ok(e) => e,
        Err(e) => return Done::error(format!("{path}: {e}")),
    };
    // Another call of the same response may be writing a file here: its
    // temporary file is axe's, not the workdir's (design §8.2).
    entries.retain(|e| !is_temp_name(&e.name));
    let mut out = String::new();
    for e in entries.iter().take(MAX_ENTRIES) {
        out.push_str(&e.name);
        out.push_str(match e.kind {
            Kind::Dir => "/",
            Kind::Link => "@",
            _ => "",
        });
        out.push('\n');
    }
    if entries.len() > MAX_ENTRIES {
        out.push_str(&format!(
            "[{} entries in all; the first {MAX_ENTRIES} shown]\n",
            entries.len()
        ));
    }
    if entries.is_empty() {
        out.push_str("(empty)\n");
    }
    Done::ok(out, entries.len() as u64)
}
