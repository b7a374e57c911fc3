//! `axe runs show ID --chrome FILE`: the run's trace as Chrome trace-event
//! JSON, a track per agent path, slices that nest on every track; a run
//! without a trace, or whose trace is gone or garbled, said so.

use crate::common::*;
use crate::tree_fake::{plan, three_levels, tree_server};

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

/// Runs `agent` with a trace to `t.jsonl`, then draws it; the picture.
fn drawn(home: &Home, server: &FakeServer, agent: &str) -> Value {
    let out = home.run_on(
        &[(P::OpenAi, server)],
        &["run", agent, "--json", "--trace", "t.jsonl"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = v["run_id"].as_str().unwrap();
    let out = home.run(&["runs", "show", id, "--chrome", "run.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("run.json: "), "{}", stdout(&out));
    let text = std::fs::read_to_string(home.dir.path().join("run.json")).unwrap();
    let left: Vec<String> = std::fs::read_dir(home.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    serde_json::from_str(&text).unwrap()
}

/// A complete event: (name, cat, ts, end), in microseconds.
type Slice = (String, String, i64, i64);

/// The `X` events of each track, by the track's name.
fn tracks(doc: &Value) -> BTreeMap<String, Vec<Slice>> {
    let events = doc["traceEvents"].as_array().unwrap();
    let mut names = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
    {
        assert_eq!(e["pid"], 1);
        names.insert(
            e["tid"].as_u64().unwrap(),
            e["args"]["name"].as_str().unwrap().to_string(),
        );
    }
    let mut out: BTreeMap<String, Vec<Slice>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert_eq!(e["pid"], 1, "{e}");
        let (ts, dur) = (e["ts"].as_i64().unwrap(), e["dur"].as_i64().unwrap());
        assert!(ts >= 0 && dur >= 0, "{e}");
        let track = names[&e["tid"].as_u64().unwrap()].clone();
        let slice = (
            e["name"].as_str().unwrap().to_string(),
            e["cat"].as_str().unwrap().to_string(),
            ts,
            ts + dur,
        );
        out.entry(track).or_default().push(slice);
    }
    out
}

/// Whether the slices of one track nest: any two are disjoint or one holds
/// the other.
#[track_caller]
fn assert_nested(track: &str, slices: &[Slice]) {
    for (i, a) in slices.iter().enumerate() {
        for b in &slices[i + 1..] {
            let disjoint = a.3 <= b.2 || b.3 <= a.2;
            let holds = |x: &Slice, y: &Slice| x.2 <= y.2 && y.3 <= x.3;
            assert!(
                disjoint || holds(a, b) || holds(b, a),
                "{track}: {a:?} and {b:?} overlap"
            );
        }
    }
}

fn named<'a>(slices: &'a [Slice], cat: &str) -> Vec<&'a str> {
    slices
        .iter()
        .filter(|s| s.1 == cat)
        .map(|s| s.0.as_str())
        .collect()
}

#[test]
fn a_trees_picture_has_a_track_per_path_each_run_holding_its_requests_and_calls() {
    let home = Home::new();
    let server = three_levels(&home);
    let doc = drawn(&home, &server, "lead");
    assert_eq!(doc["displayTimeUnit"], "ms");
    let tracks = tracks(&doc);
    let paths: Vec<&str> = tracks.keys().map(String::as_str).collect();
    assert_eq!(paths, ["lead", "lead/mid#1", "lead/mid#1/leaf#1"]);
    for (track, slices) in &tracks {
        assert_nested(track, slices);
        // One agent run per track, holding everything else on it.
        let runs: Vec<&Slice> = slices.iter().filter(|s| s.1 == "agent").collect();
        assert_eq!(runs.len(), 1, "{track}: {slices:?}");
        for s in slices {
            assert!(
                runs[0].2 <= s.2 && s.3 <= runs[0].3,
                "{track}: {s:?} outside its run"
            );
        }
    }
    assert_eq!(named(&tracks["lead"], "agent"), ["lead"]);
    assert_eq!(named(&tracks["lead"], "request"), ["request", "request"]);
    assert_eq!(named(&tracks["lead"], "tool"), ["call_agent mid"]);
    assert_eq!(named(&tracks["lead/mid#1"], "tool"), ["call_agent leaf"]);
    assert_eq!(named(&tracks["lead/mid#1/leaf#1"], "request"), ["request"]);
    assert!(named(&tracks["lead/mid#1/leaf#1"], "tool").is_empty());
    // The sub-agent's run lies within its caller's call.
    let call = &tracks["lead"].iter().find(|s| s.1 == "tool").unwrap();
    let mid = &tracks["lead/mid#1"]
        .iter()
        .find(|s| s.1 == "agent")
        .unwrap();
    assert!(call.2 <= mid.2 && mid.3 <= call.3, "{call:?} {mid:?}");
}

#[test]
fn calls_that_overlap_go_on_tracks_of_their_own_so_that_every_track_nests() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let server = tree_server(
        plan(&[("lead", &["w", "w", "w"])]),
        Duration::from_millis(30),
    );
    let doc = drawn(&home, &server, "lead");
    let tracks = tracks(&doc);
    for (track, slices) in &tracks {
        assert_nested(track, slices);
    }
    let calls: usize = tracks
        .iter()
        .filter(|(t, _)| t.starts_with("lead") && !t.contains('/'))
        .map(|(_, s)| named(s, "tool").len())
        .sum();
    assert_eq!(calls, 3, "{tracks:?}");
    for w in ["lead/w#1", "lead/w#2", "lead/w#3"] {
        assert_eq!(named(&tracks[w], "agent"), ["w"], "{tracks:?}");
    }
    // The three calls ran at once: one on lead's track, two beside it.
    assert!(tracks.contains_key("lead (2)"), "{:?}", tracks.keys());
}

#[test]
fn a_run_without_a_trace_is_exit_2_saying_how_to_keep_one() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("hi", 1, 1));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = v["run_id"].as_str().unwrap();
    let out = home.run(&["runs", "show", id, "--chrome", "x.json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "axe: run {id} has no trace to draw: it ran without --trace (run with --trace FILE \
             or AXE_TRACE=FILE to keep one)\n"
        )
    );
    assert!(!home.dir.path().join("x.json").exists());
}

