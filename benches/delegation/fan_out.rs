//! The latency scenarios: a parent fanning out to N sub-agents at once, and
//! a three-level tree, against a fake provider answering after [`L`]; what
//! axe adds over the model's latency, its CPU, memory and threads.

use super::*;

/// When things happened at the server during a fan-out, relative to the
/// moment the parent's tool calls were sent (start-up and exit: to and from
/// the measuring shim's start and end, so they include its own ~1 ms).
#[derive(Default, Clone, Copy)]
pub(crate) struct Timeline {
    /// From the shim's start to the parent's first request.
    startup: Duration,
    /// First and last sub-agent request arrival.
    first: Duration,
    last: Duration,
    /// The parent's next request, after the last sub-agent answer was sent.
    tail: Duration,
    /// From the parent's last answer to the shim's end.
    exit: Duration,
}

/// What the fake provider saw, as it happened.
#[derive(Default)]
pub(crate) struct Marks {
    parent_first: Option<Instant>,
    calls_sent: Option<Instant>,
    arrivals: Vec<Instant>,
    last_answer: Option<Instant>,
    parent_next: Option<Instant>,
}

/// One fan-out run: what the shim measured of axe, the server's maximum
/// in-flight count, the timeline, and the CPU the fake provider used
/// meanwhile (it shares the machine with axe).
pub(crate) struct FanOut {
    pub(crate) axe: Measured,
    in_flight: usize,
    timeline: Timeline,
    server_cpu: Duration,
}

/// N `call_agent` calls in one instant parent response; every sub-agent
/// answer takes L.
pub(crate) fn fan_out(bin: &Bin, n: usize) -> FanOut {
    fan_out_with(bin, n, &[])
}

