//! The provider layer's shared types (design §4.1): zero values that are
//! empty and send nothing, and messages that carry calls and results.

use super::*;

use axe::provider::{Message, Request, Response, Tool, ToolCall, ToolParameter, ToolResult, Wire};

#[test]
fn types_zero_value_tool_is_empty() {
    let tool = Tool::default();
    assert_eq!(tool.name, "");
    assert_eq!(tool.description, "");
    assert!(tool.parameters.is_empty());
    let param = ToolParameter::default();
    assert_eq!(param.kind, "");
    assert_eq!(param.description, "");
    assert!(!param.required);
    assert!(param.allowed.is_empty());
}

#[test]
fn types_zero_value_tool_call_is_empty() {
    let c = ToolCall::default();
    assert_eq!(c.id, "");
    assert_eq!(c.name, "");
    assert!(c.arguments.is_empty());
}

#[test]
fn types_zero_value_tool_result_is_empty_and_not_an_error() {
    let r = ToolResult::default();
    assert_eq!(r.call_id, "");
    assert_eq!(r.content, "");
    assert!(!r.is_error);
}

#[test]
fn types_default_request_sends_no_tools_key_to_any_provider() {
    let req = Request::default();
    assert!(req.tools.is_empty());
    assert_eq!(req.temperature, None);
    assert_eq!(req.max_tokens, None);
    for kind in Wire::ALL {
        let body = sent_body(kind, &req);
        assert!(body.get("tools").is_none(), "{kind:?}: {body}");
    }
}

#[test]
fn types_default_response_has_no_tool_calls() {
    let resp = Response::default();
    assert_eq!(resp.tool_calls.len(), 0);
    assert_eq!(resp.content, "");
    assert_eq!(resp.stop_reason, "");
    assert_eq!((resp.input_tokens, resp.output_tokens), (0, 0));
}

#[test]
fn types_message_carries_tool_calls() {
    let m = Message::Assistant {
        content: String::new(),
        tool_calls: vec![call("toolu_1", "call_agent", &[("agent", "reviewer")])],
        reasoning: vec![],
    };
    let Message::Assistant { tool_calls, .. } = &m else {
        panic!("{m:?}");
    };
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].id, "toolu_1");
    assert_eq!(tool_calls[0].name, "call_agent");
    assert_eq!(tool_calls[0].arguments["agent"], "reviewer");
    assert_eq!(Message::user("hi"), Message::User("hi".into()));
}

#[test]
fn types_message_carries_tool_results() {
    let m = Message::ToolResults(vec![ToolResult {
        call_id: "toolu_1".into(),
        content: "done".into(),
        is_error: true,
        ..ToolResult::default()
    }]);
    let Message::ToolResults(results) = &m else {
        panic!("{m:?}");
    };
    assert_eq!(results[0].call_id, "toolu_1");
    assert_eq!(results[0].content, "done");
    assert!(results[0].is_error);
}
