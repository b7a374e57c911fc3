//! Running axe against the proxy, the agents of a test (the cast), and the assertions the cases share.

use super::*;

/// `axe` with every provider pointed at the proxy and dummy keys.
pub(crate) fn axe(home: &Home, proxy: &Proxy) -> std::process::Command {
    let mut c = home.axe();
    for p in ["OPENAI", "ANTHROPIC", "OLLAMA"] {
        c.env(format!("AXE_{p}_BASE_URL"), proxy.url());
    }
    c.env("OPENAI_API_KEY", DUMMY_KEY)
        .env("ANTHROPIC_API_KEY", DUMMY_KEY);
    c
}

/// Runs `axe run <agent> --json --verbose --timeout 600 <args>`; returns the
/// output and the parsed JSON report (failing with stderr when it is not 0).
pub(crate) fn run_json(home: &Home, proxy: &Proxy, agent: &str, args: &[&str]) -> (Output, Value) {
    let out = axe(home, proxy)
        .args(["run", agent, "--json", "--verbose", "--timeout", "600"])
        .args(args)
        .output()
        .expect("run axe");
    assert_eq!(
        code(&out),
        0,
        "axe run {agent} failed\nstderr:\n{}\nstdout:\n{}",
        stderr(&out),
        stdout(&out)
    );
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("--json output is not JSON ({e}): {}", stdout(&out)));
    (out, report)
}

/// Agents by their system prompt, for telling who sent a request.
pub(crate) struct Cast(Vec<(String, String)>);

impl Cast {
    /// Writes `(name, toml)` agents into `home` and remembers their prompts.
    pub(crate) fn write(home: &Home, agents: &[(String, String)]) -> Cast {
        let mut prompts = Vec::new();
        for (name, text) in agents {
            home.agent(name, text);
            let v: toml::Value = toml::from_str(text).expect("agent TOML");
            let prompt = v["system_prompt"].as_str().unwrap_or("").to_string();
            prompts.push((name.clone(), prompt));
        }
        Cast(prompts)
    }

    pub(crate) fn who(&self, req: &Recorded) -> String {
        let prompt = req.system_prompt();
        self.0
            .iter()
            .find(|(_, p)| *p == prompt)
            .map_or_else(|| "?".to_string(), |(n, _)| n.clone())
    }
}

/// The exchanges that agent `name` made, in order.
pub(crate) fn made_by(cast: &Cast, log: &[Exchange], name: &str) -> Vec<Exchange> {
    log.iter()
        .filter(|e| cast.who(&e.request) == name)
        .cloned()
        .collect()
}

#[track_caller]
pub(crate) fn assert_all_ok(log: &[Exchange], format: Format) {
    assert!(!log.is_empty(), "axe sent no request");
    for e in log {
        assert_eq!(e.request.method, "POST");
        assert_eq!(e.request.path, format.path(), "wrong endpoint");
        assert_eq!(
            e.status, 200,
            "the server refused a request axe sent\nrequest: {}\nresponse: {}",
            e.request.body, e.response
        );
    }
}

/// The `--json` report against the responses of the top-level agent: its
/// answer is the last response's text, its stop reason that response's, its
/// tokens the sum of the server's usage over its turns, its tool_calls the
/// calls it made.
#[track_caller]
pub(crate) fn assert_report_matches(format: Format, report: &Value, top: &[Exchange]) {
    let last = top.last().expect("the top-level agent sent a request");
    let last_json = last.response_json();
    assert_eq!(report["content"], json!(format.content(&last_json)));
    assert_eq!(
        report["stop_reason"],
        json!(format.stop_reason(&last_json)),
        "stop_reason"
    );
    let (mut input, mut output, mut calls, mut cached, mut written) = (0, 0, 0, 0, 0);
    for e in top {
        let r = e.response_json();
        let (i, o) = format.usage(&r);
        input += i;
        output += o;
        cached += format.cache_reads(&r);
        written += format.cache_writes(&r);
        calls += format.calls(&r).len() as u64;
    }
    assert_eq!(
        report["cache_read_input_tokens"].as_u64(),
        Some(cached),
        "cache reads"
    );
    assert_eq!(
        report["cache_creation_input_tokens"].as_u64(),
        Some(written),
        "cache writes"
    );
    assert_eq!(
        (
            report["input_tokens"].as_u64(),
            report["output_tokens"].as_u64()
        ),
        (Some(input), Some(output)),
        "--json tokens must equal the server's usage summed over the top-level agent's {} turn(s)",
        top.len()
    );
    assert_eq!(report["tool_calls"].as_u64(), Some(calls), "tool_calls");
}

