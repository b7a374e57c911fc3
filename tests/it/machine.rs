//! A hostile machine (design §6.2–§6.6): files that are huge, FIFOs or
//! devices, stdin that never ends, a trace on a full disk, stderr that
//! nobody reads, signals.
//! Through the real binary, each with a bound on how long it may take, so
//! that a hang fails in bounded time.

use crate::common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn solo(extra: &str) -> Home {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", extra);
    home
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

#[test]
fn max_file_bytes_and_max_prompt_bytes_bound_what_goes_into_the_prompt() {
    let home = solo("files = [\"*.txt\"]\nmax_file_bytes = 1000\nmax_prompt_bytes = 2500\n");
    let dir = home.dir.path();
    for (name, len) in [
        ("a.txt", 900),
        ("b.txt", 1500),
        ("c.txt", 900),
        ("d.txt", 900),
    ] {
        std::fs::write(dir.join(name), "x".repeat(len)).unwrap();
    }
    let out = home.run(&["run", "solo", "--dry-run", "--verbose"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("--- Files (2) ---\na.txt\nc.txt\n"),
        "{}",
        stdout(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains("Skipped:  b.txt (larger than max_file_bytes, 1000: 1500 bytes)\n"),
        "{err}"
    );
    assert!(
        err.contains("Skipped:  d.txt (the system prompt would pass max_prompt_bytes, 2500)\n"),
        "{err}"
    );
    let prompt = stdout(&out);
    let system = prompt
        .split("--- System Prompt ---\n")
        .nth(1)
        .unwrap()
        .split("\n\n--- Skill ---")
        .next()
        .unwrap();
    assert!(system.len() <= 2500, "{} bytes", system.len());
}

#[test]
fn fifos_sockets_and_devices_matched_by_a_glob_are_skipped_unopened() {
    let home = solo("files = [\"in/*\"]\n");
    let dir = home.dir.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "text\n").unwrap();
    mkfifo(&dir.join("pipe"));
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
    let b = run_bounded(
        home.axe().args(["run", "solo", "--dry-run", "--verbose"]),
        HUNG,
    );
    let err = stderr(&b.output);
    assert_eq!(code(&b.output), 0, "{err}");
    assert!(stdout(&b.output).contains("--- Files (1) ---\nin/a.txt\n"));
    for name in ["pipe", "sock"] {
        assert!(
            err.contains(&format!("Skipped:  in/{name} (not a regular file)\n")),
            "{name}: {err}"
        );
    }
    // A link is never followed into a device, or anywhere (design §8.7).
    assert!(
        err.contains("Skipped:  in/zero (a symbolic link, not followed)\n"),
        "{err}"
    );
}

#[test]
fn a_skill_agent_file_or_config_that_is_a_fifo_is_refused_at_once() {
    // The skill.
    let home = solo("skill = \"skills/pipe\"\n");
    std::fs::create_dir_all(home.config_dir().join("skills")).unwrap();
    let fifo = home.config_dir().join("skills/pipe");
    mkfifo(&fifo);
    let b = run_bounded(home.axe().args(["run", "solo", "--dry-run"]), HUNG);
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        format!(
            "axe: cannot read skill {}: not a regular file\n",
            fifo.display()
        )
    );
    // The agent file.
    let home = Home::new();
    let fifo = home.config_dir().join("agents/solo.toml");
    mkfifo(&fifo);
    let b = run_bounded(home.axe().args(["run", "solo", "--dry-run"]), HUNG);
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        format!("axe: cannot read {}: not a regular file\n", fifo.display())
    );
    // config.toml.
    let home = solo("");
    let fifo = home.config_dir().join("config.toml");
    mkfifo(&fifo);
    let b = run_bounded(home.axe().args(["run", "solo", "--dry-run"]), HUNG);
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        format!("axe: cannot read {}: not a regular file\n", fifo.display())
    );
}

#[test]
fn a_skill_or_agent_file_over_its_limit_is_refused() {
    let home = solo("skill = \"big.md\"\nmax_file_bytes = 100\n");
    std::fs::write(home.config_dir().join("big.md"), "s".repeat(101)).unwrap();
    let out = home.run(&["run", "solo", "--dry-run"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "axe: cannot read skill {}: larger than max_file_bytes, 100: 101 bytes\n",
            home.config_dir().join("big.md").display()
        )
    );
    // An agent file of 2 MiB: a comment, then a valid agent.
    let home = Home::new();
    let path = home.agent(
        "solo",
        &format!(
            "# {}\nname = \"solo\"\nmodel = \"openai/gpt-4o\"\n",
            "x".repeat(2 << 20)
        ),
    );
    let out = home.run(&["run", "solo", "--dry-run"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!("axe: cannot read {}: larger than 1 MiB\n", path.display())
    );
}

// ---------------------------------------------------------------------------
// stdin.
// ---------------------------------------------------------------------------

#[test]
fn stdin_that_never_ends_is_bounded_by_the_timeout_and_nothing_is_sent() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("too early", 1, 1));
    let (reader, writer) = std::io::pipe().unwrap();
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .args(["run", "solo", "--timeout", "1"])
            .stdin(reader),
        HUNG,
    );
    drop(writer);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        "axe: timeout after 1s while reading stdin\n"
    );
    // At the 1 s timeout, not at the harness's kill (HUNG).
    assert!(b.took < Duration::from_secs(10), "{:?}", b.took);
    assert!(server.requests().is_empty(), "nothing is sent");
}

