//! A first agent in five minutes, through the binary (issue 33): `axe
//! agents init NAME --model` writes a model that runs, the scaffold's
//! placeholder says what to set, every error about an agent file names the
//! file, an agent not found says where it was looked for, and `config init`
//! says what it made.

use super::*;

#[test]
fn agents_init_with_a_model_writes_it_and_the_dry_run_works_as_written() {
    let home = Home::new();
    let path = home.config_dir().join("agents/x.toml");
    let out = home.run(&[
        "agents",
        "init",
        "x",
        "--model",
        "anthropic/claude-sonnet-4-5",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", path.display()));
    let text = fs::read_to_string(&path).unwrap();
    let table: toml::Table = text.parse().unwrap();
    assert_eq!(table["model"].as_str(), Some("anthropic/claude-sonnet-4-5"));
    assert!(!text.contains("provider/model-name\""), "{text}");

    // The same scaffold but for that line.
    let plain = home.run(&["agents", "init", "plain"]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let scaffold = fs::read_to_string(home.config_dir().join("agents/plain.toml")).unwrap();
    assert_eq!(
        text.replace("anthropic/claude-sonnet-4-5\"", "provider/model-name\"")
            .replace("axe run x ", "axe run plain ")
            .replace("check x", "check plain")
            .replacen("name = \"x\"", "name = \"plain\"", 1),
        scaffold
    );

    // No key is needed for a dry run.
    let out = home.run(&["run", "x", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\nModel:    anthropic/claude-sonnet-4-5\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn agents_init_with_a_model_config_toml_names_writes_it() {
    let home = Home::new();
    home.config("[providers.vllm]\nkind = \"openai\"\n");
    let out = home.run(&["agents", "init", "local", "--model", "vllm/qwen"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = home.run(&["run", "local", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("\nModel:    vllm/qwen\n"));
}

#[test]
fn agents_init_with_a_bad_model_exits_2_naming_it_and_writes_nothing() {
    let home = Home::new();
    let path = home.config_dir().join("agents/x.toml");
    for (model, says) in [
        ("nope", "invalid model \"nope\": expected provider/model"),
        ("foo/bar", "unsupported provider \"foo\""),
    ] {
        let out = home.run(&["agents", "init", "x", "--model", model]);
        assert_fails_with(&out, 2, &[&format!("--model {model:?}: "), says]);
        assert!(!path.exists(), "{model}: nothing is written");
    }
}

/// What a run of agent `name` at `path`, still on the placeholder, says.
fn placeholder_message(name: &str, path: &Path) -> String {
    format!(
        "agent {name} ({}): model is still the scaffold's placeholder \"provider/model-name\": \
         set model = \"anthropic/claude-sonnet-4-5\" (or another provider/model), or pass --model",
        path.display()
    )
}

#[test]
fn a_run_of_the_scaffolds_placeholder_names_the_file_and_what_to_set_and_exits_2() {
    let home = Home::new();
    let path = home.config_dir().join("agents/x.toml");
    assert_eq!(code(&home.run(&["agents", "init", "x"])), 0);
    let message = placeholder_message("x", &path);
    for args in [
        &["run", "x", "--dry-run"][..],
        &["run", "x", "-p", "hi"][..],
    ] {
        assert_fails(&home.run(args), 2, &message);
    }
    // `agents check` says the same, and exits 2 as it did.
    let out = home.run(&["agents", "check", "x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("x: {message}\n1 agent checked, 1 problem\n")
    );
    // --model runs it.
    let out = home.run(&["run", "x", "--dry-run", "--model", "openai/gpt-4o"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // As a sub-agent, the model's tool result says so too.
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"x\"]\n");
    let out = home.run(&["agents", "check", "lead"]);
    assert!(
        stdout(&out).contains(&format!("x: {message}\n")),
        "{}",
        stdout(&out)
    );
}

#[test]
fn errors_about_an_agent_file_name_the_file() {
    let home = Home::new();
    let cases: [(&str, i32, &str); 9] = [
        (
            "model = \"openai/gpt-4o\"\n",
            2,
            "agent config missing required field: name",
        ),
        (
            "name = \"v\"\n",
            2,
            "agent config missing required field: model (at top level an agent needs its own \
             model or --model; only a sub-agent inherits its caller's)",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 9\n",
            2,
            "sub_agents_config.max_depth cannot exceed 5",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\ntimeout = 0\n",
            2,
            "timeout must be a positive integer",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\ntools = [\"read_files\"]\n",
            2,
            "tools: unknown tool \"read_files\" (did you mean \"read_file\"?)",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sandbox]\nmode = \"on\"\n",
            2,
            "sandbox.mode must be \"landlock\" or \"off\", not \"on\"",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[memory]\nlast_n = -1\n",
            2,
            "memory.last_n must be non-negative",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"../x\"]\n",
            2,
            "sub_agents: invalid agent name \"../x\"",
        ),
        // A model string that is not one is exit 1, as --model's is.
        (
            "name = \"v\"\nmodel = \"foo/bar\"\n",
            1,
            "unsupported provider \"foo\": supported providers are anthropic, openai, ollama",
        ),
    ];
    for (toml, exit, message) in cases {
        let path = home.agent("v", toml);
        let out = home.run(&["run", "v", "--dry-run"]);
        let named = format!("(in {})", path.display());
        assert_fails_with(&out, exit, &[&format!("axe: {message}"), &named]);
    }
    // Bad TOML says the file and the line.
    let path = home.agent("v", "name = \"v\"\nmodel = \"openai/gpt-4o\"\nfiles = [\n");
    let out = home.run(&["run", "v", "--dry-run"]);
    assert_fails_with(&out, 2, &[&path.display().to_string(), "line 3"]);
}

#[test]
fn an_agent_not_found_says_the_directories_looked_in() {
    let home = Home::new();
    let repo = home.dir.path().join("repo");
    let flagged = home.dir.path().join("flagged");
    fs::create_dir_all(repo.join("axe/agents")).unwrap();
    fs::create_dir_all(&flagged).unwrap();
    let looked_in = format!(
        "agent config not found: ghost (looked in {}, {}, {})",
        flagged.display(),
        repo.join("axe/agents").display(),
        home.config_dir().join("agents").display()
    );
    for command in [
        &["run", "ghost", "--dry-run"][..],
        &["agents", "show", "ghost"][..],
        &["agents", "edit", "ghost"][..],
        &["agents", "tree", "ghost"][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--agents-dir", flagged.to_str().unwrap()]);
        let out = home
            .axe()
            .current_dir(&repo)
            .env("EDITOR", "true")
            .args(&args)
            .output()
            .unwrap();
        assert_fails(&out, 2, &looked_in);
    }
    // Without the flag, from the home: the config's agents, once.
    let out = home.run(&["run", "ghost"]);
    assert_not_found(&home, &out, "ghost");
}

#[test]
fn config_init_says_what_it_created_and_what_it_left_as_it_was() {
    let home = Home::new();
    let xdg = home.dir.path().join("fresh-xdg");
    let dir = xdg.join("axe");
    let init = || {
        home.axe()
            .env("XDG_CONFIG_HOME", &xdg)
            .args(["config", "init"])
            .output()
            .unwrap()
    };
    let parts = [
        format!("{}/", dir.join("agents").display()),
        dir.join("skills/sample/SKILL.md").display().to_string(),
        dir.join("config.toml").display().to_string(),
    ];
    let first = init();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(stdout(&first), format!("{}\n", dir.display()));
    let said: String = parts.iter().map(|p| format!("created: {p}\n")).collect();
    assert_eq!(stderr(&first), said);

    fs::remove_file(dir.join("skills/sample/SKILL.md")).unwrap();
    let second = init();
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(stdout(&second), format!("{}\n", dir.display()));
    assert_eq!(
        stderr(&second),
        format!(
            "left as it was: {}\ncreated: {}\nleft as it was: {}\n",
            parts[0], parts[1], parts[2]
        )
    );
}