/// Checks the request after a turn whose response made `calls`: the
/// history is sent back whole (that turn's messages, then the assistant's
/// calls as received, OpenAI's `content` a string, never null), then one
/// result per call, by id, in call order. Returns the results' texts.
#[track_caller]
pub(crate) fn assert_echoed(
    format: Format,
    turn: &Exchange,
    next: &Exchange,
    calls: &[WireCall],
) -> Vec<String> {
    let msgs = format.messages(&next.request.json());
    let before = format.messages(&turn.request.json()).len();
    let assistant = &msgs[before];
    assert_eq!(assistant["role"], "assistant", "{assistant}");
    if format == Format::OpenAi {
        assert!(
            assistant["content"].is_string(),
            "the assistant message with tool_calls must carry string content (design D15): {assistant}"
        );
    }
    let sent_calls = format.calls_in_message(assistant);
    assert_eq!(sent_calls.len(), calls.len(), "{assistant}");
    for (sent, got) in sent_calls.iter().zip(calls) {
        assert_eq!(sent.name, got.name);
        assert_eq!(sent.arguments, got.arguments);
        if got.id.is_some() {
            assert_eq!(sent.id, got.id, "call ids must be sent back as received");
        }
    }
    let results: Vec<(Option<String>, String)> = msgs[before + 1..]
        .iter()
        .flat_map(|m| format.results_in_message(m))
        .collect();
    assert_eq!(results.len(), calls.len(), "one result per call: {msgs:?}");
    for (call, (id, _)) in calls.iter().zip(&results) {
        if call.id.is_some() {
            assert_eq!(id, &call.id, "results in call order, by id");
        }
    }
    results.into_iter().map(|(_, content)| content).collect()
}

/// Checks a delegation conversation of `parent` through `call_agent`:
/// every response with tool calls is followed by a request that carries the
/// assistant's calls and one result per call ([`assert_echoed`]), each the
/// answer of the sub-agent that was asked `Task: <task>`. Returns the number
/// of calls checked.
#[track_caller]
pub(crate) fn assert_round_trips(
    format: Format,
    cast: &Cast,
    log: &[Exchange],
    parent: &str,
) -> usize {
    let turns = made_by(cast, log, parent);
    let mut checked = 0;
    for (i, turn) in turns.iter().enumerate() {
        let calls = format.calls(&turn.response_json());
        if calls.is_empty() {
            continue;
        }
        let next = turns.get(i + 1).unwrap_or_else(|| {
            panic!(
                "{parent}'s turn {} called tools but no later request came",
                i + 1
            )
        });
        let results = assert_echoed(format, turn, next, &calls);
        for (call, content) in calls.iter().zip(&results) {
            assert_eq!(call.name, "call_agent");
            let agent = call.arguments["agent"].as_str().unwrap_or("");
            let task = call.arguments["task"].as_str().unwrap_or("").trim();
            let context = call.arguments["context"].as_str().unwrap_or("").trim();
            let user = if context.is_empty() {
                format!("Task: {task}")
            } else {
                format!("Task: {task}\n\nContext:\n{context}")
            };
            let sub = made_by(cast, log, agent);
            // Its last turn for this task: with an output schema there may
            // have been repairs (design D22).
            let asked = sub
                .iter()
                .rev()
                .find(|e| e.request.first_user_text() == user)
                .unwrap_or_else(|| {
                    panic!("no request from sub-agent {agent:?} with the user message {user:?}")
                });
            let answer = format.content(&asked.response_json());
            // A sub-agent with an output schema returns its answer as the
            // same JSON value, compact.
            let shaped = serde_json::from_str::<Value>(content)
                .ok()
                .filter(Value::is_object);
            match (shaped, serde_json::from_str::<Value>(answer.trim()).ok()) {
                (Some(got), Some(sent)) => assert_eq!(
                    got, sent,
                    "the tool result is the sub-agent's final answer, as JSON"
                ),
                _ => assert_eq!(
                    content, &answer,
                    "the tool result is the sub-agent's final answer"
                ),
            }
        }
        checked += calls.len();
    }
    checked
}

pub(crate) fn demo_agents() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/axe/agents");
    ["lead", "summarizer", "critic"]
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(format!("{n}.toml"))).unwrap();
            // The model the local server answers to, whatever its alias.
            let text = text.replace("openai/qwen", &format!("openai/{}", local_model()));
            (n.to_string(), text)
        })
        .collect()
}

pub(crate) fn demo_input() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/input.txt");
    std::fs::read_to_string(p).unwrap().trim().to_string()
}

pub(crate) fn print_timings(log: &[Exchange], cast: &Cast) {
    for e in log {
        eprintln!(
            "  {:>10} {} -> {} in {} ms",
            cast.who(&e.request),
            e.request.path,
            e.status,
            e.millis
        );
    }
}
