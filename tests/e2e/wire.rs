//! The three wire formats read from the outside: the tool calls a response carries, and each format's names.

use super::*;

/// A tool call as a response carries it: id (Ollama has none), name, arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireCall {
    pub(crate) id: Option<String>,
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Format {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Format {
    pub(crate) fn provider(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Ollama => "ollama",
        }
    }

    pub(crate) fn path(self) -> &'static str {
        match self {
            Format::OpenAi => "/v1/chat/completions",
            Format::Anthropic => "/v1/messages",
            Format::Ollama => "/api/chat",
        }
    }

    /// (input, output) tokens of a response, as the server billed them:
    /// Anthropic's input is `input_tokens` plus the prompt-cache writes and
    /// reads, which its `input_tokens` leaves out.
    pub(crate) fn usage(self, resp: &Value) -> (u64, u64) {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let u = &resp["usage"];
        match self {
            Format::OpenAi => (n(&u["prompt_tokens"]), n(&u["completion_tokens"])),
            Format::Anthropic => (
                n(&u["input_tokens"])
                    + n(&u["cache_creation_input_tokens"])
                    + n(&u["cache_read_input_tokens"]),
                n(&u["output_tokens"]),
            ),
            Format::Ollama => (n(&resp["prompt_eval_count"]), n(&resp["eval_count"])),
        }
    }

    /// Input tokens read from the server's prompt cache.
    pub(crate) fn cache_reads(self, resp: &Value) -> u64 {
        let u = &resp["usage"];
        match self {
            Format::OpenAi => u["prompt_tokens_details"]["cached_tokens"].as_u64(),
            Format::Anthropic => u["cache_read_input_tokens"].as_u64(),
            Format::Ollama => None,
        }
        .unwrap_or(0)
    }

    /// Input tokens written to the server's prompt cache.
    pub(crate) fn cache_writes(self, resp: &Value) -> u64 {
        let u = &resp["usage"];
        match self {
            Format::OpenAi => u["prompt_tokens_details"]["cache_write_tokens"].as_u64(),
            Format::Anthropic => u["cache_creation_input_tokens"].as_u64(),
            Format::Ollama => None,
        }
        .unwrap_or(0)
    }

    pub(crate) fn stop_reason(self, resp: &Value) -> String {
        let v = match self {
            Format::OpenAi => &resp["choices"][0]["finish_reason"],
            Format::Anthropic => &resp["stop_reason"],
            Format::Ollama => &resp["done_reason"],
        };
        v.as_str().unwrap_or("").to_string()
    }

    /// The answer's text.
    pub(crate) fn content(self, resp: &Value) -> String {
        match self {
            Format::OpenAi => resp["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            Format::Anthropic => resp["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect(),
            Format::Ollama => resp["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        }
    }

    /// The tool calls of a response.
    pub(crate) fn calls(self, resp: &Value) -> Vec<WireCall> {
        match self {
            Format::OpenAi => openai_calls(&resp["choices"][0]["message"]),
            Format::Anthropic => anthropic_calls(&resp["content"]),
            Format::Ollama => ollama_calls(&resp["message"]),
        }
    }

    /// The messages of a request: for Anthropic, as sent; for the others,
    /// after the system message.
    pub(crate) fn messages(self, req: &Value) -> Vec<Value> {
        let all = req["messages"].as_array().cloned().unwrap_or_default();
        match self {
            Format::Anthropic => all,
            _ => all.into_iter().filter(|m| m["role"] != "system").collect(),
        }
    }

    /// The tool calls of an assistant message in a request.
    pub(crate) fn calls_in_message(self, m: &Value) -> Vec<WireCall> {
        match self {
            Format::OpenAi => openai_calls(m),
            Format::Anthropic => anthropic_calls(&m["content"]),
            Format::Ollama => ollama_calls(m),
        }
    }

    /// The tool results of a request message: (call id, content) each. An
    /// OpenAI or Ollama `tool` message is one result; an Anthropic user
    /// message may hold several `tool_result` blocks.
    pub(crate) fn results_in_message(self, m: &Value) -> Vec<(Option<String>, String)> {
        match self {
            Format::Anthropic => m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    (
                        b["tool_use_id"].as_str().map(String::from),
                        b["content"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect(),
            _ if m["role"] == "tool" => vec![(
                m["tool_call_id"].as_str().map(String::from),
                m["content"].as_str().unwrap_or("").to_string(),
            )],
            _ => vec![],
        }
    }
}

pub(crate) fn openai_calls(message: &Value) -> Vec<WireCall> {
    message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| WireCall {
            id: c["id"].as_str().map(String::from),
            name: c["function"]["name"].as_str().unwrap_or("").to_string(),
            arguments: match &c["function"]["arguments"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                other => other.clone(),
            },
        })
        .collect()
}

pub(crate) fn anthropic_calls(content: &Value) -> Vec<WireCall> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| WireCall {
            id: b["id"].as_str().map(String::from),
            name: b["name"].as_str().unwrap_or("").to_string(),
            arguments: b["input"].clone(),
        })
        .collect()
}

pub(crate) fn ollama_calls(message: &Value) -> Vec<WireCall> {
    message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| WireCall {
            id: None,
            name: c["function"]["name"].as_str().unwrap_or("").to_string(),
            arguments: c["function"]["arguments"].clone(),
        })
        .collect()
}
