//! A trace that is not a regular file (design §7.2): `--trace /dev/stdout`
//! piped, a FIFO with a reader, a terminal, `/dev/null`; a FIFO nobody
//! reads, a directory and a socket refused; a reader that stalls never
//! holding the run. Through the real binary, each bounded in time.

use crate::common::*;

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

/// Sub-agents the lead calls at once, and the size of each one's answer:
/// with `--trace-bodies` their response lines are far over a pipe's atomic
/// write size (4 KiB), written from parallel threads.
const CALLS: usize = 8;
const ANSWER_BYTES: usize = 20_000;

/// A lead that calls `w` [`CALLS`] times at once; each `w` answers with
/// [`ANSWER_BYTES`] of text; the lead then answers `lead done`.
fn fan_out() -> (Home, FakeServer) {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| {
        if req.who() != "lead" {
            return Reply::Json(200, openai_text(&"w".repeat(ANSWER_BYTES), 1, 1));
        }
        if req.has_tool_results() {
            return Reply::Json(200, openai_text("lead done", 1, 1));
        }
        let ids: Vec<String> = (0..CALLS).map(|i| format!("call_{i}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .map(|id| (id.as_str(), "call_agent", delegate("w", "write")))
            .collect();
        Reply::Json(200, openai_tool_calls(&calls, 1, 1))
    });
    (home, server)
}

/// Parses every line of `text` as a trace event and checks the tree of
/// [`fan_out`] is all there: a run_start and a run_end per agent run.
fn check_events(text: &str) -> Vec<Value> {
    let events: Vec<Value> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("{e}: {}", &l[..l.len().min(120)]))
        })
        .collect();
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert_eq!(count("run_start"), CALLS + 1);
    assert_eq!(count("run_end"), CALLS + 1);
    assert_eq!(count("response"), CALLS + 2);
    let run_id = &events[0]["run_id"];
    assert!(events.iter().all(|e| &e["run_id"] == run_id));
    events
}

#[test]
fn a_trace_to_stdout_shares_the_pipe_with_the_answer_line_by_line() {
    let (home, server) = fan_out();
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)]).args([
            "run",
            "lead",
            "--trace",
            "/dev/stdout",
            "--trace-bodies",
        ]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stderr(&b.output), "");
    let out = stdout(&b.output);
    // Every trace line is written before the answer, each one whole.
    let (trace, answer) = out
        .strip_suffix("lead done\n")
        .map(|t| (t, "lead done"))
        .unwrap_or_else(|| panic!("the answer is not last: {}", &out[out.len() - 200..]));
    assert_eq!(answer, "lead done");
    let events = check_events(trace);
    let big = events
        .iter()
        .filter(|e| {
            e["event"] == "response" && e["content"].as_str().map(str::len) == Some(ANSWER_BYTES)
        })
        .count();
    assert_eq!(big, CALLS, "every sub-agent's answer is in its line");
}

#[test]
fn a_trace_to_stdout_redirected_to_a_file_is_not_written_over_by_the_answer() {
    let (home, server) = fan_out();
    // `axe run lead --trace /dev/stdout > out.jsonl`: the shell's `>`
    // opens the file without O_APPEND, at offset 0.
    let out_path = home.dir.path().join("out.jsonl");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "lead", "--trace", "/dev/stdout", "--trace-bodies"])
        .stdout(out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HUNG {
            let _ = child.kill();
            panic!("axe hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
    let text = std::fs::read_to_string(&out_path).unwrap();
    let trace = text
        .strip_suffix("lead done\n")
        .unwrap_or_else(|| panic!("the answer is not last: {}", &text[..text.len().min(200)]));
    check_events(trace);
}

#[test]
fn a_trace_to_a_fifo_goes_to_its_reader() {
    let (home, server) = fan_out();
    let fifo = home.dir.path().join("trace.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            std::fs::File::open(&fifo)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            text
        })
    };
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)]).args([
            "run",
            "lead",
            "--trace",
            fifo.to_str().unwrap(),
            "--trace-bodies",
        ]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "lead done\n");
    check_events(&reader.join().unwrap());
}

