//! Running an agent: [`run_agent`] builds the first request of a resolved
//! agent (injecting `call_agent` when it has sub-agents and the tree is not
//! at its depth limit) and [`converse`] is the conversation loop — send, and
//! while the model calls tools, run them and send the results back (design
//! §3.2, §3.7, §3.9). Without tools it is exactly one request.
//!
//! The top-level run and every sub-agent go through these two functions
//! (design §3.5); a sub-agent differs only in its [`Ctx`].

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::config::GlobalConfig;
use crate::deadline::{Deadline, millis};
use crate::error::{During, Error};
use crate::ledger::{self, Budget, Children, Ledger, Place};
use crate::provider::{
    Change, Cut, ErrorKind, Kind, Message, Notice, Provider, Request, RetryPolicy, ToolCall,
    ToolChoice, ToolResult, adjust, anthropic_schema,
};
use crate::resolve::Resolved;
use crate::schema::{Checked, OutputSchema};
use crate::snapshot::Snapshot;
use crate::stderr::{self, Verbose};
use crate::tool::{self, Caller};

/// The most send-receive cycles one conversation may take.
pub const MAX_TURNS: u32 = 50;

/// Where an agent runs in the tree and what bounds it. The top-level run is
/// depth 0; a sub-agent gets its parent's context one level down, with a
/// deadline no later than its parent's.
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    /// API keys and base URLs for every provider in the tree.
    pub global: &'a GlobalConfig,
    /// Where sub-agents' files are loaded from (`<config>/agents/<name>.toml`).
    pub config_dir: &'a Path,
    /// The process's current directory: a sub-agent's workdir when its file
    /// sets none (design D7), and what relative paths resolve against.
    pub cwd: &'a Path,
    /// 0 for the top-level agent; one more per level of delegation.
    pub depth: u32,
    /// The root agent's effective `max_depth`, bounding the whole tree (design D6).
    pub max_depth: u32,
    pub deadline: Deadline,
    pub verbose: Verbose,
    /// `--retries`: the most transport retries per request, over any
    /// `[retry]` setting, for the whole tree.
    pub retries: Option<u32>,
    /// The trace, usage and running agents of the whole tree.
    pub ledger: Arc<Ledger>,
    /// This agent run's name, path and depth in the tree.
    pub place: Place,
    /// The budgets that bound this run: the root's, then those of every
    /// ancestor that has a `[budget]` (its own is added by [`run_agent`]).
    pub budgets: Vec<Arc<Budget>>,
    /// The sub-agents the tree has read, each once (design D20).
    pub snapshot: Arc<Snapshot>,
}

/// The result of a finished conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub content: String,
    pub stop_reason: String,
    /// Summed over every turn (design §3.14, D16).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cache_read_input_tokens: u64,
    pub turns: u32,
    /// Tool calls executed.
    pub tool_calls: u64,
    /// HTTP requests retried (design D12), summed over every turn.
    pub retry_attempts: u64,
    pub duration: Duration,
    /// Why the final answer is incomplete, when it is.
    pub cut: Option<Cut>,
    /// With an output schema: the answer, parsed (`content` is its compact
    /// JSON text).
    pub output: Option<serde_json::Value>,
    /// Turns spent asking for an answer that matches the output schema.
    pub repairs: u32,
}

impl Outcome {
    /// When the final answer is incomplete, what happened:
    /// `the answer was cut off at the output limit (stop reason "length")`.
    pub fn incomplete(&self) -> Option<String> {
        self.cut.map(|cut| {
            format!(
                "the answer was {} (stop reason \"{}\")",
                cut.describe(),
                self.stop_reason
            )
        })
    }
}

