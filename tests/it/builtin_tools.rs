//! The built-in tools through the binary (design chapter 8): each tool on
//! all three wires, and a hostile model that tries every way out of the
//! workdir and the sandbox — each attempt refused and reported to the model
//! as its call's result, never performed. Tests that need Landlock skip
//! where the kernel lacks it, and `make test` lists them.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::common::*;

/// Sets its flag when dropped, a panic included.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn every_file_tool_works_on_all_three_wires() {
    for p in PROVIDERS {
        let s = ToolsSetup::new(
            p,
            &[
                "read_file",
                "list_directory",
                "search_files",
                "write_file",
                "edit_file",
            ],
            "",
        );
        let calls: Vec<Call> = vec![
            ("c1", "read_file", json!({"path": "notes.txt", "offset": 2})),
            ("c2", "list_directory", json!({})),
            ("c3", "search_files", json!({"pattern": "fn \\w+"})),
            (
                "c4",
                "write_file",
                json!({"path": "out/new.txt", "content": "one two two"}),
            ),
            // Another file than c1's: the calls of one response run at
            // once, so an edit of notes.txt could land before c1 read it.
            (
                "c5",
                "edit_file",
                json!({"path": "draft.txt", "old_string": "beta", "new_string": "BETA"}),
            ),
        ];
        std::fs::write(s.work.join("draft.txt"), "alpha\nbeta\ngamma\n").unwrap();
        let (out, results, _) = s.run(p, &calls);
        assert_eq!(code(&out), 0, "{}: {}", p.name(), stderr(&out));
        assert_eq!(stdout(&out), "done\n");
        assert_eq!(results.len(), 5, "{}: {results:?}", p.name());
        assert_eq!(results[0], "2: beta\n3: gamma\n", "{}", p.name());
        assert!(
            results[1].contains("notes.txt\n") && results[1].contains("src/\n"),
            "{}",
            results[1]
        );
        assert_eq!(results[2], "src/lib.rs:1: pub fn answer() -> u32 {");
        assert_eq!(results[3], "wrote 11 bytes to out/new.txt");
        assert!(results[4].starts_with("edited draft.txt"), "{}", results[4]);
        assert_eq!(
            std::fs::read_to_string(s.work.join("out/new.txt")).unwrap(),
            "one two two"
        );
        assert_eq!(
            std::fs::read_to_string(s.work.join("draft.txt")).unwrap(),
            "alpha\nBETA\ngamma\n"
        );
    }
}

#[test]
fn run_command_works_on_all_three_wires_and_says_its_exit_status() {
    if !landlock() {
        return;
    }
    for p in PROVIDERS {
        let s = ToolsSetup::new(p, &["run_command"], "");
        let calls: Vec<Call> = vec![
            (
                "c1",
                "run_command",
                json!({"command": "cat notes.txt | wc -l"}),
            ),
            (
                "c2",
                "run_command",
                json!({"command": "echo oops >&2; exit 3"}),
            ),
        ];
        let (out, results, _) = s.run(p, &calls);
        assert_eq!(code(&out), 0, "{}: {}", p.name(), stderr(&out));
        assert!(
            results[0].starts_with("3\n[exit status 0, "),
            "{}",
            results[0]
        );
        assert!(
            results[1].starts_with("oops\n[exit status 3, "),
            "{}",
            results[1]
        );
    }
}

#[test]
fn paths_that_leave_the_workdir_are_refused_and_the_model_is_told() {
    let s = ToolsSetup::new(
        P::OpenAi,
        &["read_file", "list_directory", "write_file"],
        "",
    );
    let outside = s.home.dir.path().join("secret.txt");
    std::os::unix::fs::symlink(&outside, s.work.join("link-out")).unwrap();
    std::os::unix::fs::symlink("/", s.work.join("root")).unwrap();
    let abs = outside.display().to_string();
    let calls: Vec<Call> = vec![
        ("c1", "read_file", json!({"path": "../secret.txt"})),
        ("c2", "read_file", json!({"path": abs})),
        ("c3", "read_file", json!({"path": "link-out"})),
        ("c4", "read_file", json!({"path": "root/etc/hostname"})),
        (
            "c5",
            "read_file",
            json!({"path": "/proc/self/root/etc/hostname"}),
        ),
        ("c6", "list_directory", json!({"path": ".."})),
        (
            "c7",
            "write_file",
            json!({"path": "../planted.txt", "content": "x"}),
        ),
        (
            "c8",
            "write_file",
            json!({"path": "root/tmp/planted.txt", "content": "x"}),
        ),
    ];
    let (out, results, server) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results.len(), 8);
    for (i, r) in results.iter().enumerate() {
        assert!(!r.contains("TOP-SECRET"), "call {i} read the secret: {r}");
        assert!(
            r.contains("outside the working directory") || r.contains("symbolic link"),
            "call {i}: {r}"
        );
    }
    // The results went back as errors.
    let req = &server.requests()[1];
    let errors = req.tool_messages().len();
    assert_eq!(errors, 8);
    assert!(!s.home.dir.path().join("planted.txt").exists());
}

