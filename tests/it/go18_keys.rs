//! Every key, flag and environment variable of the Go original's 1.8
//! documentation is read by axe (issue 36, design D26): the list is
//! fixtures/go18/keys.txt (each with the page and commit it comes from),
//! an agent file using every agent-file key (fixtures/go18/every-key.toml)
//! dry-runs with no "unknown key" warning, each flag is accepted, each
//! config.toml key and each variable is shown to take effect on a fake.
//! The names axe reads differently are marked `differs` in the list, and
//! each is explained by name in docs/guide/agents-from-other-tools.md.

use std::path::Path;

use serde_json::json;

use crate::common::*;

const LIST: &str = include_str!("../../fixtures/go18/keys.txt");
const EVERY_KEY: &str = include_str!("../../fixtures/go18/every-key.toml");
const GUIDE: &str = include_str!("../../docs/guide/agents-from-other-tools.md");

/// The list's entries of `kind`: (name, differs).
fn entries(kind: &str) -> Vec<(&'static str, bool)> {
    LIST.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f[0] == kind)
        .map(|f| {
            assert!(f.len() >= 3 && f[2].contains('@'), "no source: {f:?}");
            (f[1], f.get(3) == Some(&"differs"))
        })
        .collect()
}

/// The keys `every-key.toml` uses: a top-level key, or `table.key` for a
/// key of a table or of an array of tables.
fn keys_of_the_file() -> Vec<String> {
    let file: toml::Table = toml::from_str(EVERY_KEY).unwrap();
    let mut keys = Vec::new();
    for (k, v) in &file {
        let tables: Vec<&toml::Table> = match v {
            toml::Value::Table(t) => vec![t],
            toml::Value::Array(a) => a.iter().filter_map(|x| x.as_table()).collect(),
            _ => Vec::new(),
        };
        if tables.is_empty() {
            keys.push(k.clone());
        }
        for t in tables {
            keys.extend(t.keys().map(|c| format!("{k}.{c}")));
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// A home with `every-key` (its workdir, skill and sub-agent in place).
fn every_key_home() -> (Home, std::path::PathBuf) {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let skill = home.config_dir().join("skills/code-review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), "Review well.\n").unwrap();
    home.plain_agent("test-runner", "anthropic/claude-sonnet-4-5");
    let text = EVERY_KEY.replace("WORKDIR", &work.display().to_string());
    home.agent("every-key", &text);
    (home, work)
}

fn dry_run(home: &Home, extra: &[&str]) -> std::process::Output {
    home.axe()
        .env("MY_TOKEN", "t0k3n-for-the-headers")
        .env("XDG_CACHE_HOME", home.dir.path().join("cache"))
        .args(["run", "every-key", "--dry-run"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_list_names_every_key_of_the_file_and_each_is_read_without_a_warning() {
    let listed: Vec<String> = entries("key").iter().map(|(k, _)| k.to_string()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        keys_of_the_file(),
        "keys.txt and every-key.toml differ"
    );
    let (home, work) = every_key_home();
    let out = dry_run(&home, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("unknown key"), "{}", stderr(&out));
    assert!(stdout(&out).contains("=== Dry Run ==="), "{}", stdout(&out));
    // A dry run makes no artifact directory.
    assert!(!work.join("out").exists());
}

#[test]
fn what_axe_reads_differently_is_named_in_the_guide() {
    let differs: Vec<&str> = ["key", "env", "flag", "config"]
        .iter()
        .flat_map(|k| entries(k))
        .filter(|(_, d)| *d)
        .map(|(n, _)| n)
        .collect();
    assert!(differs.len() >= 4, "{differs:?}");
    let section = GUIDE
        .split("## The Go original's files")
        .nth(1)
        .expect("the guide's section on the Go original's files");
    for name in differs {
        assert!(
            section.contains(&format!("`{name}`")),
            "{name} is not explained"
        );
    }
}

#[test]
fn every_flag_is_accepted() {
    let (home, work) = every_key_home();
    let skill = home.config_dir().join("skills/code-review/SKILL.md");
    for (flag, _) in entries("flag") {
        let value: Vec<String> = match flag {
            "--model" => vec!["anthropic/claude-haiku-4-5".into()],
            "--skill" => vec![skill.display().to_string()],
            "--workdir" => vec![work.display().to_string()],
            "--timeout" => vec!["30".into()],
            "--max-tokens" => vec!["1000".into()],
            "-p" | "--prompt" => vec!["hello".into()],
            "--agents-dir" => vec![home.config_dir().join("agents").display().to_string()],
            "--artifact-dir" => vec!["elsewhere".into()],
            "--dry-run" | "--verbose" | "-v" | "--json" | "--stream" | "--keep-artifacts" => {
                Vec::new()
            }
            other => panic!("say how {other} is checked"),
        };
        let mut args = vec![flag];
        args.extend(value.iter().map(String::as_str));
        let out = dry_run(&home, &args);
        assert_eq!(code(&out), 0, "{flag}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("Unrecognized"),
            "{flag}: {}",
            stderr(&out)
        );
    }
}

/// A fake speaking each wire, by the path asked: Anthropic's messages,
/// Ollama's chat, Tavily's search, Bedrock's Converse, else OpenAI's.
fn any_wire() -> FakeServer {
    FakeServer::route(|req| {
        let body = if req.path.ends_with("/messages") {
            anthropic_text("ok", 3, 1)
        } else if req.path.ends_with("/api/chat") {
            ollama_text("ok", 3, 1)
        } else if req.path.ends_with("/search") {
            r#"{"query":"x","results":[]}"#.to_string()
        } else if req.path.ends_with("/converse") {
            bedrock_text("ok", 3, 1)
        } else {
            openai_text("ok", 3, 1)
        };
        Reply::Json(200, body)
    })
}

/// Runs agent `a` on `model` with `env`, against a fresh fake; returns the
/// output and the fake.
fn run_with(model: &str, extra: &str, env: &[(&str, &str)]) -> (std::process::Output, FakeServer) {
    let server = any_wire();
    let home = Home::new();
    home.named_agent("a", model, extra);
    let out = home
        .axe()
        .envs(env.iter().map(|(k, v)| (*k, v.replace("URL", &server.url))))
        .env("XDG_CACHE_HOME", home.dir.path().join("cache"))
        .args(["run", "a", "-p", "go"])
        .output()
        .unwrap();
    (out, server)
}

/// Whether some header of the first request carries `secret`.
fn sent(server: &FakeServer, secret: &str) -> bool {
    server.requests()[0]
        .headers
        .iter()
        .any(|(_, v)| v.contains(secret))
}

/// A provider's key and base URL variables, each shown to take effect.
fn provider_vars(key: Option<&str>, base: &str, model: &str) {
    let mut env = vec![(base, "URL")];
    env.extend(key.map(|k| (k, "sk-go18-key-0123456789")));
    let (out, server) = run_with(model, "", &env);
    assert_eq!(code(&out), 0, "{base}: {}", stderr(&out));
    if key.is_some() {
        assert!(sent(&server, "sk-go18-key-0123456789"), "{key:?}");
    }
}

/// Bedrock with `env` (the fake at `AXE_BEDROCK_BASE_URL`): the
/// signature's credential scope says whose key and which region were read.
fn bedrock(env: &[(&str, &str)], key_id: &str, region: &str) -> FakeServer {
    let mut env = env.to_vec();
    env.push(("AXE_BEDROCK_BASE_URL", "URL"));
    let (out, server) = run_with(
        "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0",
        "",
        &env,
    );
    assert_eq!(code(&out), 0, "{env:?}: {}", stderr(&out));
    let auth = server.requests()[0]
        .header("authorization")
        .unwrap_or_default()
        .to_string();
    assert!(auth.contains(&format!("Credential={key_id}/")), "{auth}");
    assert!(
        auth.contains(&format!("/{region}/bedrock/aws4_request")),
        "{auth}"
    );
    server
}

const AKID: (&str, &str) = ("AWS_ACCESS_KEY_ID", "AKIDGO18TEST0001");
const SECRET: (&str, &str) = ("AWS_SECRET_ACCESS_KEY", "go18-secret-0123456789abcdef");

/// How each variable is shown to be read: by name, so that a variable
/// added to the list without a check fails here.
fn check_env(name: &str, home: &Path) {
    match name {
        "ANTHROPIC_API_KEY" | "AXE_ANTHROPIC_BASE_URL" => provider_vars(
            Some("ANTHROPIC_API_KEY"),
            "AXE_ANTHROPIC_BASE_URL",
            "anthropic/claude-sonnet-4-5",
        ),
        "OPENAI_API_KEY" | "AXE_OPENAI_BASE_URL" => provider_vars(
            Some("OPENAI_API_KEY"),
            "AXE_OPENAI_BASE_URL",
            "openai/gpt-4o",
        ),
        "AXE_OLLAMA_BASE_URL" => provider_vars(None, "AXE_OLLAMA_BASE_URL", "ollama/llama3"),
        "OPENCODE_API_KEY" | "AXE_OPENCODE_BASE_URL" => provider_vars(
            Some("OPENCODE_API_KEY"),
            "AXE_OPENCODE_BASE_URL",
            "opencode/qwen3-coder",
        ),
        "ATLASCLOUD_API_KEY" => provider_vars(
            Some(name),
            "AXE_ATLASCLOUD_BASE_URL",
            "atlascloud/qwen/qwen3.8-max",
        ),
        "GEMINI_API_KEY" => {
            provider_vars(Some(name), "AXE_GOOGLE_BASE_URL", "google/gemini-2.0-flash")
        }
        "MINIMAX_API_KEY" => {
            provider_vars(Some(name), "AXE_MINIMAX_BASE_URL", "minimax/MiniMax-M2")
        }
        "TAVILY_API_KEY" | "AXE_WEB_SEARCH_BASE_URL" => web_search_vars(),
        "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" | "AWS_SESSION_TOKEN" | "AWS_REGION" => {
            let token = ("AWS_SESSION_TOKEN", "go18-session-token-0123");
            let s = bedrock(
                &[AKID, SECRET, token, ("AWS_REGION", "eu-west-3")],
                AKID.1,
                "eu-west-3",
            );
            assert_eq!(
                s.requests()[0].header("x-amz-security-token"),
                Some(token.1)
            );
        }
        "AWS_DEFAULT_REGION" | "AXE_BEDROCK_REGION" => {
            bedrock(&[AKID, SECRET, (name, "ap-south-1")], AKID.1, "ap-south-1");
        }
        "AWS_PROFILE" | "AWS_SHARED_CREDENTIALS_FILE" => aws_profile(name, home),
        "AXE_ARTIFACT_DIR" => {
            // Read where the Go original reads it: `${AXE_ARTIFACT_DIR}` in
            // an `[artifacts] dir` (axe sets it for commands and sub-agents,
            // not in its own environment: see the guide).
            let outer = home.join("outer-artifacts");
            let extra = "[artifacts]\nenabled = true\ndir = \"${AXE_ARTIFACT_DIR}/step\"\n";
            let env = [
                ("AXE_ANTHROPIC_BASE_URL", "URL"),
                ("ANTHROPIC_API_KEY", "sk-go18-key-0123456789"),
                (name, outer.to_str().unwrap()),
            ];
            let (out, _) = run_with("anthropic/claude-sonnet-4-5", extra, &env);
            assert_eq!(code(&out), 0, "{}", stderr(&out));
            assert!(outer.join("step").is_dir());
        }
        "XDG_CACHE_HOME" => cache_home(name),
        other => panic!("say how {other} is checked"),
    }
}

/// `TAVILY_API_KEY` and `AXE_WEB_SEARCH_BASE_URL`: a `web_search` call
/// reaches the fake with the key.
fn web_search_vars() {
    let server = any_wire();
    let h = Home::new();
    h.named_agent("finder", P::OpenAi.model(), "tools = [\"web_search\"]\n");
    let first = P::OpenAi.tool_calls(&[("c1", "web_search", json!({"query": "x"}))]);
    let model = FakeServer::tool_loop(first, P::OpenAi.text("done"));
    let out = h
        .axe_on(&[(P::OpenAi, &model)])
        .env("AXE_WEB_SEARCH_BASE_URL", &server.url)
        .env("TAVILY_API_KEY", "tvly-go18-key-0123456789")
        .args(["run", "finder", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = &server.requests()[0];
    assert!(
        req.body.contains("tvly-go18-key") || sent(&server, "tvly-go18-key"),
        "{req:?}"
    );
}

/// `AWS_PROFILE` in `AWS_SHARED_CREDENTIALS_FILE`: that profile's key signs.
fn aws_profile(name: &str, home: &Path) {
    let file = home.join(format!("creds-{name}"));
    std::fs::write(
        &file,
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n\
         [go18]\naws_access_key_id = AKIDPROFILEGO18\naws_secret_access_key = s3cr3t-go18\n",
    )
    .unwrap();
    let env = [
        ("AWS_SHARED_CREDENTIALS_FILE", file.to_str().unwrap()),
        ("AWS_PROFILE", "go18"),
        ("AWS_REGION", "us-east-2"),
    ];
    bedrock(&env, "AKIDPROFILEGO18", "us-east-2");
}

/// `XDG_CACHE_HOME`: where a directory made for the run goes.
fn cache_home(name: &str) {
    let server = any_wire();
    let h = Home::new();
    h.named_agent(
        "a",
        "anthropic/claude-sonnet-4-5",
        "[artifacts]\nenabled = true\n",
    );
    let cache = h.dir.path().join("my-cache");
    let out = h
        .axe_on(&[(P::Anthropic, &server)])
        .env(name, &cache)
        .args(["run", "a", "-p", "go", "--keep-artifacts"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let made = std::fs::read_dir(cache.join("axe/artifacts"))
        .unwrap()
        .count();
    assert_eq!(made, 1);
}

#[test]
fn every_variable_takes_effect() {
    let scratch = Home::new();
    for (name, _) in entries("env") {
        check_env(name, scratch.dir.path());
    }
}

#[test]
fn every_config_key_takes_effect_without_a_warning() {
    assert_eq!(entries("config").len(), 3);
    let server = any_wire();
    let home = Home::new();
    home.config(&format!(
        "[providers.anthropic]\napi_key = \"sk-from-config-0123456789\"\nbase_url = \"{}\"\n\n\
         [providers.bedrock]\nregion = \"sa-east-1\"\n",
        server.url
    ));
    home.named_agent("a", "anthropic/claude-sonnet-4-5", "");
    home.named_agent("b", "bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0", "");
    let out = home.axe().args(["run", "a", "-p", "go"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("unknown"), "{}", stderr(&out));
    assert!(sent(&server, "sk-from-config-0123456789"));
    let out = home
        .axe()
        .env(AKID.0, AKID.1)
        .env(SECRET.0, SECRET.1)
        .env("AXE_BEDROCK_BASE_URL", &server.url)
        .args(["run", "b", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let auth = server.requests()[1]
        .header("authorization")
        .unwrap()
        .to_string();
    assert!(auth.contains("/sa-east-1/bedrock/"), "{auth}");
}