/// Runs the agent `resolved` on the user message `message`: the same path
/// for the top-level run and for every sub-agent. The `call_agent` tool is
/// injected when the agent has `sub_agents` and `ctx.depth < ctx.max_depth`
/// (design §3.2); its calls run as the agent's `[sub_agents_config]` says.
/// At the depth limit such an agent gets no tool, and a call its model makes
/// anyway is answered with the depth error (design D6). An agent without
/// `sub_agents` sends exactly one request (design §3.2).
///
/// The run is reported to `ctx.ledger` (`run_start`, `run_end` and what
/// [`converse`] reports), and an agent with a `[budget]` bounds its own
/// subtree with it, under any budget of its ancestors.
pub fn run_agent(resolved: &Resolved, message: &str, ctx: &Ctx) -> Result<Outcome, Error> {
    #[cfg(debug_assertions)]
    inject_panic(&resolved.agent.id);
    let config = &resolved.agent.config;
    let mut provider = ctx.global.provider(resolved.model.provider)?;
    let mut retry = config
        .retry
        .over(ctx.global.retry.over(RetryPolicy::default()));
    if let Some(n) = ctx.retries {
        retry.max_retries = n;
    }
    provider.retry = retry;
    // At the depth limit the tool is not offered (design §3.2); it is kept
    // with tool_choice "none" for a follow-up whose history has a call the
    // model made anyway (design D6), which some APIs refuse without `tools`.
    let (tools, tool_choice) = match (config.sub_agents.is_empty(), ctx.depth < ctx.max_depth) {
        (true, _) => (Vec::new(), ToolChoice::Auto),
        (false, true) => {
            let shapes = tool::shapes(&config.sub_agents, ctx);
            (
                vec![tool::call_agent_tool(&config.sub_agents, &shapes)],
                ToolChoice::Auto,
            )
        }
        (false, false) => (
            vec![tool::call_agent_tool(&config.sub_agents, &[])],
            ToolChoice::None,
        ),
    };
    let offered = if tool_choice == ToolChoice::Auto {
        tools.len()
    } else {
        0
    };
    let req = Request {
        model: resolved.model.model.clone(),
        system: resolved.system_prompt.clone(),
        messages: vec![Message::user(message)],
        temperature: config.params.temperature,
        max_tokens: config.params.max_tokens,
        tools,
        tool_choice,
        parallel_tool_calls: config.sub_agents_config.parallel,
        output_schema: resolved.output_schema.as_ref().map(|o| o.schema.clone()),
    };
    // The top-level agent's own budget is the caller's to set (the command
    // line wins over the file); a sub-agent's bounds its subtree.
    let mut own = ctx.clone();
    if ctx.depth > 0 && (config.budget.max_tokens.is_some() || config.budget.max_turns.is_some()) {
        own.budgets.push(Arc::new(Budget::new(
            config.budget.max_tokens,
            config.budget.max_turns,
        )));
    }
    let ctx = &own;

    let sac = &config.sub_agents_config;
    let children = Children::default();
    let caller = Caller {
        allowed_agents: &config.sub_agents,
        model: &resolved.model,
        parallel: sac.parallel,
        max_parallel: sac.parallel_limit(),
        max_result_chars: sac.result_limit(),
        timeout_secs: sac.timeout,
        ctx,
        children: &children,
        turn: 0,
    };
    let execute = |turn: u32, calls: &[ToolCall]| tool::execute(calls, &Caller { turn, ..caller });
    let execute: Option<&ToolRunner> = if config.sub_agents.is_empty() {
        None
    } else {
        Some(&execute)
    };

    let started = Instant::now();
    report_start(ctx, &provider, &req.model, offered);
    note_unsent_schema(ctx, &provider, &req);
    let result = converse(
        &provider,
        req,
        ctx,
        execute,
        resolved.output_schema.as_deref(),
    );
    report_end(ctx, started.elapsed(), &result);
    result
}

/// `run_start` to the run's ledger. This and [`report_end`] are out of
/// line: their JSON would otherwise sit in `run_agent`'s frame, which every
/// waiting sub-agent's thread holds (design §3.15).
#[inline(never)]
fn report_start(ctx: &Ctx, provider: &Provider, model: &str, offered: usize) {
    ctx.ledger.record_start(&ctx.place);
    ctx.ledger.event(
        "run_start",
        &ctx.place,
        0,
        json!({
            "provider": provider.kind.name(),
            "model": model,
            "tools": offered,
        }),
    );
}

/// `--verbose`: an output schema that Anthropic's JSON outputs cannot take
/// without forbidding answers it allows is not sent, and axe alone checks
/// the answer (design D22); said once per agent run.
#[inline(never)]
fn note_unsent_schema(ctx: &Ctx, provider: &Provider, req: &Request) {
    if provider.kind != Kind::Anthropic || !ctx.verbose.enabled {
        return;
    }
    if let Some(Err(why)) = req
        .output_schema
        .as_ref()
        .map(anthropic_schema::for_anthropic)
    {
        ctx.verbose.line(&format!(
            "[output] The output schema is not sent to anthropic ({why}); axe checks the answer and asks for repairs"
        ));
    }
}

