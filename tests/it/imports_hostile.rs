//! Agent files of other tools written by someone else (design §3.17): a
//! Codex file's MCP servers refused unless config.toml allows them, then
//! sandboxed and taken as written; a Claude Code header nested to crash the
//! parser, or with keys enough to make a check quadratic, a warning naming
//! the file in bounded time.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;

/// Writes `<dir>/<tool>/agents/<file>`.
fn foreign(dir: &Path, tool: &str, file: &str, text: &str) {
    let agents = dir.join(tool).join("agents");
    fs::create_dir_all(&agents).unwrap();
    fs::write(agents.join(file), text).unwrap();
}

#[test]
fn a_claude_header_nested_50000_deep_is_a_warning_not_a_crash() {
    let home = Home::new();
    home.agent("mine", "name = \"mine\"\ndescription = \"axe's own\"\n");
    for (name, header) in [
        ("block", format!("{}x\n", "- ".repeat(50_000))),
        ("flow", format!("a: {}\n", "[".repeat(50_000))),
    ] {
        let text = format!("---\n{header}---\nbody\n");
        foreign(home.dir.path(), ".claude", &format!("{name}.md"), &text);
    }
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "mine - axe's own\n");
    let err = stderr(&out);
    for name in ["block", "flow"] {
        assert!(err.contains(&format!("{name}.md")), "{name}: {err}");
    }
    assert!(err.contains("deeper than 64"), "{err}");
    let out = home.run(&[
        "run",
        "block",
        "--dry-run",
        "-p",
        "x",
        "--model",
        "openai/m",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("block.md"), "{}", stderr(&out));
}

#[test]
fn a_claude_header_of_90_000_keys_is_read_in_bounded_time() {
    let home = Home::new();
    let mut header = String::from("---\nname: many\ndescription: keys\n");
    // Under the 1 MiB an agent file may be.
    for i in 0..90_000 {
        header.push_str(&format!("k{i}: v\n"));
    }
    header.push_str("---\nbody\n");
    foreign(home.dir.path(), ".claude", "many.md", &header);
    let started = Instant::now();
    let out = home.run(&["agents", "list"]);
    let took = started.elapsed();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("many - keys"), "{}", stdout(&out));
    // 111,789 keys took 51 s with a quadratic check; 20 s allows for a
    // loaded machine and a debug build.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
