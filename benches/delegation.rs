//! `make bench`: what axe adds on top of the model's latency, measured by
//! driving the release `axe` binary as a user would (a temp
//! `XDG_CONFIG_HOME`, agent files, `AXE_OPENAI_BASE_URL` pointing at a fake
//! provider on 127.0.0.1). Prints one table and writes
//! `target/bench/results.json`. Never fails on a time: the targets are
//! goals shown beside the figures, not assertions.
//!
//! The fake provider is the test harness's (`tests/common`): a thread per
//! connection, `TCP_NODELAY`, each response in one write, counting requests
//! in flight and connections accepted, so that it is not the bottleneck.

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// The model latency the fan-out and tree scenarios simulate.
const L: Duration = Duration::from_millis(200);
/// Repetitions of a latency scenario; the median is reported.
const REPEATS: usize = 3;
/// Runs in each per-run cost loop.
const RUNS: usize = 200;

/// One line of the table.
struct Figure {
    name: String,
    value: f64,
    unit: &'static str,
    target: String,
    detail: String,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--rss-of") {
        return rss_shim(&args[2..]);
    }
    let axe = env!("CARGO_BIN_EXE_axe");
    let mut figures = Vec::new();

    for n in [1, 4, 16, 64, 256] {
        let mut runs: Vec<_> = (0..REPEATS).map(|_| fan_out(n)).collect();
        runs.sort_by_key(|r| r.0.wall);
        let (m, in_flight, t, server_cpu) = runs[REPEATS / 2];
        let wall = m.wall;
        figures.push(Figure {
            name: format!("fan-out N={n}: wall / L"),
            value: wall.as_secs_f64() / L.as_secs_f64(),
            unit: "x",
            target: if n <= 64 { "<= 1.05" } else { "<= 1.15" }.into(),
            detail: format!(
                "median of {REPEATS}: {:.1} ms, max in flight {in_flight}/{n}; sub-agent requests \
                 arrived {:.1}-{:.1} ms after the calls, parent's next request {:.1} ms after the \
                 last answer; CPU: axe {:.0} ms, fake provider {:.0} ms",
                ms(wall),
                ms(t.first),
                ms(t.last),
                ms(t.tail),
                ms(m.cpu),
                ms(server_cpu)
            ),
        });
    }

    let (wall, in_flight) = median_of(REPEATS, tree);
    figures.push(Figure {
        name: "tree 1->4->16: wall / 5L".into(),
        value: wall.as_secs_f64() / (5.0 * L.as_secs_f64()),
        unit: "x",
        target: "<= 1.10".into(),
        detail: format!(
            "median of {REPEATS}: {:.1} ms, server max in flight {in_flight} (16 leaves)",
            ms(wall)
        ),
    });

    let floor = spawn_loop(|| {
        let mut c = Command::new("/bin/true");
        c.stdout(Stdio::null());
        c
    });
    let (single, dry) = per_run();
    for (what, t) in [("single run", single), ("--dry-run", dry)] {
        figures.push(Figure {
            name: format!("per-run cost, {what}: mean - /bin/true mean"),
            value: ms(t.mean) - ms(floor.mean),
            unit: "ms",
            target: "<= 2".into(),
            detail: format!(
                "{RUNS} runs: mean {:.2} ms, min {:.2} ms; /bin/true mean {:.2} ms, min {:.2} ms",
                ms(t.mean),
                ms(t.min),
                ms(floor.mean),
                ms(floor.min)
            ),
        });
    }

    let (single_kb, fan_kb) = memory();
    figures.push(Figure {
        name: "peak RSS, single run".into(),
        value: single_kb as f64 / 1024.0,
        unit: "MiB",
        target: "<= 6".into(),
        detail: "ru_maxrss of the child".into(),
    });
    figures.push(Figure {
        name: "peak RSS, fan-out N=256".into(),
        value: fan_kb as f64 / 1024.0,
        unit: "MiB",
        target: "<= 64".into(),
        detail: "ru_maxrss of the child".into(),
    });

    let (connections, requests) = connections();
    figures.push(Figure {
        name: "connections, 10-turn conversation".into(),
        value: connections as f64,
        unit: "conn",
        target: "1".into(),
        detail: format!("{requests} requests served over {connections} TCP connection(s)"),
    });

    let size = std::fs::metadata(axe).map_or(0, |m| m.len());
    figures.push(Figure {
        name: "release binary".into(),
        value: size as f64 / (1024.0 * 1024.0),
        unit: "MiB",
        target: "<= 4".into(),
        detail: format!("{size} bytes"),
    });

    report(&figures);
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

fn axe_at(home: &Home, server: &FakeServer) -> Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", "sk-bench-0123456789")
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Which agent sent a request, from its system prompt.
fn who(req: &Recorded) -> String {
    req.who()
}

