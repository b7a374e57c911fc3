//! One run reads each sub-agent once (design D20): every call to an agent in
//! a run works from what its first call read, even if the file changes
//! meanwhile; the calls that arrive while it loads share its outcome, a
//! failure too, each waiting no longer than its own deadline; a load that
//! failed is tried again at the next call; and a new run reads afresh.
//! Through the real binary, against a fake OpenAI server that edits the
//! agent files while the run goes on.

use crate::common::*;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn run_lead(home: &Home, server: &FakeServer) -> std::process::Output {
    home.run_on(&[(P::OpenAi, server)], &["run", "lead", "-p", "go"])
}

/// A parent that calls `w` once per turn, `turns` times, then answers with
/// the tool results it got, joined by ` | `. `w` answers with its system
/// prompt. `on_w` runs when a request from `w` arrives, `on_result` when
/// the parent sends a tool result.
fn server(
    turns: usize,
    on_w: impl Fn() + Send + Sync + 'static,
    on_result: impl Fn() + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::route(move |req| {
        if req.who() == "w" {
            on_w();
            return Reply::Json(200, openai_text(&req.system_prompt(), 1, 1));
        }
        let done = req.tool_result_texts();
        if !done.is_empty() {
            on_result();
        }
        if done.len() >= turns {
            return Reply::Json(200, openai_text(&done.join(" | "), 1, 1));
        }
        let id = format!("call_{}", done.len());
        Reply::Json(
            200,
            openai_tool_calls(&[(&id, "call_agent", delegate("w", "work"))], 1, 1),
        )
    })
}

fn write_w(agents: &Path, prompt: &str) {
    std::fs::write(
        agents.join("w.toml"),
        format!("name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"{prompt}\"\n"),
    )
    .unwrap();
}

#[test]
fn every_call_in_a_run_uses_the_agent_file_as_first_read_and_a_new_run_reads_afresh() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    let agents = home.config_dir().join("agents");
    write_w(&agents, "You are w. First version.");
    let edit = agents.clone();
    // The file changes as soon as w's first request arrives.
    let server = server(
        3,
        move || write_w(&edit, "You are w. Second version."),
        || {},
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        "You are w. First version. | You are w. First version. | You are w. First version."
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        "You are w. Second version. | You are w. Second version. | You are w. Second version."
    );
}

#[test]
fn the_file_read_for_the_parents_tool_description_is_the_one_its_call_runs() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    let agents = home.config_dir().join("agents");
    write_w(&agents, "You are w. First version.");
    let edit = agents.clone();
    // The parent's first request was built with w's file read (the tool
    // description names its sub-agents' schemas); the file changes then,
    // before w is ever called.
    let server = FakeServer::route(move |req| {
        if req.who() == "w" {
            return Reply::Json(200, openai_text(&req.system_prompt(), 1, 1));
        }
        let done = req.tool_result_texts();
        if done.is_empty() {
            write_w(&edit, "You are w. Second version.");
            return Reply::Json(
                200,
                openai_tool_calls(&[("call_0", "call_agent", delegate("w", "work"))], 1, 1),
            );
        }
        Reply::Json(200, openai_text(&done.join(" | "), 1, 1))
    });
    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), "You are w. First version.");
}

#[test]
fn a_sub_agent_that_failed_to_load_is_read_again_at_its_next_call() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    let agents = home.config_dir().join("agents");
    let create = agents.clone();
    // w has no file until the parent reports the first call's failure.
    let server = server(
        2,
        || {},
        move || write_w(&create, "You are w. Written late."),
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let (first, second) = text.trim_end().split_once(" | ").expect("two results");
    assert!(
        first.starts_with("call_agent error: failed to load agent \"w\""),
        "{first}"
    );
    assert_eq!(second, "You are w. Written late.");
}

/// A workdir whose `**/*.txt` is slow to read: `files` small files at the
/// bottom of `depth` nested directories (each file's path is resolved by
/// the kernel component by component, no link followed, so the cost grows
/// with the depth), cheap to make. The tree is `<dir>/tree`; its deepest
/// path stays under `PATH_MAX` up to a depth of about 1,900.
fn slow_tree(dir: &Path, depth: usize, files: usize) -> PathBuf {
    let root = dir.join("tree");
    let mut bottom = root.clone();
    for _ in 0..depth {
        bottom.push("d");
    }
    std::fs::create_dir_all(&bottom).unwrap();
    for i in 0..files {
        std::fs::write(bottom.join(format!("f{i}.txt")), "x").unwrap();
    }
    root
}

/// Agent `w`, whose load reads every file of `tree` and then fails: its
/// system prompt and skill (`<config>/skill.md`) alone are over its
/// `max_prompt_bytes`.
fn write_slow_failing_w(home: &Home, tree: &Path) {
    home.agent(
        "w",
        &format!(
            "name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"You are w.\"\n\
             skill = \"skill.md\"\nworkdir = \"{}\"\nfiles = [\"**/*.txt\"]\n\
             max_prompt_bytes = 64\n",
            tree.display()
        ),
    );
    std::fs::write(home.config_dir().join("skill.md"), "s".repeat(100)).unwrap();
}

