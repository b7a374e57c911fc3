//! What the walls' tests (design chapter 8, D28) could not test on this
//! machine. A test that needs what the kernel or the machine lacks says
//! SKIPPED on stderr, which cargo hides, and adds a line to
//! `target/tmp/walls-not-tested.txt`, which `make test` prints at the end:
//! a wall left untested is never silent.

use std::io::Write;

/// The file `make test` reads after the tests (emptied before them).
pub const NOT_TESTED: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/walls-not-tested.txt");

/// Says that `wall` was not tested here, and why.
pub fn not_tested(wall: &str, why: &str) {
    eprintln!("SKIPPED: {wall} not tested: {why}");
    let line = format!("{wall}: {why}\n");
    // One append of one line: whole even when tests add theirs at once.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(NOT_TESTED)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// Whether commands can run confined here as axe confines them by default:
/// Landlock, and user namespaces for their PID and mount namespaces
/// (design §8.3, §8.6). Says which is missing when one is.
pub fn landlock() -> bool {
    if axe::sandbox::landlock_abi() == 0 {
        not_tested(
            "the sandbox's walls (run_command, sandboxed MCP servers)",
            "this kernel has no Landlock",
        );
        return false;
    }
    if let Err(why) = axe::sandbox::namespace::available() {
        not_tested(
            "the walls of commands' namespaces (nothing outlives a command, read-only .git)",
            &why,
        );
        return false;
    }
    true
}

/// Whether `python3` runs here (the hostile servers and probes are Python).
pub fn python3(wall: &str) -> bool {
    let runs = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        not_tested(wall, "python3 does not run here");
    }
    runs
}
