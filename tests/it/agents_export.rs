//! `axe agents show` and `axe agents export` across the three formats
//! (design §3.17): an imported agent shown with where it came from, any
//! agent written as Claude Code's, Codex's or axe's file with each key the
//! format cannot hold named on stderr, the file written whole and never
//! over another without `--force`, and the round trips axe -> Claude Code
//! -> axe and axe -> Codex -> axe keeping, field by field, what the
//! formats share.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Writes `text` at `dir/rel`, its directories made.
fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn agents_show_says_where_an_imported_agent_came_from() {
    let home = Home::new();
    write(
        home.dir.path(),
        ".claude/agents/rev.md",
        "---\nname: rev\ndescription: Reviews\ntools: Read, Grep, TodoWrite\nmodel: haiku\n\
         maxTurns: 4\n---\nYou review.\n",
    );
    let out = home.run(&["agents", "show", "rev"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = home.dir.path().join(".claude/agents/rev.md");
    assert_eq!(
        stdout(&out),
        format!(
            "Name:          rev\n\
             Description:   Reviews\n\
             Model:         anthropic/claude-haiku-4-5\n\
             System Prompt: You review.\n\
             Skill:         (none)\n\
             Files:         (none)\n\
             Workdir:       (none)\n\
             Sub-Agents:    (none)\n\
             AGENTS.md:     yes (the repository's root down to the workdir)\n\
             Tools:         read_file, search_files\n\
             Budget Turns:  4\n\
             Temperature:   default\n\
             Max Tokens:    default\n\
             File:          {}\n\
             Format:        Claude Code's, read as axe's\n\
             Notes:         model \"haiku\" is anthropic/claude-haiku-4-5, as config.toml's \
             [aliases] (or its default) says\n",
            file.display()
        )
    );
    assert!(
        stderr(&out).contains("not offered: TodoWrite"),
        "{}",
        stderr(&out)
    );
    write(
        home.dir.path(),
        ".codex/agents/cx.toml",
        "developer_instructions = \"Do it.\"\nmodel = \"gpt-5\"\nsandbox_mode = \"read-only\"\n",
    );
    let out = home.run(&["agents", "show", "cx"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for row in [
        "Model:         openai/gpt-5\n",
        "Tools:         read_file, list_directory, search_files\n",
        "Format:        Codex's, read as axe's\n",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // axe's own: no Format row.
    home.agent("own", "name = \"own\"\n");
    let out = home.run(&["agents", "show", "own"]);
    assert!(!stdout(&out).contains("Format:"), "{}", stdout(&out));
}
