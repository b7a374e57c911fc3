//! A sub-agent whose file names no `model` runs on its caller's (design
//! D21): across levels, across providers, after `--model`, and per caller
//! when two callers on different models share it. A top-level agent without
//! a model needs `--model`.

use std::process::Command;
use std::sync::Arc;

use crate::common::*;

/// Whom each agent delegates to, once, in its first turn.
type Plan = Arc<Vec<(&'static str, Vec<&'static str>)>>;

/// The calls `req`'s agent makes per `plan`, or None when it answers: a
/// leaf, or a caller that has its results (it answers with them joined).
fn calls_of(plan: &Plan, req: &Recorded) -> Option<Vec<serde_json::Value>> {
    if req.has_tool_results() {
        return None;
    }
    let who = req.who();
    let (_, subs) = plan.iter().find(|(name, _)| *name == who)?;
    Some(subs.iter().map(|s| delegate(s, "go")).collect())
}

/// What an agent answers: its name, the model the request named and, for
/// a caller, what its sub-agents returned.
fn answer(req: &Recorded) -> String {
    let mut text = format!(
        "{}@{}",
        req.who(),
        req.json()["model"].as_str().unwrap_or("?")
    );
    for result in req.tool_result_texts() {
        text.push_str(&format!(" [{result}]"));
    }
    text
}

fn ids(calls: &[serde_json::Value]) -> Vec<Call<'static>> {
    calls
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let id: &'static str = Box::leak(format!("c{i}").into_boxed_str());
            (id, "call_agent", args.clone())
        })
        .collect()
}

fn openai(plan: &Plan) -> FakeServer {
    let plan = plan.clone();
    FakeServer::route(move |req| match calls_of(&plan, req) {
        Some(calls) => Reply::Json(200, openai_tool_calls(&ids(&calls), 1, 1)),
        None => Reply::Json(200, openai_text(&answer(req), 1, 1)),
    })
}

fn anthropic(plan: &Plan) -> FakeServer {
    let plan = plan.clone();
    FakeServer::route(move |req| match calls_of(&plan, req) {
        Some(calls) => Reply::Json(200, anthropic_tool_use("", &ids(&calls), 1, 1)),
        None => Reply::Json(200, anthropic_text(&answer(req), 1, 1)),
    })
}

fn ollama(plan: &Plan) -> FakeServer {
    let plan = plan.clone();
    FakeServer::route(move |req| match calls_of(&plan, req) {
        Some(calls) => Reply::Json(200, ollama_tool_calls(&ids(&calls), 1, 1)),
        None => Reply::Json(200, ollama_text(&answer(req), 1, 1)),
    })
}

/// The three fakes, and `axe` pointed at them with a key for each.
struct World {
    home: Home,
    openai: FakeServer,
    anthropic: FakeServer,
    ollama: FakeServer,
}

impl World {
    fn new(plan: &[(&'static str, Vec<&'static str>)]) -> World {
        let plan: Plan = Arc::new(plan.to_vec());
        World {
            home: Home::new(),
            openai: openai(&plan),
            anthropic: anthropic(&plan),
            ollama: ollama(&plan),
        }
    }

    /// Agent `name` on `model` (None: no model line) calling `subs`.
    fn agent(&self, name: &str, model: Option<&str>, subs: &[&str]) {
        let subs: Vec<String> = subs.iter().map(|s| format!("\"{s}\"")).collect();
        let model = model.map_or(String::new(), |m| format!("model = \"{m}\"\n"));
        self.home.agent(
            name,
            &format!(
                "name = \"{name}\"\n{model}system_prompt = \"You are {name}.\"\nsub_agents = [{}]\n",
                subs.join(", ")
            ),
        );
    }

    fn axe(&self) -> Command {
        self.home.axe_on(&[
            (P::OpenAi, &self.openai),
            (P::Anthropic, &self.anthropic),
            (P::Ollama, &self.ollama),
        ])
    }

    /// Who sent each request to `server`, in order, as `name@model`.
    fn seen(server: &FakeServer) -> Vec<String> {
        let mut seen: Vec<String> = server
            .requests()
            .iter()
            .map(|r| format!("{}@{}", r.who(), r.json()["model"].as_str().unwrap_or("?")))
            .collect();
        seen.sort();
        seen.dedup();
        seen
    }
}

