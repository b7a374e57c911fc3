//! The conversation loop (design §3.7): take a turn from the budgets, send,
//! count the response, then — by what came back — end with a refusal, send
//! a paused turn back, take the answer (checked against the output schema,
//! `repair.rs`), or run the calls and send their results. Each step is a
//! function of [`Conversation`]; [`Conversation::run`] reads as the design's
//! list. Every way out without an answer leaves one `error` event in the
//! trace, written in one place ([`Conversation::fail`]).
//!
//! A sub-agent's thread waits on the network in [`Conversation::send`],
//! with the frames above it on its stack: the steps that do not wait
//! (`next` and what it calls, `notice`, `fail`) are kept out of line, so
//! that their locals do not sit in every waiting thread's frame (design
//! §3.15).

use std::cell::Cell;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::dispatch;
use super::repair::{self, Shaped};
use super::{Ctx, MAX_TURNS, Outcome};
use crate::cost::Cost;
use crate::error::Error;
use crate::io::stderr;
use crate::provider::{
    Change, ErrorKind, Message, Notice, Provider, Request, Response, ToolCall, ToolResult, adjust,
};
use crate::schema::OutputSchema;
use crate::trace::event::{FailedRequest, Resend, TraceEvent};
use crate::trace::ledger::{self, Totals};

/// Runs the tool calls made in turn `turn` and returns one result per call,
/// in call order.
pub type ToolRunner<'a> = dyn Fn(u32, &[ToolCall]) -> Vec<ToolResult> + 'a;

/// One conversation under way: what it sends, and what it has so far.
struct Conversation<'a> {
    provider: &'a Provider,
    ctx: &'a Ctx<'a>,
    /// Runs a response's calls; without, the first answer is the answer.
    tools: Option<&'a ToolRunner<'a>>,
    /// The schema the answer must match.
    output: Option<&'a OutputSchema>,
    /// The next request: the history so far.
    req: Request,
    /// Counts so far; at the end, the answer too.
    out: Outcome,
    /// The text of a turn the server paused, until the turn ends (design §5.5).
    said: String,
    /// The answer as the model gave it, for the conversation kept (design
    /// §7.7): only at top level, and only when one is kept.
    answered: Option<Message>,
}

/// What a response leads to (design §3.7, steps 4 to 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Another request: a paused turn resumed, a repair asked for, or the
    /// calls' results sent back.
    Send,
    /// The answer: the conversation is over.
    Answer,
}

/// Why a conversation ended without an answer.
#[derive(Debug)]
struct Failure {
    error: Error,
    /// When a request failed: how long it took, retries included.
    request: Option<Duration>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            error,
            request: None,
        }
    }
}

/// Runs the conversation that starts with `req`. With `tools`, every
/// response that calls tools has them run and the results sent back, for at
/// most [`MAX_TURNS`] requests; without, the first answer is the answer
/// (and tool calls a model invents are not acted on). With `output`, a
/// final answer that does not match the schema is sent back with what is
/// wrong, at most `max_repairs` times (design D22). Every request is taken
/// from `ctx`'s budgets first, and reported to its tree.
pub fn converse(
    provider: &Provider,
    req: Request,
    ctx: &Ctx,
    tools: Option<&ToolRunner>,
    output: Option<&OutputSchema>,
) -> Result<Outcome, Error> {
    let started = Instant::now();
    let mut c = Conversation {
        provider,
        ctx,
        tools,
        output,
        req,
        out: Outcome::default(),
        said: String::new(),
        answered: None,
    };
    let result = c.run();
    c.keep();
    match result {
        Ok(()) => Ok(Outcome {
            duration: started.elapsed(),
            ..c.out
        }),
        Err(failure) => Err(c.fail(failure)),
    }
}

