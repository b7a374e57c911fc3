//! `--provider-batch` (design §11.8), through the binary against fakes of
//! OpenAI's Batch API (Files API upload, `/v1/batches`, the output and
//! error files) and Anthropic's Message Batches: the requests inside are
//! those `axe run` sends, the lines come in input order whatever order the
//! results are in, an input the batch failed fails on its own line, an
//! output schema's failed check is repaired by an ordinary request, and an
//! agent that is more than one request is refused.

use crate::common::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The request lines of an uploaded OpenAI file: the part of a multipart
/// body between the file's head and the closing boundary.
fn uploaded_lines(body: &str) -> Vec<Value> {
    let start = body.find("\r\n\r\n{").expect("a file part") + 4;
    let end = body[start..].find("\r\n--").expect("a closing boundary") + start;
    body[start..end]
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The user text of a chat or messages request body.
fn user_text(body: &Value) -> String {
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"));
    let content = &user.expect("a user message")["content"];
    match content.as_array() {
        Some(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        None => content.as_str().unwrap_or("").to_string(),
    }
}

/// A fake OpenAI with a Batch API: answers `echo: <message>` for each
/// request, in reverse order, except a message `bad`, which fails (in the
/// error file); the first poll says in progress.
pub(crate) fn openai_batches() -> (FakeServer, Arc<Mutex<Vec<Value>>>) {
    openai_batches_until(Arc::new(AtomicBool::new(true)))
}

/// [`openai_batches`], whose batch stays in progress until `ended` is set.
fn openai_batches_until(ended: Arc<AtomicBool>) -> (FakeServer, Arc<Mutex<Vec<Value>>>) {
    let uploaded = Arc::new(Mutex::new(Vec::new()));
    let seen = uploaded.clone();
    let polls = Arc::new(Mutex::new(0));
    let server = FakeServer::route(move |r| {
        let p = P::OpenAi;
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/files") => {
                assert!(
                    r.body.contains("name=\"purpose\"\r\n\r\nbatch"),
                    "{}",
                    r.body
                );
                *seen.lock().unwrap() = uploaded_lines(&r.body);
                Reply::Json(200, json!({"id": "file-in", "object": "file"}).to_string())
            }
            ("POST", "/v1/batches") => {
                let b = r.json();
                assert_eq!(b["input_file_id"], "file-in");
                assert_eq!(b["endpoint"], "/v1/chat/completions");
                assert_eq!(b["completion_window"], "24h");
                Reply::Json(
                    200,
                    json!({"id": "batch_1", "status": "validating"}).to_string(),
                )
            }
            ("GET", "/v1/batches/batch_1") => {
                let mut n = polls.lock().unwrap();
                *n += 1;
                let done = *n > 1 && ended.load(Ordering::SeqCst);
                let status = if done { "completed" } else { "in_progress" };
                Reply::Json(
                    200,
                    json!({"id": "batch_1", "status": status,
                        "request_counts": {"total": 3, "completed": 2, "failed": 1},
                        "output_file_id": "file-out", "error_file_id": "file-err"})
                    .to_string(),
                )
            }
            ("GET", path) if path.starts_with("/v1/files/file-") => {
                let errors = path.contains("file-err");
                let mut lines = Vec::new();
                for line in seen.lock().unwrap().iter().rev() {
                    let said = user_text(&line["body"]);
                    if (said == "bad") != errors {
                        continue;
                    }
                    let response = if errors {
                        json!({"status_code": 400, "request_id": "r",
                            "body": {"error": {"message": "no such thing"}}})
                    } else {
                        let body: Value =
                            serde_json::from_str(&p.text(&format!("echo: {said}"))).unwrap();
                        json!({"status_code": 200, "request_id": "r", "body": body})
                    };
                    lines.push(
                        json!({"id": "x", "custom_id": line["custom_id"], "response": response,
                            "error": null})
                        .to_string(),
                    );
                }
                Reply::Raw {
                    status: 200,
                    content_type: "application/octet-stream".into(),
                    body: lines.join("\n") + "\n",
                    headers: vec![],
                }
            }
            // An ordinary request (a repair).
            ("POST", "/v1/chat/completions") => Reply::Json(200, p.text(r#"{"n": 2}"#)),
            other => Reply::Json(404, format!("{{\"error\":{{\"message\":\"{other:?}\"}}}}")),
        }
    });
    (server, uploaded)
}

#[test]
fn an_openai_batch_runs_each_input_once_and_writes_lines_in_order() {
    let p = P::OpenAi;
    let (server, uploaded) = openai_batches();
    let home = Home::new();
    home.named_agent("bot", p.model(), "[params]\ntemperature = 0.25\n");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\nbad\ngamma\n").unwrap();
    let b = home.run_bounded(
        &[(p, &server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    let out = stdout(&b.output);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{out}\n{}", stderr(&b.output));
    assert_eq!(lines[0]["content"], "echo: alpha");
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[1]["ok"], false);
    assert!(
        lines[1]["error"]
            .as_str()
            .unwrap()
            .contains("no such thing"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2]["content"], "echo: gamma");
    assert_eq!(code(&b.output), 1, "{}", stderr(&b.output));
    // The requests inside are what `axe run` sends, unstreamed.
    let sent = uploaded.lock().unwrap().clone();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0]["method"], "POST");
    assert_eq!(sent[0]["url"], "/v1/chat/completions");
    let direct = FakeServer::route(move |_| Reply::Json(200, p.text("echo: alpha")));
    let one = home.run_on(&[(p, &direct)], &["run", "bot", "-p", "alpha", "--json"]);
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert_eq!(sent[0]["body"], direct.only_request().json());
    // The same tokens, at the batch price: half.
    let single: Value = serde_json::from_str(&stdout(&one)).unwrap();
    let (batch, single) = (lines[0]["cost_usd"].as_f64(), single["cost_usd"].as_f64());
    assert!(single.is_some_and(|c| c > 0.0), "{single:?}");
    assert_eq!(batch, single.map(|c| c / 2.0), "{}", lines[0]);
}

/// A fake of Anthropic's Message Batches: the batch has ended at its
/// first poll, and each request's result echoes what it said. Returns it
/// and the requests of the batch created.
pub(crate) fn anthropic_batches() -> (FakeServer, Arc<Mutex<Vec<Value>>>) {
    let p = P::Anthropic;
    let base: Arc<Mutex<String>> = Arc::default();
    let url = base.clone();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let server = FakeServer::route(move |r| {
        match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/v1/messages/batches") => {
            *seen.lock().unwrap() = r.json()["requests"].as_array().unwrap().clone();
            Reply::Json(200, json!({"id": "msgbatch_1", "processing_status": "in_progress"}).to_string())
        }
        ("GET", "/v1/messages/batches/msgbatch_1") => Reply::Json(
            200,
            json!({"id": "msgbatch_1", "processing_status": "ended",
                "request_counts": {"processing": 0, "succeeded": 2, "errored": 0,
                    "canceled": 0, "expired": 0},
                "results_url": format!("{}/v1/messages/batches/msgbatch_1/results", url.lock().unwrap())})
            .to_string(),
        ),
        ("GET", "/v1/messages/batches/msgbatch_1/results") => {
            let lines: Vec<String> = seen
                .lock()
                .unwrap()
                .iter()
                .map(|q| {
                    let said = user_text(&q["params"]);
                    let message: Value =
                        serde_json::from_str(&p.text(&format!("echo: {said}"))).unwrap();
                    json!({"custom_id": q["custom_id"],
                        "result": {"type": "succeeded", "message": message}})
                    .to_string()
                })
                .collect();
            Reply::Raw {
                status: 200,
                content_type: "application/binary".into(),
                body: lines.join("\n"),
                headers: vec![],
            }
        }
        other => Reply::Json(404, format!("{{\"error\":{{\"message\":\"{other:?}\"}}}}")),
    }
    });
    *base.lock().unwrap() = server.url.clone();
    (server, requests)
}

