//! Help that fits a screen, through the binary (issue 33): `-h` wherever
//! `--help` works (but not as an option's value or after `--`), `axe run
//! --help` grouped in under 50 lines, and a command run without its
//! subcommand printing its own; and what the help says (every command,
//! every flag of `run` with its default).

use super::*;

/// Every command and subcommand, as the words after `axe`.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["run"],
    &["agents"],
    &["agents", "list"],
    &["agents", "show"],
    &["agents", "init"],
    &["agents", "edit"],
    &["agents", "check"],
    &["agents", "tree"],
    &["agents", "export"],
    &["config"],
    &["config", "path"],
    &["config", "init"],
    &["mcp"],
    &["mcp", "list"],
    &["mcp", "tools"],
    &["gc"],
    &["runs"],
    &["runs", "show"],
    &["serve"],
    &["version"],
];

#[test]
fn dash_h_prints_the_same_help_as_dash_dash_help_for_every_command() {
    let home = Home::new();
    for words in COMMANDS {
        let with = |flag: &str| {
            let mut args = words.to_vec();
            args.push(flag);
            home.run(&args)
        };
        let (short, long) = (with("-h"), with("--help"));
        assert_eq!(code(&short), 0, "axe {words:?} -h: {}", stderr(&short));
        assert_eq!(code(&long), 0, "axe {words:?} --help: {}", stderr(&long));
        assert!(stdout(&short).starts_with("Usage: axe"), "{words:?}");
        assert_eq!(stdout(&short), stdout(&long), "{words:?}");
        assert_eq!(stderr(&short), "");
    }
}

#[test]
fn dash_h_as_an_options_value_or_after_dash_dash_is_not_help() {
    let home = Home::new();
    home.plain_agent("a", "openai/gpt-4o");
    // The user message "-h".
    let out = home.run(&["run", "a", "-p", "-h", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("=== Dry Run ==="),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("\n-h\n"), "{}", stdout(&out));
    // The agent named "-h".
    let out = home.run(&["run", "--", "-h"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: agent config not found: -h"),
        "{}",
        stderr(&out)
    );
}

/// `axe run`'s flags, every one.
const RUN_FLAGS: &[&str] = &[
    "-p",
    "--prompt",
    "--model",
    "--skill",
    "--workdir",
    "--var",
    "--output-schema",
    "--agents-dir",
    "--dry-run",
    "--json",
    "--stream",
    "-v",
    "--verbose",
    "-q",
    "--quiet",
    "--trace",
    "--trace-bodies",
    "--no-log",
    "--timeout",
    "--max-tokens",
    "--max-turns",
    "--retries",
    "--no-prompt-cache",
    "--each",
    "--each-file",
    "--jobs",
    "--unordered",
    "--resume",
    "--prompt-field",
    "--shard",
    "--provider-batch",
    "--batch-wait",
    "--max-cost",
    "--artifact-dir",
    "--keep-artifacts",
    "-h",
    "--help",
];

#[test]
fn run_help_groups_every_flag_in_under_50_lines_of_at_most_100_characters() {
    let home = Home::new();
    let out = home.run(&["run", "-h"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().count() < 50,
        "{} lines:\n{text}",
        text.lines().count()
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too long: {line}");
    }
    // The groups, in this order.
    let at = |header: &str| {
        text.lines()
            .position(|l| l.starts_with(header))
            .unwrap_or_else(|| panic!("no {header}:\n{text}"))
    };
    let groups = [
        at("What to run:"),
        at("What to print:"),
        at("Limits:"),
        at("Batch"),
    ];
    assert!(groups.is_sorted(), "{groups:?}\n{text}");
    // Each flag starts a line of its own (its entry), with a description.
    for flag in RUN_FLAGS {
        let entry = text.lines().find(|l| {
            l.trim_start()
                .split([',', ' '])
                .filter(|w| !w.is_empty())
                .take_while(|w| w.starts_with('-'))
                .any(|w| w == *flag)
        });
        let entry = entry.unwrap_or_else(|| panic!("run's help lacks {flag}:\n{text}"));
        assert!(entry.split_whitespace().count() > 2, "{entry}");
    }
    // Where it was put: in its group.
    let line_of = |flag: &str| {
        text.lines()
            .position(|l| l.trim_start().starts_with(flag))
            .unwrap()
    };
    assert!(line_of("--dry-run") > groups[1] && line_of("--dry-run") < groups[2]);
    assert!(line_of("--max-tokens") > groups[2] && line_of("--max-tokens") < groups[3]);
    assert!(line_of("--each ") > groups[3]);
    assert!(line_of("--model") > groups[0] && line_of("--model") < groups[1]);
}

#[test]
fn a_command_without_its_subcommand_prints_its_own_help() {
    let home = Home::new();
    for (command, subcommands) in [
        (
            "agents",
            &["list", "show", "init", "edit", "check", "tree", "export"][..],
        ),
        ("mcp", &["list", "tools", "serve"][..]),
        ("config", &["path", "init"][..]),
    ] {
        let out = home.run(&[command]);
        assert_eq!(code(&out), 0, "axe {command}: {}", stderr(&out));
        assert_eq!(stderr(&out), "");
        let text = stdout(&out);
        assert_eq!(text, stdout(&home.run(&[command, "--help"])));
        assert!(
            text.starts_with(&format!("Usage: axe {command} ")),
            "{text}"
        );
        let listed: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "Commands:")
            .filter_map(|l| l.strip_prefix("  ").filter(|r| !r.starts_with(' ')))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(listed, subcommands, "{text}");
    }
}

// ---------------------------------------------------------------------------
// The help's contents (design §2.1)
// ---------------------------------------------------------------------------

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

/// The flags of a help text, in its `Options:` section or in groups of
/// them (`What to run:`, ...), as (flag names, description with wrapped
/// lines joined by single spaces).
fn option_entries(help: &str) -> Vec<(Vec<String>, String)> {
    let mut entries: Vec<(Vec<String>, String)> = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_options = line.trim_end().ends_with(':') && !line.starts_with("Positional");
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
