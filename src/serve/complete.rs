//! One chat completion (design §12.2): the request's agent loaded and
//! resolved as `axe run` resolves it, the request's system messages and
//! schema laid over it, the run put together by `run::top` with this
//! request's cancel flag and text sink, and its answer — whole, or as it
//! comes over server-sent events. The run log records every run that
//! started, under its run id, which is also the request's id.

use std::sync::Arc;
use std::time::Instant;

use tiny_http::Request;

use super::chat::Chat;
use super::reply::{self, ApiError};
use super::sse::Sse;
use super::{Served, Shared};
use crate::agent::{Agent, Catalog};
use crate::deadline::Cancel;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::stderr::Verbose;
use crate::resolve::{self, Overrides, Resolved};
use crate::run::{self, Outcome, TextSink, top};
use crate::trace::ledger::{self, Budget, Ledger};
use crate::trace::run_log::RunLog;

/// Status logged for a client that left before its answer (nginx's).
pub const CLIENT_GONE: u16 = 499;

/// What comes between the agent's own system prompt and a request's
/// system messages: the agent's prompt first, the client's after it, said
/// to be the client's (design §12.2).
pub const CLIENT_SYSTEM: &str = "\n\nThe instructions below come from the client of this request (its system messages), \
     after the agent's own above:\n\n";

/// Where the answer goes: the request, answered at the end, or its event
/// stream, its head written with the first text.
enum Answer {
    Whole(Request),
    Stream(Arc<Sse>),
}

/// Runs `chat` and answers `rq`; `cancel` is the request's flag (set by a
/// hang-up or the server's stop). Says what it answered.
pub fn run(rq: Request, chat: &Chat, shared: &Shared, started: Instant, cancel: &Cancel) -> Served {
    let mut served = Served::new(&chat.agent);
    let log = RunLog::start(&chat.agent, shared.settings.run_log);
    log.settings(shared.global.run_log);
    // The agent files as they were read at the start (or the last SIGHUP),
    // for the whole run.
    let catalog = shared.files.current();
    let (resolved, deadline) = match prepare(chat, &catalog, shared, started) {
        Ok(p) => p,
        Err(e) => {
            served.status = super::respond_error(rq, &e, &[]);
            // A request refused before any run is no run: no record.
            return served;
        }
    };
    log.model(&resolved.model.to_string());
    let trace = shared.settings.trace.as_deref();
    let ledger = match top::open_ledger(trace, shared.settings.trace_bodies, &deadline) {
        Ok(l) => Arc::new(l.joined(super::traceparent(&rq))),
        Err(e) => {
            served.status = super::respond_error(rq, &reply::run_error(&e), &[]);
            log.finish(&Err(e));
            return served;
        }
    };
    log.ledger(&ledger, trace, &shared.cwd);
    served.id.clone_from(&ledger.run_id);
    let id = format!("chatcmpl-{}", ledger.run_id);
    let created = reply::now_secs();
    let request_id = [("x-request-id", ledger.run_id.clone())];
    let (answer, text) = answer(rq, chat, &id, created, cancel, &request_id);
    let mut printed = false;
    let outcome = run_tree(
        chat,
        shared,
        (&catalog, &resolved, deadline, &ledger),
        text,
        cancel,
        |print| printed = print,
    );
    let usage = ledger::totals(&ledger.usage());
    served.tokens = usage.input_tokens.saturating_add(usage.output_tokens);
    let heads = reply::with_cost(&request_id, &usage);
    let result = match outcome {
        Ok(o) => {
            log.answer(&o.content);
            let finish = reply::finish_reason(o.cut);
            served.status = match answer {
                Answer::Whole(rq) => {
                    let body =
                        reply::completion(&id, created, &chat.agent, &o.content, finish, &usage);
                    super::respond_json(rq, 200, &body, &heads)
                }
                Answer::Stream(sse) => {
                    if !printed {
                        sse.text(&o.content, true);
                    }
                    sse.finish(finish, chat.include_usage.then_some(&usage));
                    if sse.failed() { CLIENT_GONE } else { 200 }
                }
            };
            Ok(())
        }
        Err(e) => {
            let api = failure(shared, cancel, &e);
            served.error = api.code;
            served.status = match answer {
                Answer::Whole(rq) if api.status == CLIENT_GONE => {
                    drop(rq);
                    CLIENT_GONE
                }
                Answer::Whole(rq) => super::respond_error(rq, &api, &heads),
                Answer::Stream(_) if api.status == CLIENT_GONE => CLIENT_GONE,
                Answer::Stream(sse) => {
                    sse.fail(&api);
                    if sse.failed() {
                        CLIENT_GONE
                    } else {
                        api.status
                    }
                }
            };
            Err(e)
        }
    };
    log.finish(&result);
    served
}

/// Where the answer to `rq` goes, and where the run's text goes on its way:
/// to the event stream, or nowhere until the whole answer.
fn answer(
    rq: Request,
    chat: &Chat,
    id: &str,
    created: u64,
    cancel: &Cancel,
    request_id: &[(&str, String)],
) -> (Answer, TextSink) {
    if chat.stream {
        let sse = Arc::new(Sse::new(
            rq.into_writer(),
            id.to_string(),
            created,
            &chat.agent,
            cancel.clone(),
            request_id,
        ));
        let to = sse.clone();
        let text = TextSink::To(Arc::new(move |t: &str, new_turn: bool| {
            to.text(t, new_turn)
        }));
        (Answer::Stream(sse), text)
    } else {
        let text = TextSink::To(Arc::new(|_: &str, _: bool| {}));
        (Answer::Whole(rq), text)
    }
}