#[test]
fn an_anthropic_batch_reads_its_results_url() {
    let p = P::Anthropic;
    let (server, requests) = anthropic_batches();
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "one\ntwo\n").unwrap();
    let b = home.run_bounded(
        &[(p, &server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out = stdout(&b.output);
    let contents: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(contents, ["echo: one", "echo: two"]);
    let sent = requests.lock().unwrap().clone();
    assert_eq!(sent[0]["params"]["model"], "claude-sonnet-4-5");
    assert!(sent[0]["params"].get("stream").is_none());
}

#[test]
fn an_agent_of_more_than_one_request_is_refused() {
    let home = Home::new();
    home.named_agent("bot", P::OpenAi.model(), "tools = [\"read_file\"]\n");
    std::fs::write(home.dir.path().join("in.txt"), "a\n").unwrap();
    let out = home.run(&["run", "bot", "--each", "in.txt", "--provider-batch"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("it has tools"), "{}", stderr(&out));
    let out = home.run(&["run", "bot", "--each", "-", "--provider-batch"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("needs --each FILE"),
        "{}",
        stderr(&out)
    );
    let out = home.run(&["run", "bot", "--each", "in.txt", "--batch-wait", "1h"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
}

#[test]
fn an_answer_that_fails_its_schema_is_repaired_by_an_ordinary_request() {
    let p = P::OpenAi;
    let (server, _) = openai_batches();
    let home = Home::new();
    home.named_agent(
        "bot",
        p.model(),
        "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }\n",
    );
    std::fs::write(home.dir.path().join("in.txt"), "alpha\ngamma\n").unwrap();
    let b = home.run_bounded(
        &[(p, &server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out = stdout(&b.output);
    let outputs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["output"].clone())
        .collect();
    assert_eq!(outputs, [json!({"n": 2}), json!({"n": 2})]);
    // One repair each, sent as an ordinary request carrying the batch's
    // answer back.
    let repairs: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(repairs.len(), 2);
    assert!(repairs[0].body.contains("echo: "), "{}", repairs[0].body);
}

#[test]
fn a_batch_not_ended_in_time_is_picked_up_again_by_resume_not_paid_twice() {
    let p = P::OpenAi;
    let ended = Arc::new(AtomicBool::new(false));
    let (server, _) = openai_batches_until(ended.clone());
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\ngamma\n").unwrap();
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--provider-batch",
        "--resume",
        "out.jsonl",
        "--batch-wait",
        "1s",
    ];
    let first = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&first.output), 1, "{}", stderr(&first.output));
    let out = home.dir.path().join("out.jsonl");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("batch batch_1: it had not ended when --batch-wait passed"),
        "{text}"
    );
    let kept = home.dir.path().join("out.jsonl.batch");
    assert!(std::fs::read_to_string(&kept).unwrap().contains("batch_1"));

    ended.store(true, Ordering::SeqCst);
    let again = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&again.output), 0, "{}", stderr(&again.output));
    let text = std::fs::read_to_string(&out).unwrap();
    let ok: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["ok"] == true)
        .collect();
    assert_eq!(ok.len(), 2, "{text}");
    assert_eq!(ok[0]["content"], "echo: alpha");
    // One upload, one batch: the second run polled the first's.
    let posts = |path: &str| {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path == path)
            .count()
    };
    assert_eq!((posts("/v1/files"), posts("/v1/batches")), (1, 1));
    assert!(
        !kept.exists(),
        "the id is forgotten once the lines are written"
    );
}