impl Conversation<'_> {
    /// The loop of design §3.7, until the answer or a failure.
    fn run(&mut self) -> Result<(), Failure> {
        loop {
            let turn = self.take_turn()?; // step 1
            let (response, cost) = self.send(turn)?; // step 2
            self.count(&response, cost); // step 3
            match self.next(turn, response)? {
                Next::Send => self.keep(),
                Next::Answer => return Ok(()),
            }
        }
    }

    /// The top-level run's history handed to its keeper, when it has one
    /// (design §7.7): after each turn, so that a run a signal ends keeps
    /// the turns it had, and at the end with the answer. Out of line, as
    /// the reports are.
    #[inline(never)]
    fn keep(&mut self) {
        if self.ctx.depth > 0 {
            return;
        }
        if let Some(kept) = &self.ctx.conversation {
            let wire = self.provider.wire.name();
            kept.sync(wire, &self.req.messages, self.answered.take());
        }
    }

    /// Step 1: a turn taken from every budget over the agent (design §7.5).
    /// Out of line, as the reports around a request are: inlined, their
    /// locals sit in the frame every sub-agent's thread holds while it
    /// waits on its answer (design §3.15).
    #[inline(never)]
    fn take_turn(&mut self) -> Result<u32, Failure> {
        self.out.turns += 1;
        let turn = self.out.turns;
        if self.ctx.cancel.is_set() {
            return Err(Error::general("the run was cancelled").into());
        }
        ledger::take_turn(&self.ctx.budgets).map_err(Error::Budget)?;
        self.ctx.ledger.record_turn(&self.ctx.place, turn);
        Ok(turn)
    }

    /// Whether `--verbose` shows this conversation's turns: when it may take
    /// more than one, and always for a sub-agent, whose lines are how a tree
    /// is seen running (one without tools, beside others, would otherwise run
    /// unseen); a top-level agent without tools keeps the Go original's
    /// silence (design §3.14).
    fn shows_turns(&self) -> bool {
        self.tools.is_some() || self.output.is_some() || self.ctx.depth > 0
    }

    /// Step 2: the request sent, with the time left; reported before and
    /// after, with every retry (design §6.1). Out of line, its response
    /// boxed: `run`'s frame, above it on every waiting thread's stack,
    /// then holds no response of its own (design §3.15).
    #[inline(never)]
    fn send(&mut self, turn: u32) -> Result<(Box<Response>, Cost), Failure> {
        self.sending(turn);
        // The chat span the trace's event opened names the request.
        self.req.traceparent = self.ctx.ledger.traceparent(&self.ctx.place);
        let (ctx, req) = (self.ctx, &self.req);
        let sent = Instant::now();
        let on_notice = |notice: &Notice| self.notice(turn, notice);
        // The top-level answer's text goes to its sink (stdout, or axe
        // serve's client) as it comes; a new turn's text starts on a line of
        // its own, a paused turn's goes on where it was (design §4.11).
        let new_line = Cell::new(!matches!(req.messages.last(), Some(Message::Paused(_))));
        let print = |text: &str| ctx.text.text(text, new_line.replace(false));
        let on_text: Option<&dyn Fn(&str)> = if ctx.stream.print { Some(&print) } else { None };
        // A provider's batch gave the first answer already (design §11.8).
        if let Some(seeded) = self.seeded(turn, sent) {
            return Ok(seeded);
        }
        let response = self
            .provider
            .send_with(req, ctx.deadline.at, &on_notice, on_text)
            .map_err(|mut e| {
                // An idle stream's own message says what happened.
                if e.kind == ErrorKind::Timeout && !e.idle {
                    e.message = format!("timeout after {}s", ctx.deadline.secs);
                }
                Failure {
                    error: Error::Provider(e),
                    request: Some(sent.elapsed()),
                }
            })?;
        let cost = self.received(turn, sent, &response, false);
        Ok((response, cost))
    }

    /// The first answer a provider's batch gave already (design §11.8),
    /// reported as a response is. Out of line, as `received` is.
    #[inline(never)]
    fn seeded(&self, turn: u32, sent: Instant) -> Option<(Box<Response>, Cost)> {
        let response = self.ctx.seed.as_ref().and_then(|s| s.take())?;
        let cost = self.received(turn, sent, &response, true);
        Some((Box::new(response), cost))
    }

    /// Step 2's reports before the request: `--verbose`'s line, the trace's
    /// event.
    #[inline(never)]
    fn sending(&self, turn: u32) {
        let (ctx, req) = (self.ctx, &self.req);
        if self.shows_turns() {
            let pending = match req.messages.last() {
                Some(Message::ToolResults(results)) => results.len(),
                _ => 0,
            };
            ctx.verbose.line(&format!(
                "[turn {turn}] Sending request ({} messages, {pending} tool calls pending)",
                req.messages.len()
            ));
        }
        let request = TraceEvent::Request {
            provider: self.provider,
            request: req,
        };
        ctx.ledger.event(&ctx.place, turn, request);
    }

    /// Step 2's reports of the response.
    #[inline(never)]
    fn received(&self, turn: u32, sent: Instant, response: &Response, batch: bool) -> Cost {
        let (ctx, req) = (self.ctx, &self.req);
        let price = self.provider.price.as_ref();
        let mut cost = match (price, response.cost_usd) {
            (None, Some(usd)) if self.provider.reports_cost => Cost::reported(usd),
            _ => Cost::of(price, &response.billed()),
        };
        if batch {
            cost = cost.at_batch_price(price);
        }
        let event = TraceEvent::Response {
            provider: &self.provider.name,
            model: &req.model,
            took: sent.elapsed(),
            response,
            cost,
        };
        ctx.ledger.event(&ctx.place, turn, event);
        if let Some(first) = response.first_token {
            ctx.verbose.line(&format!(
                "[turn {turn}] First token after {} ms",
                first.as_millis()
            ));
        }
        // The model's thinking, where the wire shows it: never the answer,
        // only here and in the trace's bodies (design §4.15).
        if !response.thinking.is_empty() {
            ctx.verbose
                .line(&format!("[turn {turn}] Thinking: {}", response.thinking));
        }
        if self.shows_turns() {
            ctx.verbose.line(&format!(
                "[turn {turn}] Received response: {} ({} tool calls{})",
                response.stop_reason,
                response.tool_calls.len(),
                response.cache_note()
            ));
        }
        cost
    }

    /// A request is sent again: a retry, or a parameter the model refused
    /// left out (told once per process; a changed field name is no news).
    #[inline(never)]
    fn notice(&self, turn: u32, notice: &Notice) {
        let name = self.provider.wire.name();
        let model = &self.req.model;
        let adjusted;
        let (line, resend) = match notice {
            Notice::Retry(r) => (
                format!(
                    "{name} {}, attempt {}/{} in {:.1}s",
                    r.what,
                    r.attempt,
                    r.of,
                    r.wait.as_secs_f64()
                ),
                Resend::Retry(r),
            ),
            Notice::Adjusted { change, first, why } => {
                adjusted = format!("{name}: model {model:?} {}", adjust::describe(*change, why));
                if *first && *change != Change::MaxCompletionTokens {
                    stderr::warn_once(&adjusted);
                }
                (adjusted.clone(), Resend::Adjusted(&adjusted))
            }
        };
        self.ctx.verbose.line(&format!("[retry] {line}"));
        let retry = TraceEvent::Retry {
            provider: &self.provider.name,
            model,
            resend,
        };
        self.ctx.ledger.event(&self.ctx.place, turn, retry);
    }

    /// Step 3: the response's tokens added to the agent's totals, its
    /// tree's usage and every budget over it. Counts come from the server:
    /// sums saturate, never wrap.
    fn count(&mut self, r: &Response, cost: Cost) {
        let out = &mut self.out;
        out.input_tokens = out.input_tokens.saturating_add(r.input_tokens);
        out.output_tokens = out.output_tokens.saturating_add(r.output_tokens);
        out.reasoning_tokens = out.reasoning_tokens.saturating_add(r.reasoning_tokens);
        out.cache_read_input_tokens = out
            .cache_read_input_tokens
            .saturating_add(r.cache_read_tokens);
        out.cache_creation_input_tokens = out
            .cache_creation_input_tokens
            .saturating_add(r.cache_write_tokens);
        out.retry_attempts = out.retry_attempts.saturating_add(u64::from(r.retries));
        out.cost = out.cost.plus(cost);
        let (ctx, place) = (self.ctx, &self.ctx.place);
        let billed = Totals {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            reasoning_tokens: r.reasoning_tokens,
            cache_read_input_tokens: r.cache_read_tokens,
            cache_creation_input_tokens: r.cache_write_tokens,
            cost,
        };
        ctx.ledger.record_tokens(place, billed);
        ledger::spend_tokens(&ctx.budgets, r.input_tokens, r.output_tokens, cost.pico);
    }

    /// Steps 4 to 7: what the response of turn `turn` leads to.
    #[inline(never)]
    fn next(&mut self, turn: u32, response: Box<Response>) -> Result<Next, Failure> {
        let mut response = *response;
        // Step 4: a refusal ends the run (design §5.2); a paused turn goes
        // back as it came (design §5.5).
        if let Some(what) = response.declined {
            let provider = self.provider.name.clone();
            return Err(Error::Declined { provider, what }.into());
        }
        if let Some(blocks) = response.paused.take()
            && response.tool_calls.is_empty()
        {
            self.resume_paused(turn, blocks, response.content)?;
            return Ok(Next::Send);
        }
        // Step 5: no calls, or no tools to run them: the answer.
        let Some(tools) = self.tools.filter(|_| !response.tool_calls.is_empty()) else {
            return self.answer(response);
        };
        // Step 6: the last turn's calls would never be answered: none is run.
        if turn == MAX_TURNS {
            return Err(Error::TooManyTurns(MAX_TURNS).into());
        }
        // Step 7.
        self.run_calls(turn, tools, response);
        Ok(Next::Send)
    }

    /// A turn the server paused (Anthropic's `pause_turn`, a long
    /// server-side tool): its content goes back as it came, and the next
    /// request, a turn like any other, lets the model go on with it (design
    /// §5.5). Its text so far, `text`, is kept for the answer.
    fn resume_paused(&mut self, turn: u32, blocks: Value, text: String) -> Result<(), Error> {
        if turn >= MAX_TURNS {
            return Err(Error::TooManyTurns(MAX_TURNS));
        }
        self.ctx.verbose.line(&format!(
            "[turn {turn}] The server paused the turn; sending it back to go on"
        ));
        self.said.push_str(&text);
        self.req.messages.push(Message::Paused(blocks));
        Ok(())
    }

    /// Step 5: the response is the answer, possibly empty (design D14) or
    /// not whole (design §5.3) — once it matches the output schema, if
    /// there is one; an answer that does not goes back for a repair.
    fn answer(&mut self, response: Response) -> Result<Next, Failure> {
        let answer = self.paused_answer(response.content);
        if self.ctx.depth == 0 && self.ctx.conversation.is_some() {
            // Cloned, not taken: the response stays whole for what reads it
            // below.
            self.answered = Some(Message::Assistant {
                content: answer.clone(),
                tool_calls: Vec::new(),
                reasoning: response.reasoning.clone(),
            });
        }
        match self.output {
            None => self.out.content = answer,
            Some(shape) => {
                let shaped = repair::shaped(&mut self.req, &mut self.out, shape, answer, self.ctx)?;
                if shaped == Shaped::SentBack {
                    // Sent back with the repair asked for: in the history.
                    self.answered = None;
                    return Ok(Next::Send);
                }
            }
        }
        self.out.stop_reason = response.stop_reason;
        self.out.cut = response.cut;
        Ok(Next::Answer)
    }

    /// The answer of a turn that ends with `content`: the text of its paused
    /// parts before it, if any. The paused blocks then leave the history,
    /// which is sent again only to repair the answer, and the repair writes
    /// back the whole answer (design §5.5).
    fn paused_answer(&mut self, content: String) -> String {
        if self.said.is_empty() {
            return content;
        }
        while matches!(self.req.messages.last(), Some(Message::Paused(_))) {
            self.req.messages.pop();
        }
        std::mem::take(&mut self.said) + &content
    }

    /// Step 7: the response's calls run (design §3.8, §3.10) — or, when the
    /// response was cut off and may end in a half-written call, none of
    /// them, and the model is told why (design §5.4) — and the assistant
    /// message and every result appended to the history.
    fn run_calls(&mut self, turn: u32, tools: &ToolRunner, response: Response) {
        let calls = response.tool_calls;
        let results = match response.cut {
            Some(_) => dispatch::not_run_cut_off(&calls, &response.stop_reason),
            None => tools(turn, &calls),
        };
        let n = u64::try_from(calls.len()).unwrap_or(u64::MAX);
        self.out.tool_calls = self.out.tool_calls.saturating_add(n);
        // A paused turn that ends in calls: its blocks stay in the history.
        self.said.clear();
        self.req.messages.push(Message::Assistant {
            content: response.content,
            tool_calls: calls,
            reasoning: response.reasoning,
        });
        self.req.messages.push(Message::ToolResults(results));
    }

    /// Every way out without an answer: the one `error` event, on the turn
    /// that failed, then the error.
    #[inline(never)]
    fn fail(&self, failure: Failure) -> Error {
        let request = failure.request.map(|took| FailedRequest {
            provider: &self.provider.name,
            model: &self.req.model,
            took,
        });
        let error = TraceEvent::Error {
            error: &failure.error,
            request,
        };
        self.ctx
            .ledger
            .event(&self.ctx.place, self.out.turns, error);
        failure.error
    }
}
