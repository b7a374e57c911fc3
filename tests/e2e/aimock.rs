//! aimock: a third-party implementation of each wire format, with tool calls.

use super::*;

fn aimock_agents(format: Format) -> Vec<(String, String)> {
    let model = format!("{}/aimock-model", format.provider());
    let agent = |name: &str, extra: &str| {
        (
            name.to_string(),
            format!(
                "name = \"{name}\"\nmodel = \"{model}\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        )
    };
    vec![
        agent("aimock-lead", "sub_agents = [\"aimock-helper\"]\n"),
        agent("aimock-fanout", "sub_agents = [\"aimock-helper\"]\n"),
        agent("aimock-helper", ""),
    ]
}

/// `aimock-lead` calls `call_agent` once (fixture), `aimock-helper` answers,
/// and the lead's fixture answers only once the tool result is in the request.
fn aimock_round_trip(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_AIMOCK_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &aimock_agents(format));
    let (out, report) = run_json(&home, &proxy, "aimock-lead", &["-p", "Go."]);
    let log = proxy.exchanges();
    assert_all_ok(&log, format);
    let who: Vec<String> = log.iter().map(|e| cast.who(&e.request)).collect();
    assert_eq!(who, ["aimock-lead", "aimock-helper", "aimock-lead"]);
    let helper = &log[1].request;
    assert_eq!(helper.first_user_text(), "Task: Name one prime number.");
    assert_eq!(assert_round_trips(format, &cast, &log, "aimock-lead"), 1);
    assert_eq!(report["content"], "lead: the helper has answered");
    let lead = made_by(&cast, &log, "aimock-lead");
    assert_report_matches(format, &report, &lead);
    let err = stderr(&out);
    assert!(
        err.contains("[sub-agent] \"aimock-helper\" completed"),
        "{err}"
    );
}

/// `aimock-fanout` calls `call_agent` twice in one response: both run, and
/// both results go back in call order.
fn aimock_fan_out(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_AIMOCK_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &aimock_agents(format));
    let (_, report) = run_json(&home, &proxy, "aimock-fanout", &["-p", "Go."]);
    let log = proxy.exchanges();
    assert_all_ok(&log, format);
    let helpers: Vec<String> = made_by(&cast, &log, "aimock-helper")
        .iter()
        .map(|e| e.request.first_user_text())
        .collect();
    assert_eq!(helpers.len(), 2);
    assert!(helpers.contains(&"Task: First task.".to_string()));
    assert!(helpers.contains(&"Task: Second task.".to_string()));
    assert_eq!(assert_round_trips(format, &cast, &log, "aimock-fanout"), 2);
    assert_eq!(report["content"], "fanout: both helpers have answered");
    assert_eq!(report["tool_calls"], 2);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_openai_call_agent_round_trip() {
    aimock_round_trip(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_anthropic_call_agent_round_trip() {
    aimock_round_trip(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_ollama_call_agent_round_trip() {
    aimock_round_trip(Format::Ollama);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_openai_parallel_fan_out() {
    aimock_fan_out(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_anthropic_parallel_fan_out() {
    aimock_fan_out(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_ollama_parallel_fan_out() {
    aimock_fan_out(Format::Ollama);
}
