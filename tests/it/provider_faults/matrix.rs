//! The matrix: a fault run at top level and in a sub-agent on each wire, and what each must show.

use super::*;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Level {
    Top,
    Sub,
}

/// Runs `check` for every provider at both levels, all at once, and fails
/// naming every cell (case × provider × level) that failed.
#[track_caller]
pub(crate) fn matrix(case: &str, check: impl Fn(P, Level) + Sync) {
    let cells: Vec<(P, Level)> = PROVIDERS
        .iter()
        .flat_map(|&p| [(p, Level::Top), (p, Level::Sub)])
        .collect();
    each_cell(case, &cells, |(p, level)| check(p, level));
}

/// What a faulty server does to one provider call, and what must come of it.
pub(crate) struct Fault {
    /// The faulty server's answers, in order; the last repeats.
    pub(crate) replies: Vec<Reply>,
    /// The requests axe must send (retries included).
    pub(crate) requests: usize,
    pub(crate) expect: Expect,
}

pub(crate) enum Expect {
    /// The call succeeds (after retries) with this answer.
    Answer(&'static str),
    /// It fails with `code`; the text after `<provider>: ` is exactly `text`.
    Exact { code: i32, text: String },
    /// As `Exact`, when only the start of the text is axe's own wording
    /// (the rest is serde's or the HTTP library's).
    Prefix { code: i32, text: String },
    /// It runs into its deadline: `timeout after 3s` ([`FAULT_TIMEOUT`]).
    Timeout,
}

/// A status with the provider's own error body, answered every time.
pub(crate) fn status_fault(p: P, status: u16) -> Fault {
    let (body, message) = api_error(p, status);
    let retried = matches!(status, 429 | 500 | 502 | 503 | 504 | 529);
    Fault {
        replies: vec![Reply::Json(status, body)],
        requests: if retried { ALL_ATTEMPTS } else { 1 },
        expect: Expect::Exact {
            code: if matches!(status, 400 | 404) { 1 } else { 3 },
            text: format!("{} (HTTP {status}): {message}", classification(status)),
        },
    }
}

/// A 2xx answer axe cannot use (design D13): not retried, exit 3.
pub(crate) fn invalid(reply: Reply, detail: &str, exact: bool) -> Fault {
    let text = format!("invalid response: {detail}");
    Fault {
        replies: vec![reply],
        requests: 1,
        expect: if exact {
            Expect::Exact { code: 3, text }
        } else {
            Expect::Prefix { code: 3, text }
        },
    }
}

/// Runs `fault(p)` for every provider at both levels.
pub(crate) fn fault_matrix(case: &str, fault: impl Fn(P) -> Fault + Sync) {
    matrix(case, |p, level| match level {
        Level::Top => at_top_level(p, &fault(p)),
        Level::Sub => in_a_sub_agent(p, &fault(p)),
    });
}

/// `axe run a` with `a` on `p`'s faulty server.
pub(crate) fn at_top_level(p: P, fault: &Fault) {
    let home = Home::fast_retries();
    home.named_agent("a", p.model(), "");
    let timeout = match fault.expect {
        Expect::Timeout => FAULT_TIMEOUT.to_string(),
        _ => TIMEOUT.to_string(),
    };
    let server = FakeServer::start(fault.replies.clone());
    let Bounded {
        output: out, took, ..
    } = home.run_bounded(
        &[(p, &server)],
        &["run", "a", "-p", "hi", "--timeout", &timeout],
        FAULT_HUNG,
    );
    let err = stderr(&out);
    assert_eq!(
        server.requests_settled(fault.requests).len(),
        fault.requests,
        "requests sent; stderr: {err}"
    );
    let (exit, text) = match &fault.expect {
        Expect::Answer(answer) => {
            assert_eq!(code(&out), 0, "stderr: {err}");
            assert_eq!(err, "");
            assert_eq!(stdout(&out), format!("{answer}\n"));
            // Again with --json: the retries are reported.
            let server = FakeServer::start(fault.replies.clone());
            let out = home
                .run_bounded(
                    &[(p, &server)],
                    &["run", "a", "-p", "hi", "--timeout", TIMEOUT, "--json"],
                    FAULT_HUNG,
                )
                .output;
            assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
            let v: Value = serde_json::from_str(&stdout(&out)).expect("--json prints JSON");
            assert_eq!(v["content"], *answer, "{v}");
            assert_eq!(v["retry_attempts"], fault.requests - 1, "{v}");
            return;
        }
        Expect::Exact { code, text } | Expect::Prefix { code, text } => (*code, text.clone()),
        Expect::Timeout => (3, format!("timeout after {FAULT_TIMEOUT}s")),
    };
    assert_eq!(code(&out), exit, "stderr: {err}");
    assert_eq!(stdout(&out), "", "stdout stays empty");
    assert_no_panic(&err);
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "one line on stderr: {err:?}"
    );
    let head = format!("axe: {}: ", p.name());
    assert!(err.starts_with(&head), "{err:?}");
    match fault.expect {
        Expect::Prefix { .. } => {
            assert!(err.starts_with(&format!("{head}{text}")), "{err:?}");
        }
        _ => assert_eq!(err, format!("{head}{text}\n")),
    }
    if let Expect::Timeout = fault.expect {
        assert!(took < TIMEOUT_BOUND, "took {took:?}");
    }
}

