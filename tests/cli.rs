//! The command line, driven through the real `axe` binary: every command of
//! design §2.1, `run` against each provider through a fake loopback server, the
//! output formats, exit codes and messages, and keeping API keys out of
//! every output.

mod common;
use common::*;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A recognisable API key used by most runs.
const KEY: &str = "sk-test-cli-0123456789abcdef";

const DEFAULT_MESSAGE: &str = "Execute the task described in your instructions.";

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

/// Writes a two-line agent `name` using `model`.
fn simple_agent(home: &Home, name: &str, model: &str) -> std::path::PathBuf {
    home.agent(name, &format!("name = \"{name}\"\nmodel = \"{model}\"\n"))
}

/// `axe` with an OpenAI key and the base URL of `server`.
fn openai_axe(home: &Home, server: &FakeServer) -> Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", KEY)
        .env("AXE_OPENAI_BASE_URL", &server.url);
    c
}

/// Runs `cmd` with `input` written to a piped stdin, then closed.
fn output_with_stdin(mut cmd: Command, input: &str) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn axe");
    {
        let mut stdin = child.stdin.take().expect("piped stdin");
        // axe may not read stdin at all (with --prompt); a closed pipe is fine.
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("wait for axe")
}

/// The content of the last message of an OpenAI request (the user message).
fn openai_user_message(req: &Recorded) -> String {
    let body = req.json();
    let messages = body["messages"].as_array().expect("messages array");
    let last = messages.last().expect("a message");
    assert_eq!(last["role"], "user", "{body}");
    last["content"]
        .as_str()
        .expect("string content")
        .to_string()
}

/// The system message of an OpenAI request.
fn openai_system_message(req: &Recorded) -> String {
    let body = req.json();
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system", "{body}");
    first["content"]
        .as_str()
        .expect("string content")
        .to_string()
}

/// Failed with `exit`, nothing on stdout, and exactly `axe: <message>` on stderr.
#[track_caller]
fn assert_fails(out: &Output, exit: i32, message: &str) {
    assert_eq!(code(out), exit, "stderr: {}", stderr(out));
    assert_eq!(stdout(out), "", "stdout must be empty on error");
    assert_eq!(stderr(out), format!("axe: {message}\n"));
}

