//! The `axe` binary: runs the command line and turns its result into one
//! `axe: ...` line on stderr and an exit code. A panic — a bug in axe — is
//! reported the same way, without a backtrace.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The panic is reported below as one line; the default hook's multi-line
    // text and backtrace hint are not shown.
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(axe::cli::main) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) => {
            // Not eprintln!: with stderr closed it would panic and change the code.
            let _ = writeln!(std::io::stderr(), "axe: {}", axe::error::one_line(&err));
            ExitCode::from(axe::error::exit_code(&err) as u8)
        }
        Err(payload) => {
            let msg = axe::error::panic_message(payload.as_ref());
            eprintln!(
                "axe: internal error (a bug in axe): {}",
                axe::redact::redact(&msg)
            );
            ExitCode::from(1)
        }
    }
}