/// `lead` on a healthy server delegates to `s` on `p`'s faulty server.
pub(crate) fn in_a_sub_agent(p: P, fault: &Fault) {
    let parent = p.other();
    let home = Home::fast_retries();
    let own_timeout = match fault.expect {
        Expect::Timeout => format!("[sub_agents_config]\ntimeout = {FAULT_TIMEOUT}\n"),
        _ => String::new(),
    };
    home.named_agent(
        "lead",
        parent.model(),
        &format!("sub_agents = [\"s\"]\n{own_timeout}"),
    );
    home.named_agent("s", p.model(), "");
    let lead = lead_server(parent);
    let faulty = FakeServer::start(fault.replies.clone());
    let Bounded {
        output: out, took, ..
    } = home.run_bounded(
        &[(parent, &lead), (p, &faulty)],
        &["run", "lead", "-p", "hi", "--timeout", TIMEOUT],
        FAULT_HUNG,
    );
    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(
        faulty.requests_settled(fault.requests).len(),
        fault.requests,
        "the sub-agent's requests"
    );
    let result = lead_result(parent, &lead, &out);
    let content = &result.content;
    if let Expect::Answer(answer) = fault.expect {
        assert_eq!(content, answer);
        assert_ne!(result.is_error, Some(true), "{result:?}");
        return;
    }
    assert_ne!(result.is_error, Some(false), "an error result: {result:?}");
    assert!(
        content.starts_with(FAILED) && content.ends_with(RETRY_HINT),
        "{content:?}"
    );
    // The same classification as at top level, after `<provider>: `; a
    // full stop that ends it is not doubled before the hint.
    let name = p.name();
    match &fault.expect {
        Expect::Exact { text, .. } => assert_eq!(
            content,
            &format!("{FAILED}{name}: {}{RETRY_HINT}", text.trim_end_matches('.'))
        ),
        Expect::Prefix { text, .. } => {
            assert!(
                content.starts_with(&format!("{FAILED}{name}: {text}")),
                "{content:?}"
            );
        }
        Expect::Timeout => {
            assert_eq!(
                *content,
                format!(
                    "Error: sub-agent \"s\" failed - timeout after {FAULT_TIMEOUT}s. You may retry or proceed without this result."
                )
            );
            assert!(took < TIMEOUT_BOUND, "took {took:?}");
        }
        Expect::Answer(_) => unreachable!(),
    }
}

// ---------------------------------------------------------------------------
// Tool-call faults: the model of the agent under test sends them.
// ---------------------------------------------------------------------------