#[test]
fn a_symlink_swapped_in_during_reads_never_leads_outside() {
    let s = ToolsSetup::new(P::OpenAi, &["read_file"], "");
    let target = s.work.join("flip");
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicUsize::new(0));
    let flipper = {
        let (stop, flips, target) = (stop.clone(), flips.clone(), target.clone());
        let outside = s.home.dir.path().join("secret.txt");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let tmp = target.with_extension("tmp");
                let _ = std::fs::remove_file(&tmp);
                if flips.load(Ordering::Relaxed) % 2 == 0 {
                    let _ = std::os::unix::fs::symlink(&outside, &tmp);
                } else {
                    let _ = std::fs::write(&tmp, "harmless inside");
                }
                let _ = std::fs::rename(&tmp, &target);
                flips.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // The flipper stops however this test ends: in the one test binary a
    // thread left flipping would run through every test after it.
    let _stop = StopOnDrop(stop.clone());
    let calls: Vec<Call> = (0..64)
        .map(|_| ("c", "read_file", json!({"path": "flip"})))
        .collect();
    // The swapping is under way before the reads start.
    while flips.load(Ordering::Relaxed) < 20 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // The 64 reads take milliseconds, and on a loaded machine the flipper
    // may still not get a processor in that time: the run is repeated, each
    // time with all its checks, until the link has changed more than 10
    // times while runs were going on (at most 50 runs).
    let mut flipped = 0;
    for _ in 0..50 {
        let before = flips.load(Ordering::Relaxed);
        let (out, results, _) = s.run(P::OpenAi, &calls);
        flipped += flips.load(Ordering::Relaxed) - before;
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(results.len(), 64);
        assert!(
            results.iter().all(|r| !r.contains("TOP-SECRET")),
            "{results:?}"
        );
        if flipped > 10 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    assert!(
        flipped > 10,
        "the link changed {flipped} times during the reads"
    );
}

#[test]
fn commands_cannot_read_keys_config_or_axes_environment_nor_write_outside() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let home = s.home.dir.path().display().to_string();
    let calls: Vec<Call> = vec![
        (
            "c1",
            "run_command",
            json!({"command": "cat ~/.ssh/id_ed25519"}),
        ),
        (
            "c2",
            "run_command",
            json!({"command": format!("cat {home}/axe/config.toml")}),
        ),
        (
            "c3",
            "run_command",
            json!({"command": "cat /proc/$PPID/environ | tr '\\0' '\\n'"}),
        ),
        (
            "c4",
            "run_command",
            json!({"command": format!("echo planted > {home}/planted.txt")}),
        ),
        ("c5", "run_command", json!({"command": "env"})),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!results[0].contains("PRIVATE-KEY"), "{}", results[0]);
    assert!(
        !results[1].contains("sk-config-file-secret"),
        "{}",
        results[1]
    );
    assert!(!results[2].contains("sk-test-key"), "{}", results[2]);
    assert!(!s.home.dir.path().join("planted.txt").exists());
    assert!(
        !results[4].contains("sk-test-key") && !results[4].contains("API_KEY"),
        "{}",
        results[4]
    );
    assert!(results[4].contains("TMPDIR="), "{}", results[4]);
}

#[test]
fn with_the_network_off_a_command_cannot_reach_a_loopback_server() {
    if !landlock() {
        return;
    }
    if axe::sandbox::landlock_abi() < 4 {
        not_tested(
            "run_command with the network off",
            &format!(
                "this kernel's Landlock (ABI {}) has no network rules",
                axe::sandbox::landlock_abi()
            ),
        );
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(\"127.0.0.1:{port}\") or die \"no: $!\\n\"; print \"connected\\n\"'"
    );
    for (network, expect) in [("", false), ("[sandbox]\nnetwork = true\n", true)] {
        let s = ToolsSetup::new(P::OpenAi, &["run_command"], network);
        let calls: Vec<Call> = vec![("c1", "run_command", json!({"command": script}))];
        let (out, results, _) = s.run(P::OpenAi, &calls);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(results[0].contains("connected"), expect, "{}", results[0]);
        let accepted = listener.accept().is_ok();
        assert_eq!(accepted, expect, "the server saw a connection: {accepted}");
    }
}

#[test]
fn what_a_command_leaves_running_does_not_outlive_it() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let mark = format!("axe-test-{}", fastrand::u64(..));
    let calls: Vec<Call> = vec![
        (
            "c1",
            "run_command",
            json!({"command": format!("export AXE_TEST_MARK={mark}; sleep 300 >/dev/null 2>&1 & echo started")}),
        ),
        (
            "c2",
            "run_command",
            json!({"command": format!("export AXE_TEST_MARK={mark}; setsid sh -c 'exec sleep 300' & sleep 0.3")}),
        ),
    ];
    let (out, _, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(gone(&mark), "a process the commands left outlived the run");
}

/// Whether no process with `AXE_TEST_MARK=<mark>` in its environment is
/// left (a zombie's environment reads empty), waiting up to 10 s (a loaded
/// machine may be slow to act on the kill).
fn gone(mark: &str) -> bool {
    let needle = format!("AXE_TEST_MARK={mark}\0");
    let marked = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
    };
    (0..1000).any(|_| {
        let alive = marked();
        if alive {
            std::thread::sleep(Duration::from_millis(10));
        }
        !alive
    })
}

