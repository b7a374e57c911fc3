//! The types every wire format shares: tools, tool calls and results,
//! messages, the request and the response.

use std::collections::BTreeMap;

use serde_json::Value;

use super::attachment::Attachment;

/// One parameter of a tool's input schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolParameter {
    /// JSON Schema type, e.g. `"string"`.
    pub kind: String,
    pub description: String,
    pub required: bool,
    /// Allowed values (JSON Schema `enum`); empty means any (design D19).
    pub allowed: Vec<String>,
}

/// A tool definition sent to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: BTreeMap<String, ToolParameter>,
    /// A JSON Schema sent as it is instead of one built from `parameters`
    /// (an MCP server's `inputSchema`, design §9.3).
    pub schema: Option<Value>,
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned id (generated as `ollama_<index>` for Ollama).
    pub id: String,
    pub name: String,
    /// Argument values as strings; non-string JSON values as their JSON text
    /// (design D3), `null` as empty. This is for the tool's own use.
    pub arguments: BTreeMap<String, String>,
    /// The arguments exactly as the wire carried them (a JSON text for
    /// OpenAI, an object for Anthropic and Ollama), sent back unchanged in
    /// the conversation history. `Null` for a call that did not come from a
    /// provider: the history is then built from `arguments`.
    pub wire_arguments: Value,
    /// A call of a type axe has no tool of (OpenAI's `custom` tools, any
    /// type but `function`): the call exactly as the wire carried it,
    /// written back as it is in the history. It is never run; its result
    /// is an error for the model.
    pub foreign: Option<Value>,
}

impl ToolCall {
    /// The arguments as an object, for writing history back (and for an
    /// MCP server, which takes an object): what the model sent when that
    /// was an object (or a JSON text holding one), else an object of the
    /// string values.
    pub fn arguments_object(&self) -> Value {
        match &self.wire_arguments {
            Value::Object(_) => self.wire_arguments.clone(),
            Value::String(s) => match json_value::from_str(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => self.strings_object(),
            },
            _ => self.strings_object(),
        }
    }

    /// The arguments as a JSON text, for writing history back: the text
    /// the model sent when it sent one, else the object's text.
    pub fn arguments_text(&self) -> String {
        match &self.wire_arguments {
            Value::String(s) => s.clone(),
            Value::Object(_) => self.wire_arguments.to_string(),
            _ => self.strings_object().to_string(),
        }
    }

    fn strings_object(&self) -> Value {
        Value::Object(
            self.arguments
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }
}

/// The result of executing one [`ToolCall`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    /// The name of the tool that was called (Ollama's `tool_name`).
    pub tool_name: String,
    pub content: String,
    pub is_error: bool,
}

/// One message of a conversation. The variants are the only shapes the
/// wire formats know: a user's text, the model's turn (text and the tools
/// it called), and the results of those calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The user's words.
    User(String),
    /// The user's words with files attached (`-a`, `attach`, an image
    /// part `axe serve` was sent): only ever a run's first message, sent
    /// in each wire's own form (the files first, then the words).
    Attached {
        content: String,
        attachments: Vec<Attachment>,
    },
    /// The model's turn: its text (may be empty when it called tools) and
    /// its tool calls (none for a plain answer).
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
        /// The wire's own reasoning items of this turn, exactly as they
        /// came ([`Response::reasoning`]), sent back unchanged on the same
        /// wire; empty where the wire has none or keeps none.
        reasoning: Vec<Value>,
    },
    /// The results of the previous assistant message's calls, in call
    /// order (sent as one `user` message by Anthropic, one message per
    /// result by OpenAI and Ollama).
    ToolResults(Vec<ToolResult>),
    /// A turn the server paused (Anthropic's `pause_turn`): the model's
    /// content blocks exactly as they came, sent back unchanged so that it
    /// goes on with the same turn. Only the Anthropic wire makes one.
    Paused(Value),
}

/// What is sent to a provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub model: String,
    /// Empty means no system prompt is sent.
    pub system: String,
    pub messages: Vec<Message>,
    /// `None` is not sent; `Some(0.0)` is sent as `0` (design D8).
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Empty means no `tools` key at all.
    pub tools: Vec<Tool>,
    /// Whether the model may call `tools`.
    pub tool_choice: ToolChoice,
    /// Whether the calls of one response run at the same time, so the model
    /// may make several at once (said on the OpenAI and Anthropic wires;
    /// Ollama has no such field).
    pub parallel_tool_calls: bool,
    /// The JSON Schema the answer must match, asked for with each wire's
    /// own mechanism (design D22); None asks for nothing.
    pub output_schema: Option<serde_json::Value>,
    /// Whether the request marks its stable prefix for the provider's
    /// prompt cache (Anthropic's `cache_control` breakpoints; the other
    /// wires cache by themselves and send nothing for it).
    pub prompt_cache: bool,
    /// Whether the answer is asked for as a stream of events (design §4.11).
    pub stream: bool,
    /// How hard the model is asked to think, in each wire's own form; None
    /// sends nothing and leaves the model's default.
    pub reasoning: Option<Reasoning>,
    /// The W3C `traceparent` header it carries, its 55 ASCII bytes: its
    /// chat span's (design §7.9), set as it is sent; None sends no header.
    /// Bytes, not a string: the header's value is the one copy made.
    pub traceparent: Option<[u8; 55]>,
}

/// What a request asks of a model's reasoning (`[params]`'s
/// `reasoning_effort` and `thinking_budget`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reasoning {
    /// The effort, for the wires that take one (OpenAI's `reasoning_effort`).
    pub effort: Option<Effort>,
    /// The tokens the model may think in, for the wires that take a budget
    /// (Anthropic's `thinking.budget_tokens`).
    pub budget_tokens: Option<u32>,
}

