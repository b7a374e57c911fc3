//! The `axe` binary: runs the command line and turns its result into one
//! `axe: ...` line on stderr and an exit code. A panic — a bug in axe — is
//! reported the same way, without a backtrace.

use std::process::ExitCode;

use axe::error::Code;
use axe::io::stderr;

fn main() -> ExitCode {
    // The panic is reported below as one line; the default hook's multi-line
    // text and backtrace hint are not shown.
    std::panic::set_hook(Box::new(|_| {}));
    one_arena_per_core();
    let code = match std::panic::catch_unwind(axe::cli::main) {
        Ok(Ok(())) => Code::Success,
        Ok(Err(err)) => {
            stderr::error_line(format!("axe: {}\n", err.one_line()));
            err.exit_code()
        }
        Err(payload) => {
            let msg = axe::error::panic_message(payload.as_ref());
            stderr::error_line(format!(
                "axe: internal error (a bug in axe): {}\n",
                axe::text::redact::redact(&msg)
            ));
            Code::Panic
        }
    };
    // The last spans exported, within a bound (design §7.9).
    axe::trace::telemetry::finish();
    // Nothing the run started outlives it (design §8.3): commands still
    // running, what they or an MCP server left behind.
    axe::sandbox::orphans::sweep_all();
    // What is queued for stderr goes out before the process ends, unless
    // nobody reads it. (Written by stderr's own thread, never by a macro
    // that panics when stderr is closed or full.)
    stderr::flush(stderr::PATIENCE);
    code.into()
}

/// glibc's malloc gives threads up to eight arenas per core, each a heap of
/// its own that grows by mprotect. A fan-out's threads mostly wait on the
/// network and seldom allocate at the same moment, so more arenas than
/// cores buy nothing but memory and system calls. Measured at N = 256,
/// interleaved runs (design §3.15): CPU per sub-agent 208 -> 195 us, peak
/// RSS 22.2 -> 21.1 MiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_arena_per_core() {
    // The cores this process may run on: one system call, where std's
    // available_parallelism also reads the cgroup files (a dozen).
    // SAFETY: `set` is a writable cpu_set_t of the size passed, and
    // CPU_COUNT only reads it.
    let cores = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return;
        }
        libc::CPU_COUNT(&set)
    };
    // SAFETY: mallopt only changes a malloc setting; M_ARENA_MAX takes any
    // positive count, and it is set before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, cores.max(1));
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_arena_per_core() {}