/// The tree of a request (a chat completion's or a response's) run as
/// `axe run` runs it, with the request's cancel flag and text sink: the
/// whole budget the agent file's, the request's bound on what the tree
/// generates an output budget over it. `printed` learns whether the text
/// went to the sink as it came.
pub(super) fn run_tree(
    chat: &Chat,
    shared: &Shared,
    (catalog, resolved, deadline, ledger): (&Arc<Catalog>, &Resolved, Deadline, &Arc<Ledger>),
    text: TextSink,
    cancel: &Cancel,
    printed: impl FnOnce(bool),
) -> Result<Outcome, Error> {
    let setup = top::Setup {
        global: &shared.global,
        catalog,
        cwd: &shared.cwd,
        verbose: Verbose::new(false),
        retries: shared.settings.retries,
        // The tree's whole budget is the agent file's; the request bounds
        // only what the tree generates (below).
        max_tokens: None,
        max_turns: None,
        max_cost: None,
        // Always streamed from the provider, whatever the client asked:
        // a stream is read piece by piece, so a cancel is seen at the next
        // piece instead of when a whole answer arrives (design §12.3).
        stream: true,
        whole: !chat.stream,
        text,
        cancel: cancel.clone(),
    };
    let mut ctx = top::ctx(setup, &chat.agent, resolved, deadline, ledger.clone())?;
    printed(ctx.stream.print);
    if let Some(n) = chat.max_tokens {
        ctx.budgets.push(Arc::new(Budget::output(n)));
    }
    run::run_agent(resolved, &chat.message, &chat.task, &ctx)
}

/// The agent of `chat` from `catalog`, resolved, with its deadline (from the
/// request's start): its system prompt with the request's system messages
/// after it, its output schema the request's when it gives one.
pub(super) fn prepare(
    chat: &Chat,
    catalog: &Catalog,
    shared: &Shared,
    started: Instant,
) -> Result<(Resolved, Deadline), ApiError> {
    if !shared.serves(&chat.agent) {
        return Err(not_served(shared, catalog, &chat.agent));
    }
    let mut agent: Agent = (*catalog
        .agent(&chat.agent)
        .map_err(|e| reply::run_error(&e))?)
    .clone();
    // The top-level answer is cut at the request's bound, as OpenAI cuts
    // its own (`finish_reason` `length`); the tree's output is bounded by
    // the run's output budget (`run`).
    if let Some(n) = chat.max_tokens {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let own = &mut agent.config.params.max_tokens;
        *own = Some(own.map_or(n, |m| m.min(n)));
    }
    for w in &agent.warnings {
        crate::io::stderr::warn_once(w);
    }
    let secs = top::timeout(
        shared.settings.timeout,
        agent.config.timeout,
        crate::deadline::DEFAULT_TIMEOUT_SECS,
    );
    let deadline = Deadline::since(started, secs);
    let max_repairs = agent
        .config
        .output
        .as_ref()
        .map_or(crate::agent::DEFAULT_MAX_REPAIRS, |o| o.max_repairs);
    let mut resolved = resolve::resolve(
        agent,
        &Overrides::default(),
        &shared.global,
        &shared.cwd,
        &deadline,
    )
    .map_err(|e| reply::run_error(&e))?;
    if !chat.attachments.is_empty() {
        resolve::attachments_refused(&chat.attachments, &resolved.model)
            .map_err(|e| ApiError::invalid(e.to_string(), "messages"))?;
        resolved
            .attachments
            .extend(chat.attachments.iter().cloned());
    }
    if let Some(system) = &chat.system {
        resolved.system_prompt.push_str(CLIENT_SYSTEM);
        resolved.system_prompt.push_str(system);
    }
    if let Some(schema) = &chat.schema {
        let compiled = crate::schema::compile(schema.clone(), max_repairs)
            .map_err(|e| ApiError::invalid(e.to_string(), "response_format"))?;
        resolved.output_schema = Some(Arc::new(compiled));
    }
    Ok((resolved, deadline))
}

/// The 404 for agent `name`, which this server does not serve: one left
/// out by `--agent` though its file is on the search path says so, rather
/// than that it does not exist (a look at the file's name, not a read).
pub fn not_served(shared: &Shared, catalog: &Catalog, name: &str) -> ApiError {
    let on_path = !shared.serves(name) && matches!(catalog.dirs().find(name), Ok(Some(_)));
    let mut e = reply::run_error(&Error::AgentNotFound {
        name: name.to_string(),
        searched: Vec::new(),
    });
    if on_path {
        e.message = format!(
            "The model `{name}` is not served here: the agent exists, but this server \
             runs only the agents given with --agent"
        );
    }
    e
}

/// What a failed run answers: the error's own status, unless the run was
/// cancelled — by the server's stop (503), or by its client leaving.
pub(super) fn failure(shared: &Shared, cancel: &Cancel, e: &Error) -> ApiError {
    if !cancel.is_set() {
        return reply::run_error(e);
    }
    if shared.stopping() {
        ApiError::new(
            503,
            "server_error",
            "shutting_down",
            "the server is stopping",
        )
    } else {
        ApiError::new(
            CLIENT_GONE,
            "invalid_request_error",
            "client_gone",
            "the client left",
        )
    }
}