#[test]
fn url_fetch_refuses_loopback_private_and_link_local_addresses() {
    let server = FakeServer::route(|_| Reply::Json(200, "{\"ok\":true}".to_string()));
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let s = ToolsSetup::new(P::OpenAi, &["url_fetch"], "");
    let calls: Vec<Call> = vec![
        (
            "c1",
            "url_fetch",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
        ),
        (
            "c2",
            "url_fetch",
            json!({"url": format!("http://[::1]:{port}/")}),
        ),
        (
            "c3",
            "url_fetch",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
        ),
        (
            "c4",
            "url_fetch",
            json!({"url": format!("http://localhost:{port}/")}),
        ),
        ("c5", "url_fetch", json!({"url": "file:///etc/passwd"})),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for (i, r) in results.iter().enumerate().take(4) {
        assert!(r.contains("private or local address"), "call {i}: {r}");
    }
    assert!(results[4].contains("only http and https"), "{}", results[4]);
    // The loopback server was never asked (only the model's fake was).
    assert!(server.requests().is_empty());
}

#[test]
fn url_fetch_with_private_networks_allowed_fetches_and_checks_every_redirect() {
    let page = "<html><head><script>var x=1;</script></head><body><h1>Title</h1><p>Some &amp; text</p></body></html>";
    let target = FakeServer::route(move |_| Reply::Raw {
        status: 200,
        content_type: "text/html".into(),
        headers: vec![],
        body: page.into(),
    });
    let tport = target.url.rsplit(':').next().unwrap().to_string();
    let redirect = FakeServer::route(move |_| Reply::Raw {
        status: 302,
        content_type: "text/plain".into(),
        headers: vec![("Location".into(), format!("http://localhost:{tport}/"))],
        body: String::new(),
    });
    let extra = "allowed_hosts = [\"127.0.0.1\"]\n[sandbox]\nprivate_networks = true\n";
    let s = ToolsSetup::new(P::OpenAi, &["url_fetch"], extra);
    let calls: Vec<Call> = vec![
        (
            "c1",
            "url_fetch",
            json!({"url": format!("{}/page", target.url)}),
        ),
        (
            "c2",
            "url_fetch",
            json!({"url": format!("{}/away", redirect.url)}),
        ),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        results[0].starts_with("HTTP 200, text/html\n\n"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("Title") && results[0].contains("Some & text"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("var x"), "{}", results[0]);
    // The redirect leads to a host the agent may not reach: refused there.
    assert!(
        results[1].contains("localhost is not in this agent's allowed_hosts"),
        "{}",
        results[1]
    );
}

#[test]
fn an_unknown_tool_name_is_exit_2_with_the_closest_name_and_a_check_problem() {
    let home = Home::new();
    home.named_agent("typo", "openai/gpt-4o", "tools = [\"read_files\"]\n");
    let out = home.run(&["run", "typo", "--dry-run"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out)
            .starts_with("axe: tools: unknown tool \"read_files\" (did you mean \"read_file\"?)"),
        "{}",
        stderr(&out)
    );
    let out = home.run(&["agents", "check", "typo"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(stdout(&out).contains("read_files"), "{}", stdout(&out));
}

#[test]
fn a_sub_agent_gets_only_the_tools_its_own_file_lists() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "tools = [\"read_file\"]\nsub_agents = [\"helper\"]\n",
    );
    home.named_agent("helper", "openai/gpt-4o", "tools = [\"list_directory\"]\n");
    home.named_agent("bare", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            P::OpenAi.tool_calls(&[
                ("a", "call_agent", delegate("helper", "look")),
                ("b", "call_agent", json!({"agent": "bare", "task": "look"})),
            ]),
        ),
        _ => Reply::Json(200, openai_text("done", 1, 1)),
    });
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "tools = [\"read_file\"]\nsub_agents = [\"helper\", \"bare\"]\n",
    );
    let out = home
        .axe()
        .env("OPENAI_API_KEY", "sk-test")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "lead", "-p", "x"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let tools_of = |who: &str| -> Vec<String> {
        let req = server
            .requests()
            .into_iter()
            .find(|r| r.who() == who)
            .unwrap_or_else(|| panic!("{who} sent nothing"));
        req.json()["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(tools_of("lead"), ["call_agent", "read_file"]);
    assert_eq!(tools_of("helper"), ["list_directory"]);
    assert!(tools_of("bare").is_empty());
}

#[test]
fn tool_calls_hold_the_turn_limit_and_budgets() {
    let s = ToolsSetup::new(P::OpenAi, &["list_directory"], "");
    let calls = P::OpenAi.tool_calls(&[("c1", "list_directory", json!({}))]);
    let server = FakeServer::route(move |_| Reply::Json(200, calls.clone()));
    let out = s
        .home
        .axe()
        .env("OPENAI_API_KEY", "sk-test")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "hands", "-p", "go", "--max-turns", "3"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(server.requests().len(), 3);
}