/// [`fan_out`] with `env` set for axe (the telemetry rows' export on).
pub(crate) fn fan_out_with(bin: &Bin, n: usize, env: &[(&str, &str)]) -> FanOut {
    let home = home_with(&[("lead", "sub_agents = [\"w\"]\n"), ("w", "")]);
    let marks: Arc<Mutex<Marks>> = Arc::default();
    let m = marks.clone();
    let server = FakeServer::route_with(Some(n + 8), move |req| {
        if req.who() != "lead" {
            m.lock().unwrap().arrivals.push(Instant::now());
            std::thread::sleep(L);
            let mut g = m.lock().unwrap();
            let now = Instant::now();
            g.last_answer = Some(g.last_answer.map_or(now, |t| t.max(now)));
            return Reply::Json(200, openai_text("ok", 1, 1));
        }
        if req.has_tool_results() {
            m.lock().unwrap().parent_next = Some(Instant::now());
            return Reply::Json(200, openai_text("all answered", 1, 1));
        }
        m.lock().unwrap().parent_first = Some(Instant::now());
        let ids: Vec<String> = (0..n).map(|i| format!("call_{i}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .map(|id| (id.as_str(), "call_agent", delegate("w", "work")))
            .collect();
        let body = openai_tool_calls(&calls, 1, 1);
        m.lock().unwrap().calls_sent = Some(Instant::now());
        Reply::Json(200, body)
    });
    let mut cmd = axe_at(bin, &home, &server, &["run", "lead"]);
    cmd.envs(env.iter().copied());
    let (_, server_cpu_before) = rusage(RUSAGE_SELF);
    let started = Instant::now();
    let axe = measure(&cmd, PROMPT);
    let ended = Instant::now();
    let (_, server_cpu_after) = rusage(RUSAGE_SELF);
    // Every sub-agent must have answered, or the figures mean nothing.
    let last = server.requests().pop().expect("the parent's last request");
    let answered = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool" && m["content"] == "ok")
        .count();
    assert_eq!(answered, n, "not every sub-agent answered");
    let g = marks.lock().unwrap();
    let between = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => Duration::ZERO,
    };
    let timeline = Timeline {
        startup: between(Some(started), g.parent_first),
        first: between(g.calls_sent, g.arrivals.iter().min().copied()),
        last: between(g.calls_sent, g.arrivals.iter().max().copied()),
        tail: between(g.last_answer, g.parent_next),
        exit: between(g.parent_next, Some(ended)),
    };
    FanOut {
        axe,
        in_flight: server.max_in_flight(),
        timeline,
        server_cpu: server_cpu_after.saturating_sub(server_cpu_before),
    }
}

/// The rows of the N-way fan-out: wall / L for every N; from N = 64, CPU
/// per sub-agent; at N = 256, peak RSS, threads and the two hand-offs.
/// Returns each binary's CPU per sub-agent in µs.
pub(crate) fn fan_out_rows(bins: &[Bin], n: usize, rows: &mut Vec<Row>) -> Vec<Option<f64>> {
    let mut per_sub_agent = Vec::new();
    let runs = repeated(bins, |bin| fan_out(bin, n));
    let target = if n <= 64 { "<= 1.05" } else { "<= 1.25" };
    let mut wall = Row::new(format!("fan-out N={n}: wall / L"), "x", target);
    let mut cpu = Row::new(format!("fan-out N={n}: CPU per sub-agent"), "us", "<= 200");
    let mut rss = Row::new(format!("fan-out N={n}: peak RSS"), "MiB", "<= 16");
    let mut threads = Row::new(format!("fan-out N={n}: threads at peak"), "", "-");
    let mut first = Row::new(
        format!("fan-out N={n}: first sub-agent request"),
        "ms",
        "<= 3",
    );
    let mut tail = Row::new(
        format!("fan-out N={n}: parent's next request"),
        "ms",
        "<= 3",
    );
    for runs in runs {
        let Some(runs) = runs else {
            for row in [
                &mut wall,
                &mut cpu,
                &mut rss,
                &mut threads,
                &mut first,
                &mut tail,
            ] {
                row.push(None, "failed".into());
            }
            per_sub_agent.push(None);
            continue;
        };
        let of = |f: &dyn Fn(&FanOut) -> f64| median(runs.iter().map(f).collect());
        let wall_ms = of(&|r| ms(r.axe.wall));
        let cpu_ms = of(&|r| ms(r.axe.cpu));
        wall.push(
            Some(wall_ms / ms(L)),
            format!(
                "median of {}: {wall_ms:.1} ms, max in flight {:.0}/{n}; start-up {:.1} ms, \
                 sub-agent requests arrived {:.1}-{:.1} ms after the calls, parent's next \
                 request {:.1} ms after the last answer, exit {:.1} ms after the parent's last \
                 answer; CPU: axe {cpu_ms:.0} ms, fake provider {:.0} ms",
                runs.len(),
                of(&|r| r.in_flight as f64),
                of(&|r| ms(r.timeline.startup)),
                of(&|r| ms(r.timeline.first)),
                of(&|r| ms(r.timeline.last)),
                of(&|r| ms(r.timeline.tail)),
                of(&|r| ms(r.timeline.exit)),
                of(&|r| ms(r.server_cpu)),
            ),
        );
        per_sub_agent.push(Some(cpu_ms * 1000.0 / n as f64));
        cpu.push(
            Some(cpu_ms * 1000.0 / n as f64),
            format!(
                "median of {}: {cpu_ms:.1} ms of CPU (user + system) for {n} sub-agents",
                runs.len()
            ),
        );
        rss.push(
            Some(of(&|r| r.axe.max_rss_kib as f64) / 1024.0),
            "ru_maxrss of the child".into(),
        );
        threads.push(
            Some(of(&|r| r.axe.threads as f64)),
            "the most threads /proc showed at once, sampled every ms".into(),
        );
        first.push(
            Some(of(&|r| ms(r.timeline.first))),
            "from the parent's response leaving the server to the first sub-agent request \
             arriving"
                .into(),
        );
        tail.push(
            Some(of(&|r| ms(r.timeline.tail))),
            "from the last sub-agent answer leaving the server to the parent's next request \
             arriving"
                .into(),
        );
    }
    rows.push(wall);
    if n >= 64 {
        rows.push(cpu);
    }
    if n == 256 {
        rows.extend([rss, threads, first, tail]);
    }
    per_sub_agent
}

/// root -> 4 children -> 4 leaves each; every response takes L. The
/// critical path is 5 responses. Returns the wall time and the most leaves
/// in flight at once.
pub(crate) fn tree(bin: &Bin) -> (Duration, usize) {
    let home = home_with(&[
        ("root", "sub_agents = [\"child\"]\n"),
        ("child", "sub_agents = [\"leaf\"]\n"),
        ("leaf", ""),
    ]);
    let leaves_in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let max_leaves = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (now, max) = (leaves_in_flight.clone(), max_leaves.clone());
    let server = FakeServer::route(move |req| {
        use std::sync::atomic::Ordering::SeqCst;
        let name = req.who();
        let body = match (name.as_str(), req.has_tool_results()) {
            ("leaf", _) => {
                let n = now.fetch_add(1, SeqCst) + 1;
                max.fetch_max(n, SeqCst);
                std::thread::sleep(L);
                now.fetch_sub(1, SeqCst);
                return Reply::Json(200, openai_text("leaf result", 1, 1));
            }
            (_, true) => openai_text(&format!("{name} done"), 1, 1),
            (parent, false) => {
                let next = if parent == "root" { "child" } else { "leaf" };
                let ids = ["a", "b", "c", "d"];
                let calls: Vec<Call> = ids
                    .iter()
                    .map(|id| (*id, "call_agent", delegate(next, "work")))
                    .collect();
                openai_tool_calls(&calls, 1, 1)
            }
        };
        Reply::Delay(L, Box::new(Reply::Json(200, body)))
    });
    let cmd = axe_at(bin, &home, &server, &["run", "root"]);
    let started = Instant::now();
    let out = run_ok(cmd);
    let wall = started.elapsed();
    // The whole tree answered, or the figure means nothing.
    assert_eq!(out.trim_end(), "root done");
    (wall, max_leaves.load(std::sync::atomic::Ordering::SeqCst))
}

pub(crate) fn tree_rows(bins: &[Bin], rows: &mut Vec<Row>) {
    let mut row = Row::new("tree 1->4->16: wall / 5L", "x", "<= 1.02");
    for runs in repeated(bins, tree) {
        match runs {
            Some(runs) => {
                let wall = median(runs.iter().map(|r| ms(r.0)).collect());
                let leaves = median(runs.iter().map(|r| r.1 as f64).collect());
                row.push(
                    Some(wall / (5.0 * ms(L))),
                    format!(
                        "median of {}: {wall:.1} ms, server max in flight {leaves:.0} \
                         (16 leaves)",
                        runs.len()
                    ),
                );
            }
            None => row.push(None, "failed".into()),
        }
    }
    rows.push(row);
}
