//! The real model using the built-in tools (design chapter 8).

use super::*;

/// The file in the tool-using agent's workdir: facts no model knows.
const NOTES: &str =
    "Project codename: BLUE HERON\nRelease date: 14 March 2031\nOwner: Marta Kowalczyk\n";

/// A built-in tool the real model is asked to use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Builtin {
    ReadFile,
    RunCommand,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::ReadFile => "read_file",
            Builtin::RunCommand => "run_command",
        }
    }

    /// The argument a call must carry.
    fn argument(self) -> &'static str {
        match self {
            Builtin::ReadFile => "path",
            Builtin::RunCommand => "command",
        }
    }

    /// A question that names the file (or the command): the 0.5B model
    /// guesses paths when it is not told one. The first of `make
    /// demo-rates`' 20 (scripts/tool_rates.py).
    fn question(self) -> &'static str {
        match self {
            Builtin::ReadFile => "What is the project codename in notes.txt?",
            Builtin::RunCommand => "What does `grep -n codename notes.txt` print?",
        }
    }

    /// The agent in fixtures/e2e/agents that has this tool (`make
    /// demo-rates` measures the same agents over 20 questions).
    fn agent(self) -> &'static str {
        match self {
            Builtin::ReadFile => "reader",
            Builtin::RunCommand => "runner",
        }
    }

    /// What axe sent back for the model's call: the file's numbered lines,
    /// or the command's output and its exit status.
    #[track_caller]
    fn assert_result(self, call: &WireCall, result: &str) {
        match self {
            Builtin::ReadFile => {
                let numbered: String = NOTES
                    .lines()
                    .enumerate()
                    .map(|(i, l)| format!("{}: {l}\n", i + 1))
                    .collect();
                if call.arguments.as_object().is_some_and(|a| a.len() == 1) {
                    assert_eq!(result, numbered, "read_file's result for {call:?}");
                } else {
                    // An offset or a limit: at least the line with the fact.
                    assert!(
                        result.contains("1: Project codename: BLUE HERON\n"),
                        "read_file's result for {call:?}: {result:?}"
                    );
                }
            }
            Builtin::RunCommand => {
                assert!(
                    result.contains("Project codename: BLUE HERON\n"),
                    "run_command's result for {call:?} lacks the command's output: {result:?}"
                );
                let status = result.lines().last().unwrap_or("");
                assert!(
                    status.starts_with("[exit status 0, ") && status.ends_with(" ms]"),
                    "run_command's result for {call:?} must end in its exit status: {result:?}"
                );
            }
        }
    }
}

/// An agent on `format` with the one built-in `tool` and a workdir holding
/// notes.txt, asked about it: the real model's first response calls the
/// tool with its argument; axe runs it and sends the result back by id,
/// the history whole; the model then answers without tools; `--json`
/// matches the server's usage; `--verbose` shows the call.
fn tool_step(format: Format, tool: Builtin) {
    if tool == Builtin::RunCommand && axe::sandbox::landlock_abi() == 0 {
        common::not_tested(
            "the real model's run_command step",
            "this kernel has no Landlock, so run_command is refused",
        );
        return;
    }
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), NOTES).unwrap();
    // The fixture names neither model nor workdir.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("fixtures/e2e/agents/{}.toml", tool.agent()));
    let mut agent: toml::Table = toml::from_str(&std::fs::read_to_string(fixture).unwrap())
        .expect("the fixture agent is TOML");
    agent.insert(
        "model".into(),
        format!("{}/{}", format.provider(), local_model()).into(),
    );
    agent.insert("workdir".into(), work.display().to_string().into());
    let agent = toml::to_string(&agent).expect("agent TOML");
    let cast = Cast::write(&home, &[(tool.agent().into(), agent)]);
    let (out, report) = run_json(&home, &proxy, tool.agent(), &["-p", tool.question()]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);

    let body = log[0].request.json();
    let offered: Vec<&Value> = body["tools"].as_array().expect("tools").iter().collect();
    assert_eq!(offered.len(), 1, "only the agent's one tool: {body}");
    let (name, params) = match format {
        Format::OpenAi => (
            &offered[0]["function"]["name"],
            &offered[0]["function"]["parameters"],
        ),
        _ => (&offered[0]["name"], &offered[0]["input_schema"]),
    };
    assert_eq!(name, tool.name());
    assert_eq!(params["required"], json!([tool.argument()]), "{body}");

    let first = log[0].response_json();
    let calls = format.calls(&first);
    assert!(
        !calls.is_empty() && calls[0].name == tool.name(),
        "the model did not call {} in its first response (the prompt's worked example \
         makes it do so at temperature 0): {first}",
        tool.name()
    );
    let argument = calls[0].arguments[tool.argument()].as_str().unwrap_or("");
    assert!(!argument.trim().is_empty(), "{calls:?}");
    let mut results = Vec::new();
    for (i, turn) in log.iter().enumerate() {
        let made = format.calls(&turn.response_json());
        if made.is_empty() {
            continue;
        }
        let next = log
            .get(i + 1)
            .unwrap_or_else(|| panic!("turn {} called tools but no later request came", i + 1));
        results.push(assert_echoed(format, turn, next, &made));
    }
    tool.assert_result(&calls[0], &results[0][0]);

    let last = log.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &log);
    let answer = report["content"].as_str().unwrap_or("");
    assert!(!answer.trim().is_empty(), "no final answer: {report}");
    let err = stderr(&out);
    let line = format!("[tool] {}: {} ", tool.name(), tool.argument());
    assert!(
        err.lines()
            .any(|l| l.starts_with(&line) && l.contains("(ok, ")),
        "{err}"
    );
    eprintln!(
        "  {} call(s) in {} turn(s); answer ({} the fact): {answer:?}",
        report["tool_calls"],
        log.len(),
        if answer.contains("BLUE HERON") {
            "has"
        } else {
            "lacks"
        }
    );
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_tool_read_file() {
    tool_step(Format::OpenAi, Builtin::ReadFile);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_tool_read_file() {
    tool_step(Format::Anthropic, Builtin::ReadFile);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_tool_run_command() {
    tool_step(Format::OpenAi, Builtin::RunCommand);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_tool_run_command() {
    tool_step(Format::Anthropic, Builtin::RunCommand);
}
