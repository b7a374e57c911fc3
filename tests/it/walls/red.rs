//! The second outside review of the walls (issue 31), through the binary:
//! variants of the fixed attacks that got through, each now held. What a
//! command may not write beneath its workdir: every directory axe reads
//! agents or its config from (`--agents-dir`, the current directory's
//! `axe/`, the config directory), whether it exists when the command
//! starts or not, and not by renaming a directory above it either; a
//! protected name a command creates is moved aside however the command
//! tries to keep it (names taken in advance, a workdir made read-only).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use crate::common::*;

/// A model that runs `script` with `run_command`, then ends.
fn model(script: &str) -> FakeServer {
    let first = P::OpenAi.tool_calls(&[("c1", "run_command", json!({"command": script}))]);
    FakeServer::tool_loop(first, P::OpenAi.text("done"))
}

/// `axe run hands -p go` on `server`, with `args` after it.
fn axe(s: &ToolsSetup, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = s.home.axe_on(&[(P::OpenAi, server)]);
    cmd.args(["run", "hands", "-p", "go", "--timeout", "60"])
        .args(args);
    cmd
}

/// Runs `cmd`, which must succeed; what the command's result said.
fn said(mut cmd: Command, server: &FakeServer) -> (Output, String) {
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts().join("\n"))
        .unwrap_or_default();
    (out, said)
}

/// What `path` holds, or `-` when it is not a readable file.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|_| "-".into())
}

/// `hands` copied into `config`'s `agents`: the agent, where the config
/// directory is elsewhere.
fn agent_in(s: &ToolsSetup, config: &Path) {
    std::fs::create_dir_all(config.join("agents")).unwrap();
    let file = s.home.config_dir().join("agents/hands.toml");
    std::fs::copy(file, config.join("agents/hands.toml")).unwrap();
}

/// An agent directory given with `--agents-dir` inside the workdir: a
/// command wrote its files (a server declared there runs unconfined on the
/// next run); now it is read-only to commands, as the config directory is.
#[test]
fn an_agent_directory_beneath_the_workdir_is_read_only_to_commands() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let team = s.work.join("team/agents");
    std::fs::create_dir_all(&team).unwrap();
    let helper = "name = \"helper\"\nmodel = \"openai/gpt-4o\"\n";
    std::fs::write(team.join("helper.toml"), helper).unwrap();
    let script = "echo '[[mcp_servers]]' >> team/agents/helper.toml; \
                  echo 'name = \"x\"' > team/agents/x.toml; echo done";
    let server = model(script);
    let mut cmd = axe(&s, &server, &["--agents-dir"]);
    cmd.arg(&team);
    let (_, said) = said(cmd, &server);
    assert!(
        said.contains("Read-only file system") && said.contains("done"),
        "{said}"
    );
    assert_eq!(read(&team.join("helper.toml")), helper, "{said}");
    assert!(!team.join("x.toml").exists(), "{said}");
}

/// axe run from a directory below the workdir's top, which has no `axe/`
/// yet: a command made `axe/agents` there, read by the next run from that
/// directory; now it is moved aside.
#[test]
fn the_current_directorys_axe_a_command_makes_below_the_top_is_moved_aside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let sub = s.work.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let script =
        "mkdir -p sub/axe/agents && echo 'name = \"y\"' > sub/axe/agents/y.toml && echo made";
    let server = model(script);
    let mut cmd = axe(&s, &server, &[]);
    cmd.current_dir(&sub);
    let (out, said) = said(cmd, &server);
    assert!(said.contains("made"), "{said}");
    assert!(!sub.join("axe").exists(), "{said}");
    assert!(
        sub.join("axe.refused-by-axe/agents/y.toml").exists(),
        "{said}"
    );
    assert!(
        stderr(&out).contains(&format!(
            "axe: warning: the command created {}",
            sub.join("axe").display()
        )),
        "{}",
        stderr(&out)
    );
}

