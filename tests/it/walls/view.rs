//! What a confined process can see and reach through the filesystem
//! (issue 31; design §10.3, §10.5, §10.7), through the binary.
//!
//! A workdir or a `[sandbox] write` path that lies where another agent's
//! commands may write is opened once, with no link followed below the
//! directory it is written against: an agent that swaps it for a link to
//! the home gets the next run refused, and the sub-agent called after it
//! gets an error, never a write in the home.

use std::path::Path;

use serde_json::json;

use crate::common::*;

/// A model whose first answer makes `calls`, and whose next says done.
fn script(calls: &[Call]) -> FakeServer {
    FakeServer::tool_loop(P::OpenAi.tool_calls(calls), P::OpenAi.text("done"))
}

/// `agent` run against `server`.
fn run(s: &ToolsSetup, server: &FakeServer, agent: &str) -> std::process::Output {
    s.home
        .axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", agent, "-p", "go", "--timeout", "60"])
        .output()
        .unwrap()
}

/// Agent `hands`'s command replaces `name` in its workdir with a link to
/// the test's home.
fn swap_for_a_link_home(s: &ToolsSetup, name: &str) {
    std::fs::create_dir_all(s.work.join(name)).unwrap();
    let swap = format!("rm -rf {name} && ln -s \"$HOME\" {name} && echo swapped");
    let server = script(&[("c1", "run_command", json!({ "command": swap }))]);
    let out = run(s, &server, "hands");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let link = std::fs::read_link(s.work.join(name)).unwrap();
    assert_eq!(link, s.home.dir.path());
}

/// The files named `pwned*` in the test's home.
fn pwned(home: &Path) -> Vec<String> {
    std::fs::read_dir(home)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pwned"))
        .collect()
}

/// A model's writes, by the file tools and by a command.
fn writes() -> Vec<Call<'static>> {
    vec![
        (
            "w1",
            "write_file",
            json!({"path": "pwned-by-file.txt", "content": "x"}),
        ),
        (
            "w2",
            "run_command",
            json!({"command": "echo x > pwned-by-command.txt"}),
        ),
    ]
}

/// Agent A's command swaps a directory in its workdir for a link to the
/// home; agent B, whose workdir it is, runs next: refused before anything
/// is sent, naming the link, and nothing is written in the home.
#[test]
fn a_workdir_swapped_for_a_link_by_another_agents_command_is_refused() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let sub = s.work.join("sub");
    s.home.named_agent(
        "second",
        P::OpenAi.model(),
        &format!(
            "workdir = {:?}\ntools = [\"write_file\", \"run_command\"]\n",
            sub.display().to_string()
        ),
    );
    swap_for_a_link_home(&s, "sub");
    let server = script(&writes());
    let out = run(&s, &server, "second");
    assert_eq!(pwned(s.home.dir.path()), Vec::<String>::new());
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&sub.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

/// The same within one run: `hands` swaps its sub-agent's workdir for a
/// link, then calls it; the sub-agent's call fails, the home untouched.
#[test]
fn a_sub_agents_workdir_swapped_for_a_link_by_its_caller_is_refused() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "sub_agents = [\"second\"]\n");
    let sub = s.work.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    s.home.named_agent(
        "second",
        P::OpenAi.model(),
        &format!(
            "workdir = {:?}\ntools = [\"write_file\", \"run_command\"]\n",
            sub.display().to_string()
        ),
    );
    let swap = "rm -rf sub && ln -s \"$HOME\" sub && echo swapped";
    let server = FakeServer::route(move |req| {
        let done = req.tool_result_texts().len();
        let answer = match (req.who().as_str(), done) {
            ("hands", 0) => {
                P::OpenAi.tool_calls(&[("c1", "run_command", json!({"command": swap}))])
            }
            ("hands", 1) => {
                P::OpenAi.tool_calls(&[("c2", "call_agent", delegate("second", "write"))])
            }
            ("second", 0) => P::OpenAi.tool_calls(&writes()),
            _ => P::OpenAi.text("done"),
        };
        Reply::Json(200, answer)
    });
    let out = run(&s, &server, "hands");
    assert_eq!(pwned(s.home.dir.path()), Vec::<String>::new());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(server.sent_by("second").is_empty(), "the sub-agent ran");
    let last = server.requests().last().unwrap().tool_result_texts();
    let said = last.last().unwrap();
    assert!(
        said.contains(&sub.display().to_string()) && said.contains("symbolic link"),
        "{said}"
    );
}

/// A `[sandbox] write` path swapped for a link to the home by another
/// agent's command: the agent that lists it is refused before anything is
/// sent, and its command writes nothing in the home.
#[test]
fn a_write_path_swapped_for_a_link_by_another_agents_command_is_refused() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let own = s.home.dir.path().join("own");
    std::fs::create_dir_all(&own).unwrap();
    let data = s.work.join("data");
    s.home.named_agent(
        "third",
        P::OpenAi.model(),
        &format!(
            "workdir = {:?}\ntools = [\"run_command\"]\n[sandbox]\nwrite = [{:?}]\n",
            own.display().to_string(),
            data.display().to_string()
        ),
    );
    swap_for_a_link_home(&s, "data");
    let write = format!("echo x > {}/pwned-by-command.txt", data.display());
    let server = script(&[("w1", "run_command", json!({ "command": write }))]);
    let out = run(&s, &server, "third");
    assert_eq!(pwned(s.home.dir.path()), Vec::<String>::new());
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&data.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}
