//! One run's spans, built from its trace events (design §7.9): the
//! ledger hands each event here as it writes the trace, and a span opens
//! and closes on the events that bound it — `invoke_agent` on `run_start`
//! and `run_end`, `chat` on `request` and `response` or `error`,
//! `execute_tool` on `tool_call` and `tool_result`. Spans open are held
//! by the agent run's place (`open.rs`), a tool call's by its id.
//!
//! One link is not in the events: the tool span a sub-agent runs under,
//! which its caller says as it starts it ([`RunSpans::sub_agent`]). The
//! `traceparent` a provider's request carries is its chat span's, asked
//! for by the run ([`RunSpans::traceparent`]) and set in the request.

use std::sync::Arc;

use super::content;
use super::context::{SpanContext, TRACEPARENT_LEN};
use super::export::Exporter;
use super::open::{Slot, ToolKeys};
use super::otlp::{AttrValue, Code, Kind, Name, SharedAttrs, Span};
use super::own::Own;
use super::shared::Shared;
use crate::cost::Cost;
use crate::trace::event::{Ending, TraceEvent};
use crate::trace::ledger::Place;

/// The spans of one run (one ledger) that are open.
#[derive(Debug)]
pub struct RunSpans {
    exporter: &'static Exporter,
    /// The span the run's top-level agent is under (another process's).
    parent: Option<SpanContext>,
    /// The keys of every agent run's map of tool spans, made once
    /// ([`super::open::AgentSpans::put_tool`]).
    keys: ToolKeys,
    /// The names, the run's id and the attribute lists its spans share.
    shared: Shared,
}

/// Now, in Unix nanoseconds (0 before 1970): the clock read straight,
/// twice a span, where `SystemTime`'s checked arithmetic to nanoseconds
/// was ~200 instructions a read (callgrind, design §7.9).
fn now() -> u64 {
    // SAFETY: a timespec is plain integers, for which zeros are a value
    // (and some targets' have padding a literal could not name).
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a timespec the call writes and nothing else holds;
    // the result is checked.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 {
        return 0;
    }
    let (secs, nanos) = (u64::try_from(ts.tv_sec), u64::try_from(ts.tv_nsec));
    match (secs, nanos) {
        (Ok(s), Ok(n)) => s.saturating_mul(1_000_000_000).saturating_add(n),
        _ => 0,
    }
}

fn s(v: &str) -> AttrValue {
    AttrValue::Str(v.into())
}

/// A value the same in every span: nothing allocated for it.
fn fixed(v: &'static str) -> AttrValue {
    AttrValue::Static(v)
}

