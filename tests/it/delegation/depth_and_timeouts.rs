//! How deep a tree may go (design §3.9, D6) and how long a call may take
//! (§3.11, D5).

use super::*;

// ---------------------------------------------------------------------------
// Depth (design §3.9, D6).
// ---------------------------------------------------------------------------

#[test]
fn run_default_max_depth_3_stops_injecting_tools_at_depth_3() {
    let home = Home::new();
    // a -> b -> c -> d -> e: d runs at depth 3 and gets no tools.
    for (n, next) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")] {
        home.named_agent(n, "openai/gpt-4o", &format!("sub_agents = [\"{next}\"]\n"));
    }
    home.named_agent("e", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b(c(d)))\n");
    for n in ["a", "b", "c"] {
        assert!(server.sent_by(n)[0].json()["tools"].is_array(), "{n}");
    }
    let d = server.sent_by("d");
    assert_eq!(d.len(), 1);
    assert!(d[0].json().get("tools").is_none(), "depth 3: no tools key");
    assert!(server.sent_by("e").is_empty());
}

#[test]
fn run_root_max_depth_bounds_the_whole_tree() {
    let home = Home::new();
    // The root says 1: its child runs single-shot even though the child's
    // own file allows 5 levels (design D6).
    home.named_agent(
        "a",
        "openai/gpt-4o",
        "sub_agents = [\"b\"]\n[sub_agents_config]\nmax_depth = 1\n",
    );
    home.named_agent(
        "b",
        "openai/gpt-4o",
        "sub_agents = [\"c\"]\n[sub_agents_config]\nmax_depth = 5\n",
    );
    home.named_agent("c", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b)\n");
    assert!(server.sent_by("b")[0].json().get("tools").is_none());
    assert!(server.sent_by("c").is_empty());
}

#[test]
fn run_max_depth_5_allows_five_levels_of_delegation() {
    let home = Home::new();
    let chain = ["a", "b", "c", "d", "e", "f", "g"];
    for w in chain.windows(2) {
        let extra = if w[0] == "a" {
            "[sub_agents_config]\nmax_depth = 5\n"
        } else {
            ""
        };
        home.named_agent(
            w[0],
            "openai/gpt-4o",
            &format!("sub_agents = [\"{}\"]\n{extra}", w[1]),
        );
    }
    home.named_agent("g", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b(c(d(e(f)))))\n");
    assert!(server.sent_by("f")[0].json().get("tools").is_none());
}

// ---------------------------------------------------------------------------
// Timeouts (design §3.11, D5).
// ---------------------------------------------------------------------------

#[test]
fn run_sub_agent_timeout_gives_the_exact_error_and_the_parent_goes_on() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"slow\", \"quick\"]\n[sub_agents_config]\ntimeout = 1\n",
    );
    home.named_agent("slow", "openai/gpt-4o", "");
    home.named_agent("quick", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("c1", "call_agent", delegate("slow", "wait")),
                    ("c2", "call_agent", delegate("quick", "go")),
                ],
                1,
                1,
            ),
        ),
        ("lead", true) => Reply::Json(200, openai_text(&results_text(req, " | "), 1, 1)),
        ("slow", _) => Reply::Hang,
        _ => Reply::Json(200, openai_text("quick answer", 1, 1)),
    });
    let started = Instant::now();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--timeout", "60"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!(
            "Error: sub-agent \"slow\" failed - timeout after 1s. {RETRY_HINT} | quick answer\n"
        )
    );
    // Bounded by the sub-agent's 1 s, not the hanging server's minute.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn run_parent_deadline_bounds_sub_agents_and_then_the_parent_times_out() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"slow\"]\n");
    home.named_agent("slow", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("slow", "wait"))], 1, 1),
        ),
        _ => Reply::Hang,
    });
    let started = Instant::now();
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        // 4 s, not 2: counted from axe's start, the sub-agent must have been
        // called before it runs out, on a loaded machine too.
        &["run", "lead", "--timeout", "4", "--verbose"],
    );
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l == "[sub-agent] \"slow\" failed: timeout after 4s"),
        "{err}"
    );
    assert!(err.ends_with("axe: openai: timeout after 4s\n"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    // The parent never sent its second turn: no time was left.
    assert_eq!(server.sent_by("lead").len(), 1);
}
