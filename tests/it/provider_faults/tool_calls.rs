//! Tool calls that are malformed, nameless, unknown or a thousand at once.

use super::*;

#[test]
fn fault_tool_calls_with_non_object_or_non_json_arguments_get_the_agent_required_error() {
    tool_matrix("non-object / non-JSON arguments", |p| {
        // As each wire could carry them: OpenAI's arguments are a string
        // holding JSON, the others' an object.
        let mut shapes: Vec<Option<Value>> = match p {
            P::OpenAi => vec![
                json!("not json at all"),
                json!("{\"agent\": \"helper\", \"task\""),
                json!("[\"helper\", \"go\"]"),
                json!("\"{\\\"agent\\\": \\\"helper\\\", \\\"task\\\": \\\"go\\\"}\""),
                json!("42"),
                json!(""),
                json!(["helper", "go"]),
                json!(42),
                Value::Null,
            ],
            P::Anthropic => vec![
                json!("not json at all"),
                json!(["helper", "go"]),
                json!(42),
                json!(true),
                Value::Null,
            ],
            P::Ollama => vec![
                json!("not json at all"),
                json!("{\"agent\": \"helper\", \"task\""),
                json!("[\"helper\", \"go\"]"),
                json!(["helper", "go"]),
                json!(42),
                Value::Null,
            ],
            P::Responses => unreachable!("runs on PROVIDERS"),
        }
        .into_iter()
        .map(Some)
        .collect();
        shapes.push(None); // no arguments at all
        let calls: Vec<RawCall> = shapes
            .into_iter()
            .enumerate()
            .map(|(i, args)| RawCall {
                id: Some(format!("call_bad_{i}")),
                name: "call_agent",
                args,
            })
            .collect();
        ToolFault {
            first: raw_tool_calls(p, &calls),
            want: (0..calls.len())
                .map(|i| (format!("call_bad_{i}"), AGENT_REQUIRED.to_string(), true))
                .collect(),
        }
    });
}

#[test]
fn fault_tool_call_without_an_id_is_given_one_and_still_answered() {
    // OpenAI and Anthropic: an absent id becomes `call_<index>`, and so does
    // an empty one; the history sent back carries the same ids. Ollama has
    // no ids at all: its results go back in call order.
    tool_matrix("missing tool-call id", |p| {
        let calls = [
            RawCall {
                id: None,
                name: "call_agent",
                args: Some(p.wire_args(delegate("helper", "first"))),
            },
            RawCall {
                id: Some(String::new()),
                name: "call_agent",
                args: Some(p.wire_args(delegate("helper", "second"))),
            },
        ];
        ToolFault {
            first: raw_tool_calls(p, &calls),
            want: vec![
                ("call_0".into(), "helper did first".into(), false),
                ("call_1".into(), "helper did second".into(), false),
            ],
        }
    });
}

#[test]
fn fault_unknown_tool_name_is_answered_unknown_tool_and_its_sibling_still_runs() {
    tool_matrix("unknown tool", |p| ToolFault {
        first: p.tool_calls(&[
            ("call_x", "x", delegate("helper", "sneaky")),
            ("call_ok", "call_agent", delegate("helper", "after")),
        ]),
        want: vec![
            ("call_x".into(), "Unknown tool: \"x\"".into(), true),
            ("call_ok".into(), "helper did after".into(), false),
        ],
    });
}

#[test]
fn fault_1000_tool_calls_in_one_response_are_all_answered_in_order_with_an_error_each() {
    const N: usize = 1000;
    const REFUSED: &str =
        "call_agent error: agent \"nobody\" is not in this agent's sub_agents list";
    tool_matrix("1,000 tool calls", |p| {
        let ids: Vec<String> = (0..N).map(|i| format!("call_{i:04}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                (
                    id.as_str(),
                    "call_agent",
                    delegate("nobody", &format!("job {i}")),
                )
            })
            .collect();
        ToolFault {
            first: p.tool_calls(&calls),
            want: ids
                .iter()
                .map(|id| (id.clone(), REFUSED.to_string(), true))
                .collect(),
        }
    });
}
