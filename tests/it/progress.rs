//! The live progress view, through the real binary: drawn under a
//! pseudo-terminal (made by util-linux `script`), erased before the answer,
//! uncolored with `NO_COLOR`, and absent with `--quiet`, `--json`, when
//! stderr is a pipe, or when a streamed answer goes to the same terminal.

use crate::common::*;

use std::process::Command;
use std::time::Duration;

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
pub(crate) fn under_pty(
    home: &Home,
    server: &FakeServer,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<String> {
    let (screen, status) = shell_under_pty(home, server, "", args, env)?;
    assert_eq!(status, 0, "axe under a pty failed: {screen:?}");
    Some(screen)
}

/// Runs the shell line `before`, then `exec axe <args>`, on a
/// pseudo-terminal: what the terminal received and the exit status; None
/// when `script` is missing. `before` may set the terminal up (`stty cols
/// 40;`) or start something in the background that acts on axe (`$$` is
/// axe's pid once it is exec'd).
fn shell_under_pty(
    home: &Home,
    server: &FakeServer,
    before: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<(String, i32)> {
    let mut line = format!("{before} exec {}", shell_quote(env!("CARGO_BIN_EXE_axe")));
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("XDG_CONFIG_HOME", home.dir.path())
        .env("HOME", home.dir.path())
        .env("XDG_STATE_HOME", home.dir.path().join("state"))
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .env_remove("LINES")
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
    default_signals(&mut cmd);
    match cmd.output() {
        Ok(out) => Some((
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.code().unwrap_or(-1),
        )),
        Err(e) => {
            missing(
                "the progress line on a terminal",
                &format!("util-linux `script` (for a pseudo-terminal) does not run here: {e}"),
            );
            None
        }
    }
}

/// The lines of every frame the terminal was sent, as they show (escape
/// sequences and carriage returns taken out), in order.
fn shown_lines(screen: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = screen.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters, then one final letter.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else if c != '\r' {
            plain.push(c);
        }
    }
    plain.lines().map(str::to_string).collect()
}

/// `lead` delegates to a sub-agent with a long name: every frame has a line
/// about 70 columns wide. The sub-agent's request makes the file `asked`
/// in the home (the shell line before axe can wait for it: the sub-agent is
/// running from then on); the answer waits for the file `go` when `wait`
/// is set (at most 30 s), then `delay` more.
fn long_named_tree(home: &Home, wait: bool, delay: Duration) -> FakeServer {
    let long = "a-rather-long-sub-agent-name-for-the-view";
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!("sub_agents = [\"{long}\"]\n"),
    );
    home.named_agent(long, "openai/gpt-4o", "");
    let (asked, go) = (home.dir.path().join("asked"), home.dir.path().join("go"));
    FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, openai_text("all done", 1, 1)),
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate(long, "go"))], 1, 1),
        ),
        _ => {
            std::fs::write(&asked, "").unwrap();
            let until = std::time::Instant::now() + Duration::from_secs(30);
            while wait && !go.exists() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(delay);
            Reply::Json(200, openai_text("from w", 1, 1))
        }
    })
}

/// A shell line that waits (at most 30 s) until the sub-agent of
/// [`long_named_tree`] has asked, then a second for the view to draw it
/// running, then runs `then`; in the background.
fn once_asked(then: &str) -> String {
    format!(
        "(i=0; while [ ! -e asked ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; sleep 1; {then}) &"
    )
}

#[test]
fn progress_frames_fit_the_terminals_real_width() {
    let home = Home::new();
    let server = long_named_tree(&home, false, Duration::from_millis(1200));
    let Some((screen, status)) = shell_under_pty(
        &home,
        &server,
        "stty cols 40 rows 24;",
        &["run", "lead"],
        &[("NO_COLOR", "1")],
    ) else {
        return;
    };
    assert_eq!(status, 0, "{screen:?}");
    let lines = shown_lines(&screen);
    assert!(lines.iter().any(|l| l.contains("a-rather")), "{screen:?}");
    for l in &lines {
        assert!(
            l.chars().count() < 40,
            "{} columns: {l:?}",
            l.chars().count()
        );
    }
}

