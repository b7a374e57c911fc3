//! The `axe` binary: runs the command line and turns its result into one
//! `axe: ...` line on stderr and an exit code. A panic — a bug in axe — is
//! reported the same way, without a backtrace.

use std::process::ExitCode;

use axe::stderr;

fn main() -> ExitCode {
    // The panic is reported below as one line; the default hook's multi-line
    // text and backtrace hint are not shown.
    std::panic::set_hook(Box::new(|_| {}));
    let code = match std::panic::catch_unwind(axe::cli::main) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) => {
            stderr::error_line(format!("axe: {}\n", err.one_line()));
            ExitCode::from(err.exit_code() as u8)
        }
        Err(payload) => {
            let msg = axe::error::panic_message(payload.as_ref());
            stderr::error_line(format!(
                "axe: internal error (a bug in axe): {}\n",
                axe::redact::redact(&msg)
            ));
            ExitCode::from(1)
        }
    };
    // What is queued for stderr goes out before the process ends, unless
    // nobody reads it. (Written by stderr's own thread, never by a macro
    // that panics when stderr is closed or full.)
    stderr::flush(stderr::PATIENCE);
    code
}
