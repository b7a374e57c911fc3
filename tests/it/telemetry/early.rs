//! A run's connection to the collector (design §7.9): opened as the run
//! starts, so that it is there before the model answers, and posted on as
//! the run's last span ends, before the answer is printed; one the
//! collector has closed meanwhile is not used. The collectors here are
//! Rust's own (no Python, never skipped).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

/// One agent `one` on a provider answering by `handler`.
fn run_one(
    collector: &str,
    handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
) -> std::process::Output {
    let home = Home::new();
    home.plain_agent("one", "openai/gpt-4o");
    let provider = FakeServer::route(handler);
    run_bounded(
        home.axe_on(&[(P::OpenAi, &provider)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
            .args(["run", "one", "-p", "go"]),
        Duration::from_secs(60),
    )
    .output
}

/// A run against a collector at 127.0.0.1 whose URL `url_of` makes from
/// its own: its connection is open before the model answers, and the spans
/// come on it.
fn connection_open_before_the_model_answers(url_of: impl Fn(&str) -> String) {
    let collector = Arc::new(FakeServer::json(200, "{}"));
    // How many connections the collector had when the model was asked
    // (waiting a while for the first, so that a slow accept is not taken
    // for none).
    let seen = Arc::new(Mutex::new(None));
    let out = {
        let (collector, seen) = (collector.clone(), seen.clone());
        run_one(&url_of(&collector.url), move |_| {
            let start = Instant::now();
            while collector.connections() == 0 && start.elapsed() < Duration::from_secs(3) {
                std::thread::sleep(Duration::from_millis(5));
            }
            *seen.lock().unwrap() = Some(collector.connections());
            Reply::Json(200, openai_text("hi", 5, 5))
        })
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    assert_eq!(
        *seen.lock().unwrap(),
        Some(1),
        "the collector's connection was not open when the model was asked"
    );
    // And the spans came on it, in one request: no second connection.
    let posts = collector.requests();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0].path, "/v1/traces");
    assert!(
        posts[0].body.contains("invoke_agent"),
        "{:?}",
        posts[0].body
    );
    assert_eq!(collector.connections(), 1);
    assert!(!stderr(&out).contains("telemetry"), "{}", stderr(&out));
}

#[test]
fn a_runs_connection_to_the_collector_is_open_before_the_model_answers() {
    connection_open_before_the_model_answers(str::to_string);
}

/// The guide's endpoint names the collector `localhost` (any case: RFC
/// 6761's loopback), taken as 127.0.0.1 for the early connection.
#[test]
fn a_collector_named_localhost_has_its_connection_open_before_the_model_answers() {
    connection_open_before_the_model_answers(|url| {
        let named = url.replace("127.0.0.1", "LocalHost");
        assert_ne!(named, url, "the fake's URL is not at 127.0.0.1: {url}");
        named
    });
}

/// A collector that closes a connection idle for 100 ms (as collectors
/// close idle ones, after longer); the bodies of the requests it answered.
fn impatient_collector() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let bodies = kept.clone();
            std::thread::spawn(move || answer_or_close(conn, &bodies));
        }
    });
    (url, bodies)
}

/// One request answered 200, unless nothing comes for 100 ms: then the
/// connection is closed.
fn answer_or_close(conn: TcpStream, bodies: &Mutex<Vec<Vec<u8>>>) {
    conn.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    r.get_ref().set_read_timeout(None).unwrap();
    let mut length = 0;
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).unwrap();
    bodies.lock().unwrap().push(body);
    out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        .unwrap();
}

/// The run answered "hi", exited 0 without a word of telemetry, and the
/// collector got one request carrying its spans.
fn answered_with_one_post_of_its_spans(out: &std::process::Output, bodies: &Mutex<Vec<Vec<u8>>>) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    assert_eq!(stdout(out), "hi\n");
    assert!(!stderr(out).contains("telemetry"), "{}", stderr(out));
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 1);
    assert!(
        String::from_utf8_lossy(&bodies[0]).contains("invoke_agent"),
        "{bodies:?}"
    );
}