fn int(v: u64) -> AttrValue {
    AttrValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

impl RunSpans {
    /// The spans of the run `run_id`, under `parent`.
    pub fn new(exporter: &'static Exporter, run_id: &str, parent: Option<SpanContext>) -> RunSpans {
        RunSpans {
            exporter,
            parent,
            keys: ToolKeys::default(),
            shared: Shared::new(run_id),
        }
    }

    /// The span the run's top-level agent is under.
    pub fn parent(&self) -> Option<SpanContext> {
        self.parent
    }

    /// The `traceparent` of the chat span open for the agent run at
    /// `place`: what its request to the provider carries.
    pub fn traceparent(&self, place: &Place) -> Option<[u8; TRACEPARENT_LEN]> {
        place.spans.with(Slot::Chat, |span| span.ctx.traceparent())
    }

    /// `event` of the run, at `place`.
    pub fn event(&self, place: &Place, event: &TraceEvent) {
        let capture = self.exporter.settings.capture;
        match event {
            TraceEvent::RunStart {
                provider, model, ..
            } => self.run_start(place, provider, model),
            TraceEvent::Request { provider, request } => {
                self.chat_start(place, &provider.name, request, capture);
            }
            TraceEvent::Retry { .. } => {
                place.spans.with(Slot::Chat, |span| {
                    let n = match span.attrs.iter().find(|(k, _)| *k == "axe.retries") {
                        Some((_, AttrValue::Int(n))) => *n,
                        _ => 0,
                    };
                    span.set("axe.retries", AttrValue::Int(n + 1));
                });
            }
            TraceEvent::Response {
                response: r, cost, ..
            } => self.chat_end(place, r, *cost, capture),
            TraceEvent::Error { error, request } => {
                let kind = crate::trace::event::error_kind(error);
                if request.is_some() {
                    if let Some(mut span) = place.spans.take(Slot::Chat) {
                        span.fail(&kind, &error.to_string());
                        self.close(span);
                    }
                }
                place
                    .spans
                    .with(Slot::Agent, |span| span.fail(&kind, &error.to_string()));
            }
            TraceEvent::ToolCall { call, agent_called } => {
                self.tool_call(place, call, agent_called, capture);
            }
            TraceEvent::ToolResult { call, result, .. } => {
                self.tool_result(place, call, result, capture);
            }
            TraceEvent::Tool {
                id, bytes, exit, ..
            } => {
                place.spans.with(Slot::Tool(id), |span| {
                    span.set("axe.tool.bytes", int(*bytes));
                    if let Some(code) = exit {
                        span.set("process.exit.code", AttrValue::Int(i64::from(*code)));
                    }
                });
            }
            TraceEvent::RunEnd { end, .. } => self.run_end(place, end),
            TraceEvent::Repair { .. } | TraceEvent::Mcp { .. } => {}
        }
    }

    fn chat_start(
        &self,
        place: &Place,
        provider: &str,
        request: &crate::provider::Request,
        capture: bool,
    ) {
        let (max, t) = (request.max_tokens, request.temperature);
        let nums = [
            max.map_or(0, |m| u64::from(m) + 1),
            u64::from(t.is_some()),
            t.map_or(0, f64::to_bits),
        ];
        let parts = [request.model.as_str(), provider];
        let (model, shared) = self.shared.list("chat", &parts, nums, |sh| {
            let model = sh.name(&request.model);
            let mut attrs = vec![
                ("gen_ai.operation.name", fixed("chat")),
                ("gen_ai.provider.name", sh.provider(provider)),
                ("gen_ai.request.model", AttrValue::Shared(model.clone())),
            ];
            if let Some(max) = max {
                attrs.push(("gen_ai.request.max_tokens", int(u64::from(max))));
            }
            if let Some(t) = t {
                attrs.push(("gen_ai.request.temperature", AttrValue::Double(t)));
            }
            attrs.push(("axe.run_id", sh.run_id()));
            (model, attrs)
        });
        // Its own: the usage, the reasons, the retries, the response's id
        // and model, the first token, the cost (content comes on top).
        let mut span = unplaced(Name::new("chat", model), Kind::Client, Some(shared));
        if capture {
            content::request(&mut span, request);
        }
        // Its parent read and the span put under one lock.
        place.spans.update(|o| {
            place_under(&mut span, o.agent.as_ref().map(|a| a.ctx).or(self.parent));
            o.chat = Some(span);
        });
    }

    fn chat_end(&self, place: &Place, r: &crate::provider::Response, cost: Cost, capture: bool) {
        let Some(mut span) = place.spans.take(Slot::Chat) else {
            return;
        };
        span.add("gen_ai.usage.input_tokens", int(r.input_tokens));
        span.add("gen_ai.usage.output_tokens", int(r.output_tokens));
        let (read, written) = (r.cache_read_tokens, r.cache_write_tokens);
        span.add("gen_ai.usage.cache_read.input_tokens", int(read));
        span.add("gen_ai.usage.cache_creation.input_tokens", int(written));
        let reasons = AttrValue::OneStr(self.shared.name(&r.stop_reason));
        span.add("gen_ai.response.finish_reasons", reasons);
        span.set("axe.retries", int(u64::from(r.retries)));
        if !r.id.is_empty() {
            span.add("gen_ai.response.id", s(&r.id));
        }
        if !r.model.is_empty() {
            span.add("gen_ai.response.model", self.shared.value(&r.model));
        }
        if let Some(first) = r.first_token {
            span.add("axe.first_token_ms", int(crate::deadline::millis(first)));
        }
        if let Some(usd) = cost.usd() {
            span.add("axe.cost_usd", AttrValue::Double(usd));
        }
        if capture {
            content::response(&mut span, r);
        }
        self.close(span);
    }

    fn tool_result(
        &self,
        place: &Place,
        call: &crate::provider::ToolCall,
        result: &crate::provider::ToolResult,
        capture: bool,
    ) {
        let Some(mut span) = place.spans.take(Slot::Tool(&call.id)) else {
            return;
        };
        if result.is_error {
            let first: String = result.content.chars().take(300).collect();
            span.fail("tool_error", &first);
        }
        if capture {
            let text = crate::text::redact::redact(&result.content);
            span.set("gen_ai.tool.call.result", s(&text));
        }
        self.close(span);
    }

    fn run_start(&self, place: &Place, provider: &str, model: &str) {
        let parts = [&*place.agent, provider, model];
        let (agent, shared) = self.shared.list("invoke_agent", &parts, [0; 3], |sh| {
            let agent = sh.name(&place.agent);
            let attrs = vec![
                ("gen_ai.operation.name", fixed("invoke_agent")),
                ("gen_ai.agent.name", AttrValue::Shared(agent.clone())),
                ("gen_ai.provider.name", sh.provider(provider)),
                ("gen_ai.request.model", sh.value(model)),
                ("axe.run_id", sh.run_id()),
            ];
            (agent, attrs)
        });
        // Its own: the path and depth, then the usage, turns and cost.
        let mut span = unplaced(
            Name::new("invoke_agent", agent),
            Kind::Internal,
            Some(shared),
        );
        span.add("axe.agent.path", AttrValue::Shared(place.path.clone()));
        span.add("axe.depth", int(u64::from(place.depth)));
        // Under the tool span its caller said, or the run's parent; read
        // and put under one lock.
        place.spans.update(|o| {
            place_under(&mut span, o.under.or(self.parent));
            o.agent = Some(span);
        });
    }

    fn tool_call(
        &self,
        place: &Place,
        call: &crate::provider::ToolCall,
        agent_called: &str,
        capture: bool,
    ) {
        let parts = [call.name.as_str(), agent_called];
        let (tool, shared) = self.shared.list("execute_tool", &parts, [0; 3], |sh| {
            let tool = sh.name(&call.name);
            let mut attrs = vec![
                ("gen_ai.operation.name", fixed("execute_tool")),
                ("gen_ai.tool.name", AttrValue::Shared(tool.clone())),
                ("axe.run_id", sh.run_id()),
            ];
            if !agent_called.is_empty() {
                attrs.push(("axe.agent_called", sh.value(agent_called)));
            }
            (tool, attrs)
        });
        // Its own: the call's id and the tool's type (an MCP call's sets
        // it again).
        let mut span = unplaced(
            Name::new("execute_tool", tool),
            Kind::Internal,
            Some(shared),
        );
        let id: Arc<str> = Arc::from(call.id.as_str());
        span.add("gen_ai.tool.call.id", AttrValue::Shared(id.clone()));
        span.add(
            "gen_ai.tool.type",
            fixed(if agent_called.is_empty() {
                "function"
            } else {
                "agent"
            }),
        );
        if capture {
            span.add("gen_ai.tool.call.arguments", s(&content::arguments(call)));
        }
        // Its parent read, then the span put in its shard: a fan-out's
        // calls come at once, from their own threads (design §7.9).
        let parent = place.spans.update(|o| o.agent.as_ref().map(|a| a.ctx));
        place_under(&mut span, parent.or(self.parent));
        place.spans.put_tool(id, span, &self.keys);
    }

    fn run_end(&self, place: &Place, end: &Ending) {
        // Both taken under one lock.
        let (chat, agent) = place.spans.update(|o| (o.chat.take(), o.agent.take()));
        // A request cut short by a signal: its chat span ends with the run.
        if let Some(mut chat) = chat {
            chat.fail("interrupted", "the run ended first");
            self.close(chat);
        }
        let Some(mut span) = agent else {
            return;
        };
        match end {
            Ending::Finished(o) => {
                span.add("gen_ai.usage.input_tokens", int(o.input_tokens));
                span.add("gen_ai.usage.output_tokens", int(o.output_tokens));
                span.add(
                    "gen_ai.usage.cache_read.input_tokens",
                    int(o.cache_read_input_tokens),
                );
                span.add(
                    "gen_ai.usage.cache_creation.input_tokens",
                    int(o.cache_creation_input_tokens),
                );
                span.add("axe.turns", int(u64::from(o.turns)));
                if let Some(usd) = o.cost.usd() {
                    span.add("axe.cost_usd", AttrValue::Double(usd));
                }
            }
            Ending::Failed(e) => {
                if span.status != Code::Error {
                    span.fail(&crate::trace::event::error_kind(e), &e.to_string());
                }
            }
            Ending::Interrupted(why) => span.fail("interrupted", why),
        }
        self.close(span);
    }

    /// The agent run at `child` is the sub-agent the call `call_id` of
    /// the one at `caller` runs: its span goes under that call's.
    pub fn sub_agent(&self, caller: &Place, call_id: &str, child: &Place) {
        let under = caller.spans.with(Slot::Tool(call_id), |span| span.ctx);
        child.spans.update(|o| o.under = under);
    }

    /// Notes that the call `call_id` of the agent run at `place` is to an
    /// MCP server's `tool` (design §9.3): the MCP conventions' attributes
    /// on its span.
    pub fn mcp_call(&self, place: &Place, call_id: &str, server: &str, tool: &str) {
        place.spans.with(Slot::Tool(call_id), |span| {
            span.set("mcp.method.name", fixed("tools/call"));
            span.set("gen_ai.tool.type", fixed("extension"));
            span.set("axe.mcp.server", s(server));
            span.set("axe.mcp.tool", s(tool));
        });
    }

    fn close(&self, mut span: Box<Span>) {
        span.end = now();
        self.exporter.send(span);
    }
}

/// A span whose parent is not known yet: [`place_under`] says it, where
/// the parent is read (under the lock of its agent run's spans). It
/// shares `shared`.
fn unplaced(name: Name, kind: Kind, shared: Option<Arc<SharedAttrs>>) -> Box<Span> {
    Box::new(Span {
        ctx: SpanContext {
            trace_id: [0; 16],
            span_id: [0; 8],
            flags: 0,
            remote: false,
        },
        parent: None,
        name,
        kind,
        start: now(),
        end: 0,
        shared,
        attrs: Own::default(),
        status: Code::Unset,
        message: String::new(),
    })
}

/// `span` under `parent` (none: the root of a new trace).
fn place_under(span: &mut Span, parent: Option<SpanContext>) {
    span.ctx = SpanContext::child_of(parent.as_ref());
    span.parent = parent;
}

/// A batch's own span (design §11.2): every input's `invoke_agent` under
/// it, so that a batch is one tree. Ended, and exported, when dropped.
#[derive(Debug)]
pub struct Workflow {
    exporter: &'static Exporter,
    span: Box<Span>,
}

impl Workflow {
    /// `invoke_workflow <agent>` under `parent`, when spans are exported.
    pub fn start(agent: &str, parent: Option<SpanContext>) -> Option<Workflow> {
        let exporter = super::export::exporter()?;
        let name = Name::new("invoke_workflow", agent.into());
        let mut span = unplaced(name, Kind::Internal, None);
        place_under(&mut span, parent);
        span.add("gen_ai.operation.name", fixed("invoke_workflow"));
        span.add("gen_ai.agent.name", s(agent));
        Some(Workflow { exporter, span })
    }

    /// The span the inputs' runs are under.
    pub fn ctx(&self) -> SpanContext {
        self.span.ctx
    }
}

impl Drop for Workflow {
    fn drop(&mut self) {
        let mut span = self.span.clone();
        span.end = now();
        self.exporter.send(span);
    }
}
