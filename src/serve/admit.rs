//! What a request meets before it is handed to a worker (design §12.1,
//! §12.4): `/healthz` answered; the token checked, or, where none is
//! required, the cross-site checks (`auth.rs`); each refusal answered at
//! once, on the thread that took the request, without waiting on the
//! client (`conn::answer_now`), and logged.

use std::time::Instant;

use serde_json::json;
use tiny_http::Request;

use super::reply::ApiError;
use super::{Served, Shared, access, auth, conn, json_response};

/// `rq` back unless it is `/healthz`, answered here, or is refused here:
/// without the token (401), or, where no token is required, from a web
/// page (403, 415).
pub fn admit(rq: Request, shared: &Shared, started: Instant) -> Option<Request> {
    let (method, path) = (rq.method().to_string(), rq.url().to_string());
    let refused = |rq, e: &ApiError, extra: &[(&str, String)]| {
        let status = answer_now(rq, shared, e, extra);
        access(shared, &method, &path, &Served::only(status), started);
        None
    };
    if path == "/healthz" {
        let ok = json_response(200, &json!({"status": "ok"}), &[]);
        conn::answer_now(rq, ok, shared.port);
        access(shared, &method, &path, &Served::only(200), started);
        return None;
    }
    let Some(token) = shared.settings.token.as_deref() else {
        return match auth::cross_site(rq.method(), rq.headers()) {
            Some(e) => refused(rq, &e, &[]),
            None => Some(rq),
        };
    };
    let given = rq
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .map(|h| h.value.as_str());
    if auth::allowed(Some(token), given) {
        return Some(rq);
    }
    let e = ApiError::new(
        401,
        "invalid_request_error",
        "invalid_api_key",
        "a valid bearer token is required",
    );
    refused(rq, &e, &[("www-authenticate", "Bearer".into())])
}

/// Answers `rq` with `e`, its body unread, from a thread every client
/// shares: never waiting on the client (`conn::answer_now`). The status.
pub fn answer_now(rq: Request, shared: &Shared, e: &ApiError, extra: &[(&str, String)]) -> u16 {
    let headers = e.headers(extra);
    conn::answer_now(
        rq,
        json_response(e.status, &e.body(), &headers),
        shared.port,
    );
    e.status
}
