//! Every command but `run` (design §2.1, §2.2): `version`,
//! `config path` and `config init`, `agents list`, `show`, `init` and
//! `edit`.

use super::*;
use crate::common::*;

// ---------------------------------------------------------------------------
// version, help
// ---------------------------------------------------------------------------

#[test]
fn version_command_prints_the_crate_version() {
    let home = Home::new();
    let out = home.run(&["version"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "axe version 0.1.0\n");
    assert_eq!(env!("CARGO_PKG_VERSION"), "0.1.0");
}

#[test]
fn version_flag_prints_the_crate_version() {
    let home = Home::new();
    let out = home.run(&["--version"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "axe version 0.1.0\n");
}

// ---------------------------------------------------------------------------
// config path, config init
// ---------------------------------------------------------------------------

#[test]
fn config_path_prints_the_xdg_dir_and_creates_nothing() {
    let home = Home::new();
    let xdg = home.dir.path().join("fresh-xdg");
    let out = home
        .axe()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "path"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", xdg.join("axe").display()));
    assert!(!xdg.exists(), "config path must create nothing");
}

#[test]
fn config_path_falls_back_to_home_dot_config() {
    let home = Home::new();
    let out = home
        .axe()
        .env_remove("XDG_CONFIG_HOME")
        .args(["config", "path"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\n", home.dir.path().join(".config/axe").display())
    );
    assert!(!home.dir.path().join(".config").exists());
}

#[test]
fn config_init_creates_agents_dir_sample_skill_and_private_config() {
    let home = Home::new();
    let xdg = home.dir.path().join("fresh-xdg");
    let dir = xdg.join("axe");
    let out = home
        .axe()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "init"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", dir.display()));

    assert!(dir.join("agents").is_dir());
    let skill = fs::read_to_string(dir.join("skills/sample/SKILL.md")).unwrap();
    assert_eq!(
        skill,
        include_str!("../../../fixtures/skills/sample/SKILL.md")
    );
    let config = dir.join("config.toml");
    assert_eq!(mode(&config), 0o600);
    let text = fs::read_to_string(&config).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with('#')),
        "commented: {text}"
    );
    text.parse::<toml::Table>()
        .expect("the config.toml written by init parses");
}

#[test]
fn config_init_is_safe_to_rerun_and_never_overwrites() {
    let home = Home::new();
    let dir = home.config_dir();
    let first = home.run(&["config", "init"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));

    let edited = "[providers.openai]\napi_key = \"sk-mine-123456\"\n";
    fs::write(dir.join("config.toml"), edited).unwrap();
    fs::write(dir.join("skills/sample/SKILL.md"), "my own skill").unwrap();
    home.agent("mine", "name = \"mine\"\nmodel = \"openai/gpt-4o\"\n");

    let second = home.run(&["config", "init"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(stdout(&second), format!("{}\n", dir.display()));
    assert_eq!(fs::read_to_string(dir.join("config.toml")).unwrap(), edited);
    assert_eq!(
        fs::read_to_string(dir.join("skills/sample/SKILL.md")).unwrap(),
        "my own skill"
    );
    assert!(dir.join("agents/mine.toml").is_file());
}

// ---------------------------------------------------------------------------
// agents list, show
// ---------------------------------------------------------------------------

#[test]
fn agents_list_is_sorted_with_descriptions() {
    let home = Home::new();
    home.agent(
        "zeta",
        "name = \"zeta\"\ndescription = \"Last one\"\nmodel = \"openai/gpt-4o\"\n",
    );
    home.agent("alpha", "name = \"alpha\"\nmodel = \"openai/gpt-4o\"\n");
    home.agent(
        "mid",
        "name = \"mid\"\ndescription = \"In the middle\"\nmodel = \"ollama/llama3.1\"\n",
    );
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "alpha\nmid - In the middle\nzeta - Last one\n"
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn agents_list_reports_an_unparsable_file_and_lists_the_others() {
    let home = Home::new();
    home.agent("good", "name = \"good\"\nmodel = \"openai/gpt-4o\"\n");
    home.agent("broken", "name = \"broken\"\nmodel = = \"x\"\n");
    home.agent(
        "other",
        "name = \"other\"\ndescription = \"Fine\"\nmodel = \"openai/gpt-4o\"\n",
    );
    let out = home.run(&["agents", "list"]);
    assert_eq!(stdout(&out), "good\nother - Fine\n");
    let err = stderr(&out);
    assert!(
        err.contains("broken"),
        "unparsable file not reported: {err:?}"
    );
}

#[test]
fn agents_list_with_no_agents_prints_nothing() {
    let home = Home::new();
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

/// Checks that every line is `Label:` padded to one common value column
/// (continuation lines of multi-line values start with that many spaces),
/// and returns (label, value) pairs.
fn aligned_rows(text: &str) -> Vec<(String, String)> {
    let mut column = None;
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with(' ') {
            continue;
        }
        let colon = line
            .find(':')
            .unwrap_or_else(|| panic!("no label: {line:?}"));
        let after = &line[colon + 1..];
        let value = after.trim_start();
        assert!(
            after.len() > value.len(),
            "no space after the label: {line:?}"
        );
        let start = line.len() - value.len();
        match column {
            None => column = Some(start),
            Some(c) => assert_eq!(c, start, "values not aligned at {line:?}\n{text}"),
        }
        rows.push((line[..colon].to_string(), value.to_string()));
    }
    assert!(!rows.is_empty());
    rows
}

fn row<'a>(rows: &'a [(String, String)], label: &str) -> Option<&'a str> {
    rows.iter()
        .find(|(l, _)| l == label)
        .map(|(_, v)| v.as_str())
}

#[test]
fn agents_show_prints_aligned_labels_without_sub_agent_settings() {
    let home = Home::new();
    home.agent(
        "solo",
        "name = \"solo\"\ndescription = \"Works alone\"\nmodel = \"anthropic/claude-sonnet-4-5\"\nsystem_prompt = \"You work alone.\"\n",
    );
    let out = home.run(&["agents", "show", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows = aligned_rows(&stdout(&out));
    assert_eq!(row(&rows, "Name"), Some("solo"));
    assert_eq!(row(&rows, "Description"), Some("Works alone"));
    assert_eq!(row(&rows, "Model"), Some("anthropic/claude-sonnet-4-5"));
    assert_eq!(row(&rows, "System Prompt"), Some("You work alone."));
    assert_eq!(row(&rows, "Max Depth"), None, "{rows:?}");
    assert_eq!(row(&rows, "Parallel"), None, "{rows:?}");
}

#[test]
fn agents_show_includes_sub_agent_settings_when_sub_agents_are_set() {
    let home = Home::new();
    home.agent(
        "planner",
        include_str!("../../../fixtures/agents/show_sub_agents.toml"),
    );
    let out = home.run(&["agents", "show", "planner"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let rows = aligned_rows(&text);
    assert_eq!(row(&rows, "Name"), Some("planner"));
    assert_eq!(row(&rows, "Model"), Some("openai/gpt-4o"));
    let subs = row(&rows, "Sub-Agents").expect("Sub-Agents row");
    assert!(
        subs.contains("researcher") && subs.contains("writer"),
        "{text}"
    );
    assert_eq!(row(&rows, "Max Depth"), Some("2"), "{text}");
    assert_eq!(row(&rows, "Parallel"), Some("no"), "{text}");
    assert!(text.contains("30s"), "sub-agent timeout not shown: {text}");
    assert!(text.contains("0.5") && text.contains("1000"), "{text}");
}

#[test]
fn agents_show_unknown_agent_exits_2() {
    let home = Home::new();
    let out = home.run(&["agents", "show", "ghost"]);
    assert_not_found(&home, &out, "ghost");
}

// ---------------------------------------------------------------------------
// agents init
// ---------------------------------------------------------------------------

#[test]
fn agents_init_writes_a_scaffold_that_parses_and_prints_its_path() {
    let home = Home::new();
    let path = home.config_dir().join("agents/helper.toml");
    let out = home.run(&["agents", "init", "helper"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", path.display()));
    assert_eq!(mode(&path), 0o644);

    let text = fs::read_to_string(&path).unwrap();
    let table: toml::Table = text.parse().expect("scaffold parses as TOML");
    assert_eq!(table["name"].as_str(), Some("helper"));
    assert_eq!(table["description"].as_str(), Some(""));
    assert_eq!(table["model"].as_str(), Some("provider/model-name"));
    for commented in [
        "[sub_agents_config]",
        "[params]",
        "max_depth",
        "temperature",
    ] {
        assert!(text.contains(commented), "scaffold lacks {commented}");
    }

    // axe itself accepts it, without warnings.
    let show = home.run(&["agents", "show", "helper"]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    assert_eq!(stderr(&show), "");
    let list = home.run(&["agents", "list"]);
    assert_eq!(stdout(&list), "helper\n");
}

#[test]
fn agents_init_creates_the_agents_dir_when_missing() {
    let home = Home::new();
    let xdg = home.dir.path().join("fresh-xdg");
    let out = home
        .axe()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["agents", "init", "first"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = xdg.join("axe/agents/first.toml");
    assert_eq!(stdout(&out), format!("{}\n", path.display()));
    assert!(path.is_file());
}

#[test]
fn agents_init_refuses_to_overwrite_and_exits_2() {
    let home = Home::new();
    let path = home.config_dir().join("agents/helper.toml");
    let first = home.run(&["agents", "init", "helper"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let mine = "name = \"helper\"\nmodel = \"openai/gpt-4o\"\n# mine\n";
    fs::write(&path, mine).unwrap();

    let second = home.run(&["agents", "init", "helper"]);
    assert_fails(
        &second,
        2,
        &format!("agent config already exists: {}", path.display()),
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), mine);
}

// ---------------------------------------------------------------------------
// agents edit
// ---------------------------------------------------------------------------

#[test]
fn agents_edit_prefers_visual_and_passes_its_arguments() {
    let home = Home::new();
    let tools = TempDir::new("editor");
    let path = home.plain_agent("helper", "openai/gpt-4o");
    let visual = format!("{} -w --new-window", editor_script(tools.path(), "visual"));
    let editor = editor_script(tools.path(), "editor");

    let out = home
        .axe()
        .env("VISUAL", &visual)
        .env("EDITOR", &editor)
        .args(["agents", "edit", "helper"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let args = fs::read_to_string(tools.path().join("visual.args")).expect("VISUAL ran");
    assert_eq!(args, format!("-w\n--new-window\n{}\n", path.display()));
    assert!(
        !tools.path().join("editor.args").exists(),
        "EDITOR must not run when VISUAL is set"
    );
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("# edited by visual\n"), "{text}");
}

#[test]
fn agents_edit_uses_editor_when_visual_is_unset() {
    let home = Home::new();
    let tools = TempDir::new("editor");
    let path = home.plain_agent("helper", "openai/gpt-4o");
    let editor = editor_script(tools.path(), "editor");

    let out = home
        .axe()
        .env("EDITOR", &editor)
        .args(["agents", "edit", "helper"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let args = fs::read_to_string(tools.path().join("editor.args")).expect("EDITOR ran");
    assert_eq!(args, format!("{}\n", path.display()));
    assert!(
        fs::read_to_string(&path)
            .unwrap()
            .ends_with("# edited by editor\n")
    );
}

#[test]
fn agents_edit_without_an_editor_fails_clearly() {
    let home = Home::new();
    let path = home.plain_agent("helper", "openai/gpt-4o");
    let before = fs::read_to_string(&path).unwrap();
    let out = home.run(&["agents", "edit", "helper"]);
    assert_ne!(code(&out), 0);
    assert_fails_with(&out, code(&out), &["EDITOR"]);
    assert_eq!(fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn agents_edit_unknown_agent_exits_2_without_running_the_editor() {
    let home = Home::new();
    let tools = TempDir::new("editor");
    let editor = editor_script(tools.path(), "editor");
    let out = home
        .axe()
        .env("EDITOR", &editor)
        .args(["agents", "edit", "ghost"])
        .output()
        .unwrap();
    assert_not_found(&home, &out, "ghost");
    assert!(!tools.path().join("editor.args").exists());
    assert!(!home.config_dir().join("agents/ghost.toml").exists());
}

#[test]
fn agents_list_prints_one_line_per_agent_even_with_a_multi_line_description() {
    let home = Home::new();
    home.agent(
        "b",
        "name = \"b\"\nmodel = \"openai/m\"\ndescription = \"\"\"\nmulti\nline\"\"\"\n",
    );
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "b - multi line\n");
}

#[test]
fn agents_list_reports_files_whose_name_is_not_an_agent_name() {
    let home = Home::new();
    home.agent("ok", "name = \"ok\"\nmodel = \"openai/m\"\n");
    home.agent("my agent", "name = \"x\"\nmodel = \"openai/m\"\n");
    let out = home.run(&["agents", "list"]);
    assert_eq!(stdout(&out), "ok\n");
    assert!(stderr(&out).contains("my agent.toml"), "{}", stderr(&out));
}
