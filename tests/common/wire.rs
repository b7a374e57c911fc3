//! The three wire formats as the APIs document them: answers in each
//! (text, tool calls), [`P`] for tests that run one case on each, and
//! reading back what axe sent in any of them.

use super::responses::{responses_calls, responses_text_of};
use super::server::{Recorded, Reply};

/// A provider, for tests that run one case on each wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum P {
    Anthropic,
    OpenAi,
    Ollama,
    /// OpenAI's Responses API, reached as `openai/o3-pro` (a model that
    /// answers only there) at `AXE_OPENAI_BASE_URL`.
    Responses,
}

pub const PROVIDERS: [P; 3] = [P::Anthropic, P::OpenAi, P::Ollama];

/// [`PROVIDERS`] and the Responses API, for the tests that run on it too.
pub const WIRES: [P; 4] = [P::Anthropic, P::OpenAi, P::Ollama, P::Responses];

impl P {
    pub fn name(self) -> &'static str {
        match self {
            P::Anthropic => "anthropic",
            P::OpenAi => "openai",
            P::Ollama => "ollama",
            P::Responses => "responses",
        }
    }

    pub fn model(self) -> &'static str {
        match self {
            P::Anthropic => "anthropic/claude-sonnet-4-5",
            P::OpenAi => "openai/gpt-4o",
            P::Ollama => "ollama/llama3.1",
            P::Responses => "openai/o3-pro",
        }
    }

    /// A successful text answer.
    pub fn text(self, text: &str) -> String {
        match self {
            P::Anthropic => anthropic_text(text, 5, 2),
            P::OpenAi => openai_text(text, 5, 2),
            P::Ollama => ollama_text(text, 5, 2),
            P::Responses => responses_text_of(text, 5, 2),
        }
    }

    /// A well-formed answer calling `calls`.
    pub fn tool_calls(self, calls: &[Call]) -> String {
        match self {
            P::Anthropic => anthropic_tool_use("", calls, 5, 2),
            P::OpenAi => openai_tool_calls(calls, 5, 2),
            P::Ollama => ollama_tool_calls(calls, 5, 2),
            P::Responses => responses_calls(calls, 5, 2),
        }
    }

    /// The healthy provider of the parent of a sub-agent on `self`.
    pub fn other(self) -> P {
        if self == P::OpenAi {
            P::Anthropic
        } else {
            P::OpenAi
        }
    }

    /// Whether tool calls and results carry ids on this wire (Ollama's do not).
    pub fn has_ids(self) -> bool {
        self != P::Ollama
    }

    /// Tool-call arguments as this wire sends them: a JSON string for
    /// OpenAI, an object for the others.
    pub fn wire_args(self, args: serde_json::Value) -> serde_json::Value {
        match self {
            P::OpenAi | P::Responses => serde_json::Value::String(args.to_string()),
            _ => args,
        }
    }

    /// `AXE_<PROVIDER>_BASE_URL` (OpenAI's for the Responses API).
    pub fn base_url_var(self) -> String {
        if self == P::Responses {
            return P::OpenAi.base_url_var();
        }
        format!("AXE_{}_BASE_URL", self.name().to_ascii_uppercase())
    }

    /// A text answer with `finish`/`stop_reason`/`done_reason` set to `reason`.
    pub fn text_stopped(self, text: &str, reason: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&self.text(text)).unwrap();
        match self {
            P::Anthropic => v["stop_reason"] = reason.into(),
            P::OpenAi => v["choices"][0]["finish_reason"] = reason.into(),
            P::Ollama => v["done_reason"] = reason.into(),
            P::Responses => {
                v["status"] = "incomplete".into();
                v["incomplete_details"] = serde_json::json!({"reason": reason});
            }
        }
        v.to_string()
    }
}

// ---------------------------------------------------------------------------
// Real provider response shapes (as the APIs document them).
// ---------------------------------------------------------------------------

pub fn anthropic_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
    .to_string()
}

pub fn openai_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}

pub fn ollama_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "model": "llama3.1",
        "created_at": "2026-11-23T10:00:00.000000Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": "stop",
        "done": true,
        "total_duration": 4_883_583_458u64,
        "load_duration": 1_334_875,
        "prompt_eval_count": input,
        "prompt_eval_duration": 342_546_000,
        "eval_count": output,
        "eval_duration": 4_535_599_000u64
    })
    .to_string()
}

/// An HTML page served with `status` (a proxy's error page, a login page).
pub fn html(status: u16, page: &str) -> Reply {
    Reply::Raw {
        status,
        content_type: "text/html".into(),
        body: page.into(),
        headers: vec![],
    }
}

/// nginx's own 502 page, as a reverse proxy in front of a provider sends it.
pub const NGINX_502: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/// A captive portal / login page.
pub const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>Sign in</title></head>\n<body><form action=\"/login\"></form></body>\n</html>\n";

/// A tool call for the response builders: id, tool name, arguments.
pub type Call<'a> = (&'a str, &'a str, serde_json::Value);

