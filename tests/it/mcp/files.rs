//! A stdio server of the test's own (`fixtures/mcp/files_server.py`, which
//! writes and reads files on request) through the binary (design §9.4):
//! what it says on stderr goes to `--verbose` and the trace, never to the
//! answer; one process serves the parent and its sub-agent; and with
//! `sandbox` the kernel keeps it inside its directory.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// The fixture server, when `python3` runs here.
fn files_server() -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/files_server.py");
    python3("the files server's tests (an MCP server of the test's own)").then_some(script)
}

/// `[[mcp_servers]]` for the files server, started in `dir`, with `extra`.
fn table(script: &Path, dir: &Path, extra: &str) -> String {
    format!(
        "[[mcp_servers]]\nname = \"files\"\ncommand = \"python3\"\nargs = [{:?}]\ncwd = {:?}\n{extra}\n",
        script.display().to_string(),
        dir.display().to_string()
    )
}

/// A fake OpenAI model: the first request of each agent makes `calls`,
/// its next one ends with `done`.
fn model(calls: Vec<(String, String, Value)>) -> FakeServer {
    let first: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    let first = P::OpenAi.tool_calls(&first);
    let done = P::OpenAi.text("done");
    FakeServer::tool_loop(first, done)
}

fn run(home: &Home, server: &FakeServer, extra: &[&str]) -> std::process::Output {
    home.axe()
        .env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go", "--timeout", "60"])
        .args(extra)
        .output()
        .unwrap()
}

fn results(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.has_tool_results())
        .flat_map(|r| r.tool_result_texts())
        .collect()
}

#[test]
fn a_servers_stderr_goes_to_verbose_and_the_trace_never_to_the_answer() {
    let Some(script) = files_server() else { return };
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    home.config(&table(&script, &work, ""));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
    let path = work.join("a.txt").display().to_string();
    let server = model(vec![(
        "c1".into(),
        "files__write_file".into(),
        json!({"path": path, "text": "x"}),
    )]);
    let trace = home.dir.path().join("trace.jsonl");
    let out = run(
        &home,
        &server,
        &["--verbose", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    let err = stderr(&out);
    assert!(
        err.contains("[mcp] \"files\" stderr: files server: hello on stderr"),
        "{err}"
    );
    let events: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said = events
        .iter()
        .find(|e| e["event"] == "mcp" && e["kind"] == "stderr")
        .expect("an mcp stderr event");
    assert_eq!(said["server"], "files");
    assert_eq!(said["text"], "files server: hello on stderr");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "mcp" && e["kind"] == "ready"),
        "{events:?}"
    );
}