#[test]
fn progress_frames_follow_a_terminal_that_is_resized() {
    let home = Home::new();
    // Drawn wide while the sub-agent runs, then the terminal narrowed, then
    // a second more of the sub-agent, drawn narrow.
    let server = long_named_tree(&home, true, Duration::from_secs(1));
    let before = format!(
        "stty cols 100 rows 24; {}",
        once_asked("stty cols 30 </dev/tty; touch go")
    );
    let Some((screen, status)) = shell_under_pty(
        &home,
        &server,
        &before,
        &["run", "lead"],
        &[("NO_COLOR", "1")],
    ) else {
        return;
    };
    assert_eq!(status, 0, "{screen:?}");
    let frames: Vec<String> = shown_lines(&screen)
        .into_iter()
        .filter(|l| l.contains("a-rather"))
        .collect();
    assert!(
        frames.first().is_some_and(|l| l.chars().count() > 30),
        "drawn wide first: {frames:?}"
    );
    let last = frames.last().unwrap();
    assert!(last.chars().count() < 30, "then narrow: {frames:?}");
}

#[test]
fn ctrl_c_erases_the_view_closes_the_trace_and_exits_130() {
    let home = Home::new();
    let server = long_named_tree(&home, false, Duration::from_secs(30));
    let trace = home.dir.path().join("t.jsonl");
    let Some((screen, status)) = shell_under_pty(
        &home,
        &server,
        &once_asked("kill -INT $$"),
        &["run", "lead", "--trace", trace.to_str().unwrap()],
        &[("NO_COLOR", "1")],
    ) else {
        return;
    };
    assert_eq!(status, 130, "{screen:?}");
    // The last frame was erased, then the one line.
    let last_frame = screen.rfind("depth 1").expect("a frame was drawn");
    let erase = screen.rfind("\x1b[J").unwrap();
    assert!(erase > last_frame, "{screen:?}");
    assert_eq!(
        screen[erase + 3..].trim_end(),
        "axe: interrupted",
        "{screen:?}"
    );
    let ends: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "run_end")
        .collect();
    let paths: Vec<&str> = ends.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["lead/a-rather-long-sub-agent-name-for-the-view#1", "lead"],
        "deepest first"
    );
    for e in &ends {
        assert_eq!(e["ok"], false);
        assert_eq!(e["error"], "interrupted");
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
fn progress_is_not_drawn_over_an_answer_streamed_to_the_terminal() {
    let home = Home::new();
    let server = slow_tree(&home);
    let Some(screen) = under_pty(&home, &server, &["run", "lead", "--stream"], &[]) else {
        return;
    };
    // The view would erase lines of the answer on the same screen: the
    // streamed text is the only sign of progress there (design §4.11).
    assert!(!screen.contains("depth 0"), "{screen:?}");
    assert!(!screen.contains('\x1b'), "{screen:?}");
    assert!(screen.contains("all done"), "{screen:?}");
}

#[test]
fn progress_is_not_drawn_over_a_trace_on_the_terminal() {
    let home = Home::new();
    let server = slow_tree(&home);
    for path in ["/dev/stderr", "/dev/stdout"] {
        let Some(screen) = under_pty(&home, &server, &["run", "lead", "--trace", path], &[]) else {
            return;
        };
        assert!(!screen.contains("depth 0"), "{path}: {screen:?}");
        assert!(!screen.contains('\x1b'), "{path}: {screen:?}");
        // Every trace line whole, the answer last.
        let lines: Vec<&str> = screen.lines().map(|l| l.trim_end_matches('\r')).collect();
        assert_eq!(lines.last(), Some(&"all done"), "{path}: {screen:?}");
        let events = &lines[..lines.len() - 1];
        assert_eq!(events.len(), 12, "{path}: {screen:?}");
        for line in events {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{path}: {e}: {line:?}"));
        }
    }
}

#[test]
fn progress_is_not_drawn_when_stderr_is_a_pipe() {
    let home = Home::new();
    let server = slow_tree(&home);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
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
    // The sub-agent's first line once its answer is in (its turn's, design
    // §3.14, then its completion) is printed whole, after the view that was
    // on screen while it ran has been erased.
    let done = screen
        .find("  w: [turn 1] Received response")
        .unwrap_or_else(|| panic!("{screen:?}"));
    let before = &screen[..done];
    assert!(before.contains("w#1  depth 1"), "{screen:?}");
    assert!(
        before.ends_with("\x1b[J"),
        "erased right before: {screen:?}"
    );
    // Then its completion, whole: on a line of its own, or right after the
    // view, if one was drawn in between, was erased.
    let completed = screen
        .find("[sub-agent] \"w\" completed")
        .unwrap_or_else(|| panic!("{screen:?}"));
    let before = &screen[done..completed];
    assert!(
        before.ends_with("\r\n") || before.ends_with("\x1b[J"),
        "the completion whole: {screen:?}"
    );
}
