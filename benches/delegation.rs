//! `make bench`: what axe adds on top of the model's latency, measured by
//! driving an `axe` binary as a user would (a temp `XDG_CONFIG_HOME`, agent
//! files, the prompt on stdin, `AXE_OPENAI_BASE_URL` pointing at a fake
//! provider on 127.0.0.1). Prints one table, a column per binary with each
//! figure marked against its target, and writes `target/bench/results.json`.
//! Never fails on a time: the targets are goals shown beside the figures,
//! not assertions.
//!
//! Which binaries: `AXE_BENCH_BIN` names them (`PATH`, or
//! `LABEL=PATH,LABEL=PATH`, e.g. another implementation of the same CLI);
//! by default the release build cargo made (`glibc`) and, when `make static`
//! has built it, the static one (`static`). The binaries take turns within
//! every repetition, so drift on the machine falls on all of them alike.
//!
//! The fake provider is the test harness's (`tests/common`): a thread per
//! connection, `TCP_NODELAY`, each response in one write, counting requests
//! in flight and connections accepted, so that it is not the bottleneck.

// The test harness (tests/common) serves the integration tests; the bench
// uses a part of it.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/measure.rs"]
mod measure;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use measure::{Measured, RUSAGE_SELF, measure, rusage};
use serde_json::{Value, json};

/// The model latency the fan-out and tree scenarios simulate.
const L: Duration = Duration::from_millis(200);
/// Repetitions of a latency scenario, by default; the median is reported.
/// `AXE_BENCH_REPEATS=n` sets another count (an odd one keeps the median a
/// measured run).
const DEFAULT_REPEATS: usize = 3;

