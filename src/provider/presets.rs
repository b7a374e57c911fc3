//! Providers known by name beyond the three wires' own (design §4.12): each
//! speaks one of the wire formats at its own base URL, with its own key
//! variable, so that `groq/llama-3.3-70b` needs no config.toml at all.
//! `[providers.<name>]` tables with `kind` add more, and may override any
//! of these.

use super::Wire;

/// A provider axe knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    /// The wire it speaks.
    pub wire: Wire,
    pub base_url: &'static str,
    /// The environment variable its key is read from.
    pub key_var: &'static str,
}

/// The presets, checked against each vendor's documentation of its
/// OpenAI- or Anthropic-compatible endpoint. `google` is the Go original's
/// name for Gemini (with its key variable, `GEMINI_API_KEY`), `gemini` the
/// same endpoint under the name users look for.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "google",
        wire: Wire::OpenAi,
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        key_var: "GEMINI_API_KEY",
    },
    Preset {
        name: "gemini",
        wire: Wire::OpenAi,
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        key_var: "GEMINI_API_KEY",
    },
    Preset {
        name: "openrouter",
        wire: Wire::OpenAi,
        base_url: "https://openrouter.ai/api/v1",
        key_var: "OPENROUTER_API_KEY",
    },
    Preset {
        name: "groq",
        wire: Wire::OpenAi,
        base_url: "https://api.groq.com/openai/v1",
        key_var: "GROQ_API_KEY",
    },
    Preset {
        name: "deepseek",
        wire: Wire::OpenAi,
        base_url: "https://api.deepseek.com/v1",
        key_var: "DEEPSEEK_API_KEY",
    },
    Preset {
        name: "mistral",
        wire: Wire::OpenAi,
        base_url: "https://api.mistral.ai/v1",
        key_var: "MISTRAL_API_KEY",
    },
    Preset {
        name: "together",
        wire: Wire::OpenAi,
        base_url: "https://api.together.xyz/v1",
        key_var: "TOGETHER_API_KEY",
    },
    Preset {
        name: "xai",
        wire: Wire::OpenAi,
        base_url: "https://api.x.ai/v1",
        key_var: "XAI_API_KEY",
    },
    // The Go original's other OpenAI-compatible providers, with its base
    // URLs and key variables. OpenCode's Zen gateway: its Chat Completions
    // endpoint, but for the models of its [`ROUTES`].
    Preset {
        name: "opencode",
        wire: Wire::OpenAi,
        base_url: "https://opencode.ai/zen",
        key_var: "OPENCODE_API_KEY",
    },
    Preset {
        name: "atlascloud",
        wire: Wire::OpenAi,
        base_url: "https://api.atlascloud.ai/v1",
        key_var: "ATLASCLOUD_API_KEY",
    },
    Preset {
        name: "requesty",
        wire: Wire::OpenAi,
        base_url: "https://router.requesty.ai/v1",
        key_var: "REQUESTY_API_KEY",
    },
    Preset {
        name: "edenai",
        wire: Wire::OpenAi,
        base_url: "https://api.edenai.run/v3",
        key_var: "EDENAI_API_KEY",
    },
    Preset {
        name: "minimax",
        wire: Wire::Anthropic,
        base_url: "https://api.minimax.io/anthropic",
        key_var: "MINIMAX_API_KEY",
    },
];

/// Models a preset serves on another wire than its own, by the start of
/// their names: OpenCode's Zen gateway serves `claude-*` on Anthropic's
/// Messages API (`{base}/v1/messages`) and `gpt-*` on OpenAI's Responses
/// API (`{base}/v1/responses`), as the Go original routes them; its
/// Chat Completions endpoint serves neither.
const ROUTES: &[(&str, &str, Wire)] = &[
    ("opencode", "claude-", Wire::Anthropic),
    ("opencode", "gpt-", Wire::Responses),
];

