//! The run log's file: private, whole lines from runs at once, rotated
//! past its size with one old file kept.

use super::solo;
use crate::common::*;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

#[test]
fn sixteen_runs_at_once_leave_sixteen_whole_records() {
    let home = solo("");
    // Every answer is long, so that a torn or interleaved write would show.
    let answer = format!("{}\n", "z".repeat(20_000));
    let server = FakeServer::json(200, &openai_text(&answer, 1, 1));
    let children: Vec<_> = (0..16)
        .map(|i| {
            home.axe_on(&[(P::OpenAi, &server)])
                .args(["run", "solo", "-p", &format!("run {i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stderr(&out), "");
    }
    let log = home.run_log();
    assert_eq!(log.len(), 16);
    let ids: BTreeSet<&str> = log.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 16);
    for r in &log {
        assert_eq!(r["exit"], 0);
        assert_eq!(r["answer"].as_str().unwrap().len(), 20_001);
    }
}

#[test]
fn the_log_is_private_and_rotates_past_max_bytes_keeping_one_old_file() {
    let home = solo("");
    home.config("[run_log]\nmax_bytes = 700\n");
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let mut ids = Vec::new();
    for i in 0..7 {
        let out = home.run_on(
            &[(P::OpenAi, &server)],
            &["run", "solo", "--json", "-p", &format!("{i}")],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        ids.push(v["run_id"].as_str().unwrap().to_string());
    }
    let dir = home.state_dir();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let (now, old) = (dir.join("runs.jsonl"), dir.join("runs.jsonl.1"));
    assert_eq!(mode(&now), 0o600);
    assert_eq!(mode(&old), 0o600);
    for f in [&now, &old] {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= 700, "{}: {len} bytes", f.display());
    }
    assert!(!dir.join("runs.jsonl.2").exists());
    // What is left is the newest runs, in order, none torn.
    let kept: Vec<String> = [&old, &now]
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(text.ends_with('\n'));
            text.lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    v["run_id"].as_str().unwrap().to_string()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(kept.len() >= 2 && kept.len() < 7, "{kept:?}");
    assert_eq!(kept, ids[7 - kept.len()..], "the newest, in order");
}