/// Runs `cmd`, checks it succeeded, returns its wall time.
fn timed(cmd: &mut Command) -> Duration {
    let started = Instant::now();
    let out = cmd.output().expect("run axe");
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "axe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}

/// When things happened at the server during a fan-out, relative to the
/// moment the parent's tool calls were sent.
#[derive(Default, Clone, Copy)]
struct Timeline {
    /// First and last sub-agent request arrival.
    first: Duration,
    last: Duration,
    /// The parent's next request, after the last sub-agent answer was sent.
    tail: Duration,
}

/// N `call_agent` calls in one instant parent response; every sub-agent
/// answer takes L. Returns axe's wall time, RSS and CPU (measured by the
/// shim), the server's maximum in-flight count, the timeline, and the CPU
/// the fake provider used meanwhile (it shares the machine with axe).
fn fan_out(n: usize) -> (Measured, usize, Timeline, Duration) {
    use std::sync::Mutex;
    let home = home_with(&[("lead", "sub_agents = [\"w\"]\n"), ("w", "")]);
    // (calls sent, sub-agent arrivals, last sub-agent answer, parent's next request)
    type Marks = (
        Option<Instant>,
        Vec<Instant>,
        Option<Instant>,
        Option<Instant>,
    );
    let marks: Arc<Mutex<Marks>> = Arc::default();
    let m = marks.clone();
    let server = FakeServer::route(move |req| {
        if who(req) != "lead" {
            m.lock().unwrap().1.push(Instant::now());
            std::thread::sleep(L);
            let mut g = m.lock().unwrap();
            g.2 = Some(g.2.map_or(Instant::now(), |t| t.max(Instant::now())));
            return Reply::Json(200, openai_text("ok", 1, 1));
        }
        if req.has_tool_results() {
            m.lock().unwrap().3 = Some(Instant::now());
            // Every sub-agent must have answered, or the figure means nothing.
            let answered = req
                .messages()
                .iter()
                .filter(|m| m["role"] == "tool" && m["content"] == "ok")
                .count();
            return Reply::Json(200, openai_text(&format!("{answered} answered"), 1, 1));
        }
        let ids: Vec<String> = (0..n).map(|i| format!("call_{i}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .map(|id| (id.as_str(), "call_agent", delegate("w", "work")))
            .collect();
        let body = openai_tool_calls(&calls, 1, 1);
        m.lock().unwrap().0 = Some(Instant::now());
        Reply::Json(200, body)
    });
    let mut cmd = axe_at(&home, &server);
    cmd.args(["run", "lead"]);
    let (_, server_cpu_before) = rusage(RUSAGE_SELF);
    let measured = measure(&cmd);
    let (_, server_cpu_after) = rusage(RUSAGE_SELF);
    let last = server.requests().pop().expect("the parent's last request");
    assert!(
        last.messages()
            .iter()
            .filter(|m| m["role"] == "tool" && m["content"] == "ok")
            .count()
            == n,
        "not every sub-agent answered"
    );
    let g = marks.lock().unwrap();
    let since = |t: Option<Instant>| match (g.0, t) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => Duration::ZERO,
    };
    let timeline = Timeline {
        first: since(g.1.iter().min().copied()),
        last: since(g.1.iter().max().copied()),
        tail: match (g.2, g.3) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        },
    };
    (
        measured,
        server.max_in_flight(),
        timeline,
        server_cpu_after.saturating_sub(server_cpu_before),
    )
}

/// root -> 4 children -> 4 leaves each; every response takes L. The
/// critical path is 5 responses.
fn tree() -> (Duration, usize) {
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
        let name = who(req);
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
    let started = Instant::now();
    let out = axe_at(&home, &server)
        .args(["run", "root"])
        .output()
        .expect("run axe");
    let wall = started.elapsed();
    // The whole tree answered, or the figure means nothing.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "root done\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, max_leaves.load(std::sync::atomic::Ordering::SeqCst))
}

/// Mean and minimum of a loop of runs.
#[derive(Clone, Copy)]
struct Times {
    mean: Duration,
    min: Duration,
}

/// Spawns `make()`'s command [`RUNS`] times, one after another.
fn spawn_loop(make: impl Fn() -> Command) -> Times {
    let mut total = Duration::ZERO;
    let mut min = Duration::MAX;
    for _ in 0..RUNS {
        let mut cmd = make();
        let started = Instant::now();
        let status = cmd.status().expect("spawn");
        let t = started.elapsed();
        assert!(status.success(), "{cmd:?} failed");
        total += t;
        min = min.min(t);
    }
    Times {
        mean: total / RUNS as u32,
        min,
    }
}

/// A single-shot agent against an instant answer, and its `--dry-run`.
fn per_run() -> (Times, Times) {
    let home = home_with(&[("solo", "")]);
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let quiet = |args: &'static [&'static str]| {
        let home = &home;
        let server = &server;
        move || {
            let mut c = axe_at(home, server);
            c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
            c
        }
    };
    let single = spawn_loop(quiet(&["run", "solo", "-p", "hi"]));
    let dry = spawn_loop(quiet(&["run", "solo", "-p", "hi", "--dry-run"]));
    (single, dry)
}

