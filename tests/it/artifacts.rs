//! The Go original's artifact directory through the binary (design
//! §8.9): `[artifacts]` (`enabled`, `dir`, `default_write`),
//! `--artifact-dir`, `--keep-artifacts`, the file tools' `artifact`
//! argument, `AXE_ARTIFACT_DIR` for commands and sub-agents, and `--json`'s
//! `artifacts` list; every way out of the directory refused.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

const P1: P = P::OpenAi;

/// A [`ToolsSetup`] whose agent `hands` has the file tools and `extra`.
fn setup(extra: &str) -> ToolsSetup {
    ToolsSetup::new(
        P1,
        &["read_file", "write_file", "list_directory", "run_command"],
        extra,
    )
}

/// Runs `hands` with `args`: each of `turns` is one response's calls, then
/// "done"; the cache is `<home>/cache`. Returns the output and every tool
/// result the model got, in order.
fn run(s: &ToolsSetup, turns: &[Vec<Call>], args: &[&str]) -> (std::process::Output, Vec<String>) {
    let mut replies: Vec<Reply> = turns
        .iter()
        .map(|calls| Reply::Json(200, P1.tool_calls(calls)))
        .collect();
    replies.push(Reply::Json(200, P1.text("done")));
    let server = FakeServer::start(replies);
    let out = s
        .home
        .axe()
        .env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P1.base_url_var(), &server.url)
        .env("XDG_CACHE_HOME", cache(s))
        .args(["run", "hands", "-p", "go", "--timeout", "60"])
        .args(args)
        .output()
        .unwrap();
    let results = server
        .requests()
        .last()
        .map(|r| r.tool_result_texts())
        .unwrap_or_default();
    (out, results)
}

fn cache(s: &ToolsSetup) -> PathBuf {
    s.home.dir.path().join("cache")
}

