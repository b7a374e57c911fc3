//! The unit tests of `messages.rs`: a conversation to JSON and back, and
//! its file's bytes.

use super::*;

/// Every variant goes to JSON and back as it was; a reasoning item is
/// kept byte for byte even where it holds a registered key, which the
/// text around it does not.
#[test]
fn every_message_round_trips_and_reasoning_is_never_redacted() {
    let key = "sk-unit-test-secret-0123456789";
    crate::text::redact::register(key);
    let thinking = serde_json::json!({"type": "thinking", "thinking": key, "signature": "c2ln"});
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: [("path".to_string(), "a".to_string())].into(),
        wire_arguments: Value::String("{\"path\":\"a\"}".into()),
        foreign: None,
    };
    let history = vec![
        Message::User("hi".into()),
        Message::Assistant {
            content: format!("the key {key}"),
            tool_calls: vec![call.clone()],
            reasoning: vec![thinking.clone()],
        },
        Message::ToolResults(vec![ToolResult {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            content: "x".into(),
            is_error: true,
        }]),
        Message::Paused(serde_json::json!([{"type": "server_tool_use"}])),
    ];
    let json = to_json(&history);
    let back = from_json(json).unwrap();
    let Message::Assistant {
        content,
        tool_calls,
        reasoning,
    } = &back[1]
    else {
        panic!("{back:?}");
    };
    assert_eq!(content, "the key [redacted]");
    assert_eq!(tool_calls, &vec![call]);
    assert_eq!(reasoning, &vec![thinking]);
    assert_eq!(
        (&back[0], &back[2], &back[3]),
        (&history[0], &history[2], &history[3])
    );
}

/// The file is written straight from the history, not through a `Value`
/// of each message (design §3.15), and its bytes are those the `Value`s
/// gave: every variant, attachments, calls and results.
#[test]
fn the_file_is_the_bytes_of_its_value_tree() {
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: [("path".to_string(), "a".to_string())].into(),
        wire_arguments: Value::Null,
        foreign: Some(serde_json::json!({"id": "c1", "type": "function"})),
    };
    let history = vec![
        Message::User("hi".into()),
        Message::user_with(
            "see".into(),
            vec![Attachment::new("a.txt", b"x".to_vec()).unwrap()],
        ),
        Message::Assistant {
            content: "calling".into(),
            tool_calls: vec![call],
            reasoning: vec![serde_json::json!({"type": "thinking", "b": 1, "a": 2})],
        },
        Message::Assistant {
            content: "done".into(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
        Message::ToolResults(vec![ToolResult {
            call_id: "c1".into(),
            tool_name: "read_file".into(),
            content: "x".into(),
            is_error: false,
        }]),
        Message::Paused(serde_json::json!([{"type": "server_tool_use"}])),
    ];
    let kept = Kept::default();
    kept.sync("openai", &history, None);
    let dir = std::env::temp_dir().join(format!("axe-messages-{}", std::process::id()));
    assert!(kept.save(&dir, "ab12", "lead", Some("cd34")).unwrap());
    let written = std::fs::read(dir.join(DIR).join("ab12.json")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let tree = Saved {
        run_id: "ab12".into(),
        agent: "lead".into(),
        wire: "openai".into(),
        continues: Some("cd34".into()),
        messages: to_json(&history),
    };
    assert_eq!(
        String::from_utf8(written).unwrap(),
        serde_json::to_string(&tree).unwrap()
    );
}
