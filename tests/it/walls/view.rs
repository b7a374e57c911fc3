//! What a confined process can see and reach through the filesystem
//! (issue 31; design §8.3, §8.5, §8.7), through the binary.
//!
//! Landlock does not mediate `connect()` on a socket file (before ABI 9),
//! so a command and a sandboxed MCP server run in a view of the
//! filesystem that holds only what they are granted: a Unix socket the
//! test listens on under its home or under `/tmp` does not exist for
//! them, one inside the workdir does, and `ls /` lists the view.
//!
//! A workdir or a `[sandbox] write` path that lies where another agent's
//! commands may write is opened once, with no link followed below the
//! directory it is written against: an agent that swaps it for a link to
//! the home gets the next run refused, and the sub-agent called after it
//! gets an error, never a write in the home.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::*;

/// A Unix socket the test listens on, removed on drop.
struct Listening {
    path: PathBuf,
    listener: UnixListener,
}

impl Listening {
    fn at(path: PathBuf) -> Listening {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        Listening { path, listener }
    }

    /// Connections accepted since the last look.
    fn reached(&self) -> usize {
        let mut n = 0;
        while self.listener.accept().is_ok() {
            n += 1;
        }
        n
    }

    fn shown(&self) -> String {
        self.path.display().to_string()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the view can be tested here: Landlock, namespaces, python3.
fn can_probe() -> bool {
    landlock() && python3("the filesystem view (Unix sockets and names outside the grants)")
}

/// A home whose agent `hands` has `run_command` and the sandboxed probe
/// server, its cwd the workdir; the probes copied into the workdir.
fn with_probe_server() -> ToolsSetup {
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "mcp_servers = [\"probe\"]\n");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/walls");
    for f in ["probe.py", "probe_server.py"] {
        std::fs::copy(fixtures.join(f), s.work.join(f)).unwrap();
    }
    s.home.config(&format!(
        "[[mcp_servers]]\nname = \"probe\"\ncommand = \"python3\"\nargs = [{:?}]\ncwd = {:?}\n\
         [mcp_servers.sandbox]\nnetwork = false\n",
        s.work.join("probe_server.py").display().to_string(),
        s.work.display().to_string(),
    ));
    s
}

/// The probe's lines of a result, without run_command's status line.
fn lines(result: &str) -> Vec<String> {
    result
        .lines()
        .filter(|l| !l.starts_with('['))
        .map(str::to_string)
        .collect()
}

/// Runs `calls` as `hands`; what each call got back, in order.
fn results(s: &ToolsSetup, calls: &[Call]) -> Vec<String> {
    let (out, results, _) = s.run(P::OpenAi, calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results.len(), calls.len(), "{results:?}");
    results
}

/// The top-level names the view should hold: the system's directories
/// that exist here, `/dev` and `/proc`, and the first component of the
/// workdir and of the temporary directory.
fn view_names(work: &Path) -> Vec<String> {
    let mut names: Vec<String> = [
        "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "sys",
    ]
    .iter()
    .filter(|n| Path::new("/").join(n).exists())
    .map(|n| n.to_string())
    .chain(["dev".to_string(), "proc".to_string()])
    .collect();
    for p in [
        work.to_path_buf(),
        std::env::temp_dir().canonicalize().unwrap(),
    ] {
        if let Some(std::path::Component::Normal(first)) = p.components().nth(1) {
            names.push(first.to_string_lossy().into_owned());
        }
    }
    names.sort();
    names.dedup();
    names
}

/// A socket under the test's home and one under `/tmp`, outside every
/// grant, are not there for a command nor for a sandboxed MCP server; one
/// inside the workdir is reached by both.
#[test]
fn no_unix_socket_outside_the_grants_exists_for_a_command_or_a_server() {
    if !can_probe() {
        return;
    }
    let s = with_probe_server();
    let home = Listening::at(s.home.dir.path().join("agent.sock"));
    let tmp = Listening::at(std::env::temp_dir().join(format!(
        "axe-view-{}-{}.sock",
        std::process::id(),
        fastrand::u32(..)
    )));
    let inside = Listening::at(s.work.join("inside.sock"));
    let paths = [home.shown(), tmp.shown(), inside.shown()];
    let script = format!("python3 probe.py unix {}", paths.join(" "));
    let mut args = vec!["unix".to_string()];
    args.extend(paths.iter().cloned());
    let got = results(
        &s,
        &[
            ("c1", "run_command", json!({ "command": script })),
            ("c2", "probe__probe", json!({ "args": args })),
        ],
    );
    let expected = vec![
        format!("unix {}: ENOENT", paths[0]),
        format!("unix {}: ENOENT", paths[1]),
        format!("unix {}: ok", paths[2]),
    ];
    for (who, result) in ["the command", "the server"].iter().zip(&got) {
        assert_eq!(lines(result), expected, "{who}");
    }
    assert_eq!(home.reached(), 0, "the socket in the home was reached");
    assert_eq!(tmp.reached(), 0, "the socket in /tmp was reached");
    assert_eq!(inside.reached(), 2, "the socket in the workdir");
}

/// `ls /` lists the view alone, from a command and from a sandboxed
/// server: the system's directories, `/dev` with the granted devices, and
/// the path down to the workdir; nothing else of `/tmp` or `/dev`.
#[test]
fn ls_slash_lists_only_the_view() {
    if !can_probe() {
        return;
    }
    let s = with_probe_server();
    let marker = std::env::temp_dir().join(format!("axe-view-marker-{}", std::process::id()));
    std::fs::write(&marker, "x").unwrap();
    let script = "ls -A / && echo --- && ls -A /dev && echo --- && ls -A /tmp";
    let got = results(
        &s,
        &[
            ("c1", "run_command", json!({ "command": script })),
            ("c2", "probe__probe", json!({ "args": ["ls", "/"] })),
        ],
    );
    let _ = std::fs::remove_file(&marker);
    let names = view_names(&s.work);
    let listed = lines(&got[0]);
    let parts: Vec<&[String]> = listed.split(|l| l == "---").collect();
    assert_eq!(parts.len(), 3, "{}", got[0]);
    assert_eq!(parts[0], names.as_slice(), "ls /");
    let devices = [
        "fd", "full", "null", "random", "stderr", "stdin", "stdout", "urandom", "zero",
    ];
    let mut dev = parts[1].to_vec();
    dev.sort();
    assert_eq!(dev, devices, "ls /dev");
    let marker_name = marker.file_name().unwrap().to_string_lossy().into_owned();
    assert!(!parts[2].contains(&marker_name), "ls /tmp: {:?}", parts[2]);
    assert!(parts[2].len() <= 2, "ls /tmp: {:?}", parts[2]);
    assert_eq!(
        lines(&got[1]),
        vec![format!("ls /: {}", names.join(" "))],
        "the server"
    );
}

/// `/etc/resolv.conf` as a link out of `/etc` (systemd-resolved's
/// `stub-resolv.conf` in `/run`), with the network on: the command reads it
/// through the link and names resolve; of the link's directory, only the
/// file is there. The test runs axe in a mount namespace of its own whose
/// `/etc` has that link (an overlay on the real one).
#[test]
fn a_resolv_conf_linked_out_of_etc_still_reads_with_the_network_on() {
    if !can_probe() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "[sandbox]\nnetwork = true\n");
    let stub = s.home.dir.path().join("resolve");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(stub.join("stub-resolv.conf"), "nameserver 127.0.0.53\n").unwrap();
    std::fs::write(stub.join("other"), "not granted").unwrap();
    let script = format!(
        "cat /etc/resolv.conf; ls {}; python3 -c 'import socket; \
         print(socket.getaddrinfo(\"localhost\", 80)[0][4][0])'",
        stub.display()
    );
    let server = script_of(&[("c1", "run_command", json!({ "command": script }))]);
    let mut cmd = s.home.axe();
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "hands", "-p", "go", "--timeout", "60"]);
    // The link is made in an overlay on /etc, seen only in that namespace.
    let layer = s.home.dir.path().join("layer");
    std::fs::create_dir_all(layer.join("upper")).unwrap();
    std::fs::create_dir_all(layer.join("work")).unwrap();
    let etc = format!(
        "mount -t overlay -o lowerdir=/etc,upperdir={l}/upper,workdir={l}/work overlay /etc && \
         rm -f /etc/resolv.conf && ln -s {}/stub-resolv.conf /etc/resolv.conf && \
         exec \"$0\" \"$@\"",
        stub.display(),
        l = layer.display()
    );
    let Some(mut cmd) = in_a_mount_namespace(&cmd, &etc) else {
        return;
    };
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap_or_default();
    assert_eq!(
        lines(&got.join("\n")),
        ["nameserver 127.0.0.53", "stub-resolv.conf", "127.0.0.1"],
        "{got:?}"
    );
}

