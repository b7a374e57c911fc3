//! One response's run (design §12.6): set up as a chat completion's is
//! (`complete::prepare`: the agent resolved, the client's instructions
//! after its prompt, `text.format` as its schema; the same ledger, run
//! log and cancel), answered as a `response` — whole, or as the Responses
//! API's events.

use std::sync::Arc;
use std::time::Instant;

use tiny_http::Request;

use super::object::{self, End, Meta};
use super::request::Ask;
use super::stream::Events;
use crate::deadline::Cancel;
use crate::error::Error;
use crate::run::{TextSink, top};
use crate::serve::complete::{self, CLIENT_GONE};
use crate::serve::reply;
use crate::serve::{Served, Shared};
use crate::trace::ledger;
use crate::trace::run_log::RunLog;

/// Runs `ask` and answers `rq`; `cancel` is the request's flag (set by a
/// hang-up or the server's stop). Says what it answered.
pub fn run(rq: Request, ask: &Ask, shared: &Shared, started: Instant, cancel: &Cancel) -> Served {
    let chat = &ask.chat;
    let mut served = Served::new(&chat.agent);
    let log = RunLog::start(&chat.agent, shared.settings.run_log);
    log.settings(shared.global.run_log);
    let catalog = shared.files.current();
    let (resolved, deadline) = match complete::prepare(chat, &catalog, shared, started) {
        Ok(p) => p,
        Err(mut e) => {
            if e.param.as_deref() == Some("response_format") {
                e.param = Some("text.format".into());
            }
            served.status = super::super::respond_error(rq, &e, &[]);
            return served;
        }
    };
    log.model(&resolved.model.to_string());
    let trace = shared.settings.trace.as_deref();
    let ledger = match top::open_ledger(trace, shared.settings.trace_bodies, &deadline) {
        Ok(l) => Arc::new(l.joined(super::super::traceparent(&rq))),
        Err(e) => {
            served.status = super::super::respond_error(rq, &reply::run_error(&e), &[]);
            log.finish(&Err(e));
            return served;
        }
    };
    log.ledger(&ledger, trace, &shared.cwd);
    served.id.clone_from(&ledger.run_id);
    let meta = Meta::new(ask, &ledger.run_id, reply::now_secs());
    let request_id = [("x-request-id", ledger.run_id.clone())];
    let (answer, text) = answer(rq, chat.stream, meta, cancel, &request_id);
    let outcome = complete::run_tree(
        chat,
        shared,
        (&catalog, &resolved, deadline, &ledger),
        text,
        cancel,
        |_| {},
    );
    let usage = ledger::totals(&ledger.usage());
    served.tokens = usage.input_tokens.saturating_add(usage.output_tokens);
    let heads = reply::with_cost(&request_id, &usage);
    let result = match outcome {
        Ok(o) => {
            log.answer(&o.content);
            let end = End::Done(&usage, o.cut);
            served.status = match answer {
                Answer::Whole(whole) => {
                    let (rq, meta) = *whole;
                    let status = object::status(o.cut);
                    let item = meta.message(status, Some(&o.content));
                    let body = meta.response(status, vec![item], &end);
                    super::super::respond_json(rq, 200, &body, &heads)
                }
                Answer::Stream(events) if events.finish(&o.content, &end) => 200,
                Answer::Stream(_) => CLIENT_GONE,
            };
            Ok(())
        }
        Err(e) => {
            served.status = failed(answer, shared, cancel, &e, &usage, &heads);
            Err(e)
        }
    };
    log.finish(&result);
    served
}

/// Where the answer goes: the request, answered at the end, or its event
/// stream (whose head waits for the first text).
enum Answer {
    Whole(Box<(Request, Meta)>),
    Stream(Arc<Events>),
}

/// Where the answer to `rq` goes, and where the run's text goes on its way.
fn answer(
    rq: Request,
    stream: bool,
    meta: Meta,
    cancel: &Cancel,
    request_id: &[(&'static str, String)],
) -> (Answer, TextSink) {
    if stream {
        let events = Arc::new(Events::new(rq, meta, cancel.clone(), request_id));
        let to = events.clone();
        let text = TextSink::To(Arc::new(move |t: &str, new_turn: bool| {
            to.text(t, new_turn)
        }));
        (Answer::Stream(events), text)
    } else {
        let text = TextSink::To(Arc::new(|_: &str, _: bool| {}));
        (Answer::Whole(Box::new((rq, meta))), text)
    }
}

/// Answers a run that failed with `e`: its status and a JSON error while
/// nothing was written, else the stream's `error` and `response.failed`.
/// The status logged.
fn failed(
    answer: Answer,
    shared: &Shared,
    cancel: &Cancel,
    e: &Error,
    usage: &ledger::Totals,
    request_id: &[(&str, String)],
) -> u16 {
    let api = complete::failure(shared, cancel, e);
    let (rq, events) = match answer {
        Answer::Whole(whole) => (Some(whole.0), None),
        Answer::Stream(events) => (events.unstarted(), Some(events)),
    };
    match (rq, events) {
        (Some(rq), _) if api.status == CLIENT_GONE => {
            drop(rq);
            CLIENT_GONE
        }
        (Some(rq), _) => super::super::respond_error(rq, &api, request_id),
        (None, Some(events)) => {
            let message = crate::text::redact::redact(&api.message);
            if events.fail(&api, &End::Failed(usage, &message)) {
                api.status
            } else {
                CLIENT_GONE
            }
        }
        (None, None) => CLIENT_GONE,
    }
}