/// The directories axe made under the cache for runs.
fn auto_dirs(s: &ToolsSetup) -> Vec<PathBuf> {
    match std::fs::read_dir(cache(s).join("axe/artifacts")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap()
}

#[test]
fn a_write_lands_in_the_directory_reads_back_and_is_listed_in_json() {
    let s = setup("[artifacts]\nenabled = true\ndir = \"out\"\n");
    let turns = vec![
        vec![
            (
                "w1",
                "write_file",
                json!({"path": "r/report.md", "content": "hello", "artifact": "true"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": "plain.txt", "content": "x"}),
            ),
        ],
        vec![
            (
                "r1",
                "read_file",
                json!({"path": "r/report.md", "artifact": true}),
            ),
            ("l1", "list_directory", json!({"artifact": "TRUE"})),
        ],
    ];
    let (out, results) = run(&s, &turns, &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results[0], "wrote 5 bytes to r/report.md (artifact)");
    assert_eq!(results[1], "wrote 1 bytes to plain.txt");
    assert_eq!(results[2], "1: hello\n");
    assert_eq!(results[3], "r/\n");
    // A relative `dir` is the workdir's (the Go original's 1.6.1), and a
    // directory the user named stays.
    let dir = s.work.join("out");
    assert_eq!(
        std::fs::read_to_string(dir.join("r/report.md")).unwrap(),
        "hello"
    );
    assert_eq!(
        std::fs::read_to_string(s.work.join("plain.txt")).unwrap(),
        "x"
    );
    assert_eq!(
        json_of(&out)["artifacts"],
        json!([{"path": "r/report.md", "agent": "hands", "size": 5}])
    );
}

#[test]
fn without_a_directory_artifact_true_is_an_error_result_and_json_has_no_list() {
    let s = setup("");
    let turns = vec![vec![(
        "w1",
        "write_file",
        json!({"path": "a.txt", "content": "x", "artifact": "true"}),
    )]];
    let (out, results) = run(&s, &turns, &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        results,
        ["artifact directory not configured for this agent"]
    );
    assert!(!s.work.join("a.txt").exists());
    assert_eq!(json_of(&out).get("artifacts"), None);
    assert!(auto_dirs(&s).is_empty());
}

#[test]
fn an_auto_directory_is_made_under_the_cache_and_removed_unless_kept() {
    let s = setup("[artifacts]\nenabled = true\n");
    let turns = vec![vec![(
        "w1",
        "write_file",
        json!({"path": "a.txt", "content": "abc", "artifact": "true"}),
    )]];
    let (out, results) = run(&s, &turns, &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results, ["wrote 3 bytes to a.txt (artifact)"]);
    assert_eq!(json_of(&out)["artifacts"][0]["size"], json!(3));
    assert!(auto_dirs(&s).is_empty(), "{:?}", auto_dirs(&s));

    let (out, _) = run(&s, &turns, &["--keep-artifacts"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let kept = auto_dirs(&s);
    assert_eq!(kept.len(), 1, "{kept:?}");
    // `<UTC time>-<6 hex digits>`, as the Go original names them.
    let name = kept[0].file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(name.len(), 22, "{name}");
    assert_eq!(&name[8..9], "T", "{name}");
    assert_eq!(
        std::fs::read_to_string(kept[0].join("a.txt")).unwrap(),
        "abc"
    );
    assert!(
        stderr(&out).contains(&format!("artifacts preserved: {}", kept[0].display())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_flag_beats_the_file_and_needs_no_enabled() {
    let s = setup("");
    let turns = vec![vec![(
        "w1",
        "write_file",
        json!({"path": "f.txt", "content": "ff", "artifact": "true"}),
    )]];
    // Relative: against the workdir, as the Go original's 1.6.1 does.
    let (out, _) = run(
        &s,
        &turns,
        &["--artifact-dir", "flagged", "--keep-artifacts"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(s.work.join("flagged/f.txt")).unwrap(),
        "ff"
    );
    // A directory the user named is never removed, nor said to be kept.
    assert!(
        !stderr(&out).contains("artifacts preserved"),
        "{}",
        stderr(&out)
    );

    let s = setup("[artifacts]\nenabled = true\ndir = \"from-file\"\n");
    let elsewhere = s.home.dir.path().join("elsewhere");
    let (out, _) = run(&s, &turns, &["--artifact-dir", elsewhere.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(elsewhere.join("f.txt").exists());
    assert!(!s.work.join("from-file").exists());
}

#[test]
fn default_write_sends_write_file_there_unless_the_call_says_false() {
    let s = setup("[artifacts]\nenabled = true\ndir = \"out\"\ndefault_write = true\n");
    let turns = vec![vec![
        ("w1", "write_file", json!({"path": "a.txt", "content": "a"})),
        (
            "w2",
            "write_file",
            json!({"path": "b.txt", "content": "b", "artifact": "false"}),
        ),
        ("r1", "read_file", json!({"path": "notes.txt"})),
    ]];
    let (out, results) = run(&s, &turns, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(s.work.join("out/a.txt").exists(), "{results:?}");
    assert!(!s.work.join("a.txt").exists());
    assert!(s.work.join("b.txt").exists());
    // Reading is never sent there by default.
    assert_eq!(results[2], "1: alpha\n2: beta\n3: gamma\n");
}

#[test]
fn no_way_out_of_the_directory() {
    let s = setup("[artifacts]\nenabled = true\ndir = \"out\"\n");
    let out_dir = s.work.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::os::unix::fs::symlink(s.home.dir.path(), out_dir.join("home")).unwrap();
    let a = |path: &str| json!({"path": path, "content": "pwned", "artifact": "true"});
    let turns = vec![vec![
        ("e1", "write_file", a("../escaped.txt")),
        (
            "e2",
            "write_file",
            a(&s.home.dir.path().join("abs.txt").display().to_string()),
        ),
        ("e3", "write_file", a("home/via-link.txt")),
        (
            "e4",
            "read_file",
            json!({"path": "home/secret.txt", "artifact": "true"}),
        ),
        (
            "e5",
            "read_file",
            json!({"path": "../notes.txt", "artifact": "true"}),
        ),
        (
            "e6",
            "list_directory",
            json!({"path": "..", "artifact": "true"}),
        ),
    ]];
    let (out, results) = run(&s, &turns, &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results.len(), 6);
    for r in &results {
        assert!(!r.contains("TOP-SECRET") && !r.contains("alpha"), "{r}");
        assert!(!r.starts_with("wrote"), "{r}");
    }
    assert!(!s.work.join("escaped.txt").exists());
    assert!(!s.home.dir.path().join("abs.txt").exists());
    assert!(!s.home.dir.path().join("via-link.txt").exists());
    assert_eq!(json_of(&out)["artifacts"], json!([]));
}

#[test]
fn a_directory_through_a_link_or_a_bad_file_is_refused_before_anything_is_sent() {
    let s = setup("[artifacts]\nenabled = true\ndir = \"linked\"\n");
    std::os::unix::fs::symlink(s.home.dir.path(), s.work.join("linked")).unwrap();
    let (out, _) = run(&s, &[], &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));

    for (extra, says) in [
        (
            "[artifacts]\ndir = \"out\"\n",
            "artifacts.dir is set but artifacts.enabled is false",
        ),
        (
            "[artifacts]\nenabled = true\ndir = \"a/../../b\"\n",
            "artifacts.dir must not contain path traversal sequences",
        ),
    ] {
        let s = setup(extra);
        let (out, _) = run(&s, &[], &[]);
        assert_eq!(code(&out), 2, "{extra}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{extra}: {}", stderr(&out));
    }
}

#[test]
fn a_command_gets_the_directory_writable_and_named_only_when_there_is_one() {
    if !landlock() {
        return;
    }
    let s = setup("");
    // Outside the workdir: the command may write it only as the
    // artifact directory.
    let outside = s.home.dir.path().join("arts");
    let script = "printf cmd > \"$AXE_ARTIFACT_DIR/c.txt\" && echo \"dir=$AXE_ARTIFACT_DIR\"";
    let turns = vec![vec![("c1", "run_command", json!({"command": script}))]];
    let (out, results) = run(&s, &turns, &["--artifact-dir", outside.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        results[0].starts_with(&format!("dir={}\n", outside.display())),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("c.txt")).unwrap(),
        "cmd"
    );

    // Without one, the same directory is outside the walls.
    let s = setup("");
    let script = format!(
        "printf cmd > {}/d.txt; echo \"[$AXE_ARTIFACT_DIR]\"",
        outside.display()
    );
    let turns = vec![vec![("c1", "run_command", json!({"command": script}))]];
    std::fs::create_dir_all(&outside).unwrap();
    let (out, results) = run(&s, &turns, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(results[0].contains("[]"), "{results:?}");
    assert!(!outside.join("d.txt").exists(), "{results:?}");
}

/// `boss` delegates to `scribe`, whose file is `scribe`; the boss's
/// directory is `shared` in the workdir.
fn delegation(scribe: &str) -> (Home, PathBuf, FakeServer) {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let wd = format!("workdir = \"{}\"\n", work.display());
    home.named_agent(
        "boss",
        P1.model(),
        &format!("{wd}sub_agents = [\"scribe\"]\n[artifacts]\nenabled = true\ndir = \"shared\"\n"),
    );
    home.named_agent(
        "scribe",
        P1.model(),
        &format!("{wd}tools = [\"write_file\"]\n{scribe}"),
    );
    let call = P1.tool_calls(&[("s1", "call_agent", json!({"agent": "scribe", "task": "t"}))]);
    let write = P1.tool_calls(&[(
        "w1",
        "write_file",
        json!({"path": "s.txt", "content": "sub", "artifact": "true"}),
    )]);
    let server = FakeServer::route(move |req| {
        let body = match (req.who().as_str(), req.has_tool_results()) {
            ("boss", false) => call.clone(),
            ("scribe", false) => write.clone(),
            _ => P1.text("done"),
        };
        Reply::Json(200, body)
    });
    (home, work, server)
}

fn run_boss(home: &Home, server: &FakeServer) -> std::process::Output {
    home.axe()
        .env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P1.base_url_var(), &server.url)
        .env("XDG_CACHE_HOME", home.dir.path().join("cache"))
        .args(["run", "boss", "-p", "go", "--json", "--timeout", "60"])
        .output()
        .unwrap()
}

#[test]
fn a_sub_agent_shares_the_directory_only_through_axe_artifact_dir() {
    // As the Go original: `dir = "${AXE_ARTIFACT_DIR}"` is its caller's.
    let (home, work, server) =
        delegation("[artifacts]\nenabled = true\ndir = \"${AXE_ARTIFACT_DIR}\"\n");
    let out = run_boss(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(work.join("shared/s.txt")).unwrap(),
        "sub"
    );
    // Its writes are its own list's, not the top-level's (the Go original).
    assert_eq!(json_of(&out)["artifacts"], json!([]));

    // A sub-agent without `[artifacts]` has none, whatever its caller has.
    let (home, work, server) = delegation("");
    let out = run_boss(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let results = server.sent_by("scribe").last().unwrap().tool_result_texts();
    assert_eq!(
        results,
        ["artifact directory not configured for this agent"]
    );
    assert!(!work.join("shared/s.txt").exists());
}

#[test]
fn a_dry_run_makes_nothing_and_a_run_makes_the_named_directory() {
    let s = setup("[artifacts]\nenabled = true\ndir = \"out\"\n");
    let out = s
        .home
        .axe()
        .env("XDG_CACHE_HOME", cache(&s))
        .args(["run", "hands", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!Path::new(&s.work.join("out")).exists());
    // A run that writes nothing still has its directory, as in the Go
    // original (made before the first request).
    let (out, _) = run(&s, &[], &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(s.work.join("out").is_dir());
    assert_eq!(json_of(&out)["artifacts"], json!([]));
}

#[test]
fn the_artifact_parameter_is_offered_only_with_a_directory() {
    for (extra, offered) in [("", false), ("[artifacts]\nenabled = true\n", true)] {
        let s = setup(extra);
        let calls = [("r1", "read_file", json!({"path": "notes.txt"}))];
        let (out, _, server) = s.run(P1, &calls);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let body = server.requests()[0].json();
        for tool in ["read_file", "write_file", "list_directory"] {
            let def = body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["function"]["name"] == tool)
                .unwrap()
                .clone();
            let has = def["function"]["parameters"]["properties"]
                .get("artifact")
                .is_some();
            assert_eq!(has, offered, "{extra:?} {tool}: {def}");
        }
    }
}

#[test]
fn an_agent_dir_an_unconfined_agents_artifact_dir_holds_is_not_read() {
    // Its commands may write its artifact directory as surely as its
    // workdir (design §8.8): agents beneath it are not trusted.
    let home = Home::new();
    let project = home.dir.path().join("project");
    std::fs::create_dir_all(project.join("axe/agents")).unwrap();
    std::fs::create_dir_all(home.dir.path().join("work")).unwrap();
    home.named_agent(
        "lead",
        P1.model(),
        &format!(
            "workdir = \"{}\"\ntools = [\"run_command\"]\n[sandbox]\nmode = \"off\"\n\
             [artifacts]\nenabled = true\ndir = \"{}\"\n",
            home.dir.path().join("work").display(),
            project.display()
        ),
    );
    let server = FakeServer::json(200, &P1.text("ok"));
    let out = home
        .axe_on(&[(P1, &server)])
        .current_dir(&project)
        .args(["run", "lead", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not reading agents from") && stderr(&out).contains("agent \"lead\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_dir_under_home_is_written_against_home_which_may_be_a_link() {
    // `~/...` is written against $HOME, which is followed as named (a home
    // behind a link is common), as a workdir's is (design §8.7).
    let s = setup("[artifacts]\nenabled = true\ndir = \"~/arts\"\n");
    let real = s.home.dir.path().join("real-home");
    std::fs::create_dir_all(&real).unwrap();
    let link = s.home.dir.path().join("home-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let turns = [vec![(
        "w1",
        "write_file",
        json!({"path": "h.txt", "content": "h", "artifact": "true"}),
    )]];
    let mut replies: Vec<Reply> = turns
        .iter()
        .map(|calls| Reply::Json(200, P1.tool_calls(calls)))
        .collect();
    replies.push(Reply::Json(200, P1.text("done")));
    let server = FakeServer::start(replies);
    let out = s
        .home
        .axe()
        .env("HOME", &link)
        .env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P1.base_url_var(), &server.url)
        .args(["run", "hands", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(real.join("arts/h.txt")).unwrap(),
        "h"
    );
}
