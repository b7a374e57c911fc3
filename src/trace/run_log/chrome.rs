//! A run's trace as Chrome trace-event JSON (`axe runs show ID --chrome
//! FILE`, design §7.7), the format Perfetto and `chrome://tracing` open:
//! one track (a `tid`, named by a `thread_name` event) per agent path, on
//! it the agent run as one slice enclosing its requests (`request` to
//! `response`) and its tool calls (`tool_call` to `tool_result`); retries,
//! errors, repairs and MCP notes are instants. Calls that overlap (a
//! response's calls run at once) go on extra tracks of the same path, so
//! that every track's slices nest. Times are microseconds from the run's
//! first event.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value, json};

/// The Chrome trace-event document of one run.
#[derive(Debug)]
pub struct Picture {
    pub json: String,
    pub slices: usize,
    pub tracks: usize,
}

/// One trace line of the run.
struct Event {
    /// Its place among the run's lines.
    order: usize,
    /// Microseconds since the epoch.
    ts: i64,
    kind: String,
    path: String,
    agent: String,
    line: Map<String, Value>,
}

/// A complete ("X") event before it is placed on a track.
struct Slice {
    path: String,
    /// The order of the line that started it: of two slices that start in
    /// the same millisecond, the first started first.
    order: usize,
    start: i64,
    end: i64,
    name: String,
    cat: &'static str,
    args: Value,
}

/// A slice started and not yet ended.
struct Open {
    start: i64,
    order: usize,
    name: String,
    args: Value,
}

/// What is being built, path by path.
#[derive(Default)]
struct Builder {
    /// Paths in order of their first event.
    paths: Vec<String>,
    runs: HashMap<String, Open>,
    requests: HashMap<String, Open>,
    calls: HashMap<(String, String), Open>,
    /// The agent runs, one per path.
    run_slices: Vec<Slice>,
    /// Requests and tool calls.
    inner: Vec<Slice>,
    instants: Vec<Value>,
}

/// The picture of run `run_id` from the trace lines `trace` gives (lines of
/// other runs, and lines that are not trace events, are skipped); an error
/// when none of the run's is left.
pub fn picture(trace: impl BufRead, run_id: &str) -> Result<Picture, String> {
    let events = events_of(trace, run_id);
    let Some(t0) = events.iter().map(|e| e.ts).min() else {
        return Err(format!("the trace file has no events of run {run_id}"));
    };
    let last = events.iter().map(|e| e.ts).max().unwrap_or(t0);
    let mut b = Builder::default();
    for e in events {
        b.take(e);
    }
    b.close_all(last);
    Ok(b.finish(t0, run_id))
}

/// The run's events, in file order.
fn events_of(trace: impl BufRead, run_id: &str) -> Vec<Event> {
    let quoted = format!("\"{run_id}\"");
    trace
        .split(b'\n')
        .map_while(Result::ok)
        .filter_map(|bytes| {
            let line = String::from_utf8_lossy(&bytes);
            // Most lines of a shared trace are other runs': not parsed.
            if !line.contains(&quoted) {
                return None;
            }
            let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&line) else {
                return None;
            };
            if map.get("run_id").and_then(Value::as_str) != Some(run_id) {
                return None;
            }
            let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
            let ts = micros(&text("ts")?)?;
            Some(Event {
                order: 0,
                ts,
                kind: text("event")?,
                path: text("path")?,
                agent: text("agent").unwrap_or_default(),
                line: map,
            })
        })
        .enumerate()
        .map(|(order, e)| Event { order, ..e })
        .collect()
}

/// An RFC 3339 time as microseconds since the epoch.
fn micros(ts: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339(ts).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_micros()).ok()
}

/// The event's `key` as a number of milliseconds, in microseconds.
fn ms_field(line: &Map<String, Value>, key: &str) -> i64 {
    let ms = line.get(key).and_then(Value::as_u64).unwrap_or(0);
    i64::try_from(ms)
        .unwrap_or(i64::MAX / 2)
        .saturating_mul(1000)
}

/// The event's fields named `keys` that it has.
fn pick(line: &Map<String, Value>, keys: &[&str]) -> Value {
    let map: Map<String, Value> = keys
        .iter()
        .filter_map(|k| line.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    Value::Object(map)
}

/// `into`'s fields with `more`'s added.
fn merged(mut into: Value, more: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut into, more) {
        a.extend(b);
    }
    into
}

impl Open {
    /// A slice that `e` starts, called `name`, with `e`'s fields `keys`.
    fn at(e: &Event, name: String, keys: &[&str]) -> Open {
        Open {
            start: e.ts,
            order: e.order,
            name,
            args: pick(&e.line, keys),
        }
    }

    /// The slice that `e`, its end, closes when its start is not in the
    /// trace: as long before `e` as its `duration_ms` says, but not before
    /// the epoch, where every event's time is (so that no two times of
    /// the picture are further apart than an i64 holds).
    fn before(e: &Event, name: String) -> Open {
        Open {
            start: e.ts.saturating_sub(ms_field(&e.line, "duration_ms")).max(0),
            order: e.order,
            name,
            args: json!({}),
        }
    }