impl Preset {
    /// The wire `model` is reached on through this preset.
    pub fn wire_for(&self, model: &str) -> Wire {
        ROUTES
            .iter()
            .find(|(name, prefix, _)| *name == self.name && model.starts_with(prefix))
            .map_or(self.wire, |(_, _, wire)| *wire)
    }
}

/// Whether the provider `name` says what each response cost, in USD, in
/// its usage (OpenRouter's `usage.cost`, in every response since it made
/// usage accounting automatic): its cost is then the bill itself, where no
/// price table could be, since its routes' prices differ (design §7.8).
pub fn reports_cost(name: &str) -> bool {
    name == "openrouter"
}

/// OpenAI's models that answer only on the Responses API: the names the
/// `openai` package (3.57.0, `types/shared/responses_model.py`) adds to
/// its Chat Completions models for `responses.create`, each with its
/// dated snapshots. `openai/<one of these>` goes to `/v1/responses`
/// unless a `[providers.openai]` table names the wire (design §4.12).
pub const RESPONSES_ONLY: &[&str] = &[
    "o1-pro",
    "o3-pro",
    "o3-deep-research",
    "o4-mini-deep-research",
    "computer-use-preview",
    "gpt-5-codex",
    "gpt-5-pro",
    "gpt-5.1-codex-max",
    "gpt-5.5-pro",
];

/// The wire `model` is reached on through the provider whose own name is
/// `wire`'s: OpenAI's Responses-only models on the Responses API.
pub fn own_wire_for(wire: Wire, model: &str) -> Wire {
    if wire == Wire::OpenAi && responses_only(model) {
        Wire::Responses
    } else {
        wire
    }
}

/// Whether `model` is one of [`RESPONSES_ONLY`] or a dated snapshot of
/// one (`o3-pro-2025-06-10`).
fn responses_only(model: &str) -> bool {
    RESPONSES_ONLY.iter().any(|m| {
        model.strip_prefix(m).is_some_and(|rest| {
            rest.is_empty()
                || (rest.len() == 11
                    && rest.starts_with('-')
                    && rest[1..].bytes().all(|b| b.is_ascii_digit() || b == b'-'))
        })
    })
}

/// The preset named `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The environment variable a provider's key is read from: the preset's,
/// else `<NAME>_API_KEY` (upper case, `-` and `.` as `_`).
pub fn key_var(name: &str) -> String {
    match preset(name) {
        Some(p) => p.key_var.to_string(),
        None => format!("{}_API_KEY", env_name(name)),
    }
}

/// `name` as it appears in an environment variable's name.
pub fn env_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '-' | '.' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// Whether `name` may name a provider: what a `[providers.<name>]` table
/// and an environment variable can both carry.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_a_valid_name_and_none_is_a_wire() {
        for p in PRESETS {
            assert!(valid_name(p.name), "{}", p.name);
            assert!(Wire::parse(p.name).is_none(), "{}", p.name);
            assert!(p.base_url.starts_with("https://"), "{}", p.name);
        }
    }

    #[test]
    fn only_openais_responses_only_models_and_their_snapshots_go_there() {
        for m in ["o3-pro", "o3-pro-2025-06-10", "gpt-5-pro", "gpt-5-codex"] {
            assert_eq!(own_wire_for(Wire::OpenAi, m), Wire::Responses, "{m}");
        }
        for m in ["gpt-5", "o3", "gpt-5-codex-mini", "o3-pro-max", "gpt-4o"] {
            assert_eq!(own_wire_for(Wire::OpenAi, m), Wire::OpenAi, "{m}");
        }
        assert_eq!(own_wire_for(Wire::Ollama, "o3-pro"), Wire::Ollama);
    }

    #[test]
    fn key_variables_come_from_the_preset_else_the_name() {
        assert_eq!(key_var("google"), "GEMINI_API_KEY");
        assert_eq!(key_var("groq"), "GROQ_API_KEY");
        assert_eq!(key_var("my-vllm.local"), "MY_VLLM_LOCAL_API_KEY");
    }
}
