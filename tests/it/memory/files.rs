//! The memory file itself (design §10.3, §10.4): concurrent runs of one
//! agent, and `axe gc` trimming among them, lose and tear no entry; a huge
//! file is read from its tail within a bound; a corrupt one is warned about
//! and never fails a run; reaching `max_entries` warns once, naming
//! `axe gc`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::{assert_ok, remembering, whole_entries};
use crate::common::*;

#[test]
fn eight_concurrent_runs_of_one_agent_leave_eight_whole_entries() {
    let home = Home::new();
    remembering(&home, "busy", "");
    home.memory("busy", &go_entries(3));
    // Each answer is long (the whole 1000 characters kept) and names its task.
    let server = FakeServer::route(|req| {
        let task = req.first_user_text();
        let answer = format!("{task}:{}", task.repeat(600));
        Reply::Json(200, openai_text(&answer, 3, 2))
    });
    let children: Vec<_> = (0..8)
        .map(|i| {
            home.axe_on(&[(P::OpenAi, &server)])
                .args(["run", "busy", "-p", &format!("t{i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        assert_ok(&c.wait_with_output().unwrap());
    }
    let text = home.memory_text("busy");
    assert!(text.starts_with(&go_entries(3)));
    let entries = whole_entries(&text);
    assert_eq!(entries.len(), 11, "{text}");
    let mut tasks: Vec<String> = entries[3..].iter().map(|e| e.1.clone()).collect();
    tasks.sort();
    assert_eq!(tasks, (0..8).map(|i| format!("t{i}")).collect::<Vec<_>>());
    for (_, task, result) in &entries[3..] {
        let whole = format!("{task}:{}", task.repeat(600));
        assert_eq!(
            *result,
            format!("{}...", &whole[..1000]),
            "torn entry for {task}"
        );
    }
}

#[test]
fn runs_that_append_while_gc_trims_lose_no_entry() {
    let home = Home::new();
    home.named_agent(
        "busy",
        "openai/gpt-4o",
        "[memory]\nenabled = true\nlast_n = 5\n",
    );
    home.memory("busy", &go_entries(40));
    // Runs answer at once; gc's analysis (its system prompt is its own)
    // takes 100 ms, then gc holds the lock 500 ms before it trims: runs
    // append before it, wait for it (and then find the file replaced), and
    // append after it.
    let server = FakeServer::route(|req| {
        if req.system_prompt().starts_with("You are busy.") {
            let task = req.first_user_text();
            Reply::Json(200, openai_text(&format!("did {task}"), 3, 2))
        } else {
            Reply::Delay(
                Duration::from_millis(100),
                Box::new(Reply::Json(200, openai_text("patterns", 3, 2))),
            )
        }
    });
    let gc = home
        .axe_on(&[(P::OpenAi, &server)])
        .env("AXE_DEBUG_TRIM_HOLD_MS", "500")
        .args(["gc", "busy"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runs: Vec<_> = (0..12)
        .map(|i| {
            std::thread::sleep(Duration::from_millis(50));
            home.axe_on(&[(P::OpenAi, &server)])
                .args(["run", "busy", "-p", &format!("r{i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        assert_ok(&r.wait_with_output().unwrap());
    }
    let gc = gc.wait_with_output().unwrap();
    assert_ok(&gc);
    assert!(stdout(&gc).contains("entries kept."), "{}", stdout(&gc));
    let kept = home.memory_text("busy");
    let backup = std::fs::read_to_string(backup_of(&home.memory_path("busy"))).unwrap();
    // Every entry is in one of the two files, whole, exactly once.
    let mut tasks: Vec<String> = whole_entries(&backup)
        .into_iter()
        .chain(whole_entries(&kept))
        .map(|e| e.1)
        .collect();
    assert!(whole_entries(&kept).len() >= 5);
    tasks.sort();
    let mut want: Vec<String> = (1..=40)
        .map(|i| format!("task{i}"))
        .chain((0..12).map(|i| format!("r{i}")))
        .collect();
    want.sort();
    assert_eq!(tasks, want);
}

/// `<file>.bak`.
fn backup_of(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".bak");
    path.with_file_name(name)
}

#[test]
fn a_huge_memory_file_is_read_from_its_tail_within_1_mib_and_warned_about() {
    let home = Home::new();
    remembering(&home, "big", "last_n = 0\n");
    // 4 MiB of entries of about 1 KiB each.
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 4 << 20 {
        i += 1;
        text.push_str(&format!(
            "## 2026-01-01T00:00:00Z\n**Task:** task{i}\n**Result:** {}\n\n",
            "y".repeat(1000)
        ));
    }
    home.memory("big", &text);
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "big"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("only its last 1 MiB"), "{err}");
    assert!(err.contains("run 'axe gc big' to trim it"), "{err}");
    assert_eq!(err.matches("axe gc").count(), 1, "{err}");
    let sent = server.only_request().system_prompt();
    let memory = sent.split_once(MEMORY_SECTION).unwrap().1;
    assert!(memory.len() <= 1 << 20, "{}", memory.len());
    // Whole entries from the tail, the newest last.
    assert!(memory.starts_with("## 2026-01-01T00:00:00Z\n**Task:** task"));
    assert!(text.ends_with(memory));
    // The run still appended its entry.
    assert_eq!(entry_headers(&home.memory_text("big")), i + 1);
}

#[test]
fn a_corrupt_memory_file_is_warned_about_and_never_fails_the_run() {
    let home = Home::new();
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));

    // Binary: not loaded; the entry is still appended on a line of its own.
    remembering(&home, "bin", "");
    home.memory("bin", "\0\x01\x02garbage without a newline");
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "bin"]);
    assert_ok(&out);
    assert!(stderr(&out).contains("NUL bytes"), "{}", stderr(&out));
    assert_eq!(server.requests()[0].system_prompt(), "You are bin.");
    let text = home.memory_text("bin");
    assert!(
        text.starts_with("\0\x01\x02garbage without a newline\n## "),
        "{text:?}"
    );

    // Invalid UTF-8: loaded with the bad bytes replaced.
    remembering(&home, "latin", "");
    let p = home.memory_path("latin");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        b"## 2026-01-01T00:00:00Z\n**Task:** caf\xe9\n**Result:** r\n\n",
    )
    .unwrap();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "latin"]);
    assert_ok(&out);
    assert!(stderr(&out).contains("not valid UTF-8"), "{}", stderr(&out));
    assert!(
        server.requests()[1]
            .system_prompt()
            .contains("**Task:** caf\u{fffd}\n")
    );

    // A half-written last entry (a crash) stays as it is; the next entry
    // starts on its own line.
    remembering(&home, "torn", "");
    home.memory(
        "torn",
        &format!("{}## 2026-01-02T00:00:00Z\n**Task:** cut", go_entries(1)),
    );
    assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", "torn", "-p", "next"]));
    let text = home.memory_text("torn");
    assert!(text.starts_with(&format!(
        "{}## 2026-01-02T00:00:00Z\n**Task:** cut\n## ",
        go_entries(1)
    )));
    assert_eq!(entry_headers(&text), 3);

    // Not a file: warned, the run goes on, nothing is saved.
    remembering(&home, "dir", "");
    std::fs::create_dir_all(home.memory_path("dir")).unwrap();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "dir"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(err.contains("cannot be read (not a regular file)"), "{err}");
    assert!(err.contains("failed to save memory for \"dir\""), "{err}");
    assert_eq!(stdout(&out), "ok\n");
}

#[test]
fn reaching_max_entries_warns_once_naming_axe_gc() {
    let home = Home::new();
    remembering(&home, "full", "max_entries = 3\n");
    home.memory("full", &go_entries(3));
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "full"]);
    assert_ok(&out);
    assert_eq!(
        stderr(&out),
        "axe: warning: agent \"full\" memory has 3 entries (max_entries: 3); run 'axe gc full' to trim it\n"
    );
    remembering(&home, "roomy", "max_entries = 10\n");
    home.memory("roomy", &go_entries(3));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "roomy"]);
    assert_ok(&out);
    assert_eq!(stderr(&out), "");
}