/// A config directory that does not exist yet, beneath the workdir: a
/// command made it and a config.toml whose base URL took the next run's
/// key; now it is moved aside.
#[test]
fn a_config_directory_a_command_makes_is_moved_aside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let script = "mkdir -p .config/axe && \
                  printf '[providers.openai]\\nbase_url = \"http://127.0.0.1:9\"\\n' \
                  > .config/axe/config.toml && echo made";
    let server = model(script);
    let mut cmd = axe(&s, &server, &["--agents-dir"]);
    cmd.arg(s.home.config_dir().join("agents"))
        .env("XDG_CONFIG_HOME", s.work.join(".config"));
    let (out, said) = said(cmd, &server);
    assert!(said.contains("made"), "{said}");
    assert!(!s.work.join(".config").exists(), "{said}");
    let aside = s.work.join(".config.refused-by-axe/axe/config.toml");
    assert!(aside.exists(), "{said}");
    assert!(said.contains("moved to"), "{said}");
    assert!(stderr(&out).contains("axe: warning: the command created"));
}

/// The config directory beneath the workdir, read-only to commands: the
/// directory above it renamed and made again held a config.toml of the
/// command's where axe reads its own; now what was made is moved aside.
#[test]
fn a_directory_above_a_protected_one_renamed_and_made_again_is_moved_aside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let config = s.work.join("cfg/axe");
    agent_in(&s, &config);
    let script = "echo x >> cfg/axe/config.toml || echo read-only; \
                  mv cfg cfg-old && mkdir -p cfg/axe && echo evil > cfg/axe/config.toml && echo swapped";
    let server = model(script);
    let mut cmd = axe(&s, &server, &[]);
    cmd.env("XDG_CONFIG_HOME", s.work.join("cfg"));
    let (_, said) = said(cmd, &server);
    assert!(said.contains("read-only"), "{said}");
    assert!(said.contains("swapped"), "{said}");
    assert_eq!(read(&config.join("config.toml")), "-", "{said}");
    assert_eq!(
        read(&s.work.join("cfg.refused-by-axe/axe/config.toml")),
        "evil\n"
    );
    assert!(s.work.join("cfg-old/axe/agents/hands.toml").exists());
}

/// 99 names taken in advance: the `.git` a command made stayed, with its
/// fsmonitor, and nothing said so; now it is moved aside all the same.
#[test]
fn a_protected_name_is_moved_aside_whatever_names_were_taken_first() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let script = "touch .git.refused-by-axe; \
                  for i in $(seq 2 200); do touch .git.refused-by-axe-$i; done; \
                  mkdir .git && echo '[core] fsmonitor = x' > .git/config && echo made";
    let server = model(script);
    let (out, said) = said(axe(&s, &server, &[]), &server);
    assert!(said.contains("made"), "{said}");
    assert!(!s.work.join(".git").exists(), "{said}");
    assert!(said.contains("moved to"), "{said}");
    assert!(stderr(&out).contains("axe: warning: the command created"));
}

/// A normal user's command made its workdir read-only after making
/// `.git` and `axe/`: both stayed, and nothing said so; now they are moved
/// aside, and the workdir keeps the mode the command gave it.
#[test]
fn a_workdir_made_read_only_still_has_protected_names_moved_aside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let script = "mkdir .git axe && echo x > .git/config && chmod 555 . && echo locked";
    let server = model(script);
    let Some(cmd) = super::as_a_normal_user(&axe(&s, &server, &[])) else {
        return;
    };
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(s.home.dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let (_, said) = said(cmd, &server);
    assert!(said.contains("locked"), "{said}");
    for name in [".git", "axe"] {
        assert!(!s.work.join(name).exists(), "{name}: {said}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&s.work).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o555);
}

/// `.git` a link to the repository (as `repo` makes them): the mount
/// protects where it leads, and a command removed the link and made a
/// `.git` of its own, fsmonitor and all; now that one is moved aside.
#[test]
fn a_git_link_replaced_by_a_directory_is_moved_aside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    std::fs::create_dir_all(s.work.join("store")).unwrap();
    std::fs::write(s.work.join("store/config"), "[core]\n").unwrap();
    std::os::unix::fs::symlink("store", s.work.join(".git")).unwrap();
    let script = "echo x >> .git/config || echo read-only; \
                  rm .git && mkdir .git && echo '[core] fsmonitor = x' > .git/config && echo swapped";
    let server = model(script);
    let (_, said) = said(axe(&s, &server, &[]), &server);
    assert!(
        said.contains("read-only") && said.contains("swapped"),
        "{said}"
    );
    assert_eq!(read(&s.work.join("store/config")), "[core]\n");
    assert_eq!(read(&s.work.join(".git/config")), "-", "{said}");
    assert!(said.contains("moved to"), "{said}");
}

/// A chunked body whose chunk-size line never ends, on a loopback server
/// (no token): 64 MiB of hex digits were read into memory (and 600 MiB
/// took the server from 5 to 615 MB); now the line is refused at 4 KiB.
#[test]
fn a_chunk_size_line_is_bounded() {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    let fake = FakeServer::json(200, &openai_text("ran", 1, 1));
    let server = crate::serve::Server::start(&home, &fake, &[]);
    let before = super::serve::peak_kib(server.pid());
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         transfer-encoding: chunked\r\n\r\n",
        server.addr
    );
    let (r, after) = super::serve::flood_head(&server, &head, &[b'1'; 64 * 1024], 64 << 20);
    assert_eq!(r.status, 400, "{} {}", r.head, server.log());
    assert!(
        after < before + 16 * 1024,
        "one chunk-size line took the server from {before} KiB to {after} KiB"
    );
    assert!(fake.requests().is_empty());
}