/// `run_end` to the run's ledger, with the tree's totals at top level.
#[inline(never)]
fn report_end(ctx: &Ctx, took: Duration, result: &Result<Outcome, Error>) {
    ctx.ledger.record_end(&ctx.place, took, result.is_err());
    let mut end = json!({
        "duration_ms": millis(took),
        "ok": result.is_ok(),
    });
    match result {
        Ok(o) => {
            end["turns"] = o.turns.into();
            end["input_tokens"] = o.input_tokens.into();
            end["output_tokens"] = o.output_tokens.into();
            end["cache_read_input_tokens"] = o.cache_read_input_tokens.into();
            end["tool_calls"] = o.tool_calls.into();
            end["stop_reason"] = o.stop_reason.clone().into();
        }
        Err(e) => end["error"] = e.to_string().into(),
    }
    if ctx.depth == 0 {
        let totals = ledger::totals(&ctx.ledger.usage());
        end["total_input_tokens"] = totals.input_tokens.into();
        end["total_output_tokens"] = totals.output_tokens.into();
        end["total_cache_read_input_tokens"] = totals.cache_read_input_tokens.into();
    }
    let turn = result.as_ref().map_or(0, |o| o.turns);
    ctx.ledger.event("run_end", &ctx.place, turn, end);
    if ctx.depth == 0 {
        // The answer, printed next, may share the trace's pipe.
        ctx.ledger.flush_trace();
    }
}

/// A test hook, compiled into debug builds only: the agent named by
/// `AXE_DEBUG_PANIC_AGENT` panics when it starts, so that tests can show
/// that a sub-agent's panic stays inside its own call (design D4) and that a
/// top-level panic is one line and exit 1.
#[cfg(debug_assertions)]
fn inject_panic(name: &str) {
    if std::env::var_os("AXE_DEBUG_PANIC_AGENT").is_some_and(|v| v == name) {
        panic!("injected by AXE_DEBUG_PANIC_AGENT");
    }
}

/// Runs the tool calls made in turn `turn` and returns one result per call,
/// in call order.
pub type ToolRunner<'a> = dyn Fn(u32, &[ToolCall]) -> Vec<ToolResult> + 'a;

