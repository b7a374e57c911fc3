//! The agent search path through the binary (design §3.16): `--agents-dir`,
//! then `./axe/agents`, then the config directory's `agents/`; the first
//! that has the file wins, for the top-level agent and for sub-agents alike;
//! a skill resolves against the file's own directory; names are checked
//! before any directory is touched.

use super::*;

/// A repository directory beside the home, with `axe/agents/` in it.
fn repo(home: &Home) -> std::path::PathBuf {
    let repo = home.dir.path().join("repo");
    fs::create_dir_all(repo.join("axe/agents")).unwrap();
    repo
}

fn agent_text(name: &str, prompt: &str, extra: &str) -> String {
    format!("name = \"{name}\"\nmodel = \"openai/m\"\nsystem_prompt = \"{prompt}\"\n{extra}")
}

/// `axe <args>` run from `dir`.
fn run_in(home: &Home, dir: &Path, args: &[&str]) -> Output {
    home.axe().current_dir(dir).args(args).output().unwrap()
}

#[test]
fn the_flag_beats_the_repository_which_beats_the_config_directory() {
    let home = Home::new();
    let repo = repo(&home);
    let flagged = home.dir.path().join("elsewhere");
    fs::create_dir_all(&flagged).unwrap();
    home.agent("a", &agent_text("a", "from config", ""));
    fs::write(
        repo.join("axe/agents/a.toml"),
        agent_text("a", "from repo", ""),
    )
    .unwrap();
    fs::write(flagged.join("a.toml"), agent_text("a", "from flag", "")).unwrap();
    let dry = |args: &[&str], dir: &Path| {
        let mut all = vec!["run", "a", "--dry-run", "-p", "hi"];
        all.extend_from_slice(args);
        let out = run_in(&home, dir, &all);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
    };
    let flag = flagged.to_str().unwrap();
    assert!(dry(&["--agents-dir", flag], &repo).contains("from flag"));
    assert!(dry(&[], &repo).contains("from repo"));
    // Outside the repository, the config directory's.
    assert!(dry(&[], &flagged).contains("from config"));
}

#[test]
fn a_sub_agent_is_found_in_the_repository_directory() {
    let home = Home::new();
    let repo = repo(&home);
    home.agent(
        "lead",
        &agent_text("lead", "lead", "sub_agents = [\"helper\"]\n"),
    );
    fs::write(
        repo.join("axe/agents/helper.toml"),
        agent_text("helper", "the repository helper", ""),
    )
    .unwrap();
    let calls = P::OpenAi.tool_calls(&[(
        "c1",
        "call_agent",
        serde_json::json!({"agent": "helper", "task": "help"}),
    )]);
    let server = FakeServer::route(move |req| {
        let body = req.json();
        if body["messages"][0]["content"] == "the repository helper" {
            Reply::Json(200, P::OpenAi.text("helped"))
        } else if req.has_tool_results() {
            Reply::Json(200, P::OpenAi.text("done"))
        } else {
            Reply::Json(200, calls.clone())
        }
    });
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .current_dir(&repo)
        .args(["run", "lead", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    let results: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.has_tool_results())
        .flat_map(|r| r.tool_result_texts())
        .collect();
    assert_eq!(results, ["helped"]);
    // The graph commands look on the same path.
    let tree = run_in(&home, &repo, &["agents", "tree", "lead"]);
    assert_eq!(code(&tree), 0, "{}", stderr(&tree));
    assert!(!stdout(&tree).contains("missing"), "{}", stdout(&tree));
}

#[test]
fn agents_list_says_where_an_agent_outside_the_config_directory_was_found() {
    let home = Home::new();
    let repo = repo(&home);
    home.agent("a", &agent_text("a", "p", "description = \"config a\"\n"));
    home.agent("b", &agent_text("b", "p", "description = \"config b\"\n"));
    fs::write(
        repo.join("axe/agents/b.toml"),
        agent_text("b", "p", "description = \"repo b\"\n"),
    )
    .unwrap();
    let out = run_in(&home, &repo, &["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "a - config a\nb - repo b  (in ./axe/agents)\n"
    );
}

#[test]
fn a_skill_resolves_against_the_agent_files_own_directory() {
    let home = Home::new();
    let repo = repo(&home);
    fs::create_dir_all(repo.join("axe/skills")).unwrap();
    fs::write(repo.join("axe/skills/s.md"), "REPO SKILL TEXT").unwrap();
    fs::write(
        repo.join("axe/agents/a.toml"),
        agent_text("a", "p", "skill = \"skills/s.md\"\n"),
    )
    .unwrap();
    let out = run_in(&home, &repo, &["run", "a", "--dry-run", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("REPO SKILL TEXT"), "{}", stdout(&out));
}

#[test]
fn a_name_that_leaves_the_directory_is_refused_before_any_file_is_read() {
    let home = Home::new();
    let repo = repo(&home);
    // A file the escaping name would reach from each directory.
    fs::write(repo.join("axe/x.toml"), agent_text("x", "escaped", "")).unwrap();
    fs::write(
        home.dir.path().join("x.toml"),
        agent_text("x", "escaped", ""),
    )
    .unwrap();
    for name in ["../x", "..", "sub/../x"] {
        let out = run_in(
            &home,
            &repo,
            &["run", name, "--dry-run", "--agents-dir", "axe/agents"],
        );
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        assert!(!stdout(&out).contains("escaped"), "{name}");
        assert!(
            stderr(&out).starts_with("axe: invalid agent name"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn an_agents_dir_that_is_not_a_directory_is_exit_2() {
    let home = Home::new();
    home.agent("a", &agent_text("a", "p", ""));
    let out = home.run(&["run", "a", "--dry-run", "--agents-dir", "/nonexistent/dir"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "axe: --agents-dir /nonexistent/dir: not a directory\n"
    );
}