#[test]
fn three_levels_without_a_model_run_on_the_top_level_agents_model() {
    let w = World::new(&[("lead", vec!["mid"]), ("mid", vec!["leaf"])]);
    w.agent("lead", Some("openai/gpt-4o"), &["mid"]);
    w.agent("mid", None, &["leaf"]);
    w.agent("leaf", None, &[]);
    let out = w.axe().args(["run", "lead", "-p", "go"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        "lead@gpt-4o [mid@gpt-4o [leaf@gpt-4o]]"
    );
    assert_eq!(
        World::seen(&w.openai),
        ["lead@gpt-4o", "leaf@gpt-4o", "mid@gpt-4o"]
    );
    assert!(w.anthropic.requests().is_empty());
    assert!(w.ollama.requests().is_empty());
}

#[test]
fn inheritance_crosses_providers_and_stops_at_an_agent_that_names_its_model() {
    // lead (Anthropic) -> mid (inherits: Anthropic) -> own (OpenAI) -> leaf
    // (inherits: OpenAI, its caller's, not the root's).
    let w = World::new(&[
        ("lead", vec!["mid"]),
        ("mid", vec!["own"]),
        ("own", vec!["leaf"]),
    ]);
    w.agent("lead", Some("anthropic/claude-haiku-4-5"), &["mid"]);
    w.agent("mid", None, &["own"]);
    w.agent("own", Some("openai/gpt-4o-mini"), &["leaf"]);
    w.agent("leaf", None, &[]);
    let out = w.axe().args(["run", "lead", "-p", "go"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        World::seen(&w.anthropic),
        ["lead@claude-haiku-4-5", "mid@claude-haiku-4-5"]
    );
    assert_eq!(
        World::seen(&w.openai),
        ["leaf@gpt-4o-mini", "own@gpt-4o-mini"]
    );
}

#[test]
fn model_on_the_command_line_moves_every_agent_that_names_none() {
    let w = World::new(&[("lead", vec!["free", "pinned"])]);
    w.agent("lead", Some("openai/gpt-4o"), &["free", "pinned"]);
    w.agent("free", None, &[]);
    w.agent("pinned", Some("anthropic/claude-haiku-4-5"), &[]);
    let out = w
        .axe()
        .args(["run", "lead", "--model", "ollama/qwen3", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(World::seen(&w.ollama), ["free@qwen3", "lead@qwen3"]);
    assert_eq!(World::seen(&w.anthropic), ["pinned@claude-haiku-4-5"]);
    assert!(w.openai.requests().is_empty());
}

#[test]
fn one_agent_without_a_model_runs_on_each_callers_model_in_the_same_run() {
    // `shared` is read once per run (design D20), but called by lead (OpenAI)
    // and by other (Anthropic) it runs on each caller's model.
    let w = World::new(&[("lead", vec!["shared", "other"]), ("other", vec!["shared"])]);
    w.agent("lead", Some("openai/gpt-4o"), &["shared", "other"]);
    w.agent("other", Some("anthropic/claude-haiku-4-5"), &["shared"]);
    w.agent("shared", None, &[]);
    let out = w.axe().args(["run", "lead", "-p", "go"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(World::seen(&w.openai), ["lead@gpt-4o", "shared@gpt-4o"]);
    assert_eq!(
        World::seen(&w.anthropic),
        ["other@claude-haiku-4-5", "shared@claude-haiku-4-5"]
    );
}

#[test]
fn a_top_level_agent_without_a_model_needs_model_on_the_command_line() {
    let w = World::new(&[]);
    w.agent("solo", None, &[]);
    let out = w.axe().args(["run", "solo", "-p", "go"]).output().unwrap();
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out),
        format!(
            "axe: agent config missing required field: model (at top level an agent needs its \
             own model or --model; only a sub-agent inherits its caller's) (in {})\n",
            w.home.config_dir().join("agents/solo.toml").display()
        )
    );
    assert!(w.openai.requests().is_empty());

    let out = w
        .axe()
        .args(["run", "solo", "--model", "openai/gpt-4o", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), "solo@gpt-4o");
}

#[test]
fn agents_show_says_the_model_is_inherited() {
    let w = World::new(&[]);
    w.agent("free", None, &[]);
    let out = w.axe().args(["agents", "show", "free"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("Model"))
        .map(str::to_string);
    assert_eq!(
        line.as_deref()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")),
        Some("Model: (inherited from the caller)".to_string())
    );
}
