//! A hostile MCP server reaches nothing and holds nothing (issue 31, design
//! §9.2–§9.4), through the binary against `fixtures/mcp/hostile_server.py`
//! over stdio and streamable HTTP: 300,000 tools or a page of huge
//! descriptions leave axe's peak memory bounded and at most 1,000 tools in
//! the provider's request, with one warning; a flood of pings while the
//! server stops reading ends the run within a second of its deadline, the
//! replies dropped and counted; names, versions and what the server says
//! reach the terminal as one escaped line; a tool name listed twice is
//! offered once; an agent waits for a server another agent starts no
//! later than its own deadline.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// The fixture, when `python3` runs here.
fn hostile() -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/hostile_server.py");
    python3("the MCP walls (hostile servers)").then_some(script)
}

/// `[[mcp_servers]]` running the fixture over stdio as `name` with `args`.
fn stdio_table(script: &std::path::Path, name: &str, args: &[&str]) -> String {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    format!("[[mcp_servers]]\nname = {name:?}\ncommand = \"python3\"\nargs = {all:?}\n")
}

/// The fixture serving streamable HTTP, and its URL; killed on drop.
struct Http {
    _server: PyServer,
    url: String,
}

fn http(script: &std::path::Path, args: &[&str]) -> Http {
    let mut all = vec![script.as_os_str(), "http".as_ref()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    let server = PyServer::start(all);
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    Http {
        _server: server,
        url,
    }
}

/// A fake OpenAI model whose first answer makes `calls` and whose later
/// ones end the run.
fn model(calls: &[(&str, &str, Value)]) -> FakeServer {
    let first = P::OpenAi.tool_calls(calls);
    let done = P::OpenAi.text("done");
    FakeServer::tool_loop(first, done)
}

fn axe(home: &Home, server: &FakeServer, args: &[&str]) -> std::process::Command {
    let mut cmd = home.axe();
    cmd.env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go"])
        .args(args);
    cmd
}

/// The tools the first request offered, by name.
fn offered(server: &FakeServer) -> Vec<String> {
    server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// axe's peak resident memory (VmHWM, KiB) when its first request reached
/// the model, that is after every server of the agent was listed; and how
/// the run ended. `what` names the case in the test's output. The kernel's figure for exactly that process, read
/// while it runs.
fn peak_at_first_request(home: &Home, what: &str) -> (std::process::Output, u64) {
    let pid = Arc::new(AtomicI32::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (p, k) = (pid.clone(), peak.clone());
    let done = P::OpenAi.text("done");
    let server = FakeServer::route(move |_| {
        let status = std::fs::read_to_string(format!("/proc/{}/status", p.load(Ordering::SeqCst)))
            .unwrap_or_default();
        let hwm = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        k.fetch_max(hwm, Ordering::SeqCst);
        Reply::Json(200, done.clone())
    });
    let child = axe(home, &server, &["--timeout", "120"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    pid.store(i32::try_from(child.id()).unwrap(), Ordering::SeqCst);
    let out = child.wait_with_output().unwrap();
    let tools = server
        .requests()
        .first()
        .map_or(0, |r| r.json()["tools"].as_array().map_or(0, Vec::len));
    let peak = peak.load(Ordering::SeqCst);
    eprintln!("{what}: {tools} tools offered, axe's peak {peak} KiB");
    assert!(tools <= 1000, "{tools} tools reached the provider");
    (out, peak)
}

/// The one warning about the cap, and that it is alone.
fn one_cap_warning(err: &str) {
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("axe: warning: MCP server \"big\" lists more than"),
        "{err}"
    );
}

#[test]
fn a_server_listing_300000_tools_is_held_to_1000_in_bounded_memory() {
    let Some(script) = hostile() else { return };
    let args = ["tools=100000", "pages=3"];
    let served = http(&script, &args);
    let served_as_events = http(&script, &[&args[..], &["events"]].concat());
    let tables = [
        ("stdio", stdio_table(&script, "big", &args)),
        (
            "streamable HTTP",
            format!("[[mcp_servers]]\nname = \"big\"\nurl = {:?}\n", served.url),
        ),
        (
            "streamable HTTP, an event stream",
            format!(
                "[[mcp_servers]]\nname = \"big\"\nurl = {:?}\n",
                served_as_events.url
            ),
        ),
    ];
    for (transport, table) in tables {
        let home = Home::new();
        home.config(&table);
        home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"big\"]\n");
        let (out, peak_kib) = peak_at_first_request(&home, transport);
        assert_eq!(code(&out), 0, "{transport}: {}", stderr(&out));
        one_cap_warning(&stderr(&out));
        // Three pages of 100,000 tools held 1.47 GB before.
        assert!(
            peak_kib > 0 && peak_kib < 64 << 10,
            "{transport}: axe's peak {peak_kib} KiB"
        );
    }
}

#[test]
fn pages_of_huge_descriptions_are_held_to_4_mib_in_bounded_memory() {
    let Some(script) = hostile() else { return };
    // Eight pages of ten tools of 1.5 MiB each: 120 MiB of descriptions.
    let args = ["tools=10", "pages=8", "desc=1572864"];
    let home = Home::new();
    home.config(&stdio_table(&script, "big", &args));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"big\"]\n");
    let (out, peak_kib) = peak_at_first_request(&home, "120 MiB of descriptions");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    one_cap_warning(&stderr(&out));
    assert!(
        peak_kib > 0 && peak_kib < 64 << 10,
        "axe's peak {peak_kib} KiB"
    );
}

#[test]
fn an_http_answer_over_16_mib_fails_the_server_at_once() {
    let Some(script) = hostile() else { return };
    // 40 MiB: a JSON body was read up to 64 MiB, an event's data: lines
    // without a bound but the stream's 64 MiB.
    for (what, args) in [
        ("a JSON body", &["pad=40"][..]),
        ("an event of many data: lines", &["pad=40", "events"][..]),
    ] {
        let served = http(&script, args);
        let home = Home::new();
        home.config(&format!(
            "[[mcp_servers]]\nname = \"big\"\nurl = {:?}\n",
            served.url
        ));
        home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"big\"]\n");
        let server = model(&[]);
        let b = run_bounded(
            &mut axe(&home, &server, &["--timeout", "60"]),
            Duration::from_secs(60),
        );
        let err = stderr(&b.output);
        assert_eq!(code(&b.output), 2, "{what}: {err}");
        assert!(
            err.starts_with(
                "axe: MCP server \"big\": tools/list: MCP server \"big\" sent an answer over 16 MiB"
            ),
            "{what}: {err}"
        );
        assert!(server.requests().is_empty(), "{what}");
    }
}

#[test]
fn the_tools_sent_to_the_model_stay_within_4_mib() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    home.config(&stdio_table(
        &script,
        "big",
        &["tools=10", "pages=8", "desc=1572864"],
    ));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"big\"]\n");
    let server = model(&[]);
    let out = axe(&home, &server, &["--timeout", "120"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let request = &server.requests()[0];
    // Two tools of 1.5 MiB fit in 4 MiB; the third does not.
    assert_eq!(offered(&server), ["big__t0_0", "big__t0_1"]);
    assert!(request.body.len() < 4 << 20, "{}", request.body.len());
}

#[test]
fn a_ping_flood_from_a_server_that_stops_reading_ends_at_the_deadline() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    home.config(&stdio_table(&script, "flood", &["flood"]));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"flood\"]\n");
    let server = model(&[("c1", "flood__t0_0", json!({}))]);
    let trace = home.dir.path().join("trace.jsonl");
    let started = Instant::now();
    let b = run_bounded(
        &mut axe(
            &home,
            &server,
            &[
                "--timeout",
                "5",
                "--verbose",
                "--trace",
                trace.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    let err = stderr(&b.output);
    // Each reply held the writer's lock for 5 s: 13 s before.
    assert!(took < Duration::from_millis(6500), "{took:?}: {err}");
    assert_ne!(code(&b.output), 0, "{err}");
    // Said at the first, counted at the stop.
    assert!(
        err.contains("[mcp] \"flood\" dropped: a reply to the server's request"),
        "{err}"
    );
    let n: u64 = err
        .lines()
        .filter_map(|l| l.strip_prefix("[mcp] \"flood\" dropped: "))
        .find_map(|l| {
            l.strip_suffix(" replies to the server's requests in all, its input full or busy")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of the dropped replies: {err}"));
    assert!(n > 0, "{err}");
    eprintln!("{took:?}, {n} replies dropped");
    let events = trace_events(&trace);
    assert!(
        events.iter().any(|e| e["event"] == "mcp"
            && e["kind"] == "dropped"
            && e["text"].as_str().is_some_and(|t| t.contains("replies"))),
        "{events:?}"
    );
}

/// Whether `text` holds a control character but a line end.
fn raw_controls(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n')
}

/// The checks of what reached a terminal: no control character, no line
/// a server forged.
fn clean(what: &str, text: &str) {
    assert!(!raw_controls(text), "{what}: {text:?}");
    assert!(
        !text.lines().any(|l| l.starts_with("axe: warning: forged")),
        "{what}: {text}"
    );
}

#[test]
fn what_a_server_says_is_shown_escaped_on_one_line() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    home.config(&format!(
        "{}\n{}",
        stdio_table(&script, "evil", &["names"]),
        stdio_table(&script, "old", &["badversion"])
    ));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"evil\"]\n");
    home.named_agent("older", P::OpenAi.model(), "mcp_servers = [\"old\"]\n");
    let server = model(&[("c1", "evil__echo", json!({}))]);
    let trace = home.dir.path().join("trace.jsonl");
    let out = axe(
        &home,
        &server,
        &[
            "--timeout",
            "30",
            "--verbose",
            "--trace",
            trace.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    clean("--verbose", &err);
    let ready = err
        .lines()
        .find(|l| l.starts_with("[mcp] \"evil\" ready: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        ready.contains("evil\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{9b}31m axe: warning: forged 1.0"),
        "{ready}"
    );
    assert!(err.contains("[mcp] \"evil\" log info\\u{1b}"), "{err}");
    assert!(
        err.contains("[mcp] \"evil\" stderr: stderr\\u{1b}"),
        "{err}"
    );
    assert!(
        err.contains("axe: warning: MCP tool \"evil__bad\\u{1b}]0;owned"),
        "{err}"
    );
    for e in trace_events(&trace) {
        if e["event"] == "mcp" {
            for field in ["server", "kind", "text"] {
                let text = e[field].as_str().unwrap_or("");
                assert!(!raw_controls(text), "the trace: {e}");
            }
        }
    }
    // `axe mcp tools`, which lists the tools a run would not offer too.
    let listed = home.axe().args(["mcp", "tools", "evil"]).output().unwrap();
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    clean("mcp tools", &stdout(&listed));
    clean("mcp tools", &stderr(&listed));
    assert!(
        stdout(&listed).contains("evil__bad\\u{1b}"),
        "{}",
        stdout(&listed)
    );
    // An error a server's answer is quoted in.
    let failed = home
        .axe()
        .env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "older", "-p", "go", "--timeout", "30"])
        .output()
        .unwrap();
    assert_eq!(code(&failed), 2, "{}", stderr(&failed));
    clean("an error", &stderr(&failed));
    assert_eq!(stderr(&failed).lines().count(), 1, "{}", stderr(&failed));
    assert!(
        stderr(&failed).contains("protocol version \"9\\u{1b}]0;owned"),
        "{}",
        stderr(&failed)
    );
}

#[test]
fn a_tool_name_listed_twice_is_offered_once_with_a_warning() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    // "a" + "__" + "_echo" and "a_" + "__" + "echo" are one name on the wire.
    home.config(&format!(
        "{}\n{}\n{}",
        stdio_table(&script, "d", &["dupes"]),
        stdio_table(&script, "a", &["named=_echo"]),
        stdio_table(&script, "a_", &["named=echo"]),
    ));
    home.named_agent(
        "user",
        P::OpenAi.model(),
        "mcp_servers = [\"d\", \"a\", \"a_\"]\n",
    );
    let server = model(&[]);
    let out = axe(&home, &server, &["--timeout", "30"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(offered(&server), ["d__echo", "d__other", "a___echo"]);
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains("MCP server \"d\" lists \"echo\" twice"),
        "{err}"
    );
    assert!(
        warnings[1].contains("\"a___echo\"") && warnings[1].contains("\"a_\""),
        "{err}"
    );
}

#[test]
fn an_agent_waits_for_a_server_another_starts_no_later_than_its_own_deadline() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    home.config(&stdio_table(&script, "slow", &["slowstart=10"]));
    // x starts the server with the run's 60 s; z, below y's 2 s
    // sub-agent timeout, needs it too.
    let m = P::OpenAi.model();
    home.named_agent("user", m, "sub_agents = [\"x\", \"y\"]\n");
    home.named_agent("x", m, "mcp_servers = [\"slow\"]\n");
    home.named_agent(
        "y",
        m,
        "sub_agents = [\"z\"]\n[sub_agents_config]\ntimeout = 2\n",
    );
    home.named_agent("z", m, "mcp_servers = [\"slow\"]\n");
    let both = P::OpenAi.tool_calls(&[
        ("c1", "call_agent", json!({"agent": "x", "task": "t"})),
        ("c2", "call_agent", json!({"agent": "y", "task": "t"})),
    ]);
    let to_z = P::OpenAi.tool_calls(&[("c3", "call_agent", json!({"agent": "z", "task": "t"}))]);
    let done = P::OpenAi.text("done");
    let started = Instant::now();
    let y_heard = Arc::new(std::sync::Mutex::new(None));
    let heard = y_heard.clone();
    let server = FakeServer::route(
        move |req| match (req.who().as_str(), req.has_tool_results()) {
            ("user", false) => Reply::Json(200, both.clone()),
            // After x has begun the start.
            ("y", false) => Reply::Delay(
                Duration::from_millis(500),
                Box::new(Reply::Json(200, to_z.clone())),
            ),
            ("y", true) => {
                let result = req.tool_result_texts().join(" ");
                *heard.lock().unwrap() = Some((started.elapsed(), result));
                Reply::Json(200, done.clone())
            }
            _ => Reply::Json(200, done.clone()),
        },
    );
    let b = run_bounded(
        &mut axe(&home, &server, &["--timeout", "60"]),
        Duration::from_secs(60),
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let (when, result) = y_heard.lock().unwrap().clone().expect("y heard from z");
    // z waited for the start until it ended, 10 s, before.
    assert!(when < Duration::from_secs(5), "{when:?}: {result}");
    assert!(
        result.contains("still starting at the deadline"),
        "{result}"
    );
}