#[test]
fn a_trace_to_dev_null_is_taken() {
    let (home, server) = fan_out();
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .args(["run", "lead", "--trace", "/dev/null"]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "lead done\n");
    assert_eq!(stderr(&b.output), "");
}

/// A pseudo-terminal: the master side and the path of the slave side.
struct Pty {
    master: std::fs::File,
    slave: String,
}

fn open_pty() -> Pty {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls; the buffer is as long as the length given,
    // and the master descriptor is owned by the File from here on.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let slave = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        Pty {
            master: std::fs::File::from_raw_fd(fd),
            slave,
        }
    }
}

#[test]
fn a_trace_to_a_terminal_is_written_to_it() {
    let (home, server) = fan_out();
    let pty = open_pty();
    let mut master = pty.master;
    // Reads until the last process with the terminal open closes it (EIO).
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 65536];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(bytes).unwrap()
    });
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)]).args([
            "run",
            "lead",
            "--trace",
            &pty.slave,
            "--trace-bodies",
        ]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "lead done\n");
    // The terminal turns each newline into CR LF.
    check_events(&reader.join().unwrap().replace("\r\n", "\n"));
}

#[test]
fn a_reader_that_stalls_never_holds_the_run() {
    let (home, server) = fan_out();
    let fifo = home.dir.path().join("stalled.fifo");
    mkfifo(&fifo);
    // Open for reading (without waiting for a writer), never read: the
    // pipe fills at 64 KiB.
    let held = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap()
    };
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)]).args([
            "run",
            "lead",
            "--trace",
            fifo.to_str().unwrap(),
            "--trace-bodies",
        ]),
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "lead done\n");
    assert_eq!(
        stderr(&b.output),
        "axe: warning: the trace was not being read; its last lines were not written\n"
    );
    // The run waited about a second for the trace at its end, no more.
    assert!(b.took < Duration::from_secs(6), "took {:?}", b.took);
    drop(held);
}

#[test]
fn a_fifo_nobody_reads_is_refused_after_a_short_wait() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("unused", 1, 1));
    let fifo = home.dir.path().join("trace.fifo");
    mkfifo(&fifo);
    let path = fifo.to_str().unwrap();
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)])
            .args(["run", "solo", "--trace", path]),
        HUNG,
    );
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        format!(
            "axe: cannot open trace file {path}: no process is reading the FIFO (waited 2.0s)\n"
        )
    );
    assert!(b.took >= Duration::from_secs(2), "took {:?}", b.took);
    // A shorter --timeout shortens the wait.
    let b = run_bounded(
        home.axe_on(&[(P::OpenAi, &server)]).args([
            "run",
            "solo",
            "--timeout",
            "1",
            "--trace",
            path,
        ]),
        HUNG,
    );
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    // The wait it reports is its patience, not a measurement: told by that,
    // not by the wall time, which a slow start of axe could push past 2 s.
    assert_eq!(
        stderr(&b.output),
        format!(
            "axe: cannot open trace file {path}: no process is reading the FIFO (waited 1.0s)\n"
        )
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_directory_or_a_socket_is_refused_at_once() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("unused", 1, 1));
    let socket = home.dir.path().join("trace.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let dir = home.dir.path().join("traces");
    std::fs::create_dir(&dir).unwrap();
    for (path, why) in [(&dir, "is a directory"), (&socket, "is a socket")] {
        let path = path.to_str().unwrap();
        let b = run_bounded(
            home.axe_on(&[(P::OpenAi, &server)])
                .args(["run", "solo", "--trace", path]),
            HUNG,
        );
        assert_eq!(code(&b.output), 2, "{path}: {}", stderr(&b.output));
        assert_eq!(
            stderr(&b.output),
            format!("axe: cannot open trace file {path}: {why}\n")
        );
        assert!(b.took < Duration::from_secs(2), "took {:?}", b.took);
    }
    assert!(server.requests().is_empty());
}
