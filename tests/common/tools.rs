//! A config home for the built-in tools (design chapter 8): an agent
//! `hands` with tools, a workdir, and secrets beside it where a tool must
//! not reach; and a fake that makes the model's calls.

use std::path::PathBuf;
use std::process::Output;

use super::home::{Home, with_peak_rss};
use super::server::FakeServer;
use super::wire::{Call, P};

/// A home whose agent `hands` lists `tools` (and `extra` TOML) and works in
/// `<home>/work`, which holds `notes.txt`; a secret sits beside the workdir
/// and under `~/.ssh`.
pub struct ToolsSetup {
    pub home: Home,
    pub work: PathBuf,
}

impl ToolsSetup {
    pub fn new(p: P, tools: &[&str], extra: &str) -> ToolsSetup {
        let home = Home::new();
        let work = home.dir.path().join("work");
        std::fs::create_dir_all(work.join("src")).unwrap();
        std::fs::write(work.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
        std::fs::write(
            work.join("src/lib.rs"),
            "pub fn answer() -> u32 {\n    42\n}\n",
        )
        .unwrap();
        std::fs::write(home.dir.path().join("secret.txt"), "TOP-SECRET-OUTSIDE").unwrap();
        std::fs::create_dir_all(home.dir.path().join(".ssh")).unwrap();
        std::fs::write(
            home.dir.path().join(".ssh/id_ed25519"),
            "PRIVATE-KEY-MATERIAL",
        )
        .unwrap();
        home.config("[providers.openai]\napi_key = \"sk-config-file-secret-123456\"\n");
        let list: Vec<String> = tools.iter().map(|t| format!("\"{t}\"")).collect();
        home.named_agent(
            "hands",
            p.model(),
            &format!(
                "workdir = \"{}\"\ntools = [{}]\n{extra}",
                work.display(),
                list.join(", ")
            ),
        );
        ToolsSetup { home, work }
    }

    /// Runs `hands` against a fake whose first answer makes `calls` and
    /// whose later answers end the run; returns the output and what the
    /// model got back for each call, in call order.
    pub fn run(&self, p: P, calls: &[Call]) -> (Output, Vec<String>, FakeServer) {
        let (out, results, server, _) = self.run_measured(p, calls);
        (out, results, server)
    }

    /// [`ToolsSetup::run`], with the peak resident memory of that axe, in
    /// KiB (see [`with_peak_rss`]).
    pub fn run_measured(&self, p: P, calls: &[Call]) -> (Output, Vec<String>, FakeServer, u64) {
        self.run_with(p, calls, &[])
    }

    /// [`ToolsSetup::run_measured`] with `env` added to axe's environment.
    pub fn run_with(
        &self,
        p: P,
        calls: &[Call],
        env: &[(&str, &str)],
    ) -> (Output, Vec<String>, FakeServer, u64) {
        let first = p.tool_calls(calls);
        let done = p.text("done");
        let server = FakeServer::tool_loop(first, done);
        let (out, peak_kib) = with_peak_rss(
            self.home
                .axe()
                .env(key_var(p), "sk-test-key-0123456789")
                .env(p.base_url_var(), &server.url)
                .env("OPENAI_API_KEY_UNRELATED", "x")
                .envs(env.iter().copied())
                .args(["run", "hands", "-p", "go", "--timeout", "60"]),
        );
        let results = server
            .requests()
            .iter()
            .find(|r| r.has_tool_results())
            .map(|r| r.tool_result_texts())
            .unwrap_or_default();
        (out, results, server, peak_kib)
    }
}

fn key_var(p: P) -> &'static str {
    match p {
        P::Anthropic => "ANTHROPIC_API_KEY",
        P::OpenAi | P::Responses => "OPENAI_API_KEY",
        P::Ollama => "OLLAMA_API_KEY",
    }
}
