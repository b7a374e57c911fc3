//! What the provider said of its answer on the chat span (design §7.9):
//! `gen_ai.response.id` and `gen_ai.response.model` from every wire that
//! sends them, whole and streamed (Ollama's answers have no id; Bedrock's
//! Converse answers carry neither).

use std::time::Duration;

use super::*;

/// Each wire's chat span, whole and streamed: the id and the model the
/// fake's answer carries (the model a dated one, not the name asked for).
#[test]
fn the_chat_span_carries_the_response_id_and_model_on_every_wire() {
    let Some(rx) = Receiver::start("ok") else {
        return;
    };
    for p in WIRES {
        for stream in [false, true] {
            let reply = if stream {
                p.streamed(&p.stream_text(&["the ", "answer"], 5, 2))
            } else {
                Reply::Json(200, p.text("the answer"))
            };
            let server = FakeServer::start(vec![reply]);
            let home = Home::new();
            home.named_agent(
                "solo",
                p.model(),
                if stream { "stream = true\n" } else { "" },
            );
            let before = rx.lines().len();
            let out = run_bounded(
                home.axe_on(&[(p, &server)])
                    .env("OTEL_EXPORTER_OTLP_ENDPOINT", &rx.url)
                    .args(["run", "solo", "-p", "hi"]),
                Duration::from_secs(60),
            );
            assert_eq!(code(&out.output), 0, "{p:?}: {}", stderr(&out.output));
            assert_eq!(stdout(&out.output), "the answer\n", "{p:?}");
            let spans = rx.lines().split_off(before);
            let chat = spans
                .iter()
                .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with("chat ")))
                .unwrap_or_else(|| panic!("{p:?} {stream}: no chat span in {spans:#?}"));
            let a = &chat["attrs"];
            let (id, model) = match (p, stream) {
                (P::OpenAi, false) => (Some("chatcmpl-123"), "gpt-4o-2024-08-06"),
                (P::OpenAi, true) => (Some("chatcmpl-abc123"), "gpt-4o-2024-08-06"),
                (P::Anthropic, false) => {
                    (Some("msg_01XFDUDYJgAACzvnptvVoYEL"), "claude-sonnet-4-5")
                }
                (P::Anthropic, true) => (Some("msg_01Aq9w938a90dw8q"), "claude-sonnet-4-5"),
                (P::Ollama, _) => (None, "llama3.1"),
                (P::Responses, _) => (Some("resp_68af0001"), "o3-pro-2025-06-10"),
            };
            assert_eq!(a["gen_ai.response.id"].as_str(), id, "{p:?} {stream}: {a}");
            assert_eq!(a["gen_ai.response.model"], model, "{p:?} {stream}: {a}");
        }
    }
}
