//! OpenTelemetry's cost (issue 38, design §7.9): the same scenarios with
//! spans exported and without, to a receiver in this process (a thread on
//! 127.0.0.1 that reads each POST whole and answers 200 at once), so that
//! the figure is axe's and not a collector's: the N = 256 fan-out's CPU per
//! sub-agent, a single run's cost, and the time from the answer on stdout
//! to the exit, when the spans are flushed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::fan_out::fan_out_with;
use super::per_run::spawn_loop;
use super::*;

/// The fan-out the CPU row is measured at.
const N: usize = 256;
/// Pairs the CPU row takes at least, where the bench's default is 3
/// repetitions: even medians of 101 pairs read 3.1 to 6.5 % for one build
/// in runs on one afternoon (design §7.9), and 3 say next to nothing.
const PAIRS: usize = 21;
/// Runs of the answer-to-exit loop, each way.
const EXITS: usize = 21;

/// An OTLP/HTTP receiver that takes everything: a thread per connection,
/// `TCP_NODELAY`, requests read whole (length-delimited or chunked) and
/// answered `200` with an empty body. Its threads outlive it (the bench
/// ends soon after).
pub(crate) struct Receiver {
    pub(crate) url: String,
    posts: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
}

impl Receiver {
    pub(crate) fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let posts: Arc<AtomicUsize> = Arc::default();
        let bytes: Arc<AtomicUsize> = Arc::default();
        let (p, b) = (posts.clone(), bytes.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (p, b) = (p.clone(), b.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &p, &b);
                });
            }
        });
        Receiver { url, posts, bytes }
    }

    /// Posts and body bytes received so far.
    pub(crate) fn seen(&self) -> (usize, usize) {
        (
            self.posts.load(Ordering::SeqCst),
            self.bytes.load(Ordering::SeqCst),
        )
    }
}

/// One connection's requests, until it closes.
fn serve(conn: TcpStream, posts: &AtomicUsize, bytes: &AtomicUsize) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut out = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let (mut length, mut chunked) = (0, false);
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 || line.trim().is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            } else if k.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.to_ascii_lowercase().contains("chunked");
            }
        }
        let read = if chunked {
            chunks(&mut r)?
        } else {
            std::io::copy(&mut (&mut r).take(length as u64), &mut std::io::sink())? as usize
        };
        posts.fetch_add(1, Ordering::SeqCst);
        bytes.fetch_add(read, Ordering::SeqCst);
        out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")?;
    }
}

/// A chunked body, read and thrown away; its length.
fn chunks(r: &mut BufReader<TcpStream>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line)?;
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| std::io::Error::other("bad chunk size"))?;
        std::io::copy(&mut r.take(size as u64 + 2), &mut std::io::sink())?;
        if size == 0 {
            return Ok(total);
        }
        total += size;
    }
}

/// The rows: CPU per sub-agent at N = 256, a single run's cost, and the
/// answer to the exit, each with export on and off taking turns.
pub(crate) fn telemetry_rows(bins: &[Bin], rows: &mut Vec<Row>) {
    let receiver = Receiver::start();
    let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str())];
    // Empty is unset (design §7.9): the developer's own endpoint is not
    // what "off" measures.
    let off = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""),
    ];
    rows.push(fan_out_row(bins, &receiver, &on, &off));
    let (cost, exit) = single_rows(bins, &receiver, &on, &off);
    rows.extend([cost, exit]);
}

