//! 2xx bodies that cannot be used, and bodies too large to read.

use super::*;

#[test]
fn fault_malformed_json_200_is_an_invalid_response_exit_3_or_an_error_result() {
    // A Python repr where JSON was due.
    fault_matrix("malformed JSON 200", |_| {
        invalid(
            Reply::Json(200, "{'type': 'message', 'content': []}".into()),
            "key must be a string at line 1 column 2",
            true,
        )
    });
}

#[test]
fn fault_truncated_json_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("truncated JSON 200", |p| {
        let full = p.text("a complete answer");
        invalid(
            Reply::Json(200, full[..full.len() / 2].to_string()),
            "truncated JSON (EOF while parsing",
            false,
        )
    });
}

#[test]
fn fault_html_page_with_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("HTML 200", |_| {
        invalid(
            html(200, LOGIN_PAGE),
            "got an HTML page instead of JSON",
            true,
        )
    });
}

#[test]
fn fault_html_page_with_502_is_a_server_error_naming_the_page_title_exit_3_or_an_error_result() {
    fault_matrix("HTML 502", |_| Fault {
        replies: vec![html(502, NGINX_502)],
        requests: ALL_ATTEMPTS,
        expect: Expect::Exact {
            code: 3,
            text: "server error (HTTP 502): HTML error page: 502 Bad Gateway".into(),
        },
    });
}

#[test]
fn fault_empty_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("empty 200", |_| {
        invalid(Reply::Json(200, String::new()), "empty body", true)
    });
}

#[test]
fn fault_200_missing_the_required_fields_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("200 missing fields", |p| {
        let (body, field) = match p {
            P::Anthropic => (
                include_str!("../../../fixtures/responses/anthropic_missing_content.json"),
                "content",
            ),
            P::OpenAi => (
                include_str!("../../../fixtures/responses/openai_missing_choices.json"),
                "choices",
            ),
            P::Ollama => (
                include_str!("../../../fixtures/responses/ollama_missing_message.json"),
                "message",
            ),
            P::Responses => unreachable!("runs on PROVIDERS"),
        };
        invalid(
            Reply::Json(200, body.into()),
            &format!("missing field `{field}`"),
            false,
        )
    });
}

#[test]
fn fault_body_over_32_mib_is_refused_without_reading_it_whole_exit_3_or_an_error_result() {
    // 64 MiB whose end is a valid answer: read whole, it would be accepted.
    fault_matrix("body over 32 MiB", |p| {
        invalid(
            Reply::Huge {
                bytes: 64 << 20,
                tail: p.text("read all 64 MiB"),
            },
            "body larger than 32 MiB",
            true,
        )
    });
}

// ---------------------------------------------------------------------------
// Tool calls the model gets wrong.
// ---------------------------------------------------------------------------