#[test]
fn a_connection_the_collector_closed_during_the_run_is_not_posted_on() {
    let (url, bodies) = impatient_collector();
    let out = run_one(&url, |_| {
        Reply::Delay(
            Duration::from_millis(400),
            Box::new(Reply::Json(200, openai_text("hi", 5, 5))),
        )
    });
    answered_with_one_post_of_its_spans(&out, &bodies);
}

/// A collector at `localhost` that was not listening when the run began
/// (the early connection refused) and is when it ends: the post connects
/// as ureq does, the name looked up, and the spans arrive.
#[test]
fn a_localhost_collector_that_refused_the_early_connection_still_gets_the_spans() {
    let port = {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        held.local_addr().unwrap().port()
    };
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let kept = bodies.clone();
    let out = run_one(&format!("http://localhost:{port}"), move |_| {
        // Listening from the model's answer on: the early connect is over.
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let bodies = kept.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                answer_or_close(conn, &bodies);
            }
        });
        Reply::Json(200, openai_text("hi", 5, 5))
    });
    answered_with_one_post_of_its_spans(&out, &bodies);
}

/// The spans are written as the run's last span ends, before the answer is
/// printed: with stdout a pipe nobody reads yet and an answer larger than
/// the pipe holds, axe is held in printing it, and the collector has the
/// spans all the same; read, the answer is whole and the run exits 0.
#[test]
fn the_spans_reach_the_collector_while_the_answer_is_still_being_printed() {
    let collector = FakeServer::json(200, "{}");
    let home = Home::new();
    home.plain_agent("one", "openai/gpt-4o");
    // Four times a pipe's 64 KiB.
    let answer = "a".repeat(256 * 1024);
    let provider = FakeServer::json(200, &openai_text(&answer, 5, 5));
    let mut child = home
        .axe_on(&[(P::OpenAi, &provider)])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .args(["run", "one", "-p", "go"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while collector.requests().is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let posted_while_printing = collector.requests();
    // Read now (on a thread each: stderr could fill too), so that the run ends either way.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let status = child.wait().unwrap();
    let (printed, err) = (reader.join().unwrap(), err_reader.join().unwrap());
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(printed.len(), answer.len() + 1);
    assert!(!err.contains("telemetry"), "{err}");
    assert_eq!(
        posted_while_printing.len(),
        1,
        "the collector had no spans while the answer waited to be read"
    );
    assert!(
        posted_while_printing[0].body.contains("invoke_agent"),
        "{:?}",
        posted_while_printing[0].body
    );
    // And on the connection opened early: no other.
    assert_eq!(collector.requests().len(), 1);
    assert_eq!(collector.connections(), 1);
}

/// A run that times out: its spans went as its last span ended, and the
/// exit, with no time left, neither waits for the collector's answer nor
/// says anything of it (the post at exit was skipped with no time left:
/// one written early is not taken for lost).
#[test]
fn a_run_past_its_deadline_sends_its_spans_and_says_nothing_of_the_answer() {
    let collector = FakeServer::route(|_| {
        Reply::Delay(
            Duration::from_millis(500),
            Box::new(Reply::Json(200, "{}".into())),
        )
    });
    let home = Home::new();
    home.plain_agent("one", "openai/gpt-4o");
    let provider = FakeServer::route(|_| {
        Reply::Delay(
            Duration::from_secs(5),
            Box::new(Reply::Json(200, openai_text("hi", 5, 5))),
        )
    });
    let out = run_bounded(
        home.axe_on(&[(P::OpenAi, &provider)])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
            .args(["run", "one", "-p", "go", "--timeout", "1"]),
        Duration::from_secs(60),
    );
    assert_eq!(code(&out.output), 3, "{}", stderr(&out.output));
    assert!(
        !stderr(&out.output).contains("telemetry"),
        "{}",
        stderr(&out.output)
    );
    assert!(out.took < Duration::from_secs(4), "{:?}", out.took);
    let posts = collector.requests_settled(1);
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert!(
        posts[0].body.contains("invoke_agent"),
        "{:?}",
        posts[0].body
    );
}