    /// The slice, ended at `end` on `path`'s track, with `more` arguments.
    fn ended(self, path: &str, end: i64, cat: &'static str, more: Value) -> Slice {
        Slice {
            path: path.to_string(),
            order: self.order,
            start: self.start,
            end: end.max(self.start),
            name: self.name,
            cat,
            args: merged(self.args, more),
        }
    }
}

impl Builder {
    /// Takes one event of the run.
    fn take(&mut self, e: Event) {
        if !self.paths.contains(&e.path) {
            self.paths.push(e.path.clone());
        }
        let l = &e.line;
        let path = e.path.clone();
        match e.kind.as_str() {
            "run_start" => {
                let keys = ["provider", "model", "tools", "depth"];
                self.runs.insert(path, Open::at(&e, e.agent.clone(), &keys));
            }
            "run_end" => {
                let keys = ["ok", "error", "turns", "input_tokens", "output_tokens"];
                let open = self.runs.remove(&path);
                let open = open.unwrap_or_else(|| Open::before(&e, e.agent.clone()));
                let s = open.ended(&path, e.ts, "agent", pick(l, &keys));
                self.run_slices.push(s);
            }
            "request" => {
                let keys = ["turn", "provider", "model", "messages"];
                self.requests
                    .insert(path, Open::at(&e, "request".into(), &keys));
            }
            "response" => {
                let keys = [
                    "input_tokens",
                    "output_tokens",
                    "stop_reason",
                    "tool_calls",
                    "retries",
                ];
                let open = self.requests.remove(&path);
                let open = open.unwrap_or_else(|| Open::before(&e, "request".into()));
                self.inner
                    .push(open.ended(&path, e.ts, "request", pick(l, &keys)));
            }
            "tool_call" => {
                let keys = ["call_id", "tool", "agent_called"];
                let open = Open::at(&e, call_name(l), &keys);
                self.calls.insert((path, text_of(l, "call_id")), open);
            }
            "tool_result" => {
                let open = self.calls.remove(&(path.clone(), text_of(l, "call_id")));
                let open = open.unwrap_or_else(|| Open::before(&e, call_name(l)));
                let more = pick(l, &["is_error", "chars", "duration_ms"]);
                self.inner.push(open.ended(&path, e.ts, "tool", more));
            }
            "error" => {
                // A failed request ends at its error.
                if let Some(o) = self.requests.remove(&path) {
                    let more = pick(l, &["error", "status"]);
                    self.inner.push(o.ended(&path, e.ts, "request", more));
                }
                self.instant(&e, "error", &["error", "kind"]);
            }
            "retry" => self.instant(&e, "retry", &["status", "reason", "attempt", "delay_ms"]),
            "repair" => self.instant(&e, "repair", &["repair", "of", "problems"]),
            "mcp" => self.instant(&e, "mcp", &["server", "kind", "text"]),
            _ => {}
        }
    }

    /// An instant event on the path's main track (its tid is set later).
    fn instant(&mut self, e: &Event, name: &str, keys: &[&str]) {
        self.instants.push(json!({
            "name": name, "cat": name, "ph": "i", "s": "t", "ts": e.ts,
            "pid": 1, "path": e.path, "args": pick(&e.line, keys),
        }));
    }

    /// Ends every slice the trace left open (a run cut short, a trace cut
    /// off) at the run's last event, marked `unfinished`.
    fn close_all(&mut self, last: i64) {
        let unfinished = || json!({ "unfinished": true });
        for (path, o) in std::mem::take(&mut self.requests) {
            self.inner
                .push(o.ended(&path, last, "request", unfinished()));
        }
        for ((path, _), o) in std::mem::take(&mut self.calls) {
            self.inner.push(o.ended(&path, last, "tool", unfinished()));
        }
        for (path, o) in std::mem::take(&mut self.runs) {
            self.run_slices
                .push(o.ended(&path, last, "agent", unfinished()));
        }
    }

