//! `--provider-batch` at its limits (design §11.8): a bound on the whole
//! batch is refused, since the provider bills it whole; and when the
//! provider's batch expires,
//! the inputs it answered before the window closed are read from its files
//! and written as any answer, and every other input is a failed line that
//! says the batch expired, in input order, with exit 1. OpenAI's expired
//! batch keeps an output file and lists the requests it dropped in its
//! error file (code `batch_expired`), or not at all; Anthropic's gives each
//! request not run a result of type `expired`.

use crate::common::*;
use crate::provider_batch::openai_batches;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// What the user said in a batch request's body.
fn said(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            c => c[0]["text"].as_str().unwrap_or("").to_string(),
        })
        .unwrap_or_default()
}

/// The lines of `out`, parsed.
fn lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A fake OpenAI Batch API whose batch has expired: `alpha` was answered
/// (the output file), `beta` was dropped with `batch_expired` (the error
/// file), and `gamma` is in neither file.
fn openai_expired() -> FakeServer {
    let uploaded: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = uploaded.clone();
    FakeServer::route(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/v1/files") => {
            let body = &r.body;
            let start = body.find("\r\n\r\n{").map_or(0, |i| i + 4);
            *seen.lock().unwrap() = body[start..]
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            Reply::Json(200, json!({"id": "file-in", "object": "file"}).to_string())
        }
        ("POST", "/v1/batches") => Reply::Json(
            200,
            json!({"id": "batch_x", "status": "validating"}).to_string(),
        ),
        ("GET", "/v1/batches/batch_x") => Reply::Json(
            200,
            json!({"id": "batch_x", "status": "expired",
                "request_counts": {"total": 3, "completed": 1, "failed": 1},
                "output_file_id": "file-out", "error_file_id": "file-err"})
            .to_string(),
        ),
        ("GET", path) if path.starts_with("/v1/files/file-") => {
            let errors = path.contains("file-err");
            let mut out = Vec::new();
            for line in seen.lock().unwrap().iter() {
                let (id, what) = (&line["custom_id"], said(&line["body"]));
                let entry = match (what.as_str(), errors) {
                    ("alpha", false) => {
                        let body: Value =
                            serde_json::from_str(&P::OpenAi.text("echo: alpha")).unwrap();
                        json!({"id": "r1", "custom_id": id, "error": null,
                            "response": {"status_code": 200, "request_id": "q", "body": body}})
                    }
                    ("beta", true) => json!({"id": "r2", "custom_id": id, "response": null,
                        "error": {"code": "batch_expired", "message":
                            "This request could not be executed before the completion window expired."}}),
                    _ => continue,
                };
                out.push(entry.to_string());
            }
            Reply::Raw {
                status: 200,
                content_type: "application/octet-stream".into(),
                body: out.join("\n") + "\n",
                headers: vec![],
            }
        }
        other => Reply::Json(404, format!("{{\"error\":{{\"message\":\"{other:?}\"}}}}")),
    })
}

#[test]
fn an_expired_openai_batch_gives_its_answers_and_fails_the_rest_saying_it_expired() {
    let server = openai_expired();
    let home = Home::new();
    home.named_agent("bot", P::OpenAi.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let b = home.run_bounded(
        &[(P::OpenAi, &server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    let out = stdout(&b.output);
    let got = lines(&out);
    assert_eq!(got.len(), 3, "{out}\n{}", stderr(&b.output));
    assert_eq!(got[0]["ok"], true, "{}", got[0]);
    assert_eq!(got[0]["content"], "echo: alpha");
    assert_eq!(got[1]["ok"], false);
    let beta = got[1]["error"].as_str().unwrap();
    assert!(beta.contains("completion window expired"), "{beta}");
    assert_eq!(got[2]["ok"], false);
    let gamma = got[2]["error"].as_str().unwrap();
    assert!(
        gamma.contains("the batch expired before this input ran"),
        "{gamma}"
    );
    assert_eq!(code(&b.output), 1, "{}", stderr(&b.output));
    // Nothing was run again as an ordinary request.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path != "/v1/chat/completions")
    );
}

#[test]
fn an_expired_anthropic_batch_fails_each_request_it_did_not_run() {
    let p = P::Anthropic;
    let base: Arc<Mutex<String>> = Arc::default();
    let url = base.clone();
    let sent: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = sent.clone();
    let server = FakeServer::route(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/v1/messages/batches") => {
            *seen.lock().unwrap() = r.json()["requests"].as_array().unwrap().clone();
            Reply::Json(
                200,
                json!({"id": "msgbatch_x", "processing_status": "in_progress"}).to_string(),
            )
        }
        ("GET", "/v1/messages/batches/msgbatch_x") => Reply::Json(
            200,
            json!({"id": "msgbatch_x", "processing_status": "ended",
                "request_counts": {"processing": 0, "succeeded": 1, "errored": 0,
                    "canceled": 0, "expired": 1},
                "results_url": format!("{}/v1/messages/batches/msgbatch_x/results",
                    url.lock().unwrap())})
            .to_string(),
        ),
        ("GET", "/v1/messages/batches/msgbatch_x/results") => {
            let out: Vec<String> = seen
                .lock()
                .unwrap()
                .iter()
                .map(|q| {
                    let result = if said(&q["params"]) == "one" {
                        let m: Value = serde_json::from_str(&p.text("echo: one")).unwrap();
                        json!({"type": "succeeded", "message": m})
                    } else {
                        json!({"type": "expired"})
                    };
                    json!({"custom_id": q["custom_id"], "result": result}).to_string()
                })
                .collect();
            Reply::Raw {
                status: 200,
                content_type: "application/binary".into(),
                body: out.join("\n"),
                headers: vec![],
            }
        }
        other => Reply::Json(404, format!("{{\"error\":{{\"message\":\"{other:?}\"}}}}")),
    });
    *base.lock().unwrap() = server.url.clone();
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "one\ntwo\n").unwrap();
    let b = home.run_bounded(
        &[(p, &server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    let got = lines(&stdout(&b.output));
    assert_eq!(got.len(), 2, "{}", stderr(&b.output));
    assert_eq!(got[0]["content"], "echo: one");
    assert_eq!(got[1]["ok"], false);
    let two = got[1]["error"].as_str().unwrap();
    assert!(
        two.contains("the batch expired before this input ran"),
        "{two}"
    );
    assert_eq!(code(&b.output), 1, "{}", stderr(&b.output));
}

#[test]
fn a_bound_on_the_whole_batch_is_refused_since_the_provider_bills_it_whole() {
    let (server, _) = openai_batches();
    let home = Home::new();
    home.named_agent("bot", P::OpenAi.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\ngamma\n").unwrap();
    for (flag, value) in [("--max-cost", "0.01"), ("--max-tokens", "100")] {
        let out = home.run_on(
            &[(P::OpenAi, &server)],
            &[
                "run",
                "bot",
                "--each",
                "in.txt",
                "--provider-batch",
                flag,
                value,
            ],
        );
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "axe: --provider-batch: {flag} cannot bound a provider's batch, which runs every \
                 input at once and is billed whole; the agent file's [budget] bounds each input\n"
            )
        );
    }
    assert!(server.requests().is_empty(), "nothing uploaded");
}
