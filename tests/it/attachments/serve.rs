//! `axe serve`'s image parts (design §12.2, §4.16): a `data:` URL in a
//! chat message's `image_url` part, sent by the official `openai` client,
//! and in the Responses endpoint's `input_image`, reaches the agent's
//! first message as an image; a remote URL, a PDF in an image part and an
//! image in an assistant's turn are refused with a 400, nothing run.

use super::*;
use crate::serve::{Server, client, post, python};

fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home
}

/// The user message the fake was sent, its content parts.
fn sent_parts(fake: &FakeServer) -> Value {
    fake.only_request().messages()[1]["content"].clone()
}

#[test]
fn the_official_client_sends_an_image_part_that_reaches_the_model() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("a tiny PNG", 3, 2));
    let server = Server::start(&home, &fake, &[]);
    let v = client(&py, &server, "any", "image", "helper");
    assert_eq!(v["content"], "a tiny PNG", "{v}\n{}", server.log());
    assert_eq!(
        sent_parts(&fake),
        json!([
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
        ])
    );
}

#[test]
fn the_responses_endpoint_takes_an_input_image() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("seen", 3, 2));
    let server = Server::start(&home, &fake, &[]);
    let body = json!({"model": "helper", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": format!("data:image/jpeg;base64,{JPEG_B64}")},
    ]}]});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        sent_parts(&fake)[1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{JPEG_B64}")}})
    );
}

#[test]
fn a_remote_url_a_pdf_or_an_assistants_image_is_refused_with_a_400() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("no", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let part = |url: &str| json!({"type": "image_url", "image_url": {"url": url}});
    let pdf = format!("data:image/png;base64,{PDF_B64}");
    let user = |p: Value| json!([{"role": "user", "content": [p]}]);
    for (messages, says) in [
        (user(part("https://example.com/a.png")), "fetches no URL"),
        (user(part(&pdf)), "must hold a PNG, JPEG, GIF or WebP image"),
        (user(part("data:image/png;base64,@@@@")), "not valid base64"),
        (
            json!([
                {"role": "assistant", "content": [part(&format!("data:image/png;base64,{PNG_B64}"))]},
                {"role": "user", "content": "and?"},
            ]),
            "only text content parts",
        ),
    ] {
        let body = json!({"model": "helper", "messages": messages});
        let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
    }
    assert!(fake.requests().is_empty(), "nothing ran");
}
