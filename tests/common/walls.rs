//! Whether this machine can test the walls (design chapter 8, D28): the
//! kernel's Landlock and user namespaces, and python3 for the hostile
//! servers and probes. Each says what it could not test (tests/common/skips.rs).

use super::skips::{missing, not_tested};

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
        missing(
            wall,
            "python3 does not run here (Debian: apt-get install python3)",
        );
    }
    runs
}
