//! The real model calling an MCP server's tool (docs/guide/mcp.md).

use super::*;

/// The question of the MCP cases: a zone not in the prompt's examples.
const TIME_QUESTION: &str = "What is the current time in London?";

/// `mcp-server-time` as scripts/mcp_servers.sh installs it, or `None`
/// after the skip is said where `make e2e` counts it (tests/common/skips.rs).
fn time_server() -> Option<std::path::PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp/venv/bin/mcp-server-time");
    if bin.exists() {
        Some(bin)
    } else {
        common::missing(
            "the real model's MCP call",
            "mcp-server-time is not installed in target/mcp (bash scripts/mcp_servers.sh; make e2e does)",
        );
        None
    }
}

/// fixtures/e2e/agents/clock.toml on `format`, with the model named.
fn clock_agent(format: Format) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/e2e/agents/clock.toml");
    let mut agent: toml::Table = toml::from_str(&std::fs::read_to_string(fixture).unwrap())
        .expect("the fixture agent is TOML");
    agent.insert(
        "model".into(),
        format!("{}/{}", format.provider(), local_model()).into(),
    );
    toml::to_string(&agent).expect("agent TOML")
}

/// config.toml's `[[mcp_servers]]` table for the time server at `bin`:
/// stdio, UTC as its local zone.
fn time_server_config(bin: &Path) -> String {
    format!(
        "[[mcp_servers]]\nname = \"time\"\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\ntimeout = 60\n",
        bin.display().to_string()
    )
}

/// The clock agent on `format` asked the time in London: its request offers
/// only `time__get_current_time` (the server's schema, `timezone`
/// required); the real model's first response calls it with a zone; axe's
/// next request carries the call as received and, by id, the server's
/// result, JSON with that zone and a `datetime`; the last response calls no
/// tool; the run exits 0 with an answer; `--json` matches the server's
/// usage; `--verbose` shows the server starting and the call.
fn mcp_time_step(format: Format) {
    let Some(bin) = time_server() else { return };
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    home.config(&time_server_config(&bin));
    let cast = Cast::write(&home, &[("clock".into(), clock_agent(format))]);
    let (out, report) = run_json(&home, &proxy, "clock", &["-p", TIME_QUESTION]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);

    let body = log[0].request.json();
    let offered: Vec<&Value> = body["tools"].as_array().expect("tools").iter().collect();
    assert_eq!(offered.len(), 1, "only time__get_current_time: {body}");
    let (name, params) = match format {
        Format::OpenAi => (
            &offered[0]["function"]["name"],
            &offered[0]["function"]["parameters"],
        ),
        _ => (&offered[0]["name"], &offered[0]["input_schema"]),
    };
    assert_eq!(name, "time__get_current_time");
    assert_eq!(params["required"], json!(["timezone"]), "{body}");

    let first = log[0].response_json();
    let calls = format.calls(&first);
    assert!(
        !calls.is_empty() && calls[0].name == "time__get_current_time",
        "the model did not call time__get_current_time in its first response: {first}"
    );
    let zone = calls[0].arguments["timezone"].as_str().unwrap_or("");
    assert!(!zone.trim().is_empty(), "{calls:?}");
    let next = log
        .get(1)
        .expect("the call was made but no later request came");
    let results = assert_echoed(format, &log[0], next, &calls);
    let result: Value = serde_json::from_str(&results[0])
        .unwrap_or_else(|e| panic!("the time server's result is not JSON ({e}): {results:?}"));
    assert_eq!(result["timezone"], zone, "{result}");
    let datetime = result["datetime"].as_str().unwrap_or("");
    assert!(
        datetime.len() >= 19 && datetime.as_bytes()[10] == b'T',
        "the result must hold an ISO datetime: {result}"
    );

    let last = log.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &log);
    let answer = report["content"].as_str().unwrap_or("");
    assert!(!answer.trim().is_empty(), "no final answer: {report}");
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.starts_with("[mcp] \"time\" ready:")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("[tool] time__get_current_time: ") && l.contains("(ok, ")),
        "{err}"
    );
    eprintln!(
        "  {} call(s) in {} turn(s); zone {zone:?}, datetime {datetime:?}; answer: {answer:?}",
        report["tool_calls"],
        log.len()
    );
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_mcp_time() {
    mcp_time_step(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_mcp_time() {
    mcp_time_step(Format::Anthropic);
}