/// `cmd` run by `sh -c prep` (which ends `exec "$0" "$@"`) in a mount
/// namespace of its own (`unshare -m`, in a user namespace of its own when
/// the test is not root); None, said, where one cannot be made.
fn in_a_mount_namespace(cmd: &std::process::Command, prep: &str) -> Option<std::process::Command> {
    // SAFETY: a getter without arguments.
    let root = unsafe { libc::geteuid() } == 0;
    let mut w = std::process::Command::new("unshare");
    if !root {
        w.args(["-U", "-r"]);
    }
    w.args(["-m", "--propagation", "private", "--", "sh", "-c", prep]);
    let works = std::process::Command::new("unshare")
        .args(if root {
            &["-m", "true"][..]
        } else {
            &["-U", "-r", "-m", "true"][..]
        })
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        not_tested(
            "a resolv.conf linked out of /etc (the view with the network on)",
            "no mount namespace could be made here to give axe such an /etc (unshare -m)",
        );
        return None;
    }
    w.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        w.current_dir(dir);
    }
    default_signals(&mut w);
    Some(w)
}

/// A model whose first answer makes `calls`, and whose next says done.
fn script_of(calls: &[Call]) -> FakeServer {
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
    let server = script_of(&[("c1", "run_command", json!({ "command": swap }))]);
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
    let server = script_of(&writes());
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
    let server = script_of(&[("w1", "run_command", json!({ "command": write }))]);
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

/// A sandboxed MCP server's `cwd` swapped for a link to the home by another
/// agent's command: the server does not start (the run that lists it is
/// refused, naming the link) and lists nothing of the home.
#[test]
fn an_mcp_servers_cwd_swapped_for_a_link_by_another_agents_command_is_refused() {
    if !can_probe() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/walls");
    let srv = s.work.join("srv");
    s.home.config(&format!(
        "[[mcp_servers]]\nname = \"probe\"\ncommand = \"python3\"\nargs = [{:?}]\ncwd = {:?}\n\
         [mcp_servers.sandbox]\nread = [{:?}]\n",
        fixtures.join("probe_server.py").display().to_string(),
        srv.display().to_string(),
        fixtures.display().to_string(),
    ));
    let own = s.home.dir.path().join("own");
    std::fs::create_dir_all(&own).unwrap();
    s.home.named_agent(
        "served",
        P::OpenAi.model(),
        &format!(
            "workdir = {:?}\nmcp_servers = [\"probe\"]\n",
            own.display().to_string()
        ),
    );
    swap_for_a_link_home(&s, "srv");
    let server = script_of(&[("p1", "probe__probe", json!({ "args": ["ls", "."] }))]);
    let out = run(&s, &server, "served");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&srv.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}