#[test]
fn stdin_larger_than_its_limit_is_refused() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("unused", 1, 1));
    let mut child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..40 {
            if input.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(stderr(&out), "axe: stdin is larger than 32 MiB\n");
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------
// The trace.
// ---------------------------------------------------------------------------

#[test]
fn a_run_that_appends_to_a_trace_starts_on_a_fresh_line() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("traced", 1, 1));
    let trace = home.dir.path().join("t.jsonl");
    // What a run killed mid-write (or another program) left behind.
    std::fs::write(&trace, "{\"event\":\"run_start\",\"cut").unwrap();
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo", "--trace", trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{\"event\":\"run_start\",\"cut", "left as it was");
    assert!(lines.len() > 3, "{text}");
    for line in &lines[1..] {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert!(text.ends_with('\n'));
}

#[test]
fn a_trace_on_a_full_disk_keeps_only_whole_lines() {
    let home = solo("");
    // A large prompt makes every traced request line about 20 KiB.
    let server = FakeServer::json(200, &openai_text(&"answer ".repeat(3000), 1, 1));
    let out_dir = TempDir::new("trace-disk");
    let mnt = out_dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let prompt = "p".repeat(20_000);
    let script = r#"set -u
mount -t tmpfs -o size=64k tmpfs "$MNT" || exit 90
T="$MNT/trace.jsonl"
for i in 1 2 3; do
    "$AXE" run solo --trace "$T" --trace-bodies -p "$PROMPT" >"$OUT/$i.out" 2>"$OUT/$i.err"
    echo $? >"$OUT/$i.code"
    cp "$T" "$OUT/$i.jsonl"
done
mount -o remount,size=1m "$MNT" || exit 91
"$AXE" run solo --trace "$T" -p short >"$OUT/4.out" 2>"$OUT/4.err"
echo $? >"$OUT/4.code"
cp "$T" "$OUT/4.jsonl"
"#;
    let ran = Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .envs(
            home.axe_on(&[(P::OpenAi, &server)])
                .get_envs()
                .filter_map(|(k, v)| v.map(|v| (k, v))),
        )
        .env("MNT", &mnt)
        .env("OUT", out_dir.path())
        .env("AXE", env!("CARGO_BIN_EXE_axe"))
        .env("PROMPT", &prompt)
        .current_dir(home.dir.path())
        .output()
        .unwrap();
    if !ran.status.success() {
        let why = String::from_utf8_lossy(&ran.stderr).into_owned();
        if std::env::var("AXE_TEST_REQUIRE_UNSHARE").is_ok_and(|v| v == "1") {
            panic!("user and mount namespaces are required here: {why}");
        }
        not_tested(
            "a trace on a full disk (in a namespace of the test's own)",
            &format!(
                "no user and mount namespaces here (unshare -rm): {}",
                why.trim()
            ),
        );
        return;
    }
    let read = |name: &str| std::fs::read_to_string(out_dir.path().join(name)).unwrap();
    let mut warned = false;
    for i in 1..=4 {
        assert_eq!(
            read(&format!("{i}.code")).trim(),
            "0",
            "run {i}: {}",
            read(&format!("{i}.err"))
        );
        assert_eq!(
            read(&format!("{i}.out")),
            format!("{}\n", "answer ".repeat(3000)),
            "run {i}"
        );
        warned |= read(&format!("{i}.err")).contains("cannot write the trace");
        let trace = read(&format!("{i}.jsonl"));
        assert!(
            trace.is_empty() || trace.ends_with('\n'),
            "run {i} left half a line"
        );
        for line in trace.lines() {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("run {i}: {e}: {}", &line[..line.len().min(80)]));
        }
    }
    assert!(warned, "the disk never filled up: the test proves nothing");
    // After the disk grew, the fourth run traced every event.
    let last = read("4.jsonl");
    let run_ids: Vec<String> = last
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["run_id"].to_string())
        .collect();
    let fourth = run_ids.last().unwrap();
    assert_eq!(run_ids.iter().filter(|r| *r == fourth).count(), 4, "{last}");
}

