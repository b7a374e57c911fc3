//! `run_command`: `sh -c` in the sandbox (`crate::sandbox`): Landlock
//! keeps it to the system's directories (read), the workdir and a private
//! temporary directory (read and write) and what the agent grants; the
//! network is off unless granted; it has a session of its own and a short
//! environment; the deadline stops its whole group. stdout and stderr come
//! back together, their head and tail kept, then the exit status.

use super::{Args, Done, Env, MAX_RESULT_BYTES, required, tool};
use crate::provider::Tool;
use crate::sandbox::{self, Exit, Request};

pub fn define() -> Tool {
    tool(
        "run_command",
        "Run a shell command (sh -c) in the working directory, in a sandbox: files outside the working directory cannot be written, the network may be off. Returns its output (stdout and stderr together) and its exit status.",
        &[("command", "string", true, "The command line to run.")],
    )
}

pub fn run(args: &Args, env: &Env) -> Done {
    let command = match required(args, "command") {
        Ok(c) => c,
        Err(e) => return e,
    };
    let req = Request {
        script: command,
        policy: env.policy,
        deadline: env.deadline,
        cancel: Some(env.cancel),
        // Room for the status line within the result cap.
        max_output: MAX_RESULT_BYTES - 256,
    };
    let finished = match sandbox::run(&req) {
        Ok(f) => f,
        Err(e) => return Done::error(e),
    };
    let ms = crate::deadline::millis(finished.duration);
    let (status, code, failed) = match finished.exit {
        Exit::Code(c) => (format!("exit status {c}"), Some(c), c != 0),
        Exit::Signal(s) => (format!("killed by signal {s}"), None, true),
        Exit::TimedOut => ("stopped at the deadline".to_string(), None, true),
    };
    let mut text = finished.output;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("[{status}, {ms} ms]"));
    Done {
        text,
        is_error: failed,
        exit: code,
        bytes: finished.bytes,
    }
}
