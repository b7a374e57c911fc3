//! The cost of one run: `axe run` (and `--dry-run`, and the run log) over
//! the start of a static no-op, its peak memory, and connection reuse over a
//! ten-turn conversation.

use super::*;

/// Mean and minimum of a loop of runs.
#[derive(Clone, Copy)]
pub(crate) struct Times {
    pub(crate) mean: Duration,
    pub(crate) min: Duration,
}

/// Runs each of `makes`' commands [`RUNS`] times, taking turns (one run
/// of each, then again), so that drift on the machine falls on all alike;
/// each run has [`PROMPT`] on stdin. The times are in the order of `makes`.
pub(crate) fn spawn_loop(makes: &[&dyn Fn() -> Command]) -> Vec<Times> {
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
pub(crate) fn spawn_once(mut cmd: Command) -> Duration {
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
pub(crate) struct Floor {
    /// What the row names: `a static no-op`, or `/bin/true`.
    label: &'static str,
    path: PathBuf,
}

pub(crate) fn floor() -> Floor {
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
pub(crate) fn static_noop() -> Result<PathBuf, String> {
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
pub(crate) fn per_run_rows(bins: &[Bin], rows: &mut Vec<Row>) {
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
    let mut rss = Row::new("peak RSS, single run", "MiB", "<= 4");
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
pub(crate) fn connections(bin: &Bin) -> (usize, usize) {
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
