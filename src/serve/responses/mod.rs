//! `POST /v1/responses` (design §12.6): OpenAI's Responses API over the
//! same run as a chat completion. This file owns the route: the body read
//! as chat's is, the request read (`request.rs`), the run watched and
//! answered (`run.rs`) as a `response` (`object.rs`), whole or as events
//! (`stream.rs`).

mod object;
mod request;
mod run;
mod stream;

use std::time::Instant;

use tiny_http::Request;

use super::{Served, Shared, conn, handle};
use crate::deadline::Cancel;

/// Answers `rq`, a POST to `/v1/responses` taken by a worker at `started`.
pub fn answer(mut rq: Request, shared: &Shared, started: Instant) -> Served {
    // The socket, to stop reading a body refused and to notice the client
    // leave.
    let sock = rq
        .remote_addr()
        .copied()
        .and_then(|peer| conn::socket(shared.port, peer));
    let body = match handle::body(&mut rq, shared.settings.max_body, sock.as_ref()) {
        Ok(b) => b,
        Err(e) => {
            let closed = [("connection", "close".into())];
            return Served::only(super::respond_error(rq, &e, &closed));
        }
    };
    let ask = match request::parse(
        &body,
        shared.settings.system_messages,
        shared.settings.ignore_client_tools,
    ) {
        Ok(a) => a,
        Err(e) => return Served::only(super::respond_error(rq, &e, &[])),
    };
    drop(body);
    let cancel = Cancel::default();
    let _stoppable = shared.running(&cancel);
    let _watched = sock.map(|s| conn::watch(s, cancel.clone()));
    run::run(rq, &ask, shared, started, &cancel)
}