#[test]
fn inputs_over_a_batchs_limit_go_in_parts_each_a_batch_of_its_own() {
    let p = P::OpenAi;
    // Uploaded files, each a batch; every batch ends at its first poll.
    let files: Arc<Mutex<Vec<Vec<Value>>>> = Arc::default();
    let seen = files.clone();
    let server = FakeServer::route(move |r| {
        let mut files = seen.lock().unwrap();
        let n = |path: &str, prefix: &str| -> usize {
            path.trim_start_matches(prefix)
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/files") => {
                files.push(uploaded_lines(&r.body));
                Reply::Json(
                    200,
                    json!({"id": format!("file-{}", files.len())}).to_string(),
                )
            }
            ("POST", "/v1/batches") => {
                let file = r.json()["input_file_id"].as_str().unwrap().to_string();
                let k = file.trim_start_matches("file-").to_string();
                Reply::Json(
                    200,
                    json!({"id": format!("batch-{k}"), "status": "validating"}).to_string(),
                )
            }
            ("GET", path) if path.starts_with("/v1/batches/batch-") => {
                let k = n(path, "/v1/batches/batch-");
                Reply::Json(
                    200,
                    json!({"id": format!("batch-{k}"), "status": "completed",
                        "output_file_id": format!("out-{k}")})
                    .to_string(),
                )
            }
            ("GET", path) if path.starts_with("/v1/files/out-") => {
                let k = n(path, "/v1/files/out-");
                let lines: Vec<String> = files[k - 1]
                    .iter()
                    .map(|q| {
                        let said = user_text(&q["body"]);
                        let body: Value =
                            serde_json::from_str(&p.text(&format!("echo: {said} in {k}"))).unwrap();
                        json!({"custom_id": q["custom_id"],
                            "response": {"status_code": 200, "body": body}})
                        .to_string()
                    })
                    .collect();
                Reply::Json(200, lines.join("\n") + "\n")
            }
            other => Reply::Json(404, format!("{{\"error\":{{\"message\":\"{other:?}\"}}}}")),
        }
    });
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "a\nb\nc\nd\ne\n").unwrap();
    let args = ["run", "bot", "--each", "in.txt", "--provider-batch"];
    let one = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&one.output), 0, "{}", stderr(&one.output));
    let mut cmd = home.axe_on(&[(p, &server)]);
    cmd.env("AXE_DEBUG_BATCH_PART", "2")
        .args(args)
        .args(["--resume", "out2.jsonl"]);
    let b = run_bounded(&mut cmd, HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let text = std::fs::read_to_string(home.dir.path().join("out2.jsonl")).unwrap();
    let contents: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // The first run sent one part of 5; the second, three of at most 2.
    assert_eq!(
        contents,
        [
            "echo: a in 2",
            "echo: b in 2",
            "echo: c in 3",
            "echo: d in 3",
            "echo: e in 4"
        ]
    );
    assert_eq!(
        files
            .lock()
            .unwrap()
            .iter()
            .map(Vec::len)
            .collect::<Vec<_>>(),
        [5, 2, 2, 1]
    );
}

