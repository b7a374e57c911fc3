//! Nothing a run starts outlives it (design §8.3, issue "The walls
//! hold"), through the binary: a command's processes, however far they go
//! from it (a 41-deep chain of new sessions, a double fork that ignores
//! TERM, HUP and INT), are gone once axe exits, whichever way it exits: the run's end,
//! the deadline, Ctrl-C, SIGTERM, SIGHUP, `axe serve`'s first and second
//! signal; and so are an MCP server's daemons, sandboxed or not. With the
//! kernel's PID namespaces, and with the orphan sweep alone where they are
//! not to be had.
//!
//! Every process a test starts carries `AXE_WALL_MARK=<mark>` in its
//! environment; a test looks for it in `/proc/*/environ` after axe has
//! exited.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::without_user_namespaces;
use crate::common::*;

/// A mark no other process carries.
fn mark() -> String {
    format!("axe-wall-{}-{}", std::process::id(), fastrand::u64(..))
}

/// The live processes whose environment holds `AXE_WALL_MARK=<mark>` (a
/// zombie's environment reads empty: it is dead).
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("AXE_WALL_MARK={mark}\0");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// The marked processes still alive after up to 10 s (a loaded machine
/// may be slow to act on a kill), with their command lines.
fn left(mark: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = marked(mark);
        if pids.is_empty() || Instant::now() >= until {
            return pids
                .iter()
                .map(|p| {
                    let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                    format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills what a failed test left, so that one failure does not leave 41
/// sleeps on the machine.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in marked(&self.0) {
            // SAFETY: a signal to a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A fake model whose first answer runs `script` with run_command and whose
/// next one ends the run.
fn model(script: &str) -> FakeServer {
    let first = P::OpenAi.tool_calls(&[("c1", "run_command", json!({"command": script}))]);
    let done = P::OpenAi.text("done");
    FakeServer::tool_loop(first, done)
}

/// `axe run hands` on `server`, with `args`.
fn axe(s: &ToolsSetup, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = s.home.axe_on(&[(P::OpenAi, server)]);
    std::fs::create_dir_all(temp_dir(s)).unwrap();
    cmd.env("TMPDIR", temp_dir(s))
        .args(["run", "hands", "-p", "go"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The `TMPDIR` axe runs with: where a command's private directory is made.
fn temp_dir(s: &ToolsSetup) -> std::path::PathBuf {
    s.home.dir.path().join("tmp")
}

/// What axe left in its `TMPDIR` after it exited: nothing, however it ended.
fn temp_left(s: &ToolsSetup) -> Vec<String> {
    std::fs::read_dir(temp_dir(s))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Writes `chain.sh` into `work`: each process starts the next in a new
/// session of its own and stays, as its parent; the last one touches
/// `bottom`.
fn chain_script(work: &Path) {
    std::fs::write(
        work.join("chain.sh"),
        "n=$1\nif [ \"$n\" -gt 1 ]; then setsid sh ./chain.sh $((n - 1)) & else touch bottom; fi\nexec sleep 300\n",
    )
    .unwrap();
}

/// The command that builds a `depth`-deep chain and says how many marked
/// processes it sees once the chain is whole.
fn chain_command(mark: &str, depth: u32) -> String {
    format!(
        "export AXE_WALL_MARK={mark}; setsid sh ./chain.sh {depth} & \
         i=0; while [ ! -e bottom ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
         echo chain of $(env -u AXE_WALL_MARK sh -c 'grep -l AXE_WALL_MARK={mark} /proc/[0-9]*/environ 2>/dev/null | wc -l')"
    )
}

/// The text of the first tool result `server` was sent.
fn result(server: &FakeServer) -> String {
    server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts().join("\n"))
        .unwrap_or_default()
}

#[test]
fn a_41_deep_chain_of_new_sessions_is_gone_when_axe_exits() {
    if !landlock() {
        return;
    }
    let mark = mark();
    let _cleanup = Cleanup(mark.clone());
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    chain_script(&s.work);
    let server = model(&chain_command(&mark, 41));
    let out = axe(&s, &server, &["--timeout", "60"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        result(&server).contains("chain of 41"),
        "{}",
        result(&server)
    );
    let left = left(&mark);
    assert!(left.is_empty(), "outlived axe: {left:?}");
}

#[test]
fn where_a_command_has_no_namespaces_the_sweep_alone_ends_a_41_deep_chain() {
    if !landlock() {
        return;
    }
    // The sandbox off (no namespaces by design), and Landlock without
    // user namespaces (the file opting out of the protection).
    let mut outlived = Vec::new();
    for (sandbox, no_userns) in [("mode = \"off\"", false), ("protect = false", true)] {
        let mark = mark();
        let _cleanup = Cleanup(mark.clone());
        let s = ToolsSetup::new(
            P::OpenAi,
            &["run_command"],
            &format!("[sandbox]\n{sandbox}\n"),
        );
        chain_script(&s.work);
        let server = model(&chain_command(&mark, 41));
        let cmd = axe(&s, &server, &["--timeout", "60"]);
        let mut cmd = match no_userns {
            false => cmd,
            true => match without_user_namespaces(cmd) {
                Some(c) => c,
                None => continue,
            },
        };
        let out = cmd.output().unwrap();
        assert_eq!(code(&out), 0, "{sandbox}: {}", stderr(&out));
        assert!(
            result(&server).contains("chain of 41"),
            "{}",
            result(&server)
        );
        let left = left(&mark);
        if !left.is_empty() {
            outlived.push(format!("{sandbox}: {left:?}"));
        }
    }
    assert!(outlived.is_empty(), "outlived axe: {outlived:?}");
}

/// Starts `hands` on `server` (whose command is [`long_command`]) and
/// returns once the command is running.
fn start(s: &ToolsSetup, server: &FakeServer, args: &[&str]) -> Child {
    let child = axe(s, server, args).spawn().unwrap();
    let started = s.work.join("started");
    let until = Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(Instant::now() < until, "the command did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn ctrl_c_sigterm_or_sighup_mid_command_leave_nothing_running() {
    if !landlock() {
        return;
    }
    let mut outlived = Vec::new();
    for (sig, status, why) in [
        (libc::SIGINT, 130, "interrupted"),
        (libc::SIGTERM, 143, "terminated"),
        (libc::SIGHUP, 129, "hung up"),
    ] {
        let mark = mark();
        let _cleanup = Cleanup(mark.clone());
        let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
        let server = model(&long_command(&mark));
        let child = start(&s, &server, &["--timeout", "60"]);
        let until = Instant::now() + Duration::from_secs(10);
        while marked(&mark).len() < 4 {
            assert!(
                Instant::now() < until,
                "the command's processes are not running"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), status, "{why}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("axe: {why}")),
            "{}",
            stderr(&out)
        );
        let left = left(&mark);
        if !left.is_empty() {
            outlived.push(format!("{why}: {left:?}"));
        }
        let temp = temp_left(&s);
        if !temp.is_empty() {
            outlived.push(format!("{why}: in TMPDIR {temp:?}"));
        }
    }
    assert!(outlived.is_empty(), "outlived axe: {outlived:?}");
}

/// A command that leaves a process in a session of its own and a double
/// fork that ignores TERM, HUP and INT, keeps one in its group, and waits
/// on a fourth.
fn long_command(mark: &str) -> String {
    format!(
        "export AXE_WALL_MARK={mark}; (setsid sleep 300 &); \
         (trap '' TERM HUP INT; setsid sh -c 'trap \"\" TERM HUP INT; exec sleep 300' &); \
         sleep 300 & touch started; sleep 300"
    )
}

#[test]
fn the_deadline_mid_command_leaves_nothing_running() {
    if !landlock() {
        return;
    }
    let mark = mark();
    let _cleanup = Cleanup(mark.clone());
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    chain_script(&s.work);
    // A 41-deep chain and a double fork that ignores TERM, then the
    // command waits past the run's deadline.
    let script = format!(
        "{}; (trap '' TERM; setsid sh -c 'trap \"\" TERM; exec sleep 300' &); touch started; sleep 300",
        chain_command(&mark, 41)
    );
    let server = model(&script);
    let child = start(&s, &server, &["--timeout", "4"]);
    let out = child.wait_with_output().unwrap();
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    let left = left(&mark);
    assert!(left.is_empty(), "outlived axe: {left:?}");
    assert_eq!(temp_left(&s), Vec::<String>::new(), "left in TMPDIR");
}

/// A chat request for `agent` to `addr`, as a well-behaved local client
/// sends it; the answer's status line, or what went wrong.
fn chat(addr: &str, agent: &str) -> String {
    use std::io::{Read, Write};
    let body = json!({"model": agent, "messages": [{"role": "user", "content": "go"}]}).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return "no connection".into();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let _ = s.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn axe_serves_first_and_second_signal_leave_nothing_running() {
    if !landlock() {
        return;
    }
    let mut outlived = Vec::new();
    for second in [false, true] {
        let mark = mark();
        let _cleanup = Cleanup(mark.clone());
        let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
        chain_script(&s.work);
        let script = format!("{}; touch started; sleep 300", chain_command(&mark, 41));
        let model = model(&script);
        let mut cmd = s.home.axe_on(&[(P::OpenAi, &model)]);
        std::fs::create_dir_all(temp_dir(&s)).unwrap();
        cmd.env("TMPDIR", temp_dir(&s));
        let mut server = crate::serve::Server::start_with(cmd, &["--grace", "1"]);
        let addr = server.addr.clone();
        let request = std::thread::spawn(move || chat(&addr, "hands"));
        let until = Instant::now() + Duration::from_secs(30);
        while !s.work.join("started").exists() {
            assert!(
                Instant::now() < until,
                "the command did not start: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        server.signal(libc::SIGTERM);
        if second {
            assert!(
                server.wait_log("stopping", Duration::from_secs(30)),
                "{}",
                server.log()
            );
            server.signal(libc::SIGTERM);
        }
        let status = server
            .wait_exit(Duration::from_secs(30))
            .expect("axe serve exits");
        let expected = if second { 143 } else { 0 };
        assert_eq!(status.code(), Some(expected), "{}", server.log());
        let left = left(&mark);
        if !left.is_empty() {
            outlived.push(format!("second signal {second}: {left:?}"));
        }
        let temp = temp_left(&s);
        if !temp.is_empty() {
            outlived.push(format!("second signal {second}: in TMPDIR {temp:?}"));
        }
        let _ = request.join();
    }
    assert!(outlived.is_empty(), "outlived axe serve: {outlived:?}");
}

#[test]
fn an_mcp_servers_daemons_are_gone_when_axe_exits_sandboxed_or_not() {
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/files_server.py");
    if !python3("an MCP server's daemons ended with axe") {
        return;
    }
    if !landlock() {
        return;
    }
    let fixtures = script.parent().unwrap().display().to_string();
    let mut outlived = Vec::new();
    for sandboxed in [false, true] {
        let mark = mark();
        let _cleanup = Cleanup(mark.clone());
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        // The server leaves a daemon (a double fork in a new session)
        // before it serves.
        let start = format!(
            "export AXE_WALL_MARK={mark}; (setsid sleep 300 &); exec python3 {}",
            script.display()
        );
        let sandbox = if sandboxed {
            format!("[mcp_servers.sandbox]\nread = [{fixtures:?}]\n")
        } else {
            String::new()
        };
        home.config(&format!(
            "[[mcp_servers]]\nname = \"files\"\ncommand = \"sh\"\nargs = [\"-c\", {start:?}]\ncwd = {:?}\n{sandbox}\n",
            work.display().to_string()
        ));
        home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
        let path = work.join("a.txt").display().to_string();
        let first = P::OpenAi.tool_calls(&[(
            "c1",
            "files__write_file",
            json!({"path": path, "text": "x"}),
        )]);
        let done = P::OpenAi.text("done");
        let model = FakeServer::route(move |req| {
            Reply::Json(
                200,
                if req.has_tool_results() {
                    done.clone()
                } else {
                    first.clone()
                },
            )
        });
        let out = home
            .axe_on(&[(P::OpenAi, &model)])
            .args(["run", "user", "-p", "go", "--timeout", "60"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "sandboxed: {sandboxed}: {}", stderr(&out));
        assert!(work.join("a.txt").exists(), "the server ran");
        let left = left(&mark);
        if !left.is_empty() {
            outlived.push(format!("sandboxed {sandboxed}: {left:?}"));
        }
    }
    assert!(outlived.is_empty(), "outlived axe: {outlived:?}");
}

#[test]
fn a_normal_users_commands_get_the_same_walls() {
    if !landlock() {
        return;
    }
    let mark = mark();
    let _cleanup = Cleanup(mark.clone());
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    std::fs::create_dir_all(s.work.join(".git")).unwrap();
    std::fs::write(s.work.join(".git/config"), "[core]\n").unwrap();
    let script = format!(
        "export AXE_WALL_MARK={mark}; (setsid sleep 300 &); sleep 300 & \
         echo uid $(id -u); echo x >> .git/config || echo refused; echo ok > other.txt"
    );
    let server = model(&script);
    let Some(mut cmd) = super::as_a_normal_user(&axe(&s, &server, &["--timeout", "60"])) else {
        return;
    };
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(s.home.dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = result(&server);
    assert!(said.contains("uid 65534\n"), "{said}");
    assert!(said.contains("refused"), "{said}");
    assert_eq!(
        std::fs::read_to_string(s.work.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.work.join("other.txt")).unwrap(),
        "ok\n"
    );
    let left = left(&mark);
    assert!(left.is_empty(), "outlived axe: {left:?}");
}

#[test]
fn axe_killed_with_sigkill_mid_command_leaves_nothing_running() {
    // No sweep can run: the kernel alone ends the command's namespace (its
    // keeper dies with axe, its init with the keeper).
    if !landlock() {
        return;
    }
    let mark = mark();
    let _cleanup = Cleanup(mark.clone());
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let server = model(&long_command(&mark));
    let mut child = start(&s, &server, &["--timeout", "60"]);
    let until = Instant::now() + Duration::from_secs(10);
    while marked(&mark).len() < 4 {
        assert!(
            Instant::now() < until,
            "the command's processes are not running"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    let left = left(&mark);
    assert!(left.is_empty(), "outlived axe: {left:?}");
}

#[test]
fn a_command_sees_only_its_own_processes() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let me = std::process::id();
    let script = format!(
        "sleep 30 & test -e /proc/{me} && echo sees the test; \
         echo pids $(ls -d /proc/[0-9]* | wc -l); echo self $$ $!"
    );
    let server = model(&script);
    let out = axe(&s, &server, &["--timeout", "60"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = result(&server);
    assert!(!said.contains("sees the test"), "{said}");
    // Its init, its shell, the sleep, ls and wc at most.
    let pids: usize = said
        .split("pids ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    assert!(pids <= 6, "{said}");
    // Its pids are the namespace's: `$$` and `$!` name what /proc shows.
    assert!(said.contains("self 2 3\n"), "{said}");
}