#[test]
fn one_server_process_serves_the_parent_and_its_sub_agent() {
    let Some(script) = files_server() else { return };
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    home.config(&table(&script, &work, ""));
    home.named_agent(
        "user",
        P::OpenAi.model(),
        "mcp_servers = [\"files\"]\nsub_agents = [\"helper\"]\n",
    );
    home.named_agent("helper", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
    let (parent, sub) = (work.join("parent.txt"), work.join("sub.txt"));
    let write = |path: &Path| json!({"path": path.display().to_string(), "text": "x"});
    // The parent writes and delegates at once; the sub-agent (whose
    // request offers no call_agent) writes its own file.
    let parent_calls = P::OpenAi.tool_calls(&[
        ("c1", "files__write_file", write(&parent)),
        (
            "c2",
            "call_agent",
            json!({"agent": "helper", "task": "write"}),
        ),
    ]);
    let sub_calls = P::OpenAi.tool_calls(&[("s1", "files__write_file", write(&sub))]);
    let done = P::OpenAi.text("done");
    let server = FakeServer::route(move |req| {
        let body = req.json();
        let offers_call_agent = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "call_agent"));
        match (req.has_tool_results(), offers_call_agent) {
            (true, _) => Reply::Json(200, done.clone()),
            (false, true) => Reply::Json(200, parent_calls.clone()),
            (false, false) => Reply::Json(200, sub_calls.clone()),
        }
    });
    let out = run(&home, &server, &["--verbose"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(parent.exists() && sub.exists(), "{:?}", results(&server));
    let err = stderr(&out);
    let starts = err
        .lines()
        .filter(|l| l.starts_with("[mcp] \"files\" starting"))
        .count();
    assert_eq!(starts, 1, "{err}");
}

#[test]
fn a_sandboxed_server_writes_in_its_directory_and_nowhere_else() {
    let Some(script) = files_server() else { return };
    if !landlock() {
        return;
    }
    let fixtures = script.parent().unwrap().display().to_string();
    for sandboxed in [true, false] {
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let outside = home.dir.path().join("outside.txt");
        let secret = home.dir.path().join("secret.txt");
        std::fs::write(&secret, "not for the server").unwrap();
        let sandbox = if sandboxed {
            format!("[mcp_servers.sandbox]\nread = [{fixtures:?}]\n")
        } else {
            String::new()
        };
        home.config(&table(&script, &work, &sandbox));
        home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
        let inside = work.join("inside.txt");
        let arg = |p: &Path| json!({"path": p.display().to_string(), "text": "x"});
        let server = model(vec![
            ("c1".into(), "files__write_file".into(), arg(&inside)),
            ("c2".into(), "files__write_file".into(), arg(&outside)),
            ("c3".into(), "files__read_file".into(), arg(&secret)),
        ]);
        let out = run(&home, &server, &[]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let got = results(&server);
        assert!(inside.exists(), "{got:?}");
        assert!(got[0].starts_with("wrote "), "{got:?}");
        if sandboxed {
            // Outside its view (design §8.3): the home is there only as
            // the read-only directory above the workdir, the secret not at all.
            assert!(!outside.exists(), "{got:?}");
            assert!(got[1].contains("Read-only file system"), "{got:?}");
            assert!(got[2].contains("No such file"), "{got:?}");
        } else {
            assert!(outside.exists(), "{got:?}");
            assert_eq!(got[2], "not for the server", "{got:?}");
        }
    }
}

#[test]
fn a_sandboxed_server_without_its_own_files_readable_does_not_start() {
    let Some(script) = files_server() else { return };
    if !landlock() {
        return;
    }
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // The script lives outside the server's directory and is not granted.
    home.config(&table(&script, &work, "sandbox = true"));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
    let server = model(vec![]);
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("axe: MCP server \"files\""), "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn where_the_kernel_cannot_protect_its_directory_a_sandboxed_server_starts_only_if_told() {
    // No user namespaces: nothing can be bound read-only over `.git` in the
    // server's directory (design §8.6), so the server does not start
    // unless its table says protect = false in so many words.
    let Some(script) = files_server() else { return };
    if !landlock() {
        return;
    }
    let fixtures = script.parent().unwrap().display().to_string();
    for protect in ["", "protect = false\n"] {
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        let sandbox = format!("[mcp_servers.sandbox]\nread = [{fixtures:?}]\n{protect}");
        home.config(&table(&script, &work, &sandbox));
        home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"files\"]\n");
        let server = FakeServer::route(|_| Reply::Json(200, P::OpenAi.text("done")));
        let mut cmd = home.axe();
        cmd.env("OPENAI_API_KEY", "sk-test-key-0123456789")
            .env(P::OpenAi.base_url_var(), &server.url)
            .args(["run", "user", "-p", "go", "--timeout", "60"]);
        let Some(mut cmd) = crate::walls::without_user_namespaces(cmd) else {
            return;
        };
        let out = cmd.output().unwrap();
        if protect.is_empty() {
            assert_eq!(code(&out), 2, "{}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains("cannot be kept from writing .git"), "{err}");
            assert!(err.contains("[mcp_servers.sandbox]"), "{err}");
            assert!(server.requests().is_empty());
        } else {
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert_eq!(stdout(&out), "done\n");
        }
    }
}
