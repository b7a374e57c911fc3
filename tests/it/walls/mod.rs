//! The walls (design chapter 8, D28): each test plays a hostile model,
//! MCP server, HTTP client or web page and checks that it reaches nothing
//! it was not given. One file a wall.

mod links;
mod mcp;
mod net;
mod processes;
mod readonly;
mod red;
mod serve;
mod trust;
mod url_fetch;
mod view;

use std::process::Command;

/// `cmd` run as user and group 65534 (`setpriv`), when the tests run as
/// root: a normal user's axe. None when they do not run as root (they
/// already are one) or `setpriv` is missing (SKIPPED said).
pub fn as_a_normal_user(cmd: &Command) -> Option<Command> {
    // SAFETY: a getter without arguments.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        crate::common::not_tested("a normal user's walls, run as root", "setpriv is missing");
        return None;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    Some(rewrap(cmd, wrapped))
}

/// `wrapper` running `cmd`'s program and arguments, with its environment
/// and directory.
fn rewrap(cmd: &Command, mut wrapper: Command) -> Command {
    wrapper.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapper.env(k, v),
            None => wrapper.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    crate::common::default_signals(&mut wrapper);
    wrapper
}

/// `cmd` run where axe cannot make a user namespace: in a user namespace
/// of the test's own (`unshare -U -r`) whose `user.max_user_namespaces` is
/// 0. None, with SKIPPED said, where the test cannot make that one.
pub fn without_user_namespaces(cmd: Command) -> Option<Command> {
    let works = Command::new("unshare")
        .args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        crate::common::not_tested(
            "the walls without user namespaces (fail closed, the sweep alone)",
            "no user namespace could be made here to turn them off in (unshare -U)",
        );
        return None;
    }
    let mut wrapped = Command::new("unshare");
    wrapped.args([
        "-U",
        "-r",
        "--",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"",
    ]);
    Some(rewrap(&cmd, wrapped))
}