/// Peak RSS (KiB) of a single run and of the N = 256 fan-out.
fn memory() -> (u64, u64) {
    let home = home_with(&[("solo", "")]);
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let single = measure(axe_at(&home, &server).args(["run", "solo", "-p", "hi"]));
    (single.max_rss_kib, fan_out(256).0.max_rss_kib)
}

/// An 11-request parent conversation delegating once per turn, 10 times,
/// all on one host: TCP connections accepted and requests served.
fn connections() -> (usize, usize) {
    let home = home_with(&[("lead", "sub_agents = [\"w\"]\n"), ("w", "")]);
    let server = FakeServer::route(|req| {
        if who(req) != "lead" {
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
    timed(axe_at(&home, &server).args(["run", "lead"]));
    (server.connections(), server.requests().len())
}

// ---------------------------------------------------------------------------
// Peak RSS: this bench re-runs itself as a shim whose only child is axe, so
// that getrusage(RUSAGE_CHILDREN) is that one child's high-water mark.
// ---------------------------------------------------------------------------

/// What the shim measured of its one child.
#[derive(Default, Clone, Copy)]
struct Measured {
    /// From spawn to exit, timed by the shim (its own start-up excluded).
    wall: Duration,
    /// Peak resident set, KiB.
    max_rss_kib: u64,
    /// User plus system CPU time.
    cpu: Duration,
}

/// Runs `cmd` under the shim (0s where it cannot be measured).
fn measure(cmd: &Command) -> Measured {
    let Ok(me) = std::env::current_exe() else {
        return Measured::default();
    };
    let mut shim = Command::new(me);
    shim.arg("--rss-of")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => shim.env(k, v),
            None => shim.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        shim.current_dir(dir);
    }
    let out = shim
        .stdin(Stdio::null())
        .output()
        .expect("run the RSS shim");
    let text = String::from_utf8_lossy(&out.stdout);
    let n: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    // A run that failed must not read as a fast one.
    match (out.status.success(), &n[..]) {
        (true, &[wall_us, rss, cpu_us]) => Measured {
            wall: Duration::from_micros(wall_us),
            max_rss_kib: rss,
            cpu: Duration::from_micros(cpu_us),
        },
        _ => panic!(
            "the measured run failed: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn rss_shim(cmd: &[String]) {
    let started = Instant::now();
    let out = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .output()
        .expect("run the measured command");
    let wall = started.elapsed();
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    }
    let (rss, cpu) = rusage(RUSAGE_CHILDREN);
    println!("{} {rss} {}", wall.as_micros(), cpu.as_micros());
}

const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;

/// Peak RSS (KiB) and user + system CPU of `who` (0s where unsupported).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn rusage(who: i32) -> (u64, Duration) {
    #[repr(C)]
    struct Rusage {
        utime: [i64; 2],
        stime: [i64; 2],
        maxrss: i64,
        rest: [i64; 13],
    }
    unsafe extern "C" {
        fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
    let mut usage = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        rest: [0; 13],
    };
    // SAFETY: `usage` is a properly laid out, writable `struct rusage` for
    // 64-bit Linux, and getrusage writes nothing else.
    if unsafe { getrusage(who, &mut usage) } != 0 {
        return (0, Duration::ZERO);
    }
    let tv = |t: [i64; 2]| {
        Duration::from_secs(u64::try_from(t[0]).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t[1]).unwrap_or(0))
    };
    (
        u64::try_from(usage.maxrss).unwrap_or(0),
        tv(usage.utime) + tv(usage.stime),
    )
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn rusage(_: i32) -> (u64, Duration) {
    (0, Duration::ZERO)
}

// ---------------------------------------------------------------------------
// Reporting.
// ---------------------------------------------------------------------------

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `f` `n` times and returns the run with the median wall time.
fn median_of(n: usize, mut f: impl FnMut() -> (Duration, usize)) -> (Duration, usize) {
    let mut runs: Vec<(Duration, usize)> = (0..n).map(|_| f()).collect();
    runs.sort_by_key(|r| r.0);
    runs[n / 2]
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

fn report(figures: &[Figure]) {
    let m = machine();
    println!(
        "\naxe delegation benchmark (L = {} ms; {}, {} cores, Linux {})\n",
        L.as_millis(),
        m["cpu"].as_str().unwrap_or("?"),
        m["cores"],
        m["kernel"].as_str().unwrap_or("?")
    );
    let width = figures.iter().map(|f| f.name.len()).max().unwrap_or(0);
    println!(
        "{:<width$}  {:>9}  {:<8}  detail",
        "figure", "value", "target"
    );
    for f in figures {
        println!(
            "{:<width$}  {:>6.2} {:<4} {:<8}  {}",
            f.name, f.value, f.unit, f.target, f.detail
        );
    }
    let rows: Vec<Value> = figures
        .iter()
        .map(|f| {
            json!({"figure": f.name, "value": f.value, "unit": f.unit,
                   "target": f.target, "detail": f.detail})
        })
        .collect();
    let out = json!({"machine": m, "latency_ms": L.as_millis() as u64, "figures": rows});
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    let path = dir.join("results.json");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, format!("{out:#}\n"))) {
        Ok(()) => println!("\nwritten: {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}
