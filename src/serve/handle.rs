//! One request on a worker (design §12.2): the route, the body read
//! within its bounds, and the answer — the model list, a chat completion
//! (`complete.rs`), or an error in OpenAI's shape.

use std::io::Read;
use std::time::Instant;

use tiny_http::{Method, Request};

use super::reply::{self, ApiError};
use super::{Served, Shared, chat, complete, conn};
use crate::deadline::Cancel;

/// Answers `rq`, taken by a worker at `started`.
pub fn request(mut rq: Request, shared: &Shared, started: Instant) -> Served {
    let path = rq.url().split('?').next().unwrap_or("").to_string();
    // Every route but the chat's leaves a body unread.
    let unread = || -> Vec<_> { conn::leave_body(&rq, shared.port).into_iter().collect() };
    match (rq.method(), path.as_str()) {
        (Method::Get, "/v1/models") => {
            let extra = unread();
            Served::only(match shared.agents() {
                Ok(agents) => {
                    let models = reply::models(&agents, reply::now_secs());
                    super::respond_json(rq, 200, &models, &extra)
                }
                Err(e) => super::respond_error(rq, &reply::run_error(&e), &extra),
            })
        }
        (Method::Get, p) if p.starts_with("/v1/models/") => {
            let extra = unread();
            let id = &p["/v1/models/".len()..];
            Served::only(match model(shared, id) {
                Ok(m) => super::respond_json(rq, 200, &m, &extra),
                Err(e) => super::respond_error(rq, &e, &extra),
            })
        }
        (Method::Post, "/v1/chat/completions") => {
            // The socket, to stop reading a body refused and to notice
            // the client leave.
            let sock = rq
                .remote_addr()
                .copied()
                .and_then(|peer| conn::socket(shared.port, peer));
            let body = match body(&mut rq, shared.settings.max_body, sock.as_ref()) {
                Ok(b) => b,
                Err(e) => {
                    let closed = [("connection", "close".into())];
                    return Served::only(super::respond_error(rq, &e, &closed));
                }
            };
            let settings = &shared.settings;
            let chat = match chat::parse(
                &body,
                settings.system_messages,
                settings.ignore_client_tools,
            ) {
                Ok(c) => c,
                Err(e) => return Served::only(super::respond_error(rq, &e, &[])),
            };
            drop(body);
            let cancel = Cancel::default();
            let _stoppable = shared.running(&cancel);
            let _watched = sock.map(|s| conn::watch(s, cancel.clone()));
            complete::run(rq, &chat, shared, started, &cancel)
        }
        (_, "/v1/models" | "/v1/chat/completions") => {
            let e = ApiError::new(
                405,
                "invalid_request_error",
                "method_not_allowed",
                "method not allowed",
            );
            let extra = unread();
            Served::only(super::respond_error(rq, &e, &extra))
        }
        _ => {
            let e = ApiError::new(404, "invalid_request_error", "not_found", no_route(&path));
            let extra = unread();
            Served::only(super::respond_error(rq, &e, &extra))
        }
    }
}

/// `GET /v1/models/{id}`: the agent `id` as OpenAI's Model object, or a
/// 404 in OpenAI's shape (an agent on the search path but not served says
/// so).
fn model(shared: &Shared, id: &str) -> Result<serde_json::Value, ApiError> {
    let agents = shared.agents().map_err(|e| reply::run_error(&e))?;
    if agents.iter().any(|a| a == id) {
        return Ok(reply::model(id, reply::now_secs()));
    }
    Err(super::complete::not_served(
        shared,
        &shared.files.current(),
        id,
    ))
}

/// The message of a 404: a known path without its `/v1` names the right
/// one (a client's base URL missing its `/v1`).
fn no_route(path: &str) -> String {
    let known = ["/chat/completions", "/models", "/responses"];
    if known.contains(&path) || path.starts_with("/models/") {
        format!(
            "no route {path}: the API is under /v1 (/v1{path}); a client's base URL ends in /v1"
        )
    } else {
        format!("no route {path}")
    }
}

/// The body, at most `max` bytes: a longer one is refused (413) as soon as
/// its length says so, or once `max` bytes were read, and the rest is not
/// read (`sock` stops reading). One cut off, or too slow for the socket's
/// read timeout, is 400 (408).
fn body(
    rq: &mut Request,
    max: usize,
    sock: Option<&std::os::fd::OwnedFd>,
) -> Result<Vec<u8>, ApiError> {
    let too_large = || {
        if let Some(s) = sock {
            conn::stop_reading(s);
        }
        ApiError::new(
            413,
            "invalid_request_error",
            "request_too_large",
            format!("the body is over the server's limit of {max} bytes"),
        )
    };
    let declared = rq.body_length();
    if declared.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(max));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    match rq.as_reader().take(limit).read_to_end(&mut buf) {
        Ok(_) if buf.len() > max => Err(too_large()),
        Ok(n) if declared.is_some_and(|d| d != n) => Err(ApiError::invalid(
            "the body was cut off before its length",
            None,
        )),
        Ok(_) => Ok(buf),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            if let Some(s) = sock {
                conn::stop_reading(s);
            }
            Err(ApiError::new(
                408,
                "invalid_request_error",
                "request_timeout",
                "the body came too slowly",
            ))
        }
        Err(e) => Err(ApiError::invalid(
            format!("the body could not be read: {e}"),
            None,
        )),
    }
}
