//! The command line, driven through the real `axe` binary: every command of
//! design §2.1 ([`commands`]), `run` against each provider through a fake
//! loopback server with its inputs, overrides and reports ([`run`]), the
//! dry run and the system prompt it shows ([`dry_run`]), and the exit codes
//! and messages of everything that fails ([`exit_codes`]), a first agent
//! from `agents init` to a run ([`first_agent`]), and help ([`help`]). The
//! helpers here serve them all.

mod agent_dirs;
mod bedrock;
pub(crate) mod bedrock_stream;
mod commands;
mod dry_run;
mod exit_codes;
mod first_agent;
mod help;
mod named_providers;
mod opencode;
mod run;

use crate::common::*;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const DEFAULT_MESSAGE: &str = "Execute the task described in your instructions.";

/// Runs `cmd` with `input` written to a piped stdin, then closed.
fn output_with_stdin(mut cmd: Command, input: &str) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn axe");
    {
        let mut stdin = child.stdin.take().expect("piped stdin");
        // axe may not read stdin at all (with --prompt); a closed pipe is fine.
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("wait for axe")
}

/// The content of the last message of an OpenAI request (the user message).
fn openai_user_message(req: &Recorded) -> String {
    let body = req.json();
    let messages = body["messages"].as_array().expect("messages array");
    let last = messages.last().expect("a message");
    assert_eq!(last["role"], "user", "{body}");
    last["content"]
        .as_str()
        .expect("string content")
        .to_string()
}

/// The system message of an OpenAI request.
fn openai_system_message(req: &Recorded) -> String {
    let body = req.json();
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system", "{body}");
    first["content"]
        .as_str()
        .expect("string content")
        .to_string()
}

/// Failed with `exit`, nothing on stdout, and exactly `axe: <message>` on stderr.
#[track_caller]
fn assert_fails(out: &Output, exit: i32, message: &str) {
    assert_eq!(code(out), exit, "stderr: {}", stderr(out));
    assert_eq!(stdout(out), "", "stdout must be empty on error");
    assert_eq!(stderr(out), format!("axe: {message}\n"));
}

/// Failed as an agent that is in no directory of `home`'s search path:
/// exit 2, naming `name` and the one directory looked in, the config's own.
#[track_caller]
fn assert_not_found(home: &Home, out: &Output, name: &str) {
    let agents = home.config_dir().join("agents");
    let message = format!(
        "agent config not found: {name} (looked in {})",
        agents.display()
    );
    assert_fails(out, 2, &message);
}

/// Failed with `exit`, nothing on stdout, and one `axe: ...` line on stderr
/// containing every part.
#[track_caller]
fn assert_fails_with(out: &Output, exit: i32, parts: &[&str]) {
    let err = stderr(out);
    assert_eq!(code(out), exit, "stderr: {err}");
    assert_eq!(stdout(out), "", "stdout must be empty on error");
    assert!(
        err.starts_with("axe: ") && err.ends_with('\n') && err.lines().count() == 1,
        "stderr must be one `axe: ` line, got {err:?}"
    );
    for part in parts {
        assert!(err.contains(part), "stderr {err:?} lacks {part:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

/// A shell-script editor in `dir` that records its arguments (one per line)
/// in `<dir>/<tag>.args` and appends `# edited by <tag>` to the last one.
/// Returned as the `$VISUAL`/`$EDITOR` value `sh <script>` (run through sh,
/// so the freshly written script is never executed directly).
fn editor_script(dir: &Path, tag: &str) -> String {
    let script = dir.join(format!("{tag}.sh"));
    let log = dir.join(format!("{tag}.args"));
    fs::write(
        &script,
        format!(
            "printf '%s\\n' \"$@\" > '{}'\nfor last; do :; done\necho '# edited by {tag}' >> \"$last\"\n",
            log.display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}