/// Runs the conversation that starts with `req`. With `execute`, every
/// response that calls tools has them run and the results sent back, for at
/// most [`MAX_TURNS`] requests; without it, the first answer is the answer
/// (and tool calls a model invents are not acted on). With `output`, a
/// final answer that does not match the schema is sent back with what is
/// wrong, at most `max_repairs` times (design D22). Every request is taken
/// from `ctx`'s budgets first, and reported to its tree.
pub fn converse(
    provider: &Provider,
    mut req: Request,
    ctx: &Ctx,
    execute: Option<&ToolRunner>,
    output: Option<&OutputSchema>,
) -> Result<Outcome, Error> {
    let (deadline, verbose, ledger, place) =
        (&ctx.deadline, &ctx.verbose, &*ctx.ledger, &ctx.place);
    let started = Instant::now();
    let mut out = Outcome::default();
    let looping = execute.is_some() || output.is_some();
    // The text of a turn the server paused, until the turn ends.
    let mut said = String::new();
    loop {
        out.turns += 1;
        let turn = out.turns;
        if let Err(e) = ledger::take_turn(&ctx.budgets) {
            ledger.event(
                "error",
                place,
                turn,
                json!({ "error": e.to_string(), "kind": "budget" }),
            );
            return Err(Error::Budget(e));
        }
        ledger.record_turn(place, turn);
        if looping {
            let pending = match req.messages.last() {
                Some(Message::ToolResults(results)) => results.len(),
                _ => 0,
            };
            verbose.line(&format!(
                "[turn {turn}] Sending request ({} messages, {pending} tool calls pending)",
                req.messages.len()
            ));
        }
        let mut fields = json!({
            "provider": provider.kind.name(),
            "model": req.model,
            "messages": req.messages.len(),
        });
        if ledger.bodies() {
            fields["body"] = provider.body(&req);
        }
        ledger.event("request", place, turn, fields);
        let sent = Instant::now();
        let on_notice = |notice: &Notice| {
            let (line, mut fields) = match notice {
                Notice::Retry(r) => (
                    format!(
                        "{} {}, attempt {}/{} in {:.1}s",
                        provider.kind.name(),
                        r.what,
                        r.attempt,
                        r.of,
                        r.wait.as_secs_f64()
                    ),
                    json!({
                        "status": r.status,
                        "reason": r.what,
                        "attempt": r.attempt,
                        "of": r.of,
                        "delay_ms": millis(r.wait),
                    }),
                ),
                Notice::Adjusted { change, first, why } => {
                    let what = format!(
                        "{}: model {:?} {}",
                        provider.kind.name(),
                        req.model,
                        adjust::describe(*change, why)
                    );
                    // Told once per process; a changed field name is no news.
                    if *first && *change != Change::MaxCompletionTokens {
                        stderr::warn_once(&what);
                    }
                    let fields = json!({ "status": 400, "reason": what, "delay_ms": 0 });
                    (what, fields)
                }
            };
            verbose.line(&format!("[retry] {line}"));
            fields["provider"] = provider.kind.name().into();
            fields["model"] = req.model.clone().into();
            ledger.event("retry", place, turn, fields);
        };
        let mut resp = provider
            .send_with(&req, deadline.at, &on_notice)
            .map_err(|mut e| {
                if e.kind == ErrorKind::Timeout {
                    e.message = format!("timeout after {}s", deadline.secs);
                }
                ledger.event(
                    "error",
                    place,
                    turn,
                    json!({
                        "provider": provider.kind.name(),
                        "model": req.model,
                        "duration_ms": millis(sent.elapsed()),
                        "status": e.status,
                        "error": e.to_string(),
                        "kind": format!("{:?}", e.kind),
                    }),
                );
                Error::Provider(e)
            })?;
        // Counts come from the server: sums saturate, never wrap.
        out.input_tokens = out.input_tokens.saturating_add(resp.input_tokens);
        out.output_tokens = out.output_tokens.saturating_add(resp.output_tokens);
        out.cache_read_input_tokens = out
            .cache_read_input_tokens
            .saturating_add(resp.cache_read_tokens);
        out.retry_attempts = out.retry_attempts.saturating_add(u64::from(resp.retries));
        ledger.record_tokens(
            place,
            resp.input_tokens,
            resp.output_tokens,
            resp.cache_read_tokens,
        );
        ledger::spend_tokens(
            &ctx.budgets,
            resp.input_tokens.saturating_add(resp.output_tokens),
        );
        let mut fields = json!({
            "provider": provider.kind.name(),
            "model": req.model,
            "duration_ms": millis(sent.elapsed()),
            "input_tokens": resp.input_tokens,
            "output_tokens": resp.output_tokens,
            "cache_read_input_tokens": resp.cache_read_tokens,
            "stop_reason": resp.stop_reason,
            "tool_calls": resp.tool_calls.len(),
            "retries": resp.retries,
        });
        if ledger.bodies() {
            fields["content"] = resp.content.clone().into();
            fields["calls"] = resp
                .tool_calls
                .iter()
                .map(|c| json!({ "id": c.id, "name": c.name, "arguments": c.arguments }))
                .collect();
        }
        ledger.event("response", place, turn, fields);
        if looping {
            verbose.line(&format!(
                "[turn {turn}] Received response: {} ({} tool calls)",
                resp.stop_reason,
                resp.tool_calls.len()
            ));
        }
        if let Some(what) = resp.declined {
            let e = Error::Declined {
                provider: provider.kind,
                what,
            };
            ledger.event(
                "error",
                place,
                turn,
                json!({ "error": e.to_string(), "kind": "refusal" }),
            );
            return Err(e);
        }
        if let Some(blocks) = resp.paused.take()
            && resp.tool_calls.is_empty()
        {
            resume_paused(&mut req, &mut said, blocks, resp.content, turn, ctx)?;
            continue;
        }
        let execute = match execute {
            Some(execute) if !resp.tool_calls.is_empty() => execute,
            _ => {
                let answer = paused_answer(&mut req, &mut said, resp.content);
                match output {
                    None => out.content = answer,
                    Some(shape) => {
                        if !shaped(&mut req, &mut out, shape, answer, ctx)? {
                            continue;
                        }
                    }
                }
                out.stop_reason = resp.stop_reason;
                out.cut = resp.cut;
                out.duration = started.elapsed();
                return Ok(out);
            }
        };
        // The last turn's calls would never be answered: do not run them.
        if turn == MAX_TURNS {
            return Err(Error::TooManyTurns(MAX_TURNS));
        }
        // A response cut off may end in a half-written call: none is run,
        // and the model is told why.
        let results = match resp.cut {
            Some(_) => tool::not_run_cut_off(&resp.tool_calls, &resp.stop_reason),
            None => execute(turn, &resp.tool_calls),
        };
        out.tool_calls = out
            .tool_calls
            .saturating_add(u64::try_from(resp.tool_calls.len()).unwrap_or(u64::MAX));
        // A paused turn that ends in calls: its blocks stay in the history.
        said.clear();
        req.messages.push(Message::Assistant {
            content: resp.content,
            tool_calls: resp.tool_calls,
        });
        req.messages.push(Message::ToolResults(results));
    }
}