/// A sandboxed MCP server made `.git` in its directory, which had none,
/// and wrote `core.fsmonitor` there: it stayed after the run (the user's
/// next `git status` ran it); now it is moved aside when the server stops.
#[test]
fn a_protected_name_a_sandboxed_mcp_server_creates_is_moved_aside() {
    if !python3("a sandboxed MCP server's protected names moved aside") || !landlock() {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/files_server.py");
    let fixtures = script.parent().unwrap().display().to_string();
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let start = format!("mkdir .git && exec python3 {}", script.display());
    home.config(&format!(
        "[[mcp_servers]]\nname = \"files\"\ncommand = \"sh\"\nargs = [\"-c\", {start:?}]\n\
         cwd = {:?}\n[mcp_servers.sandbox]\nread = [{fixtures:?}]\n",
        work.display().to_string()
    ));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
    let path = work.join(".git/config").display().to_string();
    let first = P::OpenAi.tool_calls(&[(
        "c1",
        "files__write_file",
        json!({"path": path, "text": "[core]\n\tfsmonitor = x\n"}),
    )]);
    let model = FakeServer::tool_loop(first, P::OpenAi.text("done"));
    let out = home
        .axe_on(&[(P::OpenAi, &model)])
        .args(["run", "user", "-p", "go", "--timeout", "60"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!work.join(".git").exists(), "the server's .git stayed");
    assert!(work.join(".git.refused-by-axe/config").exists());
    assert!(
        stderr(&out).contains("axe: warning: the MCP server \"files\" created"),
        "{}",
        stderr(&out)
    );
}

/// Context files' names come from a directory an agent may write: a link
/// named with a newline and an escape sequence forged an `axe: warning:`
/// line and reached the terminal raw under --verbose (its Skipped line),
/// and a file so named did in --dry-run's list; now each is one line, its
/// control characters written out.
#[test]
fn a_context_files_name_reaches_the_terminal_as_one_escaped_line() {
    let s = ToolsSetup::new(P::OpenAi, &[], "files = [\"*\"]\n");
    let forged = "x\naxe: warning: FORGED\u{1b}[31m";
    std::os::unix::fs::symlink("/etc/hostname", s.work.join(format!("link{forged}"))).unwrap();
    std::fs::write(s.work.join(format!("file{forged}")), "text").unwrap();
    let server = FakeServer::json(200, &P::OpenAi.text("done"));
    let out = s
        .home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "hands", "-p", "go", "--verbose"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(
        !err.lines().any(|l| l.starts_with("axe: warning: FORGED")),
        "{err}"
    );
    assert!(
        err.contains("Skipped:  linkx axe: warning: FORGED\\u{1b}[31m"),
        "{err}"
    );
    let out = s
        .home
        .axe()
        .args(["run", "hands", "-p", "go", "--dry-run"])
        .output()
        .unwrap();
    let listed = stdout(&out);
    let files = listed.split("--- Files").nth(1).unwrap_or_default();
    let files = files.split("--- Stdin").next().unwrap_or_default();
    assert!(
        files.contains("filex axe: warning: FORGED\\u{1b}[31m"),
        "{listed}"
    );
    assert!(!files.contains('\u{1b}'), "{listed}");
}