/// A `call_agent` call's arguments.
pub fn delegate(agent: &str, task: &str) -> serde_json::Value {
    serde_json::json!({"agent": agent, "task": task})
}

/// An Anthropic response with `text` (omitted when empty) and `tool_use` blocks.
pub fn anthropic_tool_use(text: &str, calls: &[Call], input: u64, output: u64) -> String {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(serde_json::json!({"type": "text", "text": text}));
    }
    for (id, name, args) in calls {
        content
            .push(serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": args}));
    }
    serde_json::json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
    .to_string()
}

/// An OpenAI response whose message has `tool_calls` (arguments as a JSON
/// string, as the API sends them) and null content.
pub fn openai_tool_calls(calls: &[Call], input: u64, output: u64) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, name, args)| {
            serde_json::json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()}
            })
        })
        .collect();
    serde_json::json!({
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": calls, "refusal": null},
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}

/// An Ollama response whose message has `tool_calls` (object arguments, no ids).
pub fn ollama_tool_calls(calls: &[Call], input: u64, output: u64) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(_, name, args)| serde_json::json!({"function": {"name": name, "arguments": args}}))
        .collect();
    serde_json::json!({
        "model": "llama3.1",
        "created_at": "2026-11-23T10:00:00.000000Z",
        "message": {"role": "assistant", "content": "", "tool_calls": calls},
        "done_reason": "stop",
        "done": true,
        "prompt_eval_count": input,
        "eval_count": output
    })
    .to_string()
}

impl Recorded {
    /// The system prompt, in any of the three wire formats (Anthropic's
    /// a string, or text blocks when it carries a cache mark).
    pub fn system_prompt(&self) -> String {
        let body = self.json();
        if let Some(s) = body["system"].as_str().or(body["instructions"].as_str()) {
            return s.to_string();
        }
        if let Some(blocks) = body["system"].as_array() {
            return blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        }
        match body["messages"].get(0) {
            Some(m) if m["role"] == "system" => m["content"].as_str().unwrap_or("").to_string(),
            _ => String::new(),
        }
    }

    /// Which agent sent the request, when every agent's system prompt
    /// starts `You are <name>.` (as the sub-agent tests and the bench write
    /// them); `?` otherwise.
    pub fn who(&self) -> String {
        self.system_prompt()
            .strip_prefix("You are ")
            .and_then(|s| s.split_once('.'))
            .map_or("?", |(name, _)| name)
            .to_string()
    }

    /// The messages array of the request body (the Responses API's
    /// `input` items).
    pub fn messages(&self) -> Vec<serde_json::Value> {
        let body = self.json();
        body["messages"]
            .as_array()
            .or(body["input"].as_array())
            .cloned()
            .unwrap_or_default()
    }

    /// The text of the first user message, in any of the three wire
    /// formats (a string, or Anthropic's text blocks when it carries a
    /// cache mark).
    pub fn first_user_text(&self) -> String {
        let messages = self.messages();
        let Some(content) = messages
            .iter()
            .find(|m| m["role"] == "user")
            .map(|m| &m["content"])
        else {
            return String::new();
        };
        match content.as_array() {
            Some(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
            None => content.as_str().unwrap_or("").to_string(),
        }
    }

    /// The `role: tool` messages of an OpenAI or Ollama request, in order.
    pub fn tool_messages(&self) -> Vec<serde_json::Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["role"] == "tool")
            .collect()
    }

    /// The `tool_result` blocks of an Anthropic request, in order.
    pub fn anthropic_tool_results(&self) -> Vec<serde_json::Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array().cloned())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    /// The contents of every tool result in the request, in order, in any
    /// of the three wire formats.
    pub fn tool_result_texts(&self) -> Vec<String> {
        let mut results = self.tool_messages();
        results.extend(self.anthropic_tool_results());
        let outputs = self.function_call_outputs().into_iter();
        results
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .chain(outputs.map(|o| o["output"].as_str().unwrap_or("").to_string()))
            .collect()
    }

    /// Whether the last message carries tool results (a later turn).
    pub fn has_tool_results(&self) -> bool {
        self.messages().iter().any(|m| {
            m["role"] == "tool"
                || m["type"] == "function_call_output"
                || m["content"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
        })
    }
}

/// A Converse API answer (Amazon Bedrock) of `text`, as its reference
/// documents one.
pub fn bedrock_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": input, "outputTokens": output, "totalTokens": input + output},
        "metrics": {"latencyMs": 412}
    })
    .to_string()
}

/// A Converse API answer calling `name` with `input` (id `tooluse_1`).
pub fn bedrock_tool_use(name: &str, input: serde_json::Value) -> String {
    serde_json::json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": input}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 20, "outputTokens": 9, "totalTokens": 29},
        "metrics": {"latencyMs": 380}
    })
    .to_string()
}

/// A Responses API answer (OpenAI's, OpenCode Zen's `gpt-*` route) of
/// `text`, after a reasoning item, as its reference documents one.
pub fn responses_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ],
        "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}
