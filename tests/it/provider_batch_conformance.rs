//! What `--provider-batch` sends the providers (design §11.8), against the
//! vendors' own SDK types (`provider_batch_conformance.py`, in the venv
//! scripts/conformance_deps.sh makes, extras forbidden): OpenAI's batch
//! creation and each line of the file uploaded, and Anthropic's batch
//! creation with each request's `params`; every mutated body refused, so
//! the check is not vacuous. The requests inside are also those of
//! `axe run`, which `wires::conformance` checks case by case.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;
use crate::provider_batch::{anthropic_batches, openai_batches};

/// Runs `--provider-batch` over three inputs on `p`'s fake; the agent has
/// parameters and an output schema, so that the requests carry them. Not
/// a temperature on Anthropic's: its package's types have none any more
/// (`wires::conformance`'s one known gap).
fn batch_run(p: P, server: &FakeServer) {
    let home = Home::new();
    let temperature = if p == P::Anthropic {
        ""
    } else {
        "temperature = 0.25\n"
    };
    home.named_agent(
        "bot",
        p.model(),
        &format!(
            "[params]\n{temperature}max_tokens = 300\n[output]\nschema = {{ type = \"object\" }}\n"
        ),
    );
    std::fs::write(home.dir.path().join("in.txt"), "alpha\nbad\ngamma\n").unwrap();
    let b = home.run_bounded(
        &[(p, server)],
        &["run", "bot", "--each", "in.txt", "--provider-batch"],
        HUNG,
    );
    assert!(
        !b.killed && matches!(code(&b.output), 0 | 1),
        "{}",
        stderr(&b.output)
    );
}

#[test]
fn what_a_provider_batch_sends_is_what_the_vendors_sdk_types_take() {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/conformance/venv/bin/python");
    if !py.is_file() {
        missing(
            "the provider batches' bodies against the vendors' SDK types",
            "the openai and anthropic packages are not installed in target/conformance \
             (bash scripts/conformance_deps.sh)",
        );
        return;
    }
    let mut bodies = Vec::new();
    let (server, uploaded) = openai_batches();
    batch_run(P::OpenAi, &server);
    let create = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/batches");
    bodies.push(json!({"what": "openai batch", "body": create.expect("a batch").json()}));
    for line in uploaded.lock().unwrap().iter() {
        bodies.push(json!({"what": "openai line", "body": line}));
    }
    let (server, _) = anthropic_batches();
    batch_run(P::Anthropic, &server);
    let create = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/messages/batches");
    bodies.push(json!({"what": "anthropic batch", "body": create.expect("a batch").json()}));
    assert_eq!(bodies.len(), 5, "{bodies:?}");

    let dir = TempDir::new("batch-conformance");
    let file = dir.path().join("bodies.jsonl");
    let lines: Vec<String> = bodies.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/provider_batch_conformance.py");
    let out = Command::new(&py).arg(&script).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let wrong: Vec<String> = report["bodies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| {
            let what = b["what"].as_str().unwrap().to_string();
            b["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |e| format!("{what}: {}", e.as_str().unwrap()))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "bodies the types refuse:\n{}",
        wrong.join("\n")
    );
    assert_eq!(report["mutated"], 3 + 3 * 4 + 4, "{report}");
    assert_eq!(report["taken"], json!([]), "mutated bodies the types took");
}
