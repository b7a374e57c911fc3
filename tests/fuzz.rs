//! Seeded mutation fuzzing, bounded so that it runs in `cargo test`: the
//! three providers' response parsers, the error-body reader, and the agent
//! and config TOML loaders get thousands of mutants of real inputs (the
//! fixtures, the documented response shapes, the scaffold). Every mutant must
//! give a value or an error, never a panic. The generator is seeded, so a
//! failure names the seed and the case that reproduce it.
//!
//! `cargo fuzz` (libFuzzer) needs a nightly toolchain; this keeps the same
//! guarantee on the stable one, at a fixed cost per run.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use axe::provider::{anthropic, error_detail, ollama, openai};

/// Mutants per seed input.
const MUTANTS: usize = 1500;
/// The generator's seed; change it to explore further.
const SEED: u64 = 0x00A7_E5EE_D000_0001;

/// xorshift64*: small, fast, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Fragments that make structured inputs interesting.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "null",
    "true",
    "0",
    "-1",
    "1e999",
    "\\u0000",
    "\\ud800",
    "\"tool_calls\":",
    "\"content\":",
    "\"function\":",
    "\"arguments\":",
    "\"input\":",
    "\"type\":\"tool_use\"",
    "\"message\":",
    "\"choices\":[",
    "\"usage\":",
    "=",
    "[[",
    "]]",
    "\n",
    "'''",
    "\"\"\"",
    "#",
    "[sub_agents_config]",
    "max_depth = ",
    "\u{feff}",
    "\u{1F600}",
];

/// One mutant of `input`: 1 to 4 edits (flip, delete, insert a token,
/// duplicate a slice, truncate), kept on char boundaries.
fn mutate(rng: &mut Rng, input: &str) -> String {
    let mut s = input.to_string();
    for _ in 0..1 + rng.below(4) {
        let cut = |rng: &mut Rng, s: &str| {
            let mut i = rng.below(s.len() + 1);
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        match rng.below(5) {
            0 if !s.is_empty() => {
                let i = cut(rng, &s);
                let ch = (b' ' + rng.below(95) as u8) as char;
                s.insert(i, ch);
                let j = cut(rng, &s);
                if let Some(c) = s[j..].chars().next() {
                    s.replace_range(j..j + c.len_utf8(), "");
                }
            }
            1 => {
                let a = cut(rng, &s);
                let b = cut(rng, &s);
                let (a, b) = (a.min(b), a.max(b));
                let mut end = b.min(a + 1 + rng.below(16)).max(a);
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                s.replace_range(a..end, "");
            }
            2 => {
                let i = cut(rng, &s);
                s.insert_str(i, TOKENS[rng.below(TOKENS.len())]);
            }
            3 => {
                let a = cut(rng, &s);
                let b = cut(rng, &s);
                let (a, b) = (a.min(b), a.max(b));
                let piece = s[a..b].to_string();
                let i = cut(rng, &s);
                s.insert_str(i, &piece);
            }
            _ => {
                let i = cut(rng, &s);
                s.truncate(i);
            }
        }
    }
    s
}

/// Feeds `MUTANTS` mutants of every seed to `target`; panics with the seed
/// and case of the first input that made it panic. Returns the executions.
fn fuzz(name: &str, seeds: &[String], target: impl Fn(&str)) -> usize {
    let mut rng = Rng(SEED);
    let mut runs = 0;
    for (n, seed) in seeds.iter().enumerate() {
        // The unmutated seed, and shapes that stress recursion and size.
        for extra in [seed.clone(), "[".repeat(10_000), "{\"a\":".repeat(5_000)] {
            let ok = catch_unwind(AssertUnwindSafe(|| target(&extra)));
            assert!(ok.is_ok(), "{name}: seed {n} itself panicked");
            runs += 1;
        }
        for case in 0..MUTANTS {
            let input = mutate(&mut rng, seed);
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                panic!("{name}: panic on seed {n}, case {case} (SEED {SEED:#x}):\n{input}");
            }
            runs += 1;
        }
    }
    eprintln!("fuzz {name}: {runs} executions, no panic");
    runs
}

fn fixtures(prefix: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/responses");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {prefix} fixtures");
    out
}

#[test]
fn fuzz_anthropic_response_parser_never_panics() {
    let mut seeds = fixtures("anthropic_");
    seeds.push(
        r#"{"content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"call_agent","input":{"agent":"x","task":"y","n":[1,{"k":null}]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}"#.into(),
    );
    let runs = fuzz("anthropic::parse", &seeds, |s| {
        let _ = anthropic::parse(s);
    });
    assert!(runs > 5_000);
}

#[test]
fn fuzz_openai_response_parser_never_panics() {
    let seeds = fixtures("openai_");
    let runs = fuzz("openai::parse", &seeds, |s| {
        let _ = openai::parse(s);
    });
    assert!(runs > 15_000);
}

#[test]
fn fuzz_ollama_response_parser_never_panics() {
    let seeds = fixtures("ollama_");
    let runs = fuzz("ollama::parse", &seeds, |s| {
        let _ = ollama::parse(s);
    });
    assert!(runs > 4_000);
}

#[test]
fn fuzz_error_body_reader_never_panics() {
    let mut seeds = fixtures("openai_error");
    seeds.push("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>".into());
    seeds.push(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    );
    let runs = fuzz("error_detail", &seeds, |s| {
        let d = error_detail(s);
        // The message is bounded whatever the body.
        assert!(d.message.chars().count() <= 301, "{}", d.message.len());
    });
    assert!(runs > 10_000);
}

#[test]
fn fuzz_agent_toml_loader_never_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<String> = std::fs::read_dir(dir.join("fixtures/agents"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    seeds.sort();
    seeds.push(axe::agent::scaffold("fuzzed"));
    seeds.push(std::fs::read_to_string(dir.join("examples/axe/agents/lead.toml")).unwrap());
    let runs = fuzz("agent::parse + validate", &seeds, |s| {
        if let Ok(a) = axe::agent::parse("fuzzed", Path::new("fuzzed.toml"), s) {
            let _ = a.config.validate();
            let _ = axe::agent::show(&a);
        }
    });
    assert!(runs > 8_000);
}

#[test]
fn fuzz_config_toml_loader_never_panics() {
    let seeds = vec![
        "[providers.openai]\napi_key = \"sk-x\"\nbase_url = \"http://127.0.0.1:1\"\n\n[retry]\nmax_retries = 2\ninitial_delay_ms = 500\nmax_delay_ms = 30000\n".to_string(),
        "[providers.anthropic]\napi_key = \"a\"\n[providers.ollama]\nbase_url = \"http://h\"\n".to_string(),
    ];
    let runs = fuzz("config.toml", &seeds, |s| {
        let _ = axe::tomlfile::parse::<axe::config::GlobalConfig>(s);
    });
    assert!(runs > 2_000);
}