#[test]
fn parallel_calls_waiting_for_a_failing_load_all_get_its_error_from_one_read() {
    const CALLS: usize = 32;
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"w\"]\n[sub_agents_config]\ntimeout = 15\n",
    );
    let scratch = TempDir::new("slow-load");
    write_slow_failing_w(&home, &slow_tree(scratch.path(), 200, 600));
    // The skill grows by a byte every 2 ms while the run goes on, so each
    // read of w reports another size: the results tell how often it was read.
    let running = Arc::new(AtomicBool::new(true));
    let grower = {
        let (running, skill) = (running.clone(), home.config_dir().join("skill.md"));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(skill)
                .unwrap();
            while running.load(Ordering::SeqCst) {
                f.write_all(b"s").unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let results = Arc::new(Mutex::new(Vec::new()));
    let seen = results.clone();
    let server = FakeServer::route(move |req| {
        let done = req.tool_result_texts();
        if !done.is_empty() {
            *seen.lock().unwrap() = done;
            return Reply::Json(200, openai_text("done", 1, 1));
        }
        let ids: Vec<String> = (0..CALLS).map(|i| format!("call_{i}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .map(|id| (id.as_str(), "call_agent", delegate("w", "work")))
            .collect();
        Reply::Json(200, openai_tool_calls(&calls, 1, 1))
    });

    let out = run_lead(&home, &server);
    running.store(false, Ordering::SeqCst);
    grower.join().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), "done");
    let results = results.lock().unwrap().clone();
    assert_eq!(results.len(), CALLS);
    let first = &results[0];
    assert!(
        first.starts_with("Error: sub-agent \"w\" failed - the system prompt and skill are ")
            && first.contains(" bytes, over max_prompt_bytes (64). You may retry"),
        "{first}"
    );
    let other: Vec<&String> = results.iter().filter(|r| *r != first).collect();
    assert!(
        other.is_empty(),
        "w was read more than once: {} of {CALLS} calls got another result than {first:?}, \
         e.g. {:?}",
        other.len(),
        other[0]
    );
}

#[test]
fn a_call_waiting_for_another_callers_load_gives_up_at_its_own_timeout() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"slow\", \"quick\"]\n",
    );
    home.named_agent("slow", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent(
        "quick",
        "openai/gpt-4o",
        "sub_agents = [\"w\"]\n[sub_agents_config]\ntimeout = 1\n",
    );
    let scratch = TempDir::new("slow-load");
    // w's load waits for its memory file's lock, which this test holds: it
    // takes the memory's lock wait (2 s) whatever the machine's speed, past
    // quick's 1 s timeout, then fails on its prompt size.
    write_slow_failing_w(&home, &slow_tree(scratch.path(), 20, 40));
    let w = home.config_dir().join("agents/w.toml");
    let toml = std::fs::read_to_string(&w).unwrap();
    std::fs::write(&w, format!("{toml}[memory]\nenabled = true\n")).unwrap();
    let memory = std::fs::File::open(home.memory("w", "## 2026-01-01T00:00:00Z\nold\n")).unwrap();
    // SAFETY: a lock on a file this test opened.
    assert_eq!(unsafe { libc::flock(memory.as_raw_fd(), libc::LOCK_EX) }, 0);

    // slow's call to w goes first and loads it, with no timeout of its own;
    // quick's comes 100 ms later and waits for that load.
    let slow_called = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let quick_call: Arc<Mutex<Option<Instant>>> = Arc::default();
    let results: Arc<Mutex<Vec<(String, String, Instant)>>> = Arc::default();
    let server = {
        let (slow_called, quick_call, results) =
            (slow_called.clone(), quick_call.clone(), results.clone());
        FakeServer::route(move |req| {
            let who = req.who();
            if let Some(result) = req.tool_result_texts().pop() {
                results.lock().unwrap().push((who, result, Instant::now()));
                return Reply::Json(200, openai_text("done", 1, 1));
            }
            match who.as_str() {
                "lead" => Reply::Json(
                    200,
                    openai_tool_calls(
                        &[
                            ("call_s", "call_agent", delegate("slow", "load w")),
                            ("call_q", "call_agent", delegate("quick", "wait for w")),
                        ],
                        1,
                        1,
                    ),
                ),
                "quick" => {
                    let (called, cv) = &*slow_called;
                    let called = called.lock().unwrap();
                    let _ = cv
                        .wait_timeout_while(called, Duration::from_secs(10), |c| !*c)
                        .unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    *quick_call.lock().unwrap() = Some(Instant::now());
                    Reply::Json(
                        200,
                        openai_tool_calls(&[("call_w", "call_agent", delegate("w", "q"))], 1, 1),
                    )
                }
                "slow" => {
                    let (called, cv) = &*slow_called;
                    *called.lock().unwrap() = true;
                    cv.notify_all();
                    Reply::Json(
                        200,
                        openai_tool_calls(&[("call_w", "call_agent", delegate("w", "s"))], 1, 1),
                    )
                }
                // w never runs: its load fails.
                other => Reply::Json(
                    500,
                    format!("{{\"error\":\"unexpected request from {other}\"}}"),
                ),
            }
        })
    };

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let results = results.lock().unwrap().clone();
    let result_of = |name: &str| {
        results
            .iter()
            .find(|(who, _, _)| who == name)
            .unwrap_or_else(|| panic!("no result for {name}: {results:?}"))
            .clone()
    };
    let (_, quick_result, quick_answered) = result_of("quick");
    assert_eq!(
        quick_result,
        "Error: sub-agent \"w\" failed - timeout after 1s. You may retry or proceed without \
         this result."
    );
    // The load itself ran to its own failure for slow, which has no timeout.
    let (_, slow_result, _) = result_of("slow");
    assert!(
        slow_result.contains("over max_prompt_bytes (64)"),
        "{slow_result}"
    );
    // quick's result came at its timeout, not when the load ended: the
    // load waits 2 s for the lock from before quick's call, so a waiter held
    // to its end comes 1.9 s or more after that call, and misses this bound.
    let waited = quick_answered - quick_call.lock().unwrap().expect("quick called w");
    assert!(
        waited < Duration::from_millis(1600),
        "quick's call to w, with a 1 s timeout, took {waited:?}"
    );
}
