//! Whole HTTP responses through the real provider path, from a loopback server that answers mutants.

use super::cases::{Pools, http_case, pools};
use super::*;

//
// A loopback server (one per worker thread) answers every request with the
// current case: a raw HTTP/1.1 response built from a realistic one (status
// line, content-length or chunked framing, content-type, the retry hints,
// x-should-retry, location, connection) with values drawn from realistic
// and edge cases, sometimes mutated byte by byte as a whole, followed by a
// provider body, valid or mutated. The server closes the connection after
// writing, so a content-length larger than the body ends at once in an
// unexpected EOF; one case in 512 holds the connection open instead, with a
// 100 ms deadline, so that the deadline is what ends it. Every call must
// return without a panic, within its deadline and a margin.

pub(crate) const KEY: &str = "sk-fuzz-headers-0123456789abcdef";
/// The deadline of a call whose server closes after its answer.
pub(crate) const DEADLINE: Duration = Duration::from_secs(2);
/// The deadline of a call whose server keeps the connection open.
pub(crate) const HOLD_DEADLINE: Duration = Duration::from_millis(100);
/// How late a call may return after its deadline (a loaded 2-core machine).
const MARGIN: Duration = Duration::from_secs(1);
/// Worker threads, each with its own server; most of a case's time is
/// waiting on the other end, or on a retry's sleep.
const WORKERS: usize = 8;
/// HTTP responses when `AXE_FUZZ_EXECS` is not set.
const HTTP_EXECS: usize = 3000;

/// What the server answers to each request.
#[derive(Clone, Default)]
pub(crate) struct Answer {
    pub(crate) bytes: Vec<u8>,
    /// Written in this many pieces, a millisecond apart.
    pub(crate) pieces: usize,
    /// Keep the connection open after writing (and serve the next request
    /// on it, if one comes).
    pub(crate) hold: bool,
}

/// A loopback HTTP server that answers every request with the current
/// [`Answer`]; each connection has its own thread.
struct MutantServer {
    url: String,
    addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
    stop: Arc<AtomicBool>,
    accept: Option<thread::JoinHandle<()>>,
}

impl MutantServer {
    fn start() -> MutantServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let answer = Arc::new(Mutex::new(Answer::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (answer, stop) = (Arc::clone(&answer), Arc::clone(&stop));
            thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(conn) = conn {
                        let answer = Arc::clone(&answer);
                        thread::spawn(move || serve(conn, &answer));
                    }
                }
            })
        };
        MutantServer {
            url: format!("http://{addr}"),
            addr,
            answer,
            stop,
            accept: Some(accept),
        }
    }

    fn set(&self, answer: Answer) {
        *self.answer.lock().unwrap_or_else(PoisonError::into_inner) = answer;
    }
}

