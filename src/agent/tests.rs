//! The agent file's parsing and validation, tested on its text.

use super::*;

fn parsed(text: &str) -> Result<Agent, Error> {
    parse("t", Path::new("t.toml"), text)
}

/// The validation error of `text`, which names the file.
fn validation_error(text: &str) -> String {
    match parsed(text) {
        Err(Error::InAgentFile { path, error }) => {
            assert_eq!(path, Path::new("t.toml"));
            error.to_string()
        }
        other => panic!("not an error in the file: {other:?}"),
    }
}

#[test]
fn loading_tells_a_missing_agent_from_a_bad_name_and_an_unreadable_file() {
    let dir = std::env::temp_dir().join(format!("axe-agent-errors-{}", std::process::id()));
    fs::create_dir_all(dir.join("agents").join("folder.toml")).unwrap();
    fs::write(dir.join("agents").join("broken.toml"), "name = \n").unwrap();
    assert!(
        matches!(load(&AgentDirs::only(&dir), "ghost"), Err(Error::AgentNotFound { name, .. }) if name == "ghost")
    );
    assert!(matches!(
        load(&AgentDirs::only(&dir), "../ghost"),
        Err(Error::InvalidAgentName { .. })
    ));
    match load(&AgentDirs::only(&dir), "folder") {
        Err(Error::Unreadable { path, why }) => {
            assert!(path.ends_with("agents/folder.toml"), "{}", path.display());
            assert_eq!(why, "not a regular file");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        load(&AgentDirs::only(&dir), "broken"),
        Err(Error::InvalidAgentFile { .. })
    ));
    fs::remove_dir_all(&dir).unwrap();
}

/// A valid agent with `extra` appended.
fn with(extra: &str) -> String {
    format!("name = \"x\"\nmodel = \"a/b\"\n{extra}")
}

#[test]
fn validation_order_is_name_then_sub_agents_config() {
    assert_eq!(
        validation_error("[sub_agents_config]\nmax_depth = 9\n"),
        "agent config missing required field: name"
    );
    // A missing model is no error in the file: a sub-agent inherits its
    // caller's (design D21).
    assert_eq!(
        validation_error("name = \"x\"\n[sub_agents_config]\nmax_depth = 9\n"),
        "sub_agents_config.max_depth cannot exceed 5"
    );
    assert_eq!(parsed("name = \"x\"\n").unwrap().config.model, None);
    assert_eq!(
        parsed("name = \"x\"\nmodel = \" \"\n")
            .unwrap()
            .config
            .model,
        None
    );
    // [sub_agents_config] before the sub_agents names (design D17, D9).
    assert_eq!(
        validation_error(&with(
            "sub_agents = [\"../x\"]\n[sub_agents_config]\nmax_depth = 6\n"
        )),
        "sub_agents_config.max_depth cannot exceed 5"
    );
    // max_depth before timeout.
    assert_eq!(
        validation_error(&with("[sub_agents_config]\nmax_depth = -1\ntimeout = -1\n")),
        "sub_agents_config.max_depth must be non-negative"
    );
}

#[test]
fn validate_max_depth_too_high() {
    for d in [6, 100] {
        assert_eq!(
            validation_error(&with(&format!("[sub_agents_config]\nmax_depth = {d}\n"))),
            "sub_agents_config.max_depth cannot exceed 5"
        );
    }
}

#[test]
fn validate_max_depth_negative() {
    assert_eq!(
        validation_error(&with("[sub_agents_config]\nmax_depth = -1\n")),
        "sub_agents_config.max_depth must be non-negative"
    );
}

#[test]
fn validate_timeout_negative() {
    assert_eq!(
        validation_error(&with("[sub_agents_config]\ntimeout = -1\n")),
        "sub_agents_config.timeout must be non-negative"
    );
}

#[test]
fn validate_max_depth_5_is_valid() {
    let a = parsed(&with("[sub_agents_config]\nmax_depth = 5\n")).unwrap();
    assert_eq!(a.config.sub_agents_config.max_depth, 5);
    for extra in [
        "[sub_agents_config]\nmax_depth = 0\ntimeout = 0\n",
        "[sub_agents_config]\nmax_depth = 1\n",
    ] {
        assert!(parsed(&with(extra)).is_ok(), "{extra}");
    }
}

