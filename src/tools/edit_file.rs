//! `edit_file`: an exact replacement in a text file beneath the workdir.
//! The old text must occur exactly once (or, with `replace_all`, at least
//! once), so an edit never lands somewhere the model did not mean; the
//! file is then written atomically, as `write_file` does.

use std::io::Read;

use super::{Args, Done, Env, flag, required, tool};
use crate::provider::Tool;

/// The largest file edited (the same limit as a context file's default).
const MAX_BYTES: u64 = 8 * 1024 * 1024;

pub fn define() -> Tool {
    tool(
        "edit_file",
        "Replace exact text in a file in the working directory. Fails unless old_string occurs exactly once, or replace_all is true.",
        &[
            (
                "path",
                "string",
                true,
                "Path of the file, relative to the working directory.",
            ),
            ("old_string", "string", true, "The exact text to replace."),
            (
                "new_string",
                "string",
                true,
                "The text to put in its place.",
            ),
            (
                "replace_all",
                "boolean",
                false,
                "Replace every occurrence (default false).",
            ),
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    match edit(args, env) {
        Ok(done) | Err(done) => done,
    }
}

fn edit(args: &Args, env: &Env) -> Result<Done, Done> {
    let path = required(args, "path")?;
    let old = required(args, "old_string")?;
    let new = args.get("new_string").map(String::as_str).unwrap_or("");
    let file = env
        .root
        .open_file(path)
        .map_err(|e| Done::error(format!("{path}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Done::error(format!("{path}: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Done::error(format!(
            "{path}: larger than {MAX_BYTES} bytes; not edited"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Done::error(format!("{path}: not UTF-8 text; not edited")))?;
    let count = text.matches(old).count();
    let all = flag(args, "replace_all");
    let edited = match (count, all) {
        (0, _) => {
            return Err(Done::error(format!(
                "{path}: old_string was not found; nothing changed"
            )));
        }
        (1, _) => text.replacen(old, new, 1),
        (n, false) => {
            return Err(Done::error(format!(
                "{path}: old_string occurs {n} times; give more context to make it unique, or set replace_all; nothing changed"
            )));
        }
        (_, true) => text.replace(old, new),
    };
    env.root
        .write(path, edited.as_bytes())
        .map_err(|e| Done::error(format!("{path}: {e}")))?;
    let what = if count == 1 {
        "1 replacement".to_string()
    } else {
        format!("{count} replacements")
    };
    Ok(Done::ok(
        format!("edited {path}: {what}"),
        edited.len() as u64,
    ))
}
