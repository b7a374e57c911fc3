//! `axe agents check` and `axe agents tree`, through the real binary: the
//! delegation graph's problems (missing and invalid agents, bad models,
//! missing keys, cycles) with their exact lines, summary and exit code, and
//! the tree with its marks (depth limit, cycle, missing, invalid).

use crate::common::*;

use std::path::PathBuf;

const UNSUPPORTED_MISTREL: &str = "unsupported provider \"mistrel\": supported providers are \
    anthropic, openai, ollama, bedrock, google, gemini, openrouter, groq, deepseek, mistral, \
    together, xai, opencode, atlascloud, requesty, edenai, minimax, or a [providers.mistrel] table with kind in config.toml";

/// Writes the agent `name` with `model` and `sub_agents`, then `extra`.
fn agent(home: &Home, name: &str, model: &str, subs: &[&str], extra: &str) -> PathBuf {
    let subs: Vec<String> = subs.iter().map(|s| format!("\"{s}\"")).collect();
    home.agent(
        name,
        &format!(
            "name = \"{name}\"\nmodel = \"{model}\"\nsub_agents = [{}]\n{extra}",
            subs.join(", ")
        ),
    )
}

/// Where axe looks for the agent `name`.
fn agent_path(home: &Home, name: &str) -> String {
    home.config_dir()
        .join("agents")
        .join(format!("{name}.toml"))
        .display()
        .to_string()
}

/// The graph of docs/guide/sub-agents.md: lead delegates to researcher (which delegates
/// to fetcher) and critic; three providers.
fn readme_graph(home: &Home) {
    agent(home, "lead", "openai/gpt-4o", &["researcher", "critic"], "");
    agent(
        home,
        "researcher",
        "anthropic/claude-sonnet-4-5",
        &["fetcher"],
        "",
    );
    agent(home, "fetcher", "ollama/llama3", &[], "");
    agent(home, "critic", "openai/gpt-4o-mini", &[], "");
}

/// Runs `axe <args>` with the OpenAI key in the environment and the
/// Anthropic key in config.toml.
fn run_with_keys(home: &Home, args: &[&str]) -> std::process::Output {
    home.config(&format!(
        "[providers.anthropic]\napi_key = \"{ANTHROPIC_KEY}\"\n"
    ));
    home.axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(args)
        .output()
        .expect("run axe")
}

/// Exit 2, `stdout` exactly, and exactly `axe: <summary>` on stderr.
#[track_caller]
fn assert_problems(out: &std::process::Output, expected_stdout: &str, summary: &str) {
    assert_eq!(stdout(out), expected_stdout, "stderr: {}", stderr(out));
    assert_eq!(stderr(out), format!("axe: {summary}\n"));
    assert_eq!(code(out), 2);
}

/// Exit 0, `stdout` exactly, nothing on stderr.
#[track_caller]
fn assert_clean(out: &std::process::Output, expected_stdout: &str) {
    assert_eq!(stdout(out), expected_stdout, "stderr: {}", stderr(out));
    assert_eq!(stderr(out), "");
    assert_eq!(code(out), 0);
}

// ---------------------------------------------------------------------------
// agents check
// ---------------------------------------------------------------------------

#[test]
fn check_reports_no_problems_for_a_clean_graph_and_exits_0() {
    let home = Home::new();
    readme_graph(&home);
    // Not reachable from lead: not checked.
    agent(&home, "stray", "mistrel/large", &["nowhere"], "");
    let out = run_with_keys(&home, &["agents", "check", "lead"]);
    assert_clean(&out, "4 agents checked, no problems\n");
}

#[test]
fn check_reports_a_missing_sub_agent_with_the_path_it_looked_for_and_exits_2() {
    let home = Home::new();
    agent(&home, "lead", "ollama/llama3", &["helper", "ghost"], "");
    agent(&home, "helper", "ollama/llama3", &[], "");
    let out = home.run(&["agents", "check", "lead"]);
    assert_problems(
        &out,
        &format!(
            "lead: sub-agent \"ghost\" not found ({})\n2 agents checked, 1 problem\n",
            agent_path(&home, "ghost")
        ),
        "1 problem in the delegation graph of lead",
    );
}

#[test]
fn check_reports_a_missing_root_agent() {
    let home = Home::new();
    let out = home.run(&["agents", "check", "ghost"]);
    assert_problems(
        &out,
        &format!(
            "agent \"ghost\" not found ({})\n0 agents checked, 1 problem\n",
            agent_path(&home, "ghost")
        ),
        "1 problem in the delegation graph of ghost",
    );
}