/// The N = 256 fan-out, off and on back to back in every repetition (the
/// order turning): CPU per sub-agent, on over off, the median of the
/// repetitions' ratios.
fn fan_out_row(bins: &[Bin], rx: &Receiver, on: &[(&str, &str)], off: &[(&str, &str)]) -> Row {
    let mut row = Row::new(
        format!("telemetry: fan-out N={N}: CPU per sub-agent, export on over off"),
        "%",
        "<= 5",
    );
    // Off first in one repetition, on first in the next: whichever runs
    // second does not always find the machine as the first left it.
    let mut turns = 0usize;
    let runs = repeated_n(bins, repeats().max(PAIRS), |bin| {
        let on_first = (turns / bins.len()) % 2 == 1;
        turns += 1;
        let before = rx.seen();
        let (without, with) = if on_first {
            let with = fan_out_with(bin, N, on).axe.cpu;
            (fan_out_with(bin, N, off).axe.cpu, with)
        } else {
            let without = fan_out_with(bin, N, off).axe.cpu;
            (without, fan_out_with(bin, N, on).axe.cpu)
        };
        let after = rx.seen();
        // Spans must have come, or the figure means nothing.
        assert!(after.0 > before.0, "no spans exported");
        (without, with, after.0 - before.0, after.1 - before.1)
    });
    for runs in runs {
        let Some(runs) = runs else {
            row.push(None, "failed".into());
            continue;
        };
        let per = |d: Duration| d.as_secs_f64() * 1e6 / N as f64;
        let off_us = median(runs.iter().map(|r| per(r.0)).collect());
        let on_us = median(runs.iter().map(|r| per(r.1)).collect());
        // The figure is the median of each repetition's own ratio: off and
        // on run back to back, so the machine's drift over the row (its
        // other work, its caches) is in both halves of a pair, where the
        // ratio of the two medians took it in whole (design §7.9).
        let paired = median(
            runs.iter()
                .map(|r| (r.1.as_secs_f64() / r.0.as_secs_f64() - 1.0) * 100.0)
                .collect(),
        );
        let (posts, body) = (median(runs.iter().map(|r| r.2 as f64).collect()), runs[0].3);
        row.push(
            Some(paired),
            format!(
                "median of {} pairs, off and on back to back: off {off_us:.0} us, on {on_us:.0} us per \
                 sub-agent (medians; their ratio {:+.1} %; {:+.1} us per span, {} spans a \
                 run); {posts:.0} POSTs, {body} bytes",
                runs.len(),
                (on_us / off_us - 1.0) * 100.0,
                (on_us - off_us) * N as f64 / (3 * N + 3) as f64,
                3 * N + 3
            ),
        );
    }
    row
}

/// A single run against an instant answer: its cost on over off (the
/// means of [`RUNS`] each, taking turns), and from the answer on stdout to
/// the exit (the medians of [`EXITS`] each).
fn single_rows(
    bins: &[Bin],
    rx: &Receiver,
    on: &[(&str, &str)],
    off: &[(&str, &str)],
) -> (Row, Row) {
    let home = home_with(&[("solo", "")]);
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let mut cost = Row::new("telemetry: single run, export on over off", "ms", "<= 0.2");
    let mut exit = Row::new(
        "telemetry: answer on stdout to exit, export on",
        "ms",
        "<= 50",
    );
    for bin in bins {
        let with = |env: &[(&str, &str)]| {
            let mut cmd = axe_at(bin, &home, &server, &["run", "solo"]);
            cmd.envs(env.iter().copied());
            cmd
        };
        let before = rx.seen().0;
        match attempt(|| spawn_loop(&[&|| with(on), &|| with(off)])) {
            Some(t) if rx.seen().0 >= before + RUNS => cost.push(
                Some(ms(t[0].mean) - ms(t[1].mean)),
                format!(
                    "{RUNS} runs each, taking turns: on mean {:.2} ms, min {:.2} ms; off mean \
                     {:.2} ms, min {:.2} ms (min over min {:+.2} ms)",
                    ms(t[0].mean),
                    ms(t[0].min),
                    ms(t[1].mean),
                    ms(t[1].min),
                    ms(t[0].min) - ms(t[1].min)
                ),
            ),
            Some(_) => cost.push(None, "failed: not every run's spans came".into()),
            None => cost.push(None, "failed".into()),
        }
        let exits = attempt(|| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..EXITS {
                a.push(ms(answer_to_exit(with(on))));
                b.push(ms(answer_to_exit(with(off))));
            }
            (median(a), median(b))
        });
        match exits {
            Some((a, b)) => exit.push(
                Some(a),
                format!("median of {EXITS}, taking turns with export off ({b:.2} ms)"),
            ),
            None => exit.push(None, "failed".into()),
        }
    }
    (cost, exit)
}

/// From the answer's last byte on `cmd`'s stdout to its exit.
fn answer_to_exit(mut cmd: Command) -> Duration {
    let mut child = cmd.spawn().expect("run axe");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(PROMPT.as_bytes());
    }
    let mut stdout = child.stdout.take().expect("its stdout");
    let (mut seen, mut buf) = (Vec::new(), [0u8; 256]);
    while !seen.ends_with(b"hello\n") {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => panic!("axe ended without the answer"),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let answered = Instant::now();
    let status = child.wait().expect("wait for axe");
    let t = answered.elapsed();
    assert!(status.success(), "axe failed");
    t
}