    /// The document: tracks numbered in order of their path's first event,
    /// each path's extra tracks right after it.
    fn finish(mut self, t0: i64, run_id: &str) -> Picture {
        // A slice whose start was not in the trace may start before it.
        let t0 = self
            .run_slices
            .iter()
            .chain(&self.inner)
            .map(|s| s.start)
            .fold(t0, i64::min);
        // Each path's agent run bounds what it did, whatever the clock did.
        for s in &mut self.inner {
            if let Some(run) = self.run_slices.iter().find(|r| r.path == s.path) {
                s.start = s.start.clamp(run.start, run.end);
                s.end = s.end.clamp(s.start, run.end);
            }
        }
        self.inner.sort_by_key(|s| (s.start, s.order));
        let lanes = lanes(&self.inner);
        let mut tid_of: HashMap<(String, usize), u64> = HashMap::new();
        let mut out = vec![json!({"name": "process_name", "ph": "M", "pid": 1,
                                  "args": {"name": format!("axe run {run_id}")}})];
        let mut tid = 0u64;
        for path in &self.paths {
            let count = lanes
                .iter()
                .zip(&self.inner)
                .filter(|(_, s)| s.path == *path)
                .map(|(l, _)| l + 1)
                .max()
                .unwrap_or(1);
            for lane in 0..count {
                tid += 1;
                let name = match lane {
                    0 => path.clone(),
                    n => format!("{path} ({})", n + 1),
                };
                tid_of.insert((path.clone(), lane), tid);
                out.push(
                    json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                                "args": {"name": name}}),
                );
                out.push(
                    json!({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid,
                                "args": {"sort_index": tid}}),
                );
            }
        }
        let slices = self.run_slices.len() + self.inner.len();
        let placed = self
            .run_slices
            .iter()
            .map(|s| (s, 0))
            .chain(self.inner.iter().zip(lanes.iter().copied()));
        for (s, lane) in placed {
            let tid = tid_of.get(&(s.path.clone(), lane)).copied().unwrap_or(0);
            out.push(json!({
                "name": s.name, "cat": s.cat, "ph": "X", "pid": 1, "tid": tid,
                "ts": s.start - t0, "dur": s.end - s.start, "args": s.args,
            }));
        }
        for mut i in self.instants {
            let path = i["path"].as_str().unwrap_or_default().to_string();
            i["tid"] = tid_of.get(&(path, 0)).copied().unwrap_or(0).into();
            i["ts"] = (i["ts"].as_i64().unwrap_or(t0) - t0).into();
            if let Value::Object(m) = &mut i {
                m.remove("path");
            }
            out.push(i);
        }
        let doc = json!({
            "traceEvents": out,
            "displayTimeUnit": "ms",
            "otherData": {"run_id": run_id},
        });
        Picture {
            json: format!("{doc}\n"),
            slices,
            tracks: tid_of.len(),
        }
    }
}

/// The lane of each slice (sorted by start, then by the order they
/// started in) on its path: the first whose last slice has ended when it
/// starts, so that no two slices of a lane overlap.
fn lanes(slices: &[Slice]) -> Vec<usize> {
    let mut ends: HashMap<&str, Vec<i64>> = HashMap::new();
    slices
        .iter()
        .map(|s| {
            let lanes = ends.entry(s.path.as_str()).or_default();
            match lanes.iter().position(|&end| end <= s.start) {
                Some(i) => {
                    lanes[i] = s.end;
                    i
                }
                None => {
                    lanes.push(s.end);
                    lanes.len() - 1
                }
            }
        })
        .collect()
}

fn text_of(line: &Map<String, Value>, key: &str) -> String {
    line.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A tool call's slice name: the tool, and for `call_agent` whom it called.
fn call_name(line: &Map<String, Value>) -> String {
    let tool = text_of(line, "tool");
    match line.get("agent_called").and_then(Value::as_str) {
        Some(a) if !a.is_empty() && tool == "call_agent" => format!("call_agent {a}"),
        _ => tool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ts: &str, event: &str, path: &str, extra: &str) -> String {
        format!(
            "{{\"ts\":\"{ts}\",\"run_id\":\"r1\",\"event\":\"{event}\",\"agent\":\"a\",\
             \"path\":\"{path}\",\"depth\":0,\"turn\":1{extra}}}\n"
        )
    }

    /// The trace lost its first lines (a run's start) and its last (a run
    /// killed): the response is drawn back from its duration, the open call
    /// and the run end at the last event, marked unfinished.
    #[test]
    fn a_trace_cut_at_both_ends_still_draws_whole_slices() {
        let text = [
            line("2026-01-01T00:00:01.000Z", "run_start", "a", ""),
            line(
                "2026-01-01T00:00:01.500Z",
                "response",
                "a",
                ",\"duration_ms\":400",
            ),
            line(
                "2026-01-01T00:00:01.600Z",
                "tool_call",
                "a",
                ",\"call_id\":\"c\",\"tool\":\"read_file\"",
            ),
            line("2026-01-01T00:00:02.000Z", "retry", "a", ",\"status\":529"),
        ]
        .concat();
        let p = picture(text.as_bytes(), "r1").unwrap();
        let doc: Value = serde_json::from_str(&p.json).unwrap();
        let slices: Vec<(&str, i64, i64, bool)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let unfinished = e["args"]["unfinished"] == true;
                let (ts, dur) = (e["ts"].as_i64().unwrap(), e["dur"].as_i64().unwrap());
                (e["name"].as_str().unwrap(), ts, dur, unfinished)
            })
            .collect();
        assert_eq!(
            slices,
            [
                ("a", 0, 1_000_000, true),
                ("request", 100_000, 400_000, false),
                ("read_file", 600_000, 400_000, true),
            ]
        );
        assert_eq!((p.slices, p.tracks), (3, 1));
        assert!(picture(text.as_bytes(), "r2").is_err());
    }
}