#[test]
fn ctrl_c_while_a_batch_runs_keeps_it_for_resume_which_uploads_nothing_again() {
    let p = P::OpenAi;
    let ended = Arc::new(AtomicBool::new(false));
    let (server, _) = openai_batches_until(ended.clone());
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\ngamma\n").unwrap();
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--provider-batch",
        "--resume",
        "out.jsonl",
    ];
    let child = home
        .axe_on(&[(p, &server)])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Waiting: the batch has been polled once.
    let until = std::time::Instant::now() + HUNG;
    while !server.requests().iter().any(|r| r.method == "GET") {
        assert!(std::time::Instant::now() < until, "no poll");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    signal(&child, libc::SIGINT);
    let first = child.wait_with_output().unwrap();
    assert_eq!(code(&first), 130, "{}", stderr(&first));
    assert!(
        stderr(&first).contains("--resume out.jsonl"),
        "{}",
        stderr(&first)
    );
    let kept = home.dir.path().join("out.jsonl.batch");
    assert!(std::fs::read_to_string(&kept).unwrap().contains("batch_1"));

    ended.store(true, Ordering::SeqCst);
    let again = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&again.output), 0, "{}", stderr(&again.output));
    let text = std::fs::read_to_string(home.dir.path().join("out.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let uploads = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(
        uploads, 2,
        "one file and one batch, from the first run only"
    );
    assert!(!kept.exists());
}

#[test]
fn the_progress_view_shows_the_providers_counts_while_the_batch_runs() {
    let p = P::OpenAi;
    // In progress at its first poll, ended at the next, a second later.
    let (server, _) = openai_batches();
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\ngamma\n").unwrap();
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--provider-batch",
        "--resume",
        "out.jsonl",
    ];
    let Some(screen) = crate::progress::under_pty(&home, &server, &args, &[]) else {
        return;
    };
    assert!(
        screen.contains("at the provider 3/3 answered (1 failed)"),
        "{screen:?}"
    );
}