// ---------------------------------------------------------------------------
// Panics and stderr.
// ---------------------------------------------------------------------------

#[test]
fn a_panic_with_stderr_on_a_full_device_still_exits_1() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("unused", 1, 1));
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo"])
        .env("AXE_DEBUG_PANIC_AGENT", "solo")
        .stdout(Stdio::null())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    // And on a stderr that works, the one line.
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo"])
        .env("AXE_DEBUG_PANIC_AGENT", "solo")
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out),
        "axe: internal error (a bug in axe): injected by AXE_DEBUG_PANIC_AGENT\n"
    );
}

/// `lead` delegates to `w` (timeout 1 s) whose server answers after 20 s:
/// the call must time out at 1 s, and the run end, whether or not anyone
/// reads stderr.
#[test]
fn a_sub_agents_deadline_holds_while_stderr_is_blocked() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"w\"]\n[sub_agents_config]\ntimeout = 1\n",
    );
    home.named_agent("w", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(
            200,
            openai_text(
                &format!("lead got: {}", req.tool_result_texts().join("")),
                1,
                1,
            ),
        ),
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("w", "slow"))], 1, 1),
        ),
        _ => Reply::Delay(
            Duration::from_secs(20),
            Box::new(Reply::Json(200, openai_text("too late", 1, 1))),
        ),
    });
    // A pipe whose buffer is full and that nobody reads.
    let (reader, mut writer) = std::io::pipe().unwrap();
    {
        use std::io::Write;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&writer);
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
        let chunk = [b'.'; 4096];
        while writer.write(&chunk).is_ok() {}
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
    }
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "lead", "--verbose", "--timeout", "30"])
        .stdout(Stdio::piped())
        .stderr(writer);
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut stdout_pipe = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut line = String::new();
        let _ = std::io::BufReader::new(&mut stdout_pipe).read_line(&mut line);
        let _ = tx.send(line);
    });
    let answer = rx.recv_timeout(Duration::from_secs(30));
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    drop(reader);
    let answer = answer.expect("the run hung on a blocked stderr");
    assert_eq!(
        answer,
        "lead got: Error: sub-agent \"w\" failed - timeout after 1s. You may retry or proceed without this result.\n"
    );
    // At the 1 s timeout, not the server's 20 s; the margin is for a loaded
    // machine (it was 4 s against a 4 s answer).
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

// ---------------------------------------------------------------------------
// Signals.
// ---------------------------------------------------------------------------

#[test]
fn sigterm_or_sighup_mid_run_closes_the_trace_and_exits_143_or_129() {
    for (sig, status, why) in [
        (libc::SIGTERM, 143, "terminated"),
        (libc::SIGHUP, 129, "hung up"),
    ] {
        let home = solo("");
        let server = FakeServer::start(vec![Reply::Hang]);
        let trace = home.dir.path().join("t.jsonl");
        let child = home
            .axe_on(&[(P::OpenAi, &server)])
            .args(["run", "solo", "--trace", trace.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        server.wait_for_requests(1);
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), status, "{why}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("axe: {why}\n"));
        assert_eq!(stdout(&out), "");
        let text = std::fs::read_to_string(&trace).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["event"], "run_end", "{text}");
        assert_eq!(last["path"], "solo");
        assert_eq!(last["ok"], false);
        assert_eq!(last["error"], why);
    }
}

#[test]
fn an_ignored_sigint_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let home = solo("");
    let server = FakeServer::start(vec![Reply::Delay(
        Duration::from_millis(800),
        Box::new(Reply::Json(200, openai_text("finished anyway", 1, 1))),
    )]);
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "solo"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe; it runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    server.wait_for_requests(1);
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "finished anyway\n");
}

#[test]
fn a_signal_while_config_init_writes_leaves_no_temporary_file() {
    let home = TempDir::new("init-signal");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_axe"));
    default_signals(&mut cmd);
    let child = cmd
        .args(["config", "init"])
        .env("XDG_CONFIG_HOME", home.path())
        .env("HOME", home.path())
        .env("AXE_DEBUG_WRITE_DELAY_MS", "10000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first temporary file is there.
    let skills = home.path().join("axe/skills/sample");
    let started = Instant::now();
    let temp = || {
        std::fs::read_dir(&skills)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            })
            .unwrap_or(false)
    };
    while !temp() {
        assert!(started.elapsed() < Duration::from_secs(10), "no temp file");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    assert_eq!(stderr(&out), "axe: interrupted\n");
    let left: Vec<String> = std::fs::read_dir(&skills)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!home.path().join("axe/config.toml").exists());
}
