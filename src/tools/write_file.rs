//! `write_file`: a file beneath the workdir written whole and atomically
//! (a reader sees the old file or the new one); missing directories are
//! made, and a symbolic link at the path is replaced, never followed.

use super::{Args, Done, Env, required, tool};
use crate::provider::Tool;

pub fn define() -> Tool {
    tool(
        "write_file",
        "Write a file in the working directory, replacing it if it exists; missing directories are created.",
        &[
            (
                "path",
                "string",
                true,
                "Path of the file, relative to the working directory.",
            ),
            (
                "content",
                "string",
                true,
                "The whole new content of the file.",
            ),
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    let path = match required(args, "path") {
        Ok(p) => p,
        Err(e) => return e,
    };
    let content = args.get("content").map(String::as_str).unwrap_or("");
    match env.root.write(path, content.as_bytes()) {
        Ok(()) => Done::ok(
            format!("wrote {} bytes to {path}", content.len()),
            content.len() as u64,
        ),
        Err(e) => Done::error(format!("{path}: {e}")),
    }
}