fn repeats() -> usize {
    std::env::var("AXE_BENCH_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_REPEATS)
}
/// Runs in each per-run cost loop.
const RUNS: usize = 200;
/// The prompt every run is given, on stdin.
const PROMPT: &str = "hi";

/// A binary under measurement.
struct Bin {
    label: String,
    path: PathBuf,
}

/// One line of the table: a value per binary (None: that binary failed the
/// scenario), the goal, and what was seen.
struct Row {
    name: String,
    unit: &'static str,
    /// `<= X`, or `-` for a figure shown without a goal.
    target: &'static str,
    values: Vec<Option<f64>>,
    details: Vec<String>,
}

impl Row {
    fn new(name: impl Into<String>, unit: &'static str, target: &'static str) -> Row {
        Row {
            name: name.into(),
            unit,
            target,
            values: Vec::new(),
            details: Vec::new(),
        }
    }

    fn push(&mut self, value: Option<f64>, detail: String) {
        self.values.push(value);
        self.details.push(detail);
    }

    /// Whether `value` meets the target; None when there is none.
    fn met(&self, value: f64) -> Option<bool> {
        let bound: f64 = self.target.strip_prefix("<= ")?.parse().ok()?;
        Some(value <= bound)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(measure::SHIM_FLAG) {
        return measure::shim(&args[2..]);
    }
    let bins = binaries();
    let mut rows = Vec::new();
    // AXE_BENCH_ONLY=word runs only the scenarios whose name holds it
    // (fan-out, N=256, tree, per-run, connections): for profiling.
    let only = std::env::var("AXE_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str());

    for n in [1, 4, 16, 64, 256] {
        if wanted(&format!("fan-out N={n}")) {
            fan_out_rows(&bins, n, &mut rows);
        }
    }
    if wanted("tree") {
        tree_rows(&bins, &mut rows);
    }
    if wanted("per-run") {
        per_run_rows(&bins, &mut rows);
    }
    if wanted("connections") {
        let mut row = Row::new("connections, 10-turn conversation", "conn", "<= 1");
        for bin in &bins {
            match attempt(|| connections(bin)) {
                Some((connections, requests)) => row.push(
                    Some(connections as f64),
                    format!("{requests} requests served over {connections} TCP connection(s)"),
                ),
                None => row.push(None, "failed".into()),
            }
        }
        rows.push(row);
    }

    let mut row = Row::new("binary size", "MiB", "<= 4");
    for bin in &bins {
        let size = std::fs::metadata(&bin.path).map_or(0, |m| m.len());
        row.push(
            Some(size as f64 / (1024.0 * 1024.0)),
            format!("{size} bytes, {}", linkage(&bin.path)),
        );
    }
    rows.push(row);

    report(&bins, &rows);
}

/// The binaries to measure (see the file's header).
fn binaries() -> Vec<Bin> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if let Ok(list) = std::env::var("AXE_BENCH_BIN") {
        return list
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|entry| {
                let (label, path) = entry.split_once('=').unwrap_or(("", entry));
                let path = root.join(path);
                let label = if label.is_empty() {
                    path.display().to_string()
                } else {
                    label.to_string()
                };
                Bin { label, path }
            })
            .collect();
    }
    let mut bins = vec![Bin {
        label: "glibc".into(),
        path: env!("CARGO_BIN_EXE_axe").into(),
    }];
    let musl = root.join("target/x86_64-unknown-linux-musl/release/axe");
    if musl.is_file() {
        bins.push(Bin {
            label: "static".into(),
            path: musl,
        });
    }
    bins
}

/// Runs `f`; a panic (a failed check inside a scenario) becomes None, so
/// that one binary's failure leaves the others' figures standing.
fn attempt<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// Runs `f` for every binary [`repeats`] times, the binaries taking turns,
/// and returns each binary's runs (None where one failed).
fn repeated<T>(bins: &[Bin], mut f: impl FnMut(&Bin) -> T) -> Vec<Option<Vec<T>>> {
    let mut runs: Vec<Option<Vec<T>>> = bins.iter().map(|_| Some(Vec::new())).collect();
    for _ in 0..repeats() {
        for (bin, runs) in bins.iter().zip(runs.iter_mut()) {
            if runs.is_some() {
                match attempt(|| f(bin)) {
                    Some(run) => runs.as_mut().map(|r| r.push(run)),
                    None => runs.take().map(|_| ()),
                };
            }
        }
    }
    runs
}

/// The median of `values` (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

// ---------------------------------------------------------------------------
// Scenarios.
// ---------------------------------------------------------------------------

/// A config home with `agents` written as (name, extra TOML); every agent is
/// on `openai/bench` with the system prompt `You are <name>.`.
fn home_with(agents: &[(&str, &str)]) -> Home {
    let home = Home::new();
    for (name, extra) in agents {
        home.agent(
            name,
            &format!(
                "name = \"{name}\"\nmodel = \"openai/bench\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        );
    }
    home
}

/// `bin` with `args`, set up for `home` and `server`.
fn axe_at(bin: &Bin, home: &Home, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = home.command(&bin.path);
    cmd.args(args)
        .env("OPENAI_API_KEY", "sk-bench-0123456789")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` with [`PROMPT`] on stdin, checks it succeeded, returns its
/// standard output.
fn run_ok(mut cmd: Command) -> String {
    let mut child = cmd.spawn().expect("run axe");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(PROMPT.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for axe");
    assert!(
        out.status.success(),
        "axe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// When things happened at the server during a fan-out, relative to the
/// moment the parent's tool calls were sent (start-up and exit: to and from
/// the measuring shim's start and end, so they include its own ~1 ms).
#[derive(Default, Clone, Copy)]
struct Timeline {
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
struct Marks {
    parent_first: Option<Instant>,
    calls_sent: Option<Instant>,
    arrivals: Vec<Instant>,
    last_answer: Option<Instant>,
    parent_next: Option<Instant>,
}

/// One fan-out run: what the shim measured of axe, the server's maximum
/// in-flight count, the timeline, and the CPU the fake provider used
/// meanwhile (it shares the machine with axe).
struct FanOut {
    axe: Measured,
    in_flight: usize,
    timeline: Timeline,
    server_cpu: Duration,
}

/// N `call_agent` calls in one instant parent response; every sub-agent
/// answer takes L.
fn fan_out(bin: &Bin, n: usize) -> FanOut {
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
    let cmd = axe_at(bin, &home, &server, &["run", "lead"]);
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
fn fan_out_rows(bins: &[Bin], n: usize, rows: &mut Vec<Row>) {
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
}

/// root -> 4 children -> 4 leaves each; every response takes L. The
/// critical path is 5 responses. Returns the wall time and the most leaves
/// in flight at once.
fn tree(bin: &Bin) -> (Duration, usize) {
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

fn tree_rows(bins: &[Bin], rows: &mut Vec<Row>) {
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

/// Mean and minimum of a loop of runs.
#[derive(Clone, Copy)]
struct Times {
    mean: Duration,
    min: Duration,
}

/// Runs each of `makes`' commands [`RUNS`] times, taking turns (one run
/// of each, then again), so that drift on the machine falls on all alike;
/// each run has [`PROMPT`] on stdin. The times are in the order of `makes`.
fn spawn_loop(makes: &[&dyn Fn() -> Command]) -> Vec<Times> {
    let mut total = vec![Duration::ZERO; makes.len()];
    let mut min = vec![Duration::MAX; makes.len()];
    for _ in 0..RUNS {
        for (i, make) in makes.iter().enumerate() {
            let t = spawn_once(make());
            total[i] += t;
            min[i] = min[i].min(t);
        }
    }
    total
        .into_iter()
        .zip(min)
        .map(|(total, min)| Times {
            mean: total / RUNS as u32,
            min,
        })
        .collect()
}

/// How long `cmd` takes from spawn to exit, with [`PROMPT`] on its stdin.
fn spawn_once(mut cmd: Command) -> Duration {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(PROMPT.as_bytes());
    }
    let status = child.wait().expect("wait");
    let t = started.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    t
}

/// The program a run's cost is measured over: one that does nothing,
/// statically linked, so that the figure is what axe does and not a dynamic
/// loader one side pays for and the other does not (`/bin/true` is
/// dynamically linked; the static build has no loader, and measured over
/// it came out below zero). Built here with rustc, `-C
/// target-feature=+crt-static`; where that cannot be done, `/bin/true`,
/// and the row says so.
struct Floor {
    /// What the row names: `a static no-op`, or `/bin/true`.
    label: &'static str,
    path: PathBuf,
}

fn floor() -> Floor {
    match static_noop() {
        Ok(path) => Floor {
            label: "a static no-op",
            path,
        },
        Err(why) => {
            eprintln!("bench: no static no-op ({why}); per-run cost is over /bin/true");
            Floor {
                label: "/bin/true",
                path: "/bin/true".into(),
            }
        }
    }
}

/// `fn main() {}`, built statically into `target/bench/noop-static`.
fn static_noop() -> Result<PathBuf, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("noop.rs");
    let out = dir.join("noop-static");
    std::fs::write(&src, "fn main() {}\n").map_err(|e| e.to_string())?;
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let built = Command::new(rustc)
        .args([
            "-O",
            "-C",
            "target-feature=+crt-static",
            "-C",
            "strip=symbols",
        ])
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("rustc: {e}"))?;
    if !built.success() {
        return Err(format!("rustc -C target-feature=+crt-static: {built}"));
    }
    match linkage(&out) {
        "static" => Ok(out),
        other => Err(format!("rustc made a {other} binary")),
    }
}

/// A single-shot agent against an instant answer, and its `--dry-run`: the
/// mean cost of a run over a static no-op's ([`Floor`]), the two taking
/// turns, a single run's peak RSS, and what the run log adds to a run.
/// The details give the absolute times, and `/bin/true`'s beside them.
fn per_run_rows(bins: &[Bin], rows: &mut Vec<Row>) {
    let home = home_with(&[("solo", "")]);
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let floor = floor();
    let over = floor.label;
    let mut single = Row::new(
        format!("per-run cost, single run (over {over})"),
        "ms",
        "<= 1.0",
    );
    let mut dry = Row::new(
        format!("per-run cost, --dry-run (over {over})"),
        "ms",
        "<= 1.0",
    );
    let mut rss = Row::new("peak RSS, single run", "MiB", "<= 3.9");
    // The run log (design §7.7) is on in the rows above; this one is what
    // it adds: the same run with it and with --no-log, taking turns.
    let mut log = Row::new("run log's cost, single run (over --no-log)", "ms", "<= 1.0");
    for bin in bins {
        let on = || axe_at(bin, &home, &server, &["run", "solo"]);
        let off = || axe_at(bin, &home, &server, &["run", "solo", "--no-log"]);
        match attempt(|| spawn_loop(&[&on, &off])) {
            Some(t) => log.push(
                Some(ms(t[0].mean) - ms(t[1].mean)),
                format!(
                    "{RUNS} runs each, taking turns: log on mean {:.2} ms, min {:.2} ms; \
                     --no-log mean {:.2} ms, min {:.2} ms",
                    ms(t[0].mean),
                    ms(t[0].min),
                    ms(t[1].mean),
                    ms(t[1].min)
                ),
            ),
            None => log.push(None, "failed (a binary without --no-log?)".into()),
        }
        for (row, args) in [
            (&mut single, &["run", "solo"][..]),
            (&mut dry, &["run", "solo", "--dry-run"][..]),
        ] {
            let axe = || axe_at(bin, &home, &server, args);
            let no_op = || Command::new(&floor.path);
            let bin_true = || Command::new("/bin/true");
            match attempt(|| spawn_loop(&[&axe, &no_op, &bin_true])) {
                Some(t) => row.push(
                    Some(ms(t[0].mean) - ms(t[1].mean)),
                    format!(
                        "{RUNS} runs each, taking turns: mean {:.2} ms, min {:.2} ms; {over} \
                         mean {:.2} ms, min {:.2} ms; /bin/true mean {:.2} ms, min {:.2} ms",
                        ms(t[0].mean),
                        ms(t[0].min),
                        ms(t[1].mean),
                        ms(t[1].min),
                        ms(t[2].mean),
                        ms(t[2].min)
                    ),
                ),
                None => row.push(None, "failed".into()),
            }
        }
        let runs = attempt(|| {
            (0..repeats())
                .map(|_| {
                    let m = measure(&axe_at(bin, &home, &server, &["run", "solo"]), PROMPT);
                    m.max_rss_kib as f64 / 1024.0
                })
                .collect::<Vec<_>>()
        });
        match runs {
            Some(runs) => rss.push(
                Some(median(runs)),
                format!("ru_maxrss of the child, median of {}", repeats()),
            ),
            None => rss.push(None, "failed".into()),
        }
    }
    rows.extend([single, dry, rss, log]);
}

/// An 11-request parent conversation delegating once per turn, 10 times,
/// all on one host: TCP connections accepted and requests served.
fn connections(bin: &Bin) -> (usize, usize) {
    let home = home_with(&[("lead", "sub_agents = [\"w\"]\n"), ("w", "")]);
    let server = FakeServer::route(|req| {
        if req.who() != "lead" {
            return Reply::Json(200, openai_text("ok", 1, 1));
        }
        let turns_done = req
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        if turns_done >= 10 {
            Reply::Json(200, openai_text("done", 1, 1))
        } else {
            let id = format!("call_{turns_done}");
            Reply::Json(
                200,
                openai_tool_calls(&[(&id, "call_agent", delegate("w", "next"))], 1, 1),
            )
        }
    });
    run_ok(axe_at(bin, &home, &server, &["run", "lead"]));
    (server.connections(), server.requests().len())
}

/// `static` when the binary asks for no dynamic loader, else `dynamic`.
fn linkage(path: &std::path::Path) -> &'static str {
    // An ELF file that needs a loader names it in a PT_INTERP segment; the
    // path of glibc's is in the file's first pages.
    match std::fs::read(path) {
        Ok(bytes)
            if bytes
                .windows(10)
                .take(64 * 1024)
                .any(|w| w == b"/lib64/ld-") =>
        {
            "dynamic"
        }
        Ok(_) => "static",
        Err(_) => "unreadable",
    }
}

// ---------------------------------------------------------------------------
// Reporting.
// ---------------------------------------------------------------------------

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    json!({"cpu": cpu, "cores": cores, "kernel": kernel})
}

