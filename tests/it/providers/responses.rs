//! The Responses API in process: `Request.reasoning`'s effort as
//! `reasoning.effort`, a response's reasoning items kept (those that carry
//! their encrypted content), its summary as the thinking, never the answer,
//! and its reasoning tokens counted; an assistant turn's items sent back
//! first, as they came (design §4.14).

use super::*;
use axe::provider::{Effort, Reasoning};

#[test]
fn responses_sends_the_effort_as_reasoning_effort_and_nothing_without_one() {
    let body = sent_body(Wire::Responses, &hello());
    assert!(body.get("reasoning").is_none(), "{body}");
    for (effort, name) in [
        (Effort::Minimal, "minimal"),
        (Effort::Low, "low"),
        (Effort::Medium, "medium"),
        (Effort::High, "high"),
    ] {
        let req = Request {
            reasoning: Some(Reasoning {
                effort: Some(effort),
                budget_tokens: Some(2048),
            }),
            ..hello()
        };
        let body = sent_body(Wire::Responses, &req);
        // The budget is Anthropic's: this API has none.
        assert_eq!(body["reasoning"], json!({"effort": name}), "{body}");
    }
}

#[test]
fn responses_keeps_encrypted_reasoning_items_and_counts_reasoning_tokens() {
    let shown = json!({"type": "reasoning", "id": "rs_shown", "summary": [],
        "content": [{"type": "reasoning_text", "text": "Local thoughts."}]});
    let output = json!([
        reasoning_item("rs_1", "First, the plan."),
        shown,
        output_message("The answer.")
    ]);
    let resp = answer(
        Wire::Responses,
        &responses_answer(output, 10, 40, 32).to_string(),
        &hello(),
    );
    assert_eq!(resp.content, "The answer.");
    assert_eq!(resp.reasoning_tokens, 32);
    assert_eq!(resp.output_tokens, 40);
    assert_eq!(resp.thinking, "First, the plan.\n\nLocal thoughts.");
    // Only the item that can be sent back with nothing stored.
    assert_eq!(
        resp.reasoning,
        vec![reasoning_item("rs_1", "First, the plan.")]
    );
}

#[test]
fn responses_sends_an_assistant_turns_reasoning_first_as_it_came() {
    let item = reasoning_item("rs_9", "Why.");
    let req = Request {
        messages: vec![
            Message::user("hello"),
            Message::Assistant {
                content: "Hi.".into(),
                tool_calls: vec![],
                reasoning: vec![item.clone()],
            },
            Message::user("again"),
        ],
        ..hello()
    };
    let body = sent_body(Wire::Responses, &req);
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": "hello"},
            item,
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": "again"}
        ])
    );
}