impl Drop for MutantServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Reads each request on `conn` whole (head and content-length body, so
/// that closing never resets the connection), and answers it.
fn serve(conn: TcpStream, answer: &Mutex<Answer>) {
    let _ = conn.set_nodelay(true);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    loop {
        let mut length = 0;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line.trim().is_empty() => break,
                Ok(_) => {}
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer = answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let pieces = answer.pieces.max(1);
        let size = answer.bytes.len().div_ceil(pieces).max(1);
        for (i, piece) in answer.bytes.chunks(size).enumerate() {
            if i > 0 {
                thread::sleep(Duration::from_millis(1));
            }
            if out.write_all(piece).is_err() {
                return;
            }
        }
        if !answer.hold {
            let _ = out.shutdown(Shutdown::Write);
            return;
        }
    }
}

/// The call a worker is waiting on, for the watchdog.
struct InFlight {
    started: Instant,
    deadline: Duration,
    /// The case, and what the server sent.
    what: String,
    shown: String,
}

/// How long past its deadline and margin a call may go before the watchdog
/// calls it a hang and ends the process (the call itself cannot be stopped).
const HANG: Duration = Duration::from_secs(10);

/// What the HTTP fuzzer saw.
#[derive(Default)]
struct HttpStats {
    runs: usize,
    answers: usize,
    errors: usize,
    slowest: Duration,
    /// Cases that took more than 100 ms.
    slow: usize,
    /// The most a call overran its deadline.
    overrun: Duration,
    /// Calls that retried once.
    retried: usize,
}

/// Runs cases `first`, `first + step`, ... below `execs` against a server of
/// its own; the first finding (a panic, a late return, a key in an error,
/// more retries than allowed) is returned.
fn http_worker(
    first: usize,
    step: usize,
    execs: usize,
    pools: &Pools,
    stop: &AtomicBool,
    watch: &Mutex<Option<InFlight>>,
) -> Result<HttpStats, String> {
    let seed = settings().seed;
    let server = MutantServer::start();
    let providers = Wire::ALL.map(|kind| {
        let mut p = Provider::new(kind, &server.url, Some(KEY.into()));
        p.retry = RetryPolicy {
            max_retries: 1,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            ..RetryPolicy::default()
        };
        p
    });
    let mut stats = HttpStats::default();
    for case in (first..execs).step_by(step) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut rng = Rng::for_case(seed, case);
        let k = rng.below(3);
        let kind = Wire::ALL[k];
        let c = http_case(&mut rng, kind, pools);
        let req = Request {
            model: format!("fuzz-{}", case % 8),
            messages: vec![Message::user("hi")],
            temperature: c.temperature,
            max_tokens: c.max_tokens,
            ..Request::default()
        };
        let holding = if c.answer.hold {
            ", the server holding the connection"
        } else {
            ""
        };
        let what = format!("case {case} ({kind:?}, AXE_FUZZ_SEED={seed:#x}{holding})");
        let shown = c.answer.bytes.escape_ascii().to_string();
        server.set(c.answer);
        let started = Instant::now();
        *watch.lock().unwrap_or_else(PoisonError::into_inner) = Some(InFlight {
            started,
            deadline: c.deadline,
            what,
            shown,
        });
        let result = catch_unwind(AssertUnwindSafe(|| {
            providers[k].send(&req, started + c.deadline)
        }));
        let took = started.elapsed();
        let call = watch.lock().unwrap_or_else(PoisonError::into_inner).take();
        let finding = match &result {
            Err(_) => Some("panicked".to_string()),
            Ok(_) if took > c.deadline + MARGIN => Some(format!(
                "returned after {took:?}, deadline {:?}",
                c.deadline
            )),
            Ok(Ok(resp)) if resp.retries > 1 => Some(format!("{} retries", resp.retries)),
            Ok(Err(e)) if e.retries > 1 => Some(format!("{} retries: {e}", e.retries)),
            Ok(Err(e)) if e.message.contains(KEY) => Some(format!("the key in an error: {e}")),
            Ok(_) => None,
        };
        if let (Some(finding), Some(call)) = (finding, call) {
            return Err(format!(
                "http response: {finding} on {}, served:\n{}",
                call.what, call.shown
            ));
        }
        stats.runs += 1;
        match result {
            Ok(Ok(resp)) => {
                stats.answers += 1;
                stats.retried += resp.retries as usize;
            }
            Ok(Err(e)) => {
                stats.errors += 1;
                stats.retried += e.retries as usize;
            }
            Err(_) => {}
        }
        stats.slowest = stats.slowest.max(took);
        stats.slow += usize::from(took > Duration::from_millis(100));
        stats.overrun = stats.overrun.max(took.saturating_sub(c.deadline));
    }
    Ok(stats)
}

#[test]
fn fuzz_http_responses_never_panic_and_return_by_the_deadline() {
    let execs = execs_or(HTTP_EXECS);
    let pools = pools();
    let stop = AtomicBool::new(false);
    let watches: Vec<Mutex<Option<InFlight>>> = (0..WORKERS).map(|_| Mutex::new(None)).collect();
    let started = Instant::now();
    let results: Vec<Result<HttpStats, String>> = thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (pools, stop, watch) = (&pools, &stop, &watches[w]);
                s.spawn(move || {
                    let r = http_worker(w, WORKERS, execs, pools, stop, watch);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        // The watchdog: a call that never returns would stall the run
        // forever; say which case it is, then end the process.
        while !workers.iter().all(|w| w.is_finished()) {
            thread::sleep(Duration::from_millis(50));
            for watch in &watches {
                let watch = watch.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(call) = watch.as_ref()
                    && call.started.elapsed() > call.deadline + MARGIN + HANG
                {
                    // Straight to stderr: the test's captured output dies
                    // with the process.
                    #[allow(clippy::disallowed_methods, reason = "said just above")]
                    let _ = writeln!(
                        std::io::stderr(),
                        "fuzz http responses: a call hangs, {:?} after its deadline of {:?}, \
                         on {}, served:\n{}",
                        call.started.elapsed() - call.deadline,
                        call.deadline,
                        call.what,
                        call.shown
                    );
                    #[allow(clippy::exit, reason = "the hanging call cannot be stopped")]
                    std::process::exit(101);
                }
            }
        }
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect()
    });
    let mut all = HttpStats::default();
    for r in results {
        let stats = r.unwrap_or_else(|finding| panic!("{finding}"));
        all.runs += stats.runs;
        all.answers += stats.answers;
        all.errors += stats.errors;
        all.retried += stats.retried;
        all.slow += stats.slow;
        all.slowest = all.slowest.max(stats.slowest);
        all.overrun = all.overrun.max(stats.overrun);
    }
    report(
        "http responses",
        all.runs,
        started,
        &format!(
            "no panic, none late ({} answers, {} errors, {} retried; slowest {:.0} ms, \
             {} over 100 ms, most past a deadline {:.0} ms)",
            all.answers,
            all.errors,
            all.retried,
            all.slowest.as_secs_f64() * 1000.0,
            all.slow,
            all.overrun.as_secs_f64() * 1000.0
        ),
    );
    assert_eq!(all.runs, execs);
}
