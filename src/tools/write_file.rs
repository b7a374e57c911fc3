//! `write_file`: a file beneath the workdir written whole and atomically
//! (a reader sees the old file or the new one); missing directories are
//! made, and a symbolic link at the path is replaced, never followed.
//! With `artifact` true (or absent, under `[artifacts] default_write`),
//! beneath the artifact directory instead, and the write noted for
//! `--json` (design §8.9).

use super::{ARTIFACT_PARAM, Args, Done, Env, required, tool};
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
            ARTIFACT_PARAM,
        ],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    let path = match required(args, "path") {
        Ok(p) => p,
        Err(e) => return e,
    };
    let content = args.get("content").map(String::as_str).unwrap_or("");
    let (root, artifacts) = match env.place(args, true) {
        Ok(place) => place,
        Err(e) => return e,
    };
    match root.write(path, content.as_bytes()) {
        Ok(()) => {
            let size = content.len() as u64;
            let Some(a) = artifacts else {
                return Done::ok(format!("wrote {size} bytes to {path}"), size);
            };
            a.record(path, size);
            Done::ok(format!("wrote {size} bytes to {path} (artifact)"), size)
        }
        Err(e) => Done::error(format!("{path}: {e}")),
    }
}