#[test]
fn load_sub_agents_config_from_a_file() {
    let dir = std::env::temp_dir().join(format!(
        "axe-agent-load-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("agents")).unwrap();
    let file = dir.join("agents").join("lead.toml");
    fs::write(
        &file,
        "name = \"lead\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"helper\", \"runner\"]\n\
         [sub_agents_config]\nmax_depth = 2\nparallel = false\ntimeout = 45\n",
    )
    .unwrap();
    fs::write(
        dir.join("agents").join("deep.toml"),
        "name = \"deep\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\n",
    )
    .unwrap();
    let loaded = load(&AgentDirs::only(&dir), "lead");
    let deep = load(&AgentDirs::only(&dir), "deep");
    let _ = fs::remove_dir_all(&dir);

    let a = loaded.unwrap();
    assert_eq!(a.id, "lead");
    assert_eq!(a.path, file);
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(a.config.sub_agents, ["helper", "runner"]);
    let sac = &a.config.sub_agents_config;
    assert_eq!((sac.max_depth, sac.parallel, sac.timeout), (2, false, 45));
    // Loading validates: max_depth = 6 fails at load time (design §3.13).
    assert_eq!(
        deep.unwrap_err().to_string(),
        format!(
            "sub_agents_config.max_depth cannot exceed 5 (in {})",
            dir.join("agents").join("deep.toml").display()
        )
    );
}

#[test]
fn blank_name_is_missing() {
    assert_eq!(
        validation_error("name = \"  \"\nmodel = \"a/b\"\n"),
        "agent config missing required field: name"
    );
}

#[test]
fn sub_agents_config_defaults_when_absent() {
    let a = parsed(&with("sub_agents = [\"h\"]\n")).unwrap();
    let sac = &a.config.sub_agents_config;
    assert_eq!(
        (sac.max_depth, sac.parallel, sac.timeout),
        (DEFAULT_MAX_DEPTH, true, 0)
    );
}

#[test]
fn sub_agents_config_is_parsed() {
    let a = parsed(&with(
        "[sub_agents_config]\nmax_depth = 2\nparallel = false\ntimeout = 30\n",
    ))
    .unwrap();
    let sac = &a.config.sub_agents_config;
    assert_eq!((sac.max_depth, sac.parallel, sac.timeout), (2, false, 30));
}

#[test]
fn unknown_keys_are_named_in_warnings() {
    let a = parsed(&with("sub_agent = [\"h\"]\n[params]\ntemprature = 1\n")).unwrap();
    assert_eq!(
        a.warnings,
        [
            "unknown key \"params.temprature\" (did you mean \"params.temperature\"?)",
            "unknown key \"sub_agent\" (did you mean \"sub_agents\"?)"
        ]
    );
}

#[test]
fn budget_and_result_settings_load_and_must_be_positive() {
    let a = parsed(&with(
        "[sub_agents_config]\nmax_parallel = 2\n\
         max_result_chars = 100\n[budget]\nmax_tokens = 5000\nmax_turns = 7\n",
    ))
    .unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let sac = &a.config.sub_agents_config;
    assert_eq!(sac.parallel_limit(), 2);
    assert_eq!(sac.result_limit(), 100);
    assert_eq!(a.config.budget.max_tokens, Some(5000));
    assert_eq!(a.config.budget.max_turns, Some(7));
    let defaults = parsed(&with("")).unwrap();
    let sac = &defaults.config.sub_agents_config;
    assert_eq!(sac.parallel_limit(), usize::MAX);
    assert_eq!(sac.result_limit(), DEFAULT_MAX_RESULT_CHARS);
    assert_eq!(defaults.config.budget.max_tokens, None);
    for (table, key) in [
        ("sub_agents_config", "max_parallel"),
        ("sub_agents_config", "max_result_chars"),
    ] {
        assert_eq!(
            validation_error(&with(&format!("[{table}]\n{key} = 0\n"))),
            format!("{table}.{key} must be a positive integer")
        );
    }
    // The Go original's 0: no budget, and a max_tokens not sent.
    let zero = parsed(&with(
        "[budget]\nmax_tokens = 0\nmax_turns = 0\n[params]\nmax_tokens = 0\n",
    ))
    .unwrap();
    assert_eq!(zero.config.budget.max_tokens, None);
    assert_eq!(zero.config.budget.max_turns, None);
    assert_eq!(zero.config.params.max_tokens, None);
    assert_eq!(
        validation_error(&with("[budget]\nmax_tokens = -1\n")),
        "budget.max_tokens must be non-negative"
    );
}

#[test]
fn integer_temperature_is_accepted_as_float() {
    let a = parsed(&with("[params]\ntemperature = 0\n")).unwrap();
    assert_eq!(a.config.params.temperature, Some(0.0));
}
