//! Status codes, slow and silent servers, bodies cut off: retried or not, and what each run shows.

use super::*;

#[test]
fn fault_429_then_success_is_retried_once_and_answers_at_top_level_and_in_a_sub_agent() {
    fault_matrix("429 then success", |p| Fault {
        replies: vec![
            Reply::Json(429, api_error(p, 429).0),
            Reply::Json(200, p.text("recovered")),
        ],
        requests: 2,
        expect: Expect::Answer("recovered"),
    });
}

#[test]
fn fault_429_three_times_exits_3_at_top_level_and_is_an_error_result_in_a_sub_agent() {
    fault_matrix("429 x3", |p| status_fault(p, 429));
}

// ---------------------------------------------------------------------------
// Server errors and overload: retried, then exit 3.
// ---------------------------------------------------------------------------

#[test]
fn fault_500_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("500", |p| status_fault(p, 500));
}

#[test]
fn fault_502_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("502", |p| status_fault(p, 502));
}

#[test]
fn fault_503_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("503", |p| status_fault(p, 503));
}

#[test]
fn fault_529_is_overloaded_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("529", |p| status_fault(p, 529));
}

// ---------------------------------------------------------------------------
// Client errors: never retried.
// ---------------------------------------------------------------------------

#[test]
fn fault_401_is_an_authentication_failure_sent_once_exit_3_or_an_error_result() {
    fault_matrix("401", |p| status_fault(p, 401));
}

#[test]
fn fault_403_is_an_authentication_failure_sent_once_exit_3_or_an_error_result() {
    fault_matrix("403", |p| status_fault(p, 403));
}

#[test]
fn fault_400_is_a_bad_request_with_the_providers_message_exit_1_or_an_error_result() {
    fault_matrix("400", |p| status_fault(p, 400));
}

#[test]
fn fault_404_model_not_found_exits_1_or_is_an_error_result() {
    fault_matrix("404", |p| status_fault(p, 404));
}

// ---------------------------------------------------------------------------
// Deadlines.
// ---------------------------------------------------------------------------

#[test]
fn fault_answer_slower_than_the_deadline_times_out_exit_3_or_the_exact_timeout_result() {
    fault_matrix("slow answer", |p| Fault {
        replies: vec![Reply::Delay(
            Duration::from_secs(20),
            Box::new(Reply::Json(200, p.text("too late"))),
        )],
        requests: 1,
        expect: Expect::Timeout,
    });
}

#[test]
fn fault_server_that_never_answers_times_out_exit_3_or_the_exact_timeout_result() {
    fault_matrix("hang", |_| Fault {
        replies: vec![Reply::Hang],
        requests: 1,
        expect: Expect::Timeout,
    });
}

// ---------------------------------------------------------------------------
// Broken or unusable bodies.
// ---------------------------------------------------------------------------

#[test]
fn fault_connection_closed_mid_body_is_a_network_error_not_retried_exit_3_or_an_error_result() {
    // docs/guide/providers.md, Retries: only a connection closed *before any response* is
    // retried; this one closed after the head and half the body.
    fault_matrix("closed mid-body", |p| {
        let full = p.text("a complete answer that never arrives");
        Fault {
            replies: vec![Reply::CloseMidBody {
                status: 200,
                partial_body: full[..full.len() / 2].to_string(),
            }],
            requests: 1,
            expect: Expect::Prefix {
                code: 3,
                text: "network error: ".into(),
            },
        }
    });
}

/// The status line of a 5xx arrived; then its error body could not be read
/// (cut off here, too large below). Retries (docs/guide/providers.md) and D12 retry 500,
/// 502, 503, 504 whatever their bodies say, and D13's `invalid response` is
/// for 2xx bodies. axe reads the body before it looks at the status
/// (`read_body(..).map_err(|e| Attempt::failed(..))?` in
/// `Provider::attempt`), so the status is lost: one request, and
/// `axe: <provider>: network error: io: Peer disconnected (<url>)`.
#[test]
fn fault_503_cut_off_mid_body_is_still_a_server_error_and_retried() {
    fault_matrix("503 closed mid-body", |p| {
        let (body, _) = api_error(p, 503);
        Fault {
            replies: vec![Reply::CloseMidBody {
                status: 503,
                partial_body: body[..body.len() / 2].to_string(),
            }],
            requests: ALL_ATTEMPTS,
            expect: Expect::Prefix {
                code: 3,
                text: "server error (HTTP 503)".into(),
            },
        }
    });
}

/// As above, for an error body over the 32 MiB limit: today
/// `invalid response: body larger than 32 MiB` (a 2xx's wording) and no
/// retry; the 500 should be retried, and the retry here succeeds.
#[test]
fn fault_500_with_a_body_over_32_mib_is_still_a_server_error_and_retried() {
    fault_matrix("500 with a body over 32 MiB", |p| {
        let (body, _) = api_error(p, 500);
        let padded = format!("{}{body}", " ".repeat(33 << 20));
        Fault {
            replies: vec![
                Reply::Json(500, padded),
                Reply::Json(200, p.text("recovered")),
            ],
            requests: 2,
            expect: Expect::Answer("recovered"),
        }
    });
}