#[test]
fn check_reports_invalid_sub_agent_files_with_the_loaders_message() {
    let home = Home::new();
    agent(
        &home,
        "lead",
        "ollama/llama3",
        &["broken", "noname", "nomodel"],
        "",
    );
    home.agent("broken", "name = \"broken\"\nmodel = \n");
    home.agent("noname", "model = \"ollama/llama3\"\n");
    // Not a problem: it runs on its caller's model (design D21).
    home.agent("nomodel", "name = \"nomodel\"\n");
    let out = home.run(&["agents", "check", "lead"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "axe: 2 problems in the delegation graph of lead\n"
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[0],
        format!(
            "broken: invalid agent config {}: string values must be quoted, \
             expected literal string at line 2, column 9",
            agent_path(&home, "broken")
        )
    );
    assert_eq!(
        lines[1],
        format!(
            "noname: agent config missing required field: name (in {})",
            agent_path(&home, "noname")
        )
    );
    assert_eq!(lines[2], "4 agents checked, 2 problems");
}

#[test]
fn check_reports_an_unsupported_provider_and_a_bad_model_string() {
    let home = Home::new();
    agent(&home, "lead", "ollama/llama3", &["odd", "bare"], "");
    agent(&home, "odd", "mistrel/large", &[], "");
    agent(&home, "bare", "gpt-4o", &[], "");
    let out = home.run(&["agents", "check", "lead"]);
    assert_problems(
        &out,
        &format!(
            "bare: invalid model \"gpt-4o\": expected provider/model, e.g. anthropic/claude-sonnet-4-5 \
             (in {})\n\
             odd: {UNSUPPORTED_MISTREL} (in {})\n\
             3 agents checked, 2 problems\n",
            agent_path(&home, "bare"),
            agent_path(&home, "odd")
        ),
        "2 problems in the delegation graph of lead",
    );
}

#[test]
fn check_reports_a_missing_api_key_once_per_provider_naming_its_agents() {
    let home = Home::new();
    readme_graph(&home);
    let out = home.run(&["agents", "check", "lead"]);
    assert_problems(
        &out,
        "researcher: API key for provider \"anthropic\" is not configured (set ANTHROPIC_API_KEY or add it to config.toml)\n\
         critic, lead: API key for provider \"openai\" is not configured (set OPENAI_API_KEY or add it to config.toml)\n\
         4 agents checked, 2 problems\n",
        "2 problems in the delegation graph of lead",
    );
}

#[test]
fn check_takes_the_openai_key_from_the_environment() {
    let home = Home::new();
    agent(&home, "lead", "openai/gpt-4o", &["critic"], "");
    agent(&home, "critic", "openai/gpt-4o-mini", &[], "");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["agents", "check", "lead"])
        .output()
        .expect("run axe");
    assert_clean(&out, "2 agents checked, no problems\n");
    // Without it, the same graph has a problem: the key made the difference.
    let out = home.run(&["agents", "check", "lead"]);
    assert_eq!(code(&out), 2);
    assert!(stdout(&out).starts_with("critic, lead: API key for provider \"openai\""));
}

#[test]
fn check_never_prints_an_api_key_even_when_a_file_holds_one() {
    let home = Home::new();
    // A key pasted into the model field ends up in the model error.
    agent(&home, "leaky", ANTHROPIC_KEY, &[], "");
    let out = run_with_keys(&home, &["agents", "check", "leaky"]);
    assert_problems(
        &out,
        &format!(
            "leaky: invalid model \"[redacted]\": expected provider/model, e.g. \
             anthropic/claude-sonnet-4-5 (in {})\n\
             1 agent checked, 1 problem\n",
            agent_path(&home, "leaky")
        ),
        "1 problem in the delegation graph of leaky",
    );
}

#[test]
fn check_reports_a_cycle_between_two_agents_and_exits_2() {
    let home = Home::new();
    agent(&home, "writer", "ollama/llama3", &["editor"], "");
    agent(&home, "editor", "ollama/llama3", &["writer"], "");
    let out = home.run(&["agents", "check", "writer"]);
    assert_problems(
        &out,
        "cycle: editor -> writer -> editor\n2 agents checked, 1 problem\n",
        "1 problem in the delegation graph of writer",
    );
}

