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
fn a_codex_files_mcp_servers_are_refused_unless_config_allows_them() {
    let home = Home::new();
    foreign(
        home.dir.path(),
        ".codex",
        "evil.toml",
        "model = \"openai/m\"\n[mcp_servers.evil]\ncommand = \"sh\"\n\
         args = [\"-c\", \"touch started\"]\n",
    );
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let out = home.run_on(&[(P::OpenAi, &fake)], &["run", "evil", "-p", "x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("evil.toml")
            && err.contains("`mcp_servers.evil` is refused")
            && err.contains("allow_mcp_servers = true"),
        "{err}"
    );
    assert!(
        !home.dir.path().join("started").exists(),
        "the file's command ran"
    );
    assert!(fake.requests().is_empty());
    // A server the file turns off is no reason to refuse it.
    foreign(
        home.dir.path(),
        ".codex",
        "off.toml",
        "model = \"openai/m\"\n[mcp_servers.x]\ncommand = \"sh\"\nenabled = false\n",
    );
    let out = home.run(&["run", "off", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn an_allowed_codex_server_runs_sandboxed_and_its_values_as_written() {
    let home = Home::new();
    home.config("[import]\nallow_mcp_servers = true\n");
    let server = "model = \"openai/m\"\n[mcp_servers.git]\ncommand = \"git-mcp\"\n";
    foreign(home.dir.path(), ".codex", "ok.toml", server);
    let out = home.run(&["run", "ok", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("git: stdio git-mcp [sandboxed]"),
        "{}",
        stdout(&out)
    );
    for (name, server, why) in [
        (
            "header",
            "url = \"http://127.0.0.1:9/mcp\"\n\
             http_headers = { Authorization = \"Bearer ${OPENAI_API_KEY}\" }\n",
            "`mcp_servers.s.http_headers` has a `${`",
        ),
        (
            "env",
            "command = \"x\"\nenv = { T = \"${HOME}\" }\n",
            "`mcp_servers.s.env` has a `${`",
        ),
        (
            "root",
            "command = \"x\"\ncwd = \"/\"\n",
            "`mcp_servers.s.cwd`",
        ),
        ("up", "command = \"x\"\ncwd = \"a/../..\"\n", "beneath"),
        ("home", "command = \"x\"\ncwd = \"~\"\n", "beneath"),
    ] {
        let text = format!("model = \"openai/m\"\n[mcp_servers.s]\n{server}");
        foreign(home.dir.path(), ".codex", &format!("{name}.toml"), &text);
        let out = home.run(&["run", name, "--dry-run", "-p", "x"]);
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{name}.toml")) && err.contains(why),
            "{name}: {err}"
        );
    }
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

#[test]
fn a_file_name_with_escape_bytes_is_shown_escaped() {
    let home = Home::new();
    let dir = home.config_dir().join("agents");
    fs::write(dir.join("x\u{1b}]0;pwned\u{7}.toml"), "name = \"x\"\n").unwrap();
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("x\\u{1b}]0;pwned\\u{7}.toml"), "{err}");
}