#[test]
fn a_trace_gone_garbled_or_shared_keeps_what_is_the_runs_and_says_when_nothing_is() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("hi", 1, 1));
    let mut ids = Vec::new();
    // Two runs into one trace.
    for _ in 0..2 {
        let out = home.run_on(
            &[(P::OpenAi, &server)],
            &["run", "solo", "--json", "--trace", "t.jsonl"],
        );
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        ids.push(v["run_id"].as_str().unwrap().to_string());
    }
    let trace = home.dir.path().join("t.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    // Garbage between the lines, and the file cut in the last one.
    let garbled: String = text
        .lines()
        .flat_map(|l| [l.to_string(), "\u{0}garbage {\"run_id\": [".to_string()])
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&trace, &garbled[..garbled.len() - 40]).unwrap();
    let out = home.run(&["runs", "show", &ids[0], "--chrome", "-"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["otherData"]["run_id"], ids[0].as_str());
    let tracks = tracks(&doc);
    assert_eq!(
        named(&tracks["solo"], "agent"),
        ["solo"],
        "only the first run's"
    );
    assert_eq!(named(&tracks["solo"], "request"), ["request"]);
    // Nothing of the run left: said so.
    std::fs::write(&trace, "garbage\n").unwrap();
    let out = home.run(&["runs", "show", &ids[0], "--chrome", "x.json"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "axe: {}: the trace file has no events of run {}\n",
            trace.display(),
            ids[0]
        )
    );
    // The file gone.
    std::fs::remove_file(&trace).unwrap();
    let out = home.run(&["runs", "show", &ids[1], "--chrome", "x.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).starts_with(&format!(
            "axe: cannot read the trace file {}: ",
            trace.display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_duration_too_long_for_any_clock_in_the_trace_is_drawn_not_overflowed() {
    // A tool's end whose start is not in the trace starts `duration_ms`
    // before it: u64::MAX ms reaches back further than an i64 of
    // microseconds can span to the run's events after it.
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("hi", 1, 1));
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "solo", "--json", "--trace", "t.jsonl"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = v["run_id"].as_str().unwrap();
    let trace = home.dir.path().join("t.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    let first = text.lines().next().unwrap();
    let mut odd: serde_json::Map<String, Value> = serde_json::from_str(first).unwrap();
    odd.insert("event".into(), "tool_result".into());
    odd.insert("call_id".into(), "never_called".into());
    odd.insert("tool".into(), "read_file".into());
    odd.insert("duration_ms".into(), u64::MAX.into());
    // Before the run's own events, as a clock set back would put it.
    odd.insert("ts".into(), "2020-01-01T00:00:00.000Z".into());
    std::fs::write(&trace, format!("{}\n{text}", Value::Object(odd))).unwrap();
    let out = home.run(&["runs", "show", id, "--chrome", "-"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" || e["ph"] == "i" {
            assert!(e["ts"].as_i64().is_some_and(|t| t >= 0), "{e}");
        }
        if e["ph"] == "X" {
            assert!(e["dur"].as_i64().is_some_and(|d| d >= 0), "{e}");
        }
    }
}