#[test]
fn check_reports_a_self_loop_as_a_cycle() {
    let home = Home::new();
    agent(&home, "solo", "ollama/llama3", &["solo"], "");
    let out = home.run(&["agents", "check", "solo"]);
    assert_problems(
        &out,
        "cycle: solo -> solo\n1 agent checked, 1 problem\n",
        "1 problem in the delegation graph of solo",
    );
}

#[test]
fn check_lists_each_distinct_cycle_once_starting_at_the_smallest_name() {
    let home = Home::new();
    agent(&home, "zeta", "ollama/llama3", &["beta"], "");
    agent(&home, "beta", "ollama/llama3", &["alpha", "zeta"], "");
    // Listed twice: still one edge, and one self-loop.
    agent(
        &home,
        "alpha",
        "ollama/llama3",
        &["zeta", "alpha", "zeta"],
        "",
    );
    let out = home.run(&["agents", "check", "zeta"]);
    assert_problems(
        &out,
        "cycle: alpha -> alpha\n\
         cycle: alpha -> zeta -> beta -> alpha\n\
         cycle: beta -> zeta -> beta\n\
         3 agents checked, 3 problems\n",
        "3 problems in the delegation graph of zeta",
    );
}

#[test]
fn check_counts_every_cycle_and_says_how_many_it_did_not_list() {
    let home = Home::new();
    for i in 0..120 {
        let name = format!("self{i:03}");
        agent(&home, &name, "ollama/llama3", &[&name], "");
    }
    let out = home.run(&["agents", "check"]);
    let listed: String = (0..100)
        .map(|i| format!("cycle: self{i:03} -> self{i:03}\n"))
        .collect();
    assert_problems(
        &out,
        &format!("{listed}... and 20 more cycles, not listed\n120 agents checked, 120 problems\n"),
        "120 problems in 120 agents",
    );
}

