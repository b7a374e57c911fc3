//! A batch split over many workers (`--shard K/N`, design §11.7), through
//! the binary against the fake provider: N runs over the same inputs, each
//! its own K, cover every input exactly once (ids hashed, other lines dealt
//! in turn, `--each-file`'s paths hashed); a share resumes on its own; a
//! bad share is a usage error.

use crate::common::*;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

/// A server answering `echo: <user message>`, counting the requests.
fn counting_echo(p: P) -> (FakeServer, Arc<AtomicUsize>) {
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    let server = FakeServer::route(move |r| {
        seen.fetch_add(1, Ordering::SeqCst);
        Reply::Json(200, p.text(&format!("echo: {}", r.first_user_text())))
    });
    (server, n)
}

fn parsed(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// 1,000 JSON Lines inputs, every third with an `id`, a blank line every
/// hundred: the blank lines count as lines, and no input is lost to them.
fn thousand_inputs() -> (String, usize) {
    let mut text = String::new();
    let mut inputs = 0;
    for i in 1..=1000 {
        if i % 100 == 0 {
            text.push('\n');
        }
        let line = match i % 3 {
            0 => json!({"id": format!("k{i}"), "prompt": format!("input {i}")}),
            _ => json!({"prompt": format!("input {i}")}),
        };
        text.push_str(&line.to_string());
        text.push('\n');
        inputs += 1;
    }
    (text, inputs)
}

#[test]
fn seven_shards_cover_a_thousand_inputs_each_exactly_once() {
    let p = P::OpenAi;
    let (server, requests) = counting_echo(p);
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    let (text, total) = thousand_inputs();
    std::fs::write(home.dir.path().join("in.jsonl"), text).unwrap();
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    let mut sizes = Vec::new();
    for k in 0..7 {
        let shard = format!("{k}/7");
        let b = home.run_bounded(
            &[(p, &server)],
            &[
                "run", "bot", "--each", "in.jsonl", "--jobs", "8", "--shard", &shard,
            ],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{shard}: {}", stderr(&b.output));
        let got = parsed(&stdout(&b.output));
        sizes.push(got.len());
        for line in &got {
            assert_eq!(line["ok"], true, "{line}");
            let prompt = line["input"]["prompt"].as_str().unwrap().to_string();
            let answer = line["content"].as_str().unwrap_or_default();
            assert_eq!(answer, format!("echo: {prompt}"), "{line}");
            *ran.entry(prompt).or_default() += 1;
        }
    }
    assert_eq!(ran.len(), total, "every input ran");
    assert!(ran.values().all(|&n| n == 1), "none ran twice");
    assert_eq!(requests.load(Ordering::SeqCst), total);
    // Shares are even enough to be worth splitting: 1000 / 7 is 143.
    assert!(sizes.iter().all(|&n| (110..=180).contains(&n)), "{sizes:?}");
}

#[test]
fn an_id_keeps_its_share_when_the_file_is_reordered() {
    let p = P::OpenAi;
    let (server, _) = counting_echo(p);
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    let forward: Vec<String> = (1..=40)
        .map(|i| json!({"id": i, "prompt": format!("x{i}")}).to_string())
        .collect();
    let mut backward = forward.clone();
    backward.reverse();
    let mut shares = Vec::new();
    for order in [&forward, &backward] {
        std::fs::write(home.dir.path().join("in.jsonl"), order.join("\n")).unwrap();
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "bot", "--each", "in.jsonl", "--shard", "2/3"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
        let mut ids: Vec<u64> = parsed(&stdout(&b.output))
            .iter()
            .map(|l| l["id"].as_u64().unwrap())
            .collect();
        ids.sort_unstable();
        shares.push(ids);
    }
    assert!(!shares[0].is_empty() && shares[0].len() < 40, "{shares:?}");
    assert_eq!(shares[0], shares[1]);
}

#[test]
fn each_file_shards_cover_every_file_once() {
    let p = P::OpenAi;
    let (server, _) = counting_echo(p);
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    let docs = home.dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for i in 0..30 {
        std::fs::write(docs.join(format!("d{i:02}.txt")), format!("doc {i}")).unwrap();
    }
    let mut paths = Vec::new();
    for k in 0..4 {
        let shard = format!("{k}/4");
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "bot", "--each-file", "docs/*.txt", "--shard", &shard],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
        for line in parsed(&stdout(&b.output)) {
            paths.push(line["path"].as_str().unwrap().to_string());
        }
    }
    paths.sort();
    let want: Vec<String> = (0..30).map(|i| format!("docs/d{i:02}.txt")).collect();
    assert_eq!(paths, want);
}

#[test]
fn a_share_resumes_on_its_own() {
    let p = P::OpenAi;
    // Inputs whose number ends in 7 fail the first time they are asked.
    let asked = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let seen = asked.clone();
    let server = FakeServer::route(move |r| {
        let said = r.first_user_text();
        if said.ends_with('7') && seen.lock().unwrap().insert(said.clone()) {
            return Reply::Json(500, r#"{"error":{"message":"boom"}}"#.into());
        }
        Reply::Json(200, p.text(&format!("echo: {said}")))
    });
    let home = Home::new();
    home.named_agent("bot", p.model(), "");
    let text: String = (1..=60).map(|i| format!("item {i}\n")).collect();
    std::fs::write(home.dir.path().join("in.txt"), text).unwrap();
    let args = [
        "run",
        "bot",
        "--each",
        "in.txt",
        "--shard",
        "2/4",
        "--resume",
        "out2.jsonl",
        "--retries",
        "0",
    ];
    let first = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_ne!(code(&first.output), 0, "some inputs failed");
    let again = home.run_bounded(&[(p, &server)], &args, HUNG);
    assert_eq!(code(&again.output), 0, "{}", stderr(&again.output));
    let out = std::fs::read_to_string(home.dir.path().join("out2.jsonl")).unwrap();
    let mut ok: Vec<u64> = parsed(&out)
        .iter()
        .filter(|l| l["ok"] == true)
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    ok.sort_unstable();
    // Share 2 (from 0) of 4 of lines dealt in turn: lines 3, 7, 11, ...
    let want: Vec<u64> = (1..=60).filter(|l| (l - 1) % 4 == 2).collect();
    assert_eq!(ok, want, "each of the share's inputs done once, no other");
    // The failed ones ran again, and only they: one failure each.
    let failed = parsed(&out).iter().filter(|l| l["ok"] == false).count();
    assert_eq!(failed, want.iter().filter(|l| **l % 10 == 7).count());
}

#[test]
fn a_bad_share_is_a_usage_error() {
    let home = Home::new();
    home.named_agent("bot", P::OpenAi.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "a\n").unwrap();
    for (args, says) in [
        (
            &["run", "bot", "--each", "in.txt", "--shard", "3/3"][..],
            "--shard 3/3: K is 0 to 2",
        ),
        (
            &["run", "bot", "--each", "in.txt", "--shard", "1/0"][..],
            "--shard 1/0: N is 1 to",
        ),
        (
            &["run", "bot", "--each", "in.txt", "--shard", "2"][..],
            "give K/N",
        ),
        (
            &["run", "bot", "--shard", "1/2"][..],
            "need --each or --each-file",
        ),
    ] {
        let out = home.run(args);
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn dry_run_shows_the_first_input_of_the_share() {
    let home = Home::new();
    home.named_agent("bot", P::OpenAi.model(), "");
    std::fs::write(home.dir.path().join("in.txt"), "alpha\nbravo\ncharlie\n").unwrap();
    let out = home.run(&[
        "run",
        "bot",
        "--each",
        "in.txt",
        "--shard",
        "1/3",
        "--dry-run",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("bravo"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("alpha"), "{}", stdout(&out));
}