/// `1.23 x met`, `1.40 x MISSED`, `failed`.
fn cell(row: &Row, value: Option<f64>) -> String {
    match value {
        None => "failed".into(),
        Some(v) => {
            let mark = match row.met(v) {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "",
            };
            format!("{v:>8.2} {:<3} {mark:<6}", row.unit)
        }
    }
}

fn report(bins: &[Bin], rows: &[Row]) {
    let m = machine();
    println!(
        "\naxe delegation benchmark (L = {} ms; {}, {} cores, Linux {})\n",
        L.as_millis(),
        m["cpu"].as_str().unwrap_or("?"),
        m["cores"],
        m["kernel"].as_str().unwrap_or("?")
    );
    for bin in bins {
        println!("{:>8}: {}", bin.label, bin.path.display());
    }
    println!();
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    print!("{:<width$}  {:<8}", "figure", "target");
    for bin in bins {
        print!("  {:<19}", bin.label);
    }
    println!();
    for row in rows {
        print!("{:<width$}  {:<8}", row.name, row.target);
        for v in &row.values {
            print!("  {:<19}", cell(row, *v));
        }
        println!();
    }
    println!("\ndetails:");
    for row in rows {
        println!("  {}", row.name);
        for (bin, detail) in bins.iter().zip(&row.details) {
            println!("    {}: {detail}", bin.label);
        }
    }
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let by_bin: Vec<Value> = bins
                .iter()
                .zip(r.values.iter().zip(&r.details))
                .map(|(b, (v, d))| {
                    json!({"binary": b.label, "value": v, "met": v.and_then(|v| r.met(v)),
                           "detail": d})
                })
                .collect();
            json!({"figure": r.name, "unit": r.unit, "target": r.target, "results": by_bin})
        })
        .collect();
    let binaries: Vec<Value> = bins
        .iter()
        .map(|b| json!({"label": b.label, "path": b.path.display().to_string()}))
        .collect();
    let out = json!({"machine": m, "latency_ms": L.as_millis() as u64,
                     "binaries": binaries, "figures": json_rows});
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let path = dir.join("results.json");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, format!("{out:#}\n"))) {
        Ok(()) => println!("\nwritten: {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}