/// Failed with `exit`, nothing on stdout, and one `axe: ...` line on stderr
/// containing every part.
#[track_caller]
fn assert_fails_with(out: &Output, exit: i32, parts: &[&str]) {
    let err = stderr(out);
    assert_eq!(code(out), exit, "stderr: {err}");
    assert_eq!(stdout(out), "", "stdout must be empty on error");
    assert!(
        err.starts_with("axe: ") && err.ends_with('\n') && err.lines().count() == 1,
        "stderr must be one `axe: ` line, got {err:?}"
    );
    for part in parts {
        assert!(err.contains(part), "stderr {err:?} lacks {part:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// A URL on 127.0.0.1 where nothing listens.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

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

#[test]
fn help_lists_every_command_and_exits_0() {
    let home = Home::new();
    let out = home.run(&["--help"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for cmd in ["run", "agents", "config", "version", "--version"] {
        assert!(text.contains(cmd), "help lacks {cmd}: {text}");
    }
}

#[test]
fn run_help_lists_every_flag_with_defaults_and_exits_0() {
    let home = Home::new();
    let out = home.run(&["run", "--help"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let entries = option_entries(&text);
    let entry = |flag: &str| {
        entries
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == flag))
            .map(|(_, desc)| desc.as_str())
            .unwrap_or_else(|| panic!("run --help lacks {flag}:\n{text}"))
    };
    for flag in [
        "--model",
        "--skill",
        "--workdir",
        "--timeout",
        "--dry-run",
        "-v",
        "--verbose",
        "--json",
        "-p",
        "--prompt",
    ] {
        assert!(!entry(flag).is_empty(), "{flag} has no description");
    }
    // Options with a default say what it is.
    assert!(entry("--timeout").contains("default: 120"), "{text}");
    for flag in ["--model", "--skill", "--workdir"] {
        assert!(entry(flag).contains("default"), "{flag}: {text}");
    }
}

/// The `Options:` section of a help text as (flag names, description with
/// wrapped lines joined by single spaces).
fn option_entries(help: &str) -> Vec<(Vec<String>, String)> {
    let mut entries: Vec<(Vec<String>, String)> = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_options = line.trim_end() == "Options:";
            continue;
        }
        if !in_options {
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('-') && line.len() - trimmed.len() <= 4 {
            let mut names = Vec::new();
            let mut rest = trimmed;
            while rest.starts_with('-') {
                let end = rest.find([',', ' ']).unwrap_or(rest.len());
                names.push(rest[..end].to_string());
                rest = rest[end..].trim_start_matches(',').trim_start();
            }
            entries.push((names, rest.split_whitespace().collect::<Vec<_>>().join(" ")));
        } else if let Some((_, desc)) = entries.last_mut() {
            for word in trimmed.split_whitespace() {
                desc.push(' ');
                desc.push_str(word);
            }
        }
    }
    entries
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
    assert_eq!(skill, include_str!("../fixtures/skills/sample/SKILL.md"));
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
        include_str!("../fixtures/agents/show_sub_agents.toml"),
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
    assert_fails(&out, 2, "agent config not found: ghost");
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

/// A shell-script editor in `dir` that records its arguments (one per line)
/// in `<dir>/<tag>.args` and appends `# edited by <tag>` to the last one.
/// Returned as the `$VISUAL`/`$EDITOR` value `sh <script>` (run through sh,
/// so the freshly written script is never executed directly).
fn editor_script(dir: &Path, tag: &str) -> String {
    let script = dir.join(format!("{tag}.sh"));
    let log = dir.join(format!("{tag}.args"));
    fs::write(
        &script,
        format!(
            "printf '%s\\n' \"$@\" > '{}'\nfor last; do :; done\necho '# edited by {tag}' >> \"$last\"\n",
            log.display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

#[test]
fn agents_edit_prefers_visual_and_passes_its_arguments() {
    let home = Home::new();
    let tools = TempDir::new("editor");
    let path = simple_agent(&home, "helper", "openai/gpt-4o");
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
    let path = simple_agent(&home, "helper", "openai/gpt-4o");
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
    let path = simple_agent(&home, "helper", "openai/gpt-4o");
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
    assert_fails(&out, 2, "agent config not found: ghost");
    assert!(!tools.path().join("editor.args").exists());
    assert!(!home.config_dir().join("agents/ghost.toml").exists());
}

// ---------------------------------------------------------------------------
// run: each provider
// ---------------------------------------------------------------------------

#[test]
fn run_prints_the_anthropic_answer_and_nothing_else() {
    let server = FakeServer::json(200, &anthropic_text("The answer is 42.", 20, 7));
    let home = Home::new();
    simple_agent(&home, "a", "anthropic/claude-sonnet-4-5");
    let out = home
        .axe()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("AXE_ANTHROPIC_BASE_URL", &server.url)
        .args(["run", "a", "-p", "What is the answer?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "The answer is 42.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    let body = req.json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["messages"][0]["role"], "user");
    let content = &body["messages"][0]["content"];
    let text = content
        .as_str()
        .map(str::to_string)
        .or_else(|| content[0]["text"].as_str().map(str::to_string));
    assert_eq!(text.as_deref(), Some("What is the answer?"), "{body}");
}

#[test]
fn run_prints_the_openai_answer_and_nothing_else() {
    let server = FakeServer::json(200, &openai_text("Hello from OpenAI.", 12, 3));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = openai_axe(&home, &server)
        .args(["run", "o", "--prompt", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello from OpenAI.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(req.json()["model"], "gpt-4o");
    assert_eq!(openai_user_message(&req), "Say hello.");
}

#[test]
fn run_prints_the_ollama_answer_without_any_key() {
    let server = FakeServer::json(200, &ollama_text("Hi from llama.", 9, 4));
    let home = Home::new();
    simple_agent(&home, "l", "ollama/llama3.1");
    let out = home
        .axe()
        .env("AXE_OLLAMA_BASE_URL", &server.url)
        .args(["run", "l", "-p", "Greet me."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi from llama.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/api/chat");
    let body = req.json();
    assert_eq!(body["model"], "llama3.1");
    assert_eq!(body["stream"], false);
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "Greet me.");
}

#[test]
fn run_prints_a_multiline_answer_verbatim() {
    let answer = "Line one.\n\n- item\n- item 2\n";
    let server = FakeServer::json(200, &openai_text(answer, 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = openai_axe(&home, &server)
        .args(["run", "o", "-p", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), answer);
}

// ---------------------------------------------------------------------------
// run: the user message
// ---------------------------------------------------------------------------

#[test]
fn run_sends_piped_stdin_as_the_user_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let mut cmd = openai_axe(&home, &server);
    cmd.args(["run", "o"]);
    let out = output_with_stdin(cmd, "Summarise this.\nSecond line.");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert_eq!(
        openai_user_message(&server.only_request()),
        "Summarise this.\nSecond line."
    );
}

#[test]
fn run_prompt_flag_beats_stdin() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let mut cmd = openai_axe(&home, &server);
    cmd.args(["run", "o", "--prompt", "from the flag"]);
    let out = output_with_stdin(cmd, "from stdin");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), "from the flag");
}

#[test]
fn run_with_whitespace_stdin_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let mut cmd = openai_axe(&home, &server);
    cmd.args(["run", "o"]);
    let out = output_with_stdin(cmd, "  \n\t\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), DEFAULT_MESSAGE);
}

#[test]
fn run_with_empty_stdin_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    // Home::axe() gives a null (empty, non-terminal) stdin.
    let out = openai_axe(&home, &server)
        .args(["run", "o"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), DEFAULT_MESSAGE);
}

// ---------------------------------------------------------------------------
// run: base URL and key from config.toml and the environment
// ---------------------------------------------------------------------------

#[test]
fn run_reads_base_url_and_key_from_config_toml_when_env_is_unset() {
    let server = FakeServer::json(200, &openai_text("from the file's server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        server.url
    ));
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the file's server\n");
    assert_eq!(
        server.only_request().header("authorization"),
        Some("Bearer sk-file-key-4242")
    );
}

#[test]
fn run_env_beats_config_toml_for_base_url_and_key() {
    let file_server = FakeServer::json(200, &openai_text("wrong server", 1, 1));
    let env_server = FakeServer::json(200, &openai_text("env server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        file_server.url
    ));
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", "sk-env-key-7777")
        .env("AXE_OPENAI_BASE_URL", &env_server.url)
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "env server\n");
    assert_eq!(
        env_server.only_request().header("authorization"),
        Some("Bearer sk-env-key-7777")
    );
    assert!(file_server.requests().is_empty());
}

#[test]
fn run_treats_empty_env_vars_as_unset() {
    let server = FakeServer::json(200, &openai_text("from the file's server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        server.url
    ));
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", "")
        .env("AXE_OPENAI_BASE_URL", "")
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the file's server\n");
    assert_eq!(
        server.only_request().header("authorization"),
        Some("Bearer sk-file-key-4242")
    );
}

// ---------------------------------------------------------------------------
// run: overrides
// ---------------------------------------------------------------------------

#[test]
fn run_model_override_splits_at_the_first_slash() {
    let server = FakeServer::json(200, &openai_text("from llama", 1, 1));
    let home = Home::new();
    // The agent's own provider has no key: only the override is used.
    simple_agent(&home, "a", "anthropic/claude-sonnet-4-5");
    let out = openai_axe(&home, &server)
        .args([
            "run",
            "a",
            "--model",
            "openai/meta-llama/Llama-3.1-8B-Instruct",
            "-p",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from llama\n");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.json()["model"], "meta-llama/Llama-3.1-8B-Instruct");
}

#[test]
fn run_skill_override_replaces_the_agents_skill() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    write(
        &home.config_dir().join("skills/own/SKILL.md"),
        "OWN SKILL TEXT",
    );
    home.agent(
        "s",
        "name = \"s\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\nskill = \"skills/own/SKILL.md\"\n",
    );
    // --skill is relative to the current directory (the home dir here).
    write(&home.dir.path().join("other.md"), "OVERRIDE SKILL TEXT");
    let out = openai_axe(&home, &server)
        .args(["run", "s", "--skill", "other.md", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        openai_system_message(&server.only_request()),
        "Base.\n\n---\n\n## Skill\n\nOVERRIDE SKILL TEXT"
    );
}

#[test]
fn run_uses_the_agents_skill_relative_to_the_config_dir() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    write(
        &home.config_dir().join("skills/own/SKILL.md"),
        "OWN SKILL TEXT",
    );
    home.agent(
        "s",
        "name = \"s\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\nskill = \"skills/own/SKILL.md\"\n",
    );
    let out = openai_axe(&home, &server)
        .args(["run", "s", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        openai_system_message(&server.only_request()),
        "Base.\n\n---\n\n## Skill\n\nOWN SKILL TEXT"
    );
}

#[test]
fn run_workdir_override_beats_the_agents_workdir() {
    let home = Home::new();
    let from_toml = TempDir::new("wd-toml");
    let from_flag = TempDir::new("wd-flag");
    write(&from_toml.path().join("toml.txt"), "toml");
    write(&from_flag.path().join("flag.txt"), "flag");
    home.agent(
        "w",
        &format!(
            "name = \"w\"\nmodel = \"openai/gpt-4o\"\nworkdir = \"{}\"\nfiles = [\"*.txt\"]\n",
            from_toml.path().display()
        ),
    );

    let out = home.run(&["run", "w", "--dry-run", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("Workdir:  {}\n", from_toml.path().display())),
        "{text}"
    );
    assert!(text.contains("--- Files (1) ---\ntoml.txt\n"), "{text}");

    let flag = from_flag.path().display().to_string();
    let out = home.run(&["run", "w", "--dry-run", "--workdir", &flag, "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("Workdir:  {flag}\n")), "{text}");
    assert!(text.contains("--- Files (1) ---\nflag.txt\n"), "{text}");
    assert!(text.contains("### flag.txt\n```txt\nflag\n```"), "{text}");
    assert!(!text.contains("toml.txt"), "{text}");
}

// ---------------------------------------------------------------------------
// --json and --verbose
// ---------------------------------------------------------------------------

#[test]
fn run_json_prints_one_object_with_exactly_the_documented_fields() {
    let server = FakeServer::json(200, &openai_text("The answer.", 12, 3));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = openai_axe(&home, &server)
        .args(["run", "o", "--json", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.trim_end().lines().count(), 1, "one line: {text:?}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("stdout is one JSON value");
    let obj = v.as_object().expect("a JSON object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "agents",
            "cache_read_input_tokens",
            "content",
            "duration_ms",
            "input_tokens",
            "model",
            "output_tokens",
            "retry_attempts",
            "run_id",
            "stop_reason",
            "tool_call_details",
            "tool_calls",
            "total_cache_read_input_tokens",
            "total_input_tokens",
            "total_output_tokens",
        ]
    );
    // A single agent: the tree's totals are its own, in one agents entry.
    assert_eq!(obj["total_input_tokens"], 12);
    assert_eq!(obj["total_output_tokens"], 3);
    let agents = obj["agents"].as_array().expect("agents array");
    assert_eq!(agents.len(), 1, "{v}");
    assert_eq!(agents[0]["name"], "o");
    assert_eq!(agents[0]["calls"], 1);
    assert_eq!(agents[0]["turns"], 1);
    assert_eq!(agents[0]["input_tokens"], 12);
    assert_eq!(agents[0]["errors"], 0);
    assert_eq!(obj["run_id"].as_str().map(str::len), Some(16), "{v}");
    assert_eq!(obj["model"], "openai/gpt-4o");
    assert_eq!(obj["content"], "The answer.");
    assert_eq!(obj["input_tokens"], 12);
    assert_eq!(obj["output_tokens"], 3);
    assert_eq!(obj["stop_reason"], "stop");
    assert!(obj["duration_ms"].is_u64(), "{v}");
    assert_eq!(obj["tool_calls"], 0);
    assert_eq!(obj["retry_attempts"], 0);
}

#[test]
fn run_verbose_reports_on_stderr_and_keeps_stdout_the_answer() {
    let server = FakeServer::json(200, &openai_text("Just the answer.", 12, 3));
    let home = Home::new();
    home.agent(
        "o",
        "name = \"o\"\nmodel = \"openai/gpt-4o\"\n[params]\ntemperature = 0.7\nmax_tokens = 256\n",
    );
    let mut cmd = openai_axe(&home, &server);
    cmd.args(["run", "o", "--verbose", "--timeout", "30"]);
    let out = output_with_stdin(cmd, "piped question");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Just the answer.\n");
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let has = |line: &str| lines.contains(&line);
    let starts = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    assert!(has("Model:    openai/gpt-4o"), "{err}");
    assert!(
        has(&format!("Workdir:  {}", home.dir.path().display())),
        "{err}"
    );
    assert!(starts("Skill:"), "{err}");
    assert!(has("Files:    0 file(s)"), "{err}");
    assert!(has("Stdin:    yes"), "{err}");
    assert!(has("Timeout:  30s"), "{err}");
    assert!(has("Params:   temperature=0.7, max_tokens=256"), "{err}");
    assert!(
        lines.iter().any(|l| l
            .strip_prefix("Duration: ")
            .and_then(|r| r.strip_suffix("ms"))
            .is_some_and(|n| n.parse::<u64>().is_ok())),
        "{err}"
    );
    assert!(has("Tokens:   12 input, 3 output"), "{err}");
    assert!(has("Stop:     stop"), "{err}");
    // The header comes before the call, the footer after it.
    let pos = |p: &str| lines.iter().position(|l| l.starts_with(p)).unwrap();
    assert!(pos("Params:") < pos("Duration:"), "{err}");
}

#[test]
fn run_verbose_says_stdin_no_with_a_prompt() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = openai_axe(&home, &server)
        .args(["run", "o", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert!(stderr(&out).lines().any(|l| l == "Stdin:    no"));
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l == "Params:   temperature=default, max_tokens=default")
    );
}

// ---------------------------------------------------------------------------
// --dry-run
// ---------------------------------------------------------------------------

const REVIEW_SKILL: &str = "# Review\n\nPoint out bugs first.";

/// The `reviewer` agent (fixtures/agents/dry_run_full.toml), its skill, and a
/// workdir with nested sources, a file without an extension, a binary file
/// and a symlink to a file outside the workdir. Returns (workdir, outside).
fn reviewer_setup(home: &Home) -> (TempDir, TempDir) {
    home.agent(
        "reviewer",
        include_str!("../fixtures/agents/dry_run_full.toml"),
    );
    write(
        &home.config_dir().join("skills/review/SKILL.md"),
        REVIEW_SKILL,
    );
    let wd = TempDir::new("workdir");
    let w = wd.path();
    write(&w.join("README.md"), "# Demo\nA demo project.\n");
    write(&w.join("src/main.rs"), "fn main() {}");
    write(&w.join("src/nested/deep/lib.rs"), "pub fn f() {}");
    write(&w.join("src/notes.txt"), "not matched by any glob");
    write(&w.join("docs/NOTES"), "plain notes");
    write(&w.join("docs/guide.md"), "# Guide");
    write(&w.join("docs/logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let outside = TempDir::new("outside");
    write(&outside.path().join("secret.md"), "OUTSIDE SECRET");
    std::os::unix::fs::symlink(outside.path().join("secret.md"), w.join("docs/secret.md")).unwrap();
    (wd, outside)
}

/// The system prompt the reviewer agent gets over its workdir, byte for byte.
fn reviewer_system_prompt() -> String {
    [
        "You review code.",
        "\n\n---\n\n## Skill\n\n",
        REVIEW_SKILL,
        "\n\n---\n\n## Context Files\n\n",
        "### README.md\n```md\n# Demo\nA demo project.\n\n```",
        "\n\n",
        "### docs/NOTES\n```\nplain notes\n```",
        "\n\n",
        "### docs/guide.md\n```md\n# Guide\n```",
        "\n\n",
        "### src/main.rs\n```rs\nfn main() {}\n```",
        "\n\n",
        "### src/nested/deep/lib.rs\n```rs\npub fn f() {}\n```",
    ]
    .concat()
}

#[test]
fn dry_run_prints_the_full_report_and_sends_nothing() {
    let server = FakeServer::json(200, &openai_text("must not be asked", 1, 1));
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    // No key at all: a dry run needs none.
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args([
            "run",
            "reviewer",
            "--dry-run",
            "--workdir",
            &wd_arg,
            "-p",
            "Review the error handling.",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let expected = format!(
        "=== Dry Run ===\n\
         \n\
         Model:    openai/gpt-4o\n\
         Workdir:  {wd_arg}\n\
         Timeout:  120s\n\
         Params:   temperature=0.2, max_tokens=default\n\
         \n\
         --- System Prompt ---\n\
         {sp}\n\
         \n\
         --- Skill ---\n\
         {REVIEW_SKILL}\n\
         \n\
         --- Files (5) ---\n\
         README.md\n\
         docs/NOTES\n\
         docs/guide.md\n\
         src/main.rs\n\
         src/nested/deep/lib.rs\n\
         \n\
         --- Stdin ---\n\
         Review the error handling.\n\
         \n\
         --- Sub-Agents ---\n\
         (none)\n",
        sp = reviewer_system_prompt()
    );
    assert_eq!(stdout(&out), expected);
    assert!(!stdout(&out).contains("OUTSIDE SECRET"));
    assert!(server.requests().is_empty(), "a dry run sent a request");
}

#[test]
fn dry_run_verbose_lists_skipped_files() {
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    let out = home.run(&[
        "run",
        "reviewer",
        "--dry-run",
        "--verbose",
        "--workdir",
        &wd_arg,
        "-p",
        "hi",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("=== Dry Run ===\n"));
    let err = stderr(&out);
    let skipped: Vec<&str> = err.lines().filter(|l| l.starts_with("Skipped:")).collect();
    assert_eq!(skipped.len(), 2, "{err}");
    assert!(skipped[0].contains("docs/logo.png"), "{err}");
    assert!(skipped[1].contains("docs/secret.md"), "{err}");
}

#[test]
fn run_sends_the_assembled_system_prompt_and_verbose_lists_skipped_files() {
    let server = FakeServer::json(200, &openai_text("reviewed", 100, 5));
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    let out = openai_axe(&home, &server)
        .args(["run", "reviewer", "-v", "--workdir", &wd_arg, "-p", "Go."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "reviewed\n");
    let req = server.only_request();
    assert_eq!(openai_system_message(&req), reviewer_system_prompt());
    assert_eq!(req.json()["temperature"], 0.2);

    let err = stderr(&out);
    assert!(err.lines().any(|l| l == "Files:    5 file(s)"), "{err}");
    let skipped: Vec<&str> = err.lines().filter(|l| l.starts_with("Skipped:")).collect();
    assert_eq!(skipped.len(), 2, "{err}");
    assert!(skipped[0].contains("docs/logo.png"), "{err}");
    assert!(skipped[1].contains("docs/secret.md"), "{err}");
    assert!(!err.contains("OUTSIDE SECRET"));
}

#[test]
fn dry_run_shows_sub_agents_with_their_settings() {
    let home = Home::new();
    home.agent(
        "lead",
        include_str!("../fixtures/agents/with_sub_agents.toml"),
    );
    let out = home.run(&["run", "lead", "--dry-run", "--timeout", "30"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let expected = format!(
        "=== Dry Run ===\n\
         \n\
         Model:    anthropic/claude-sonnet-4-5\n\
         Workdir:  {}\n\
         Timeout:  30s\n\
         Params:   temperature=default, max_tokens=default\n\
         \n\
         --- System Prompt ---\n\
         You delegate.\n\
         \n\
         --- Skill ---\n\
         (none)\n\
         \n\
         --- Files (0) ---\n\
         (none)\n\
         \n\
         --- Stdin ---\n\
         (none)\n\
         \n\
         --- Sub-Agents ---\n\
         helper, reviewer\n\
         Max Depth: 3\n\
         Parallel:  yes\n\
         Timeout:   45s\n",
        home.dir.path().display()
    );
    assert_eq!(stdout(&out), expected);
}

#[test]
fn dry_run_without_sub_agents_prints_none_and_no_settings() {
    let home = Home::new();
    home.agent(
        "solo",
        "name = \"solo\"\nmodel = \"ollama/llama3.1\"\n[sub_agents_config]\nmax_depth = 2\n",
    );
    let out = home.run(&["run", "solo", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.ends_with("\n--- Sub-Agents ---\n(none)\n"), "{text}");
    assert!(!text.contains("Max Depth"), "{text}");
    assert!(!text.contains("Parallel:"), "{text}");
}

#[test]
fn dry_run_shows_piped_stdin() {
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let mut cmd = home.axe();
    cmd.args(["run", "o", "--dry-run"]);
    let out = output_with_stdin(cmd, "text from a pipe");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\n--- Stdin ---\ntext from a pipe\n"),
        "{}",
        stdout(&out)
    );
}

// ---------------------------------------------------------------------------
// Exit code 1
// ---------------------------------------------------------------------------

#[test]
fn run_with_a_model_without_provider_exits_1() {
    let home = Home::new();
    simple_agent(&home, "m", "gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", KEY)
        .args(["run", "m", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 1, &["gpt-4o"]);
}

#[test]
fn run_with_a_bad_model_override_exits_1() {
    let home = Home::new();
    simple_agent(&home, "m", "openai/gpt-4o");
    let out = home.run(&["run", "m", "--model", "nonsense", "--dry-run"]);
    assert_fails_with(&out, 1, &["nonsense"]);
}

#[test]
fn run_with_an_unsupported_provider_exits_1() {
    let home = Home::new();
    simple_agent(&home, "x", "x/some-model");
    let out = home.run(&["run", "x", "-p", "hi"]);
    assert_fails(
        &out,
        1,
        "unsupported provider \"x\": supported providers are anthropic, openai, ollama",
    );
}

#[test]
fn run_with_a_provider_400_exits_1_with_the_providers_message() {
    let server = FakeServer::json(
        400,
        r#"{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#,
    );
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = openai_axe(&home, &server)
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(
        &out,
        1,
        &["Invalid value for 'temperature': must be at most 2."],
    );
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
}

#[test]
fn run_with_a_provider_404_exits_1_with_the_providers_message() {
    let server = FakeServer::json(
        404,
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#,
    );
    let home = Home::new();
    simple_agent(&home, "a", "anthropic/claude-nope");
    let out = home
        .axe()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("AXE_ANTHROPIC_BASE_URL", &server.url)
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 1, &["model: claude-nope"]);
}

// ---------------------------------------------------------------------------
// Exit code 2
// ---------------------------------------------------------------------------

#[test]
fn run_unknown_agent_exits_2() {
    let home = Home::new();
    let out = home.run(&["run", "ghost", "-p", "hi"]);
    assert_fails(&out, 2, "agent config not found: ghost");
}

#[test]
fn run_with_bad_toml_exits_2_naming_the_file_and_line() {
    let home = Home::new();
    let path = home.agent(
        "bad",
        "name = \"bad\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"unterminated\nfiles = []\n",
    );
    let out = home.run(&["run", "bad", "--dry-run"]);
    assert_fails_with(&out, 2, &[&path.display().to_string(), "line 3"]);
}

#[test]
fn run_validation_errors_come_in_order_and_exit_2() {
    let cases = [
        (
            "model = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 9\ntimeout = -1\n",
            "agent config missing required field: name",
        ),
        (
            "name = \"  \"\nmodel = \"openai/gpt-4o\"\n",
            "agent config missing required field: name",
        ),
        // A file without `model` is valid (a sub-agent inherits, design
        // D21), so the table's own error comes first.
        (
            "name = \"v\"\n[sub_agents_config]\nmax_depth = 9\ntimeout = -1\n",
            "sub_agents_config.max_depth cannot exceed 5",
        ),
        (
            "name = \"v\"\n",
            "agent config missing required field: model (at top level an agent needs its own model or --model; only a sub-agent inherits its caller's)",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\ntimeout = -1\n",
            "sub_agents_config.max_depth cannot exceed 5",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = -1\ntimeout = -1\n",
            "sub_agents_config.max_depth must be non-negative",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\ntimeout = -1\n",
            "sub_agents_config.timeout must be non-negative",
        ),
    ];
    for (toml, message) in cases {
        let home = Home::new();
        home.agent("v", toml);
        let out = home.run(&["run", "v", "--dry-run"]);
        assert_fails(&out, 2, message);
    }
}

#[test]
fn run_max_depth_5_is_valid() {
    let home = Home::new();
    home.agent(
        "v",
        "name = \"v\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"h\"]\n[sub_agents_config]\nmax_depth = 5\n",
    );
    let out = home.run(&["run", "v", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Max Depth: 5\n"), "{}", stdout(&out));
}

#[test]
fn run_with_malformed_config_toml_exits_2() {
    let home = Home::new();
    home.config("[providers.openai\napi_key = \"sk-x-123456\"\n");
    simple_agent(&home, "o", "openai/gpt-4o");
    let config = home.config_dir().join("config.toml");
    let out = home.run(&["run", "o", "-p", "hi"]);
    assert_fails_with(&out, 2, &[&config.display().to_string()]);
}

#[test]
fn run_with_an_invalid_glob_exits_2() {
    let home = Home::new();
    home.agent(
        "g",
        "name = \"g\"\nmodel = \"openai/gpt-4o\"\nfiles = [\"src/[a\"]\n",
    );
    let out = home.run(&["run", "g", "--dry-run"]);
    assert_fails_with(&out, 2, &["src/[a"]);
}

#[test]
fn run_with_a_missing_workdir_exits_2() {
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let missing = home.dir.path().join("no-such-dir");
    let out = home.run(&[
        "run",
        "o",
        "--dry-run",
        "--workdir",
        &missing.display().to_string(),
    ]);
    assert_fails_with(&out, 2, &[&missing.display().to_string()]);
}

#[test]
fn run_with_a_missing_agent_workdir_exits_2() {
    let home = Home::new();
    let missing = home.dir.path().join("gone");
    home.agent(
        "o",
        &format!(
            "name = \"o\"\nmodel = \"openai/gpt-4o\"\nworkdir = \"{}\"\n",
            missing.display()
        ),
    );
    let out = home.run(&["run", "o", "--dry-run"]);
    assert_fails_with(&out, 2, &[&missing.display().to_string()]);
}

#[test]
fn run_with_a_missing_skill_override_exits_2() {
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "--dry-run", "--skill", "missing/SKILL.md"]);
    assert_fails_with(&out, 2, &["missing/SKILL.md"]);
}

#[test]
fn run_with_a_missing_agent_skill_exits_2() {
    let home = Home::new();
    home.agent(
        "o",
        "name = \"o\"\nmodel = \"openai/gpt-4o\"\nskill = \"skills/none/SKILL.md\"\n",
    );
    let out = home.run(&["run", "o", "--dry-run"]);
    assert_fails_with(&out, 2, &["skills/none/SKILL.md"]);
}

#[test]
fn agent_names_with_path_separators_are_rejected_with_exit_2() {
    let home = Home::new();
    // `agents/../x.toml` is the config dir's x.toml: valid, and never to be read.
    fs::write(
        home.config_dir().join("x.toml"),
        "name = \"x\"\nmodel = \"openai/gpt-4o\"\n",
    )
    .unwrap();
    let tools = TempDir::new("editor");
    let editor = editor_script(tools.path(), "editor");
    for args in [
        &["run", "../x", "--dry-run"][..],
        &["agents", "show", "../x"],
        &["agents", "edit", "../x"],
        &["agents", "init", "../evil"],
        &["run", "..", "--dry-run"],
        &["run", "a/b", "--dry-run"],
    ] {
        let out = home
            .axe()
            .env("EDITOR", &editor)
            .args(args)
            .output()
            .unwrap();
        assert_fails_with(&out, 2, &[]);
    }
    assert!(!home.config_dir().join("evil.toml").exists());
    assert!(!tools.path().join("editor.args").exists());
}

#[test]
fn unknown_keys_warn_on_stderr_but_the_run_succeeds() {
    let server = FakeServer::json(200, &openai_text("fine", 1, 1));
    let home = Home::new();
    home.agent("typo", include_str!("../fixtures/agents/unknown_key.toml"));
    let out = openai_axe(&home, &server)
        .args(["run", "typo", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "fine\n");
    let err = stderr(&out);
    assert!(
        err.contains("sub_agent"),
        "no warning naming the key: {err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------------------
// Exit code 3
// ---------------------------------------------------------------------------

#[test]
fn run_with_missing_key_exits_3() {
    let server = FakeServer::json(200, &openai_text("must not be asked", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails(
        &out,
        3,
        "API key for provider \"openai\" is not configured (set OPENAI_API_KEY or add it to config.toml)",
    );
    assert!(server.requests().is_empty());
}

#[test]
fn run_with_missing_anthropic_key_names_its_variable() {
    let home = Home::new();
    simple_agent(&home, "a", "anthropic/claude-sonnet-4-5");
    let out = home.run(&["run", "a", "-p", "hi"]);
    assert_fails(
        &out,
        3,
        "API key for provider \"anthropic\" is not configured (set ANTHROPIC_API_KEY or add it to config.toml)",
    );
}

/// Runs agent `o` (openai) against a server answering every request with
/// `status` and `body`.
fn run_against_status(status: u16, body: &str) -> Output {
    let server = FakeServer::json(status, body);
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    openai_axe(&home, &server)
        .args(["run", "o", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap()
}

#[test]
fn run_with_a_provider_401_exits_3_with_the_providers_message() {
    let out = run_against_status(
        401,
        r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    );
    assert_fails_with(&out, 3, &["Incorrect API key provided."]);
}

#[test]
fn run_with_a_provider_429_exits_3_with_the_providers_message() {
    let out = run_against_status(
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-1.","type":"requests","code":"rate_limit_exceeded"}}"#,
    );
    assert_fails_with(
        &out,
        3,
        &["Rate limit reached for gpt-4o in organization org-1."],
    );
}

#[test]
fn run_with_a_provider_500_exits_3_with_the_providers_message() {
    let out = run_against_status(
        500,
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
    );
    assert_fails_with(
        &out,
        3,
        &["The server had an error while processing your request."],
    );
}

#[test]
fn run_with_connection_refused_exits_3() {
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", KEY)
        .env("AXE_OPENAI_BASE_URL", refused_url())
        .args(["run", "o", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 3, &["refused"]);
}

#[test]
fn run_with_ollama_not_running_says_so_and_exits_3() {
    let home = Home::new();
    simple_agent(&home, "l", "ollama/llama3.1");
    let url = refused_url();
    let out = home
        .axe()
        .env("AXE_OLLAMA_BASE_URL", &url)
        .args(["run", "l", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails(
        &out,
        3,
        &format!("ollama: connection refused: is Ollama running? (expected at {url})"),
    );
}

#[test]
fn run_against_a_hanging_server_times_out_with_exit_3() {
    let server = FakeServer::start(vec![Reply::Hang]);
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let started = Instant::now();
    let out = openai_axe(&home, &server)
        .args(["run", "o", "--timeout", "1", "-p", "hi"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert_fails_with(&out, 3, &["timeout"]);
    assert!(
        elapsed < Duration::from_secs(10),
        "--timeout 1 took {elapsed:?}"
    );
    assert!(!server.requests().is_empty(), "the request was sent");
}

// ---------------------------------------------------------------------------
// Secrets never appear in output
// ---------------------------------------------------------------------------

const SECRET: &str = "sk-proj-CANARY-7c1e4b9d2a5f";

#[track_caller]
fn assert_no_secret(out: &Output) {
    assert!(
        !stdout(out).contains(SECRET),
        "key on stdout: {}",
        stdout(out)
    );
    assert!(
        !stderr(out).contains(SECRET),
        "key on stderr: {}",
        stderr(out)
    );
}

fn secret_axe(home: &Home, server: &FakeServer) -> Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", SECRET)
        .env("AXE_OPENAI_BASE_URL", &server.url);
    c
}

#[test]
fn key_is_not_printed_with_verbose() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--verbose", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_secret(&out);
    // The key was really used.
    assert_eq!(
        server.only_request().header("authorization"),
        Some(&*format!("Bearer {SECRET}"))
    );
}

#[test]
fn key_is_not_printed_with_json() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--json", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_secret(&out);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn key_is_not_printed_with_dry_run() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--dry-run", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("=== Dry Run ===\n"));
    assert_no_secret(&out);
}

#[test]
fn key_echoed_in_a_401_body_is_not_printed() {
    let body = serde_json::json!({
        "error": {
            "message": format!("Incorrect API key provided: {SECRET}. You can find your API key at https://platform.openai.com/account/api-keys."),
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_api_key"
        }
    })
    .to_string();
    let server = FakeServer::json(401, &body);
    let home = Home::new();
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_no_secret(&out);
    // The rest of the provider's message is still shown.
    assert!(
        stderr(&out).contains("Incorrect API key provided"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn key_from_config_toml_echoed_in_an_error_is_not_printed() {
    let body = serde_json::json!({
        "error": {"message": format!("key {SECRET} is revoked"), "type": "invalid_request_error"}
    })
    .to_string();
    let server = FakeServer::json(403, &body);
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"{SECRET}\"\nbase_url = \"{}\"\n",
        server.url
    ));
    simple_agent(&home, "o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "--verbose", "-p", "hi"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_no_secret(&out);
    assert!(stderr(&out).contains("is revoked"), "{}", stderr(&out));
    assert_eq!(
        server.only_request().header("authorization"),
        Some(&*format!("Bearer {SECRET}"))
    );
}

#[test]
fn run_with_huge_timeout_does_not_overflow_the_clock() {
    let server = FakeServer::json(200, &openai_text("fine", 1, 1));
    let home = Home::new();
    home.agent("big", "name = \"big\"\nmodel = \"openai/gpt-4o\"\n");
    let out = home
        .axe()
        .args([
            "run",
            "big",
            "-p",
            "hi",
            "--timeout",
            "18446744073709551615",
        ])
        .env("OPENAI_API_KEY", "sk-test-huge-timeout")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "fine\n");
}

#[test]
fn dry_run_shows_absolute_glob_matches_relative_to_the_workdir() {
    let home = Home::new();
    let wd = TempDir::new("absglob");
    std::fs::write(wd.path().join("x.md"), "X").unwrap();
    let pattern = format!("{}/*.md", wd.path().display());
    home.agent(
        "g",
        &format!("name = \"g\"\nmodel = \"openai/m\"\nfiles = [\"{pattern}\", \"*.md\"]\n"),
    );
    let wd_arg = wd.path().to_str().unwrap();
    let out = home.run(&["run", "g", "--dry-run", "--workdir", wd_arg, "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.contains("--- Files (1) ---\nx.md\n"), "{s}");
    assert!(s.contains("### x.md\n```md\nX\n```"), "{s}");
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

#[test]
fn run_without_agent_names_the_missing_argument_on_one_line() {
    let home = Home::new();
    let out = home.run(&["run"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("axe: ") && err.contains("agent"), "{err}");
}

#[test]
fn run_with_blank_prompt_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.agent("a", "name = \"a\"\nmodel = \"openai/m\"\n");
    let out = home
        .axe()
        .args(["run", "a", "-p", "  "])
        .env("OPENAI_API_KEY", "sk-test-blank")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.only_request().json();
    assert_eq!(
        body["messages"][0]["content"],
        "Execute the task described in your instructions."
    );
}

#[test]
fn run_with_a_base_url_without_scheme_is_a_config_error() {
    let home = Home::new();
    home.agent("a", "name = \"a\"\nmodel = \"ollama/m\"\n");
    let out = home
        .axe()
        .args(["run", "a", "-p", "hi"])
        .env("AXE_OLLAMA_BASE_URL", "127.0.0.1:1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: invalid base URL for provider \"ollama\""),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn ollama_host_without_scheme_gets_port_11434_and_keeps_its_path() {
    let home = Home::new();
    home.agent("o", "name = \"o\"\nmodel = \"ollama/m\"\n");
    // Nothing listens on port 1: the message shows the URL axe derived.
    let out = home
        .axe()
        .args(["run", "o", "-p", "hi"])
        .env("OLLAMA_HOST", "127.0.0.1:1/ollama")
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected at http://127.0.0.1:1/ollama)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_closed_stderr_does_not_change_the_exit_code() {
    use std::process::Stdio;
    let home = Home::new();
    let mut child = home
        .axe()
        .args(["run", "missing"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2));
}