/// A turn the server paused (Anthropic's `pause_turn`, a long server-side
/// tool): its content goes back as it came, and the next request, a turn
/// like any other, lets the model go on with it (design §5.5). Its text so
/// far, `text`, is kept in `said` for the answer.
#[inline(never)]
fn resume_paused(
    req: &mut Request,
    said: &mut String,
    blocks: serde_json::Value,
    text: String,
    turn: u32,
    ctx: &Ctx,
) -> Result<(), Error> {
    if turn >= MAX_TURNS {
        return Err(Error::TooManyTurns(MAX_TURNS));
    }
    ctx.verbose.line(&format!(
        "[turn {turn}] The server paused the turn; sending it back to go on"
    ));
    said.push_str(&text);
    req.messages.push(Message::Paused(blocks));
    Ok(())
}

/// The answer of a turn that ends with `content`: the text of its paused
/// parts before it, if any. The paused blocks then leave the history, which
/// is sent again only to repair the answer, and the repair writes back the
/// whole answer (design §5.5).
fn paused_answer(req: &mut Request, said: &mut String, content: String) -> String {
    if said.is_empty() {
        return content;
    }
    while matches!(req.messages.last(), Some(Message::Paused(_))) {
        req.messages.pop();
    }
    std::mem::take(said) + &content
}

/// The final `answer` of an agent with an output schema: true when it
/// matches (`out` then holds it, compact, and its value); false when it
/// has gone back to the model for a repair; a failure when the repairs are
/// spent (design D22). Kept out of line: a sub-agent's thread waits on the
/// network inside `converse`, and its frame is on every such stack.
#[inline(never)]
fn shaped(
    req: &mut Request,
    out: &mut Outcome,
    shape: &OutputSchema,
    answer: String,
    ctx: &Ctx,
) -> Result<bool, Error> {
    match shape.check(&answer, Some(ctx.deadline.at)) {
        Checked::Valid(value, text) => {
            out.content = text;
            out.output = Some(value);
            Ok(true)
        }
        Checked::TimedOut => Err(Error::TimedOut {
            secs: ctx.deadline.secs,
            during: During::CheckingAnswer,
        }),
        Checked::Invalid(problems) => {
            repair(req, out, shape, problems, answer, ctx)?;
            Ok(false)
        }
    }
}

/// An answer that does not match the output schema: a failure once the
/// repairs are spent (or the turns), else the answer and what is wrong with
/// it go back to the model as the next turn (design D22).
fn repair(
    req: &mut Request,
    out: &mut Outcome,
    shape: &OutputSchema,
    problems: Vec<String>,
    answer: String,
    ctx: &Ctx,
) -> Result<(), Error> {
    let first = problems.first().cloned().unwrap_or_default();
    let turn = out.turns;
    if out.repairs >= shape.max_repairs {
        let e = Error::Output {
            repairs: out.repairs,
            first,
        };
        ctx.ledger.event(
            "error",
            &ctx.place,
            turn,
            json!({ "error": e.to_string(), "kind": "output" }),
        );
        return Err(e);
    }
    // A repair is a turn like any other (design §3.7).
    if turn >= MAX_TURNS {
        return Err(Error::TooManyTurns(MAX_TURNS));
    }
    out.repairs += 1;
    ctx.verbose.line(&format!(
        "[turn {turn}] Answer does not match the output schema: {first} (repair {} of {})",
        out.repairs, shape.max_repairs
    ));
    ctx.ledger.event(
        "repair",
        &ctx.place,
        turn,
        json!({ "repair": out.repairs, "of": shape.max_repairs, "problems": problems }),
    );
    req.messages.push(Message::Assistant {
        content: answer,
        tool_calls: Vec::new(),
    });
    req.messages
        .push(Message::user(shape.repair_message(&problems)));
    Ok(())
}
