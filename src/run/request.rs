//! What an agent run starts from: its provider with the retry policy that
//! applies (design D12), its first request — the tools it is offered
//! (design §3.2, D6) and its parameters — and the budgets over it (design
//! §7.5).

use std::sync::Arc;

use super::Ctx;
use super::call_agent;
use crate::error::Error;
use crate::mcp::Bound;
use crate::provider::{Message, Provider, Request, RetryPolicy, Tool, ToolChoice, Wire};
use crate::resolve::Resolved;
use crate::trace::ledger::Budget;

/// The provider `resolved` runs on, retrying as `--retries`, then the
/// agent's `[retry]`, then config.toml's say. A missing key is the error.
/// Out of line, as [`first`] is: what building it takes would otherwise
/// sit in `run_agent`'s frame while it waits on its answer (design §3.15).
#[inline(never)]
pub(super) fn provider(resolved: &Resolved, ctx: &Ctx) -> Result<Provider, Error> {
    let model = &resolved.model;
    let mut provider = ctx
        .snapshot
        .provider(model, || ctx.global.provider(model))?;
    let mut retry = resolved
        .agent
        .config
        .retry
        .over(ctx.global.retry.over(RetryPolicy::default()));
    if let Some(n) = ctx.retries {
        retry.max_retries = n;
    }
    provider.retry = retry;
    // Only axe serve's runs are ever cancelled.
    provider.cancel = Some(ctx.cancel.clone());
    Ok(provider)
}

/// The first request of `resolved` on the user message `message`, to be
/// sent on `wire`, and the names of the tools it offers, in order.
#[inline(never)]
pub(super) fn first(
    resolved: &Resolved,
    message: &str,
    mcp: &[Bound],
    ctx: &Ctx,
    wire: Wire,
) -> (Request, Vec<String>) {
    let config = &resolved.agent.config;
    let builtins = resolved.tools.as_ref().map_or(&[][..], |k| &k.names[..]);
    let artifacts = resolved.artifacts.is_some();
    let (tools, tool_choice) = tools(&config.sub_agents, (builtins, artifacts), mcp, ctx);
    let offered = if tool_choice == ToolChoice::Auto {
        tools.iter().map(|t| t.name.clone()).collect()
    } else {
        Vec::new()
    };
    let req = Request {
        model: resolved.model.model.clone(),
        system: resolved.system_prompt.clone(),
        messages: history(ctx, wire, first_message(resolved, message)),
        temperature: config.params.temperature,
        max_tokens: config.params.max_tokens,
        tools,
        tool_choice,
        parallel_tool_calls: config.sub_agents_config.parallel,
        output_schema: resolved.output_schema.as_ref().map(|o| o.schema.clone()),
        prompt_cache: config.prompt_cache,
        // A sub-agent streams when its tree does (a proxy cuts its idle
        // connections too), or when its own file asks.
        stream: ctx.stream.on || config.stream,
        // The agent's own file's (a sub-agent's too), as its other params.
        reasoning: config.params.reasoning(),
        traceparent: None,
    };
    (req, offered)
}

/// The first request's messages: the conversation a top-level run goes on
/// with, then `message` (design §7.7). Reasoning items are a wire's own:
/// had on another wire, they are left out, as every wire may take a turn
/// without them but not another wire's.
fn history(ctx: &Ctx, wire: Wire, message: Message) -> Vec<Message> {
    let prior = match &ctx.conversation {
        Some(kept) if ctx.depth == 0 && !kept.prior.is_empty() => kept,
        _ => return vec![message],
    };
    let mut messages = prior.prior.clone();
    if wire.name() != prior.prior_wire {
        for m in &mut messages {
            if let Message::Assistant { reasoning, .. } = m {
                reasoning.clear();
            }
        }
    }
    // A run that failed before any answer ends in its prompt: the new one
    // joins it, as two user turns in a row are refused by some wires.
    match messages.pop() {
        Some(last @ (Message::User(_) | Message::Attached { .. })) => {
            messages.push(joined(last, message));
        }
        Some(other) => messages.extend([other, message]),
        None => messages.push(message),
    }
    messages
}

/// Two user turns as one: the words joined by a blank line, the
/// attachments of both.
fn joined(first: Message, second: Message) -> Message {
    let parts = |m: Message| match m {
        Message::User(text) => (text, Vec::new()),
        Message::Attached {
            content,
            attachments,
        } => (content, attachments),
        // Not made here: only user turns are joined.
        _ => (String::new(), Vec::new()),
    };
    let (mut text, mut attachments) = parts(first);
    let (more, theirs) = parts(second);
    text.push_str("\n\n");
    text.push_str(&more);
    attachments.extend(theirs);
    Message::user_with(text, attachments)
}

/// The first message: the words, with the agent's attachments if it has
/// any (design §4.16).
fn first_message(resolved: &Resolved, message: &str) -> Message {
    Message::user_with(message.to_string(), resolved.attachments.clone())
}

/// The tools an agent is offered, and whether they are offered: its
/// built-in tools (design §8.1), its MCP servers' (design §9.3), and `call_agent` when it may call
/// `sub_agents`, below the depth limit (design §3.2). At the limit, with no
/// built-in tool, `call_agent` is not offered but kept, with tool_choice
/// "none", for a follow-up whose history has a call the model made anyway
/// (design D6), which some APIs refuse without `tools`; with built-in tools
/// it is left out, and such a call gets the depth error.
fn tools(
    sub_agents: &[String],
    (builtins, artifacts): (&[String], bool),
    mcp: &[Bound],
    ctx: &Ctx,
) -> (Vec<Tool>, ToolChoice) {
    let mut offered: Vec<Tool> = builtins
        .iter()
        .filter_map(|n| crate::tools::definition(n, artifacts))
        .collect();
    offered.extend(mcp.iter().map(|b| Tool {
        name: b.wire.clone(),
        description: b.description.clone(),
        parameters: Default::default(),
        schema: Some(b.schema.clone()),
    }));
    match (sub_agents.is_empty(), ctx.depth < ctx.max_depth) {
        (true, _) => {}
        (false, true) => {
            let shapes = call_agent::shapes(sub_agents, ctx);
            offered.insert(0, call_agent::call_agent_tool(sub_agents, &shapes));
        }
        (false, false) if offered.is_empty() => {
            return (
                vec![call_agent::call_agent_tool(sub_agents, &[])],
                ToolChoice::None,
            );
        }
        (false, false) => {}
    }
    (offered, ToolChoice::Auto)
}

/// `ctx` with the agent's own `[budget]` added to those over it. The
/// top-level agent's budget is the caller's to set (the command line wins
/// over the file); a sub-agent's bounds its subtree.
pub(super) fn with_own_budget<'a>(resolved: &Resolved, ctx: &Ctx<'a>) -> Ctx<'a> {
    let budget = &resolved.agent.config.budget;
    let mut own = ctx.clone();
    let any = budget.max_tokens.is_some() || budget.max_turns.is_some();
    if ctx.depth > 0 && (any || budget.max_cost.is_some()) {
        let b = Budget::new(budget.max_tokens, budget.max_turns).costing(budget.max_cost);
        own.budgets.push(Arc::new(b));
    }
    own
}
