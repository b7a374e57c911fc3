//! The live progress view, through the real binary: drawn under a
//! pseudo-terminal (made by util-linux `script`), erased before the answer,
//! uncolored with `NO_COLOR`, and absent with `--quiet`, `--json`, or when
//! stderr is a pipe.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

const KEY: &str = "sk-test-progress-0123456789";

/// `lead` delegates to `w`, whose answer takes 1.2 s: long enough for the
/// view to be drawn several times.
fn slow_tree(home: &Home) -> FakeServer {
    for (name, extra) in [("lead", "sub_agents = [\"w\"]\n"), ("w", "")] {
        home.named_agent(name, "openai/gpt-4o", extra);
    }
    FakeServer::route(|req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, openai_text("all done", 1, 1)),
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("w", "go"))], 1, 1),
        ),
        _ => {
            std::thread::sleep(Duration::from_millis(1200));
            Reply::Json(200, openai_text("from w", 1, 1))
        }
    })
}

/// Runs `axe <args>` with stdout and stderr on a pseudo-terminal and
/// returns everything the terminal received; None when `script` is missing.
fn under_pty(
    home: &Home,
    server: &FakeServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<String> {
    let mut line = shell_quote(env!("CARGO_BIN_EXE_axe"));
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("XDG_CONFIG_HOME", home.dir.path())
        .env("HOME", home.dir.path())
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", KEY)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .current_dir(home.dir.path())
        .stdin(std::process::Stdio::null());
    for var in [
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    match cmd.output() {
        Ok(out) => {
            assert!(out.status.success(), "axe under a pty failed: {out:?}");
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(e) => {
            eprintln!("SKIPPED: util-linux `script` is needed for a pseudo-terminal: {e}");
            None
        }
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn progress_is_drawn_under_a_terminal_and_erased_before_the_answer() {
    let home = Home::new();
    let server = slow_tree(&home);
    let Some(screen) = under_pty(&home, &server, &["run", "lead", "-p", "go"], &[]) else {
        return;
    };
    // The running tree: the parent in its first turn, the sub-agent in its.
    assert!(
        screen.contains("lead\x1b[0m\x1b[2m  depth 0  turn 1"),
        "{screen:?}"
    );
    assert!(
        screen.contains("w#1\x1b[0m\x1b[2m  depth 1  turn 1"),
        "{screen:?}"
    );
    // Redrawn in place: each redraw first erases the lines drawn before.
    assert!(screen.matches("\x1b[J").count() >= 2, "{screen:?}");
    // Erased at the end: the answer comes after the last erase, alone.
    let answer = screen.rfind("all done").expect("the answer");
    let last_erase = screen.rfind("\x1b[J").unwrap();
    assert!(last_erase < answer, "{screen:?}");
    assert_eq!(screen[last_erase + 3..].trim_end(), "all done");
}

#[test]
fn progress_has_no_color_with_no_color_set() {
    let home = Home::new();
    let server = slow_tree(&home);
    let Some(screen) = under_pty(&home, &server, &["run", "lead"], &[("NO_COLOR", "1")]) else {
        return;
    };
    assert!(screen.contains("lead  depth 0  turn 1"), "{screen:?}");
    assert!(screen.contains("w#1  depth 1  turn 1"), "{screen:?}");
    assert!(!screen.contains("\x1b[36m"), "{screen:?}");
    assert!(!screen.contains("\x1b[2m"), "{screen:?}");
}

#[test]
fn progress_is_not_drawn_with_quiet_or_json() {
    let home = Home::new();
    let server = slow_tree(&home);
    for flag in ["--quiet", "--json"] {
        let Some(screen) = under_pty(&home, &server, &["run", "lead", flag], &[]) else {
            return;
        };
        assert!(!screen.contains("depth 0"), "{flag}: {screen:?}");
        assert!(!screen.contains('\x1b'), "{flag}: {screen:?}");
        assert!(screen.contains("all done"), "{flag}: {screen:?}");
    }
}

#[test]
fn progress_is_not_drawn_when_stderr_is_a_pipe() {
    let home = Home::new();
    let server = slow_tree(&home);
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", KEY)
        .env("TERM", "xterm-256color")
        .args(["run", "lead"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "nothing on a piped stderr");
    assert_eq!(stdout(&out), "all done\n");
}

#[test]
fn verbose_lines_under_a_terminal_are_whole_and_the_view_is_redrawn_below() {
    let home = Home::new();
    let server = slow_tree(&home);
    let Some(screen) = under_pty(
        &home,
        &server,
        &["run", "lead", "--verbose"],
        &[("NO_COLOR", "1")],
    ) else {
        return;
    };
    // The sub-agent's completion line is printed whole, after the view that
    // was on screen while it ran has been erased.
    let done = screen
        .find("[sub-agent] \"w\" completed")
        .unwrap_or_else(|| panic!("{screen:?}"));
    let before = &screen[..done];
    assert!(before.contains("w#1  depth 1"), "{screen:?}");
    assert!(
        before.ends_with("\x1b[J"),
        "erased right before: {screen:?}"
    );
}