/// A reasoning effort, as the OpenAI wires name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

impl Effort {
    /// Every effort, by its name.
    pub const ALL: [(&'static str, Effort); 4] = [
        ("minimal", Effort::Minimal),
        ("low", Effort::Low),
        ("medium", Effort::Medium),
        ("high", Effort::High),
    ];

    /// The effort named `name` (`reasoning_effort`'s values), if any.
    pub fn named(name: &str) -> Option<Effort> {
        Effort::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, e)| *e)
    }

    /// Its name, as OpenAI's `reasoning_effort` spells it.
    pub fn name(self) -> &'static str {
        Effort::ALL
            .iter()
            .find(|(_, e)| *e == self)
            .map_or("medium", |(n, _)| n)
    }
}

/// Whether a request lets the model call its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (every API's default).
    #[default]
    Auto,
    /// The tools are there only because the history names them (an agent at
    /// the depth limit whose model called one anyway: Anthropic refuses
    /// `tool_use` blocks without `tools`); the model may not call them. Sent
    /// only once the history has a tool call, and never to Ollama, which has
    /// no way to say "none".
    None,
}

impl Request {
    /// Whether the `tools` go on the wire: offered, or needed by the history
    /// and forbidden by `tool_choice` where the wire can say so.
    pub fn sends_tools(&self, can_forbid: bool) -> bool {
        !self.tools.is_empty()
            && match self.tool_choice {
                ToolChoice::Auto => true,
                ToolChoice::None => {
                    can_forbid
                        && self.messages.iter().any(|m| {
                            matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty())
                        })
                }
            }
    }
}

/// What a provider answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The text of the answer; empty when the model said nothing (design D14).
    pub content: String,
    /// The provider's own stop reason, informational only.
    pub stop_reason: String,
    /// Every input token billed: for Anthropic the uncached remainder plus
    /// the prompt-cache writes and reads, which its `input_tokens` leaves
    /// out (design §4.6).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache
    /// (Anthropic's `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Empty when the model called no tools.
    pub tool_calls: Vec<ToolCall>,
    /// HTTP requests retried before this answer (design D12).
    pub retries: u32,
    /// The model declined to answer: `the model refused to answer`, then
    /// its own words or the provider's reason where the wire carries them.
    pub declined: Option<String>,
    /// Why the answer is incomplete, when it is.
    pub cut: Option<Cut>,
    /// The server paused the turn (Anthropic's `pause_turn`, a long
    /// server-side tool): the content blocks to send back as they came so
    /// that the model goes on. `content` is the text so far.
    pub paused: Option<Value>,
    /// For a streamed answer: the time from sending the request to its
    /// first content or tool-call delta (design §4.11).
    pub first_token: Option<std::time::Duration>,
    /// What the provider said this response cost, in USD (OpenRouter's
    /// `usage.cost`); none where the wire does not say.
    pub cost_usd: Option<f64>,
    /// Of `output_tokens`, those the model spent reasoning.
    pub reasoning_tokens: u64,
    /// The reasoning items to send back with this turn (Anthropic's
    /// `thinking` blocks with their signatures, the Responses API's
    /// `reasoning` items), exactly as they came.
    pub reasoning: Vec<Value>,
    /// The model's reasoning as text, where the wire shows it: for
    /// `--verbose` and the trace's bodies, never the answer.
    pub thinking: String,
    /// The provider's id of this response (Chat Completions' `chatcmpl-…`,
    /// Anthropic's `msg_…`, the Responses API's `resp_…`), whole or
    /// streamed; empty where the wire has none (Ollama, Bedrock). The chat
    /// span's `gen_ai.response.id` (design §7.9).
    pub id: String,
    /// The model that answered as the provider names it (often a dated
    /// version of the one asked for); empty where the wire does not say
    /// (Bedrock). The chat span's `gen_ai.response.model`.
    pub model: String,
}

impl Response {
    /// The tokens this response billed, as its cost is reckoned from.
    pub fn billed(&self) -> crate::cost::Billed {
        crate::cost::Billed {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_tokens,
            cache_write: self.cache_write_tokens,
        }
    }

    /// What this response says of the prompt cache and reasoning, for its
    /// `--verbose` line: `, cache: 1200 read, 300 written`, or nothing when
    /// it used neither.
    pub fn cache_note(&self) -> String {
        let mut note = String::new();
        if self.cache_read_tokens != 0 || self.cache_write_tokens != 0 {
            note = format!(
                ", cache: {} read, {} written",
                self.cache_read_tokens, self.cache_write_tokens
            );
        }
        if self.reasoning_tokens != 0 {
            note.push_str(&format!(", {} reasoning tokens", self.reasoning_tokens));
        }
        note
    }
}

/// Why an answer ended before the model finished it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The output limit (`max_tokens`) was reached.
    OutputLimit,
    /// The model's context window was full.
    ContextWindow,
    /// The provider's content filter stopped or removed the answer.
    Filtered,
}

impl Cut {
    /// What happened, for a warning or a marker: `cut off at the output limit`.
    pub fn describe(self) -> &'static str {
        match self {
            Cut::OutputLimit => "cut off at the output limit",
            Cut::ContextWindow => "cut off: the context window is full",
            Cut::Filtered => "stopped by the provider's content filter",
        }
    }
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message::User(content.into())
    }

    /// A user turn: its words, with `attachments` when there are any.
    pub fn user_with(content: String, attachments: Vec<Attachment>) -> Message {
        if attachments.is_empty() {
            Message::User(content)
        } else {
            Message::Attached {
                content,
                attachments,
            }
        }
    }
}
