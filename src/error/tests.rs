//! The error type's unit tests: every variant's exit code and message.

use super::*;

#[test]
fn every_way_the_process_ends_has_its_documented_status() {
    let statuses = [
        (Code::Success, 0),
        (Code::General, 1),
        (Code::Config, 2),
        (Code::Api, 3),
        (Code::Budget, 4),
        (Code::Output, 5),
        (Code::Panic, 1),
        (Code::HungUp, 129),
        (Code::Interrupted, 130),
        (Code::Terminated, 143),
    ];
    for (code, status) in statuses {
        assert_eq!(code.status(), status, "{code:?}");
    }
}

/// Each error prints its documented text and has its exit code (design
/// §2.10).
fn each_prints(cases: impl IntoIterator<Item = (Error, &'static str, Code)>) {
    for (err, text, code) in cases {
        assert_eq!(err.to_string(), text);
        assert_eq!(err.exit_code(), code, "{text}");
    }
}

fn path() -> PathBuf {
    PathBuf::from("/c/agents/a.toml")
}

#[test]
fn agent_and_config_file_errors_print_the_documented_message_and_exit_code() {
    each_prints([
        (
            Error::AgentNotFound {
                name: "ghost".into(),
                searched: Vec::new(),
            },
            "agent config not found: ghost",
            Code::Config,
        ),
        (
            Error::AgentNotFound {
                name: "ghost".into(),
                searched: vec!["/w/axe/agents".into(), "/c/agents".into()],
            },
            "agent config not found: ghost (looked in /w/axe/agents, /c/agents)",
            Code::Config,
        ),
        (
            Error::InAgentFile {
                path: path(),
                error: Box::new(Error::config("timeout must be a positive integer")),
            },
            "timeout must be a positive integer (in /c/agents/a.toml)",
            Code::Config,
        ),
        (
            Error::InvalidAgentName {
                name: "../x".into(),
            },
            "invalid agent name \"../x\": use only letters, digits, '.', '_' and '-'",
            Code::Config,
        ),
        (
            Error::Unreadable {
                path: path(),
                why: "not a regular file".into(),
            },
            "cannot read /c/agents/a.toml: not a regular file",
            Code::Config,
        ),
        (
            Error::InvalidAgentFile {
                path: path(),
                why: "expected `=`".into(),
            },
            "invalid agent config /c/agents/a.toml: expected `=`",
            Code::Config,
        ),
        (
            Error::InvalidConfigFile {
                path: "/c/config.toml".into(),
                why: "bad".into(),
            },
            "invalid config /c/config.toml: bad",
            Code::Config,
        ),
        (
            Error::NoModel,
            "agent config missing required field: model (at top level an agent needs its own \
             model or --model; only a sub-agent inherits its caller's)",
            Code::Config,
        ),
    ]);
}

#[test]
fn skill_workdir_and_glob_errors_print_the_documented_message_and_exit_code() {
    each_prints([
        (
            Error::SkillNotFound {
                path: "/s/SKILL.md".into(),
            },
            "skill not found: /s/SKILL.md",
            Code::Config,
        ),
        (
            Error::SkillUnreadable {
                path: "/s/SKILL.md".into(),
                why: "not a regular file".into(),
            },
            "cannot read skill /s/SKILL.md: not a regular file",
            Code::Config,
        ),
        (
            Error::WorkdirNotFound { path: "/w".into() },
            "workdir does not exist: /w",
            Code::Config,
        ),
        (
            Error::WorkdirNotDirectory { path: "/w".into() },
            "workdir is not a directory: /w",
            Code::Config,
        ),
        (
            Error::InvalidGlob {
                pattern: "src/[".into(),
                why: "unclosed character class; missing ']'".into(),
            },
            "invalid glob \"src/[\": unclosed character class; missing ']'",
            Code::Config,
        ),
    ]);
}

#[test]
fn provider_and_timeout_errors_print_the_documented_message_and_exit_code() {
    each_prints([
        (
            Error::InvalidBaseUrl {
                provider: "openai".into(),
                url: "ftp://h".into(),
            },
            "invalid base URL for provider \"openai\": \"ftp://h\" (expected http:// or https://)",
            Code::Config,
        ),
        (
            Error::MissingKey {
                provider: "anthropic".into(),
                var: "ANTHROPIC_API_KEY".into(),
            },
            "API key for provider \"anthropic\" is not configured (set ANTHROPIC_API_KEY or add \
             it to config.toml)",
            Code::Api,
        ),
        (
            Error::TimedOut {
                secs: 1,
                during: During::ReadingStdin,
            },
            "timeout after 1s while reading stdin",
            Code::Api,
        ),
        (
            Error::TimedOut {
                secs: 7,
                during: During::ReadingContextFiles,
            },
            "timeout after 7s (while reading context files)",
            Code::Api,
        ),
        (
            Error::TimedOut {
                secs: 9,
                during: During::CheckingAnswer,
            },
            "timeout after 9s (while checking the answer against the output schema)",
            Code::Api,
        ),
        (
            Error::Declined {
                provider: "openai".into(),
                what: "the model refused to answer: no".into(),
            },
            "openai: the model refused to answer: no",
            Code::General,
        ),
    ]);
}
