//! The calls of one response (design §3.10, D4): in flight together,
//! proven by a server-side barrier (flat and nested), or one after another
//! in call order when `parallel = false`; the model told which.

use super::*;

// ---------------------------------------------------------------------------
// Parallel and sequential execution (design §3.10, D4).
// ---------------------------------------------------------------------------

/// Every sub-agent request waits at `gate` before it is answered; a request
/// that waited in vain is answered 500, so a run where the calls were not in
/// flight together cannot pass.
fn gated_answer(gate: &Gate, name: &str, reply: impl FnOnce() -> String) -> Reply {
    if gate.arrive(GATE_WAIT) {
        Reply::Json(200, reply())
    } else {
        Reply::Json(
            500,
            format!(r#"{{"error":{{"message":"{name} was alone at the barrier"}}}}"#),
        )
    }
}

#[test]
fn run_parallel_calls_are_all_in_flight_at_once() {
    const N: usize = 8;
    let home = Home::new();
    let names: Vec<String> = (0..N).map(|i| format!("w{i}")).collect();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!("sub_agents = {names:?}\n"),
    );
    for n in &names {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    let gate = Arc::new(Gate::new(N));
    let g = gate.clone();
    let list: Vec<(String, Value)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("call_{i}"), delegate(n, "work")))
        .collect();
    let server = FakeServer::route(move |req| {
        let name = req.who();
        match (name.as_str(), req.has_tool_results()) {
            ("lead", false) => {
                let calls: Vec<Call> = list
                    .iter()
                    .map(|(id, a)| (id.as_str(), "call_agent", a.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 1, 1))
            }
            ("lead", true) => Reply::Json(200, openai_text(&results_text(req, ","), 1, 1)),
            _ => gated_answer(&g, &name, || openai_text(&format!("ok {name}"), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert!(!gate.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    let expected: Vec<String> = names.iter().map(|n| format!("ok {n}")).collect();
    assert_eq!(stdout(&out), format!("{}\n", expected.join(",")));
    assert_eq!(server.max_in_flight(), N);
}

#[test]
fn run_nested_fan_out_is_parallel_at_every_level() {
    // root -> 2 children at once -> 2 leaves each, all 4 leaves at once.
    let home = Home::new();
    home.named_agent(
        "root",
        "openai/gpt-4o",
        "sub_agents = [\"left\", \"right\"]\n",
    );
    for child in ["left", "right"] {
        home.named_agent(child, "openai/gpt-4o", "sub_agents = [\"leaf\"]\n");
    }
    home.named_agent("leaf", "openai/gpt-4o", "");
    let children = Arc::new(Gate::new(2));
    let leaves = Arc::new(Gate::new(4));
    let (c, l) = (children.clone(), leaves.clone());
    let server = FakeServer::route(move |req| {
        let name = req.who();
        let joined = || results_text(req, ",");
        match (name.as_str(), req.has_tool_results()) {
            ("root", false) => Reply::Json(
                200,
                openai_tool_calls(
                    &[
                        ("r1", "call_agent", delegate("left", "L")),
                        ("r2", "call_agent", delegate("right", "R")),
                    ],
                    1,
                    1,
                ),
            ),
            ("root", true) => Reply::Json(200, openai_text(&format!("[{}]", joined()), 1, 1)),
            ("leaf", _) => {
                let task = req.first_user_text();
                gated_answer(&l, "leaf", || {
                    openai_text(&task.replace("Task: ", ""), 1, 1)
                })
            }
            (child, false) => {
                let side = if child == "left" { "L" } else { "R" };
                let (t1, t2) = (format!("{side}1"), format!("{side}2"));
                gated_answer(&c, child, || {
                    openai_tool_calls(
                        &[
                            ("x1", "call_agent", delegate("leaf", &t1)),
                            ("x2", "call_agent", delegate("leaf", &t2)),
                        ],
                        1,
                        1,
                    )
                })
            }
            (child, true) => Reply::Json(200, openai_text(&format!("{child}({})", joined()), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "root"]);
    assert_ok(&out);
    assert!(!children.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    assert!(!leaves.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(stdout(&out), "[left(L1,L2),right(R1,R2)]\n");
    assert_eq!(leaves.arrived(), 4);
}

#[test]
fn run_sequential_calls_run_one_at_a_time_in_call_order() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nparallel = false\n",
    );
    for n in ["a", "b", "c"] {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    // Each sub-agent answer takes a moment, so overlapping calls would be
    // seen in flight together.
    let server = openai_delegation_with(
        calls(&[
            ("c1", delegate("c", "1")),
            ("c2", delegate("a", "2")),
            ("c3", delegate("b", "3")),
        ]),
        Duration::from_millis(150),
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "answer from c | answer from a | answer from b\n"
    );
    let order: Vec<String> = server
        .requests()
        .iter()
        .map(Recorded::who)
        .filter(|n| n != "lead")
        .collect();
    assert_eq!(order, ["c", "a", "b"]);
    assert_eq!(server.max_in_flight(), 1);
}

/// One HTTP client per provider serves the whole process, keeping its
/// connection alive (design §4.2): a parent and three sub-agents called one
/// after another send their five requests over one connection.
#[test]
fn sequential_calls_of_a_run_share_one_kept_alive_connection() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nparallel = false\n",
    );
    for n in ["a", "b", "c"] {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    let server = openai_delegation(calls(&[
        ("c1", delegate("c", "1")),
        ("c2", delegate("a", "2")),
        ("c3", delegate("b", "3")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(server.requests().len(), 5);
    assert_eq!(server.connections(), 1);
}

/// What each wire is told of `parallel` with tools: OpenAI's
/// `parallel_tool_calls` either way (before, `parallel = false` sent none, and
/// the model planned for calls it would not get), Anthropic's `tool_choice`
/// with `disable_parallel_tool_use` only when the calls run one at a time
/// (its "auto" is the default), Ollama nothing (it has no such field).
fn parallel_fields(body: &Value) -> (Option<bool>, Value) {
    (
        body["parallel_tool_calls"].as_bool(),
        body.get("tool_choice").cloned().unwrap_or(Value::Null),
    )
}

#[test]
fn an_agent_whose_calls_run_in_parallel_says_so_and_one_whose_calls_do_not_says_that() {
    let sequential = json!({"type": "auto", "disable_parallel_tool_use": true});
    for (p, config, want) in [
        (P::OpenAi, "", (Some(true), json!("auto"))),
        (
            P::OpenAi,
            "parallel = false\n",
            (Some(false), json!("auto")),
        ),
        (P::Anthropic, "", (None, Value::Null)),
        (
            P::Anthropic,
            "parallel = false\n",
            (None, sequential.clone()),
        ),
        (P::Ollama, "", (None, Value::Null)),
        (P::Ollama, "parallel = false\n", (None, Value::Null)),
    ] {
        let home = Home::new();
        home.named_agent(
            "lead",
            p.model(),
            &format!("sub_agents = [\"w\"]\n[sub_agents_config]\n{config}"),
        );
        home.named_agent("w", p.model(), "");
        let server = FakeServer::json(200, &p.text("no calls"));
        let b = home.run_bounded(&[(p, &server)], &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
        let body = server.only_request().json();
        assert_eq!(parallel_fields(&body), want, "{p:?} {config}: {body}");
    }
    // No tools, no such key; nor on the other wires.
    for p in PROVIDERS {
        let home = Home::new();
        home.named_agent("solo", p.model(), "[sub_agents_config]\nparallel = false\n");
        home.named_agent("lead", p.model(), "sub_agents = [\"solo\"]\n");
        let server = FakeServer::json(200, &p.text("fine"));
        for agent in ["solo", "lead"] {
            home.run_bounded(&[(p, &server)], &["run", agent], HUNG);
        }
        for req in server.requests() {
            let body = req.json();
            let sent = body.get("parallel_tool_calls").is_some();
            assert_eq!(sent, p == P::OpenAi && req.who() == "lead", "{p:?}: {body}");
            assert!(
                !body.to_string().contains("disable_parallel_tool_use"),
                "{p:?}: {body}"
            );
        }
    }
}

/// A helper whose call was answered gives back the stack pages the call
/// touched (design §3.15): when the parent's next request arrives, no
/// thread's stack holds more than a few pages resident, where each helper
/// kept the whole depth of its request (96 KiB in a debug build) before.
#[test]
fn run_helpers_give_back_their_stack_once_their_calls_are_answered() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const N: usize = 16;
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let pid = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(std::sync::Mutex::new(None));
    // Every call held until all are in flight: N helpers, not fewer reused.
    let gate = Arc::new(Gate::new(N));
    let (p, s, g) = (pid.clone(), seen.clone(), gate.clone());
    let server = FakeServer::route(
        move |req| match (req.who().as_str(), req.has_tool_results()) {
            ("lead", false) => {
                let calls: Vec<(String, Value)> = (0..N)
                    .map(|i| (format!("call_{i}"), delegate("w", "work")))
                    .collect();
                let calls: Vec<Call> = calls
                    .iter()
                    .map(|(id, a)| (id.as_str(), "call_agent", a.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 1, 1))
            }
            ("lead", true) => {
                *s.lock().unwrap() = Some(settled_stack_kib(&p));
                Reply::Json(200, openai_text("done", 1, 1))
            }
            (name, _) => gated_answer(&g, name, || openai_text("ok", 1, 1)),
        },
    );
    let child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "lead"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    pid.store(child.id(), Ordering::SeqCst);
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    assert!(!gate.timed_out.load(Ordering::SeqCst));
    let (stacks, most) = seen
        .lock()
        .unwrap()
        .take()
        .expect("the lead's next request");
    assert!(stacks >= N - 1, "{stacks} thread stacks found, {N} calls");
    assert!(
        most <= PARKED_STACK_KIB,
        "a parked helper holds {most} KiB of its stack"
    );
}

/// The most a parked helper's stack may hold resident: its top pages.
const PARKED_STACK_KIB: u64 = 24;

/// The thread stacks of process `pid` and the most KiB any holds
/// resident, once that is at most [`PARKED_STACK_KIB`] or 10 s have passed
/// (a helper gives its stack back after its fan-out has its answer).
///
/// A thread stack is told by its shape, not its size alone: an anonymous
/// read-write mapping of about 2 MiB (std's size) right above a one-page
/// guard. A malloc arena's heap can also be about 2 MiB at some moment,
/// but its inaccessible part lies above it, not a page below.
fn settled_stack_kib(pid: &std::sync::atomic::AtomicU32) -> (usize, u64) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let pid = pid.load(std::sync::atomic::Ordering::SeqCst);
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
        let (mut stacks, mut most, mut in_stack) = (0, 0, false);
        // The end of the mapping before, and whether it was a guard page.
        let mut guard_ends_at = None;
        for line in smaps.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if let Some((a, b)) = fields[0].split_once('-')
                && let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16))
            {
                let kib = (b - a) / 1024;
                in_stack = fields.len() == 5
                    && fields[1].starts_with("rw")
                    && guard_ends_at == Some(a)
                    && (2040..=2100).contains(&kib);
                stacks += usize::from(in_stack);
                guard_ends_at = (fields[1] == "---p" && kib <= 64).then_some(b);
            } else if in_stack && fields[0] == "Rss:" {
                most = most.max(fields[1].parse().unwrap_or(u64::MAX));
            }
        }
        if (stacks > 0 && most <= PARKED_STACK_KIB) || Instant::now() > until {
            return (stacks, most);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