#[test]
fn check_of_a_graph_with_too_many_cycles_to_count_says_at_least() {
    let home = Home::new();
    // Twelve agents that all call each other: about 1.2 billion cycles.
    let names: Vec<String> = (0..12).map(|i| format!("a{i:02}")).collect();
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    for name in &all {
        agent(&home, name, "ollama/llama3", &all, "");
    }
    let out = home.run(&["agents", "check", "a00"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("cycle: ")).count(),
        100
    );
    assert!(
        text.contains(
            "... and at least 99900 more cycles, not listed (counting stopped at 100000)\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("12 agents checked, at least 100000 problems\n"),
        "{text}"
    );
    assert_eq!(
        stderr(&out),
        "axe: at least 100000 problems in the delegation graph of a00\n"
    );
}

#[test]
fn check_without_a_name_checks_every_agent() {
    let home = Home::new();
    agent(&home, "lead", "ollama/llama3", &["helper", "ghost"], "");
    agent(&home, "helper", "ollama/llama3", &[], "");
    agent(&home, "loner", "mistrel/large", &[], "");
    agent(&home, "loop", "ollama/llama3", &["loop"], "");
    let out = home.run(&["agents", "check"]);
    assert_problems(
        &out,
        &format!(
            "lead: sub-agent \"ghost\" not found ({})\n\
             loner: {UNSUPPORTED_MISTREL} (in {})\n\
             cycle: loop -> loop\n\
             4 agents checked, 3 problems\n",
            agent_path(&home, "ghost"),
            agent_path(&home, "loner")
        ),
        "3 problems in 4 agents",
    );
}

#[test]
fn check_without_a_name_and_without_agents_has_no_problems() {
    let home = Home::new();
    let out = home.run(&["agents", "check"]);
    assert_clean(&out, "0 agents checked, no problems\n");
}

#[test]
fn check_fails_with_exit_2_when_config_toml_does_not_parse() {
    let home = Home::new();
    agent(&home, "lead", "ollama/llama3", &[], "");
    home.config("[providers\n");
    let out = home.run(&["agents", "check", "lead"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    let config = home.config_dir().join("config.toml");
    assert!(
        err.starts_with(&format!("axe: invalid config {}: ", config.display())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn check_prints_unknown_key_warnings_on_stderr_not_as_problems() {
    let home = Home::new();
    let path = home.agent(
        "lead",
        "name = \"lead\"\nmodel = \"ollama/llama3\"\nsub_agent = [\"helper\"]\n",
    );
    let out = home.run(&["agents", "check", "lead"]);
    assert_eq!(stdout(&out), "1 agent checked, no problems\n");
    assert_eq!(
        stderr(&out),
        format!(
            "axe: warning: {}: unknown key \"sub_agent\" (did you mean \"sub_agents\"?)\n",
            path.display()
        )
    );
    assert_eq!(code(&out), 0);
}

#[test]
fn check_rejects_an_agent_name_that_is_a_path() {
    let home = Home::new();
    let out = home.run(&["agents", "check", "../x"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "axe: invalid agent name \"../x\": use only letters, digits, '.', '_' and '-'\n"
    );
    assert_eq!(code(&out), 2);
}

// ---------------------------------------------------------------------------
// agents tree
// ---------------------------------------------------------------------------

#[test]
fn tree_prints_a_three_level_graph_with_box_drawing_characters() {
    let home = Home::new();
    readme_graph(&home);
    let out = home.run(&["agents", "tree", "lead"]);
    assert_clean(
        &out,
        "lead (openai/gpt-4o, max_depth 3, parallel)\n\
         ├── researcher (anthropic/claude-sonnet-4-5)\n\
         │   └── fetcher (ollama/llama3)\n\
         └── critic (openai/gpt-4o-mini)\n",
    );
}

#[test]
fn tree_marks_children_beyond_the_roots_max_depth_and_does_not_expand_them() {
    let home = Home::new();
    agent(
        &home,
        "lead",
        "openai/gpt-4o",
        &["mid"],
        "[sub_agents_config]\nmax_depth = 2\nparallel = false\n",
    );
    // A sub-agent's own max_depth does not extend the tree (design D6).
    agent(
        &home,
        "mid",
        "openai/gpt-4o-mini",
        &["leaf"],
        "[sub_agents_config]\nmax_depth = 5\n",
    );
    agent(&home, "leaf", "ollama/llama3", &["deep"], "");
    agent(&home, "deep", "openai/x", &["deeper"], "");
    agent(&home, "deeper", "openai/y", &[], "");
    let out = home.run(&["agents", "tree", "lead"]);
    assert_clean(
        &out,
        "lead (openai/gpt-4o, max_depth 2, sequential)\n\
         └── mid (openai/gpt-4o-mini)\n    \
             └── leaf (ollama/llama3)\n        \
                 └── deep (openai/x) [beyond max_depth 2: never called]\n",
    );
}

#[test]
fn tree_marks_a_cycle_and_does_not_expand_it() {
    let home = Home::new();
    agent(&home, "a", "ollama/llama3", &["b"], "");
    agent(&home, "b", "ollama/llama3", &["a", "b", "c"], "");
    agent(&home, "c", "ollama/llama3", &[], "");
    let out = home.run(&["agents", "tree", "a"]);
    assert_clean(
        &out,
        "a (ollama/llama3, max_depth 3, parallel)\n\
         └── b (ollama/llama3)\n    \
             ├── a [cycle]\n    \
             ├── b [cycle]\n    \
             └── c (ollama/llama3)\n",
    );
}

#[test]
fn tree_marks_missing_and_invalid_sub_agents_and_exits_0() {
    let home = Home::new();
    agent(
        &home,
        "lead",
        "ollama/llama3",
        &["ghost", "nomodel", "odd"],
        "",
    );
    home.agent("nomodel", "name = \"nomodel\"\n");
    agent(&home, "odd", "mistrel/large", &[], "");
    let out = home.run(&["agents", "tree", "lead"]);
    assert_clean(
        &out,
        &format!(
            "lead (ollama/llama3, max_depth 3, parallel)\n\
             ├── ghost [missing]\n\
             ├── nomodel (inherits ollama/llama3)\n\
             └── odd (mistrel/large) [invalid model: {UNSUPPORTED_MISTREL} (in {})]\n",
            agent_path(&home, "odd")
        ),
    );
}

#[test]
fn tree_of_a_missing_or_invalid_root_exits_2_as_agents_show_does() {
    let home = Home::new();
    let out = home.run(&["agents", "tree", "ghost"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "axe: agent config not found: ghost (looked in {})\n",
            home.config_dir().join("agents").display()
        )
    );
    assert_eq!(code(&out), 2);

    home.agent("noname", "model = \"ollama/llama3\"\n");
    let out = home.run(&["agents", "tree", "noname"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "axe: agent config missing required field: name (in {})\n",
            agent_path(&home, "noname")
        )
    );
    assert_eq!(code(&out), 2);
}
