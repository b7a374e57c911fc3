//! Seeded mutation fuzzing, bounded so that it runs in `cargo test`: the
//! three providers' response parsers and stream decoders (which must also
//! decode a stream cut anywhere as they decode it whole), the one SSE
//! decoder for both its uses (a provider's stream and an MCP server's,
//! alike whatever its cuts and line ends), the error-body reader, the agent
//! and config TOML loaders, the retry-hint header parsers, and whole HTTP
//! responses (mutated heads and bodies, served by a loopback server to the
//! real provider path) get thousands of mutants of real inputs (the
//! fixtures, the documented response shapes, the scaffold, realistic header
//! values). Every mutant must give a value or an error, never a panic; the
//! header parsers and the HTTP path have bounds to keep besides. The
//! generator is seeded, so a failure names the seed and the case that
//! reproduce it.
//!
//! Two environment variables scale a run: `AXE_FUZZ_EXECS`, the executions
//! per fuzz target (by default each target does what keeps `cargo test`
//! quick: about 55,000 executions in all for the body fuzzers, a few
//! thousand HTTP responses), and `AXE_FUZZ_SEED` (decimal or `0x` hex), the
//! generator's seed. `make fuzz` runs every target a million times in
//! release mode. Each target prints its name, executions and time (visible
//! with `--nocapture`).
//!
//! `cargo fuzz` (libFuzzer) needs a nightly toolchain; this keeps the same
//! guarantee on the stable one, at a fixed cost per run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axe::provider::stream::Decoder;
use axe::provider::{
    Message, Provider, Request, RetryPolicy, Wire, anthropic, error_detail, http_date, ollama,
    openai, retry_hint, should_retry_hint,
};

/// Mutants per seed input for the body fuzzers when `AXE_FUZZ_EXECS` is not
/// set (each seed also runs unmutated and with two stress shapes).
const MUTANTS: usize = 1500;
/// The generator's default seed; `AXE_FUZZ_SEED` changes it.
const SEED: u64 = 0x00A7_E5EE_D000_0001;

/// The run's settings, from the environment, read once.
struct Settings {
    /// `AXE_FUZZ_EXECS`: executions per target, when set.
    execs: Option<usize>,
    /// `AXE_FUZZ_SEED`, else [`SEED`].
    seed: u64,
}

fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().replace('_', ""))
                .filter(|v| !v.is_empty())
        };
        let execs = var("AXE_FUZZ_EXECS").map(|v| match v.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!("AXE_FUZZ_EXECS must be a positive whole number, not {v:?}"),
        });
        let seed = var("AXE_FUZZ_SEED").map_or(SEED, |v| {
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("AXE_FUZZ_SEED must be a u64, not {v:?}"))
        });
        Settings { execs, seed }
    })
}

/// Executions for a target: `AXE_FUZZ_EXECS` when set, else `default`.
fn execs_or(default: usize) -> usize {
    settings().execs.unwrap_or(default)
}

/// xorshift64*: small, fast, reproducible.
struct Rng(u64);

impl Rng {
    /// The generator of one case of a target that draws each case afresh,
    /// so that a case reproduces whichever thread runs it.
    fn for_case(seed: u64, case: usize) -> Rng {
        // splitmix64 of the seed and the case: neighbouring cases start far apart.
        let mut z = seed.wrapping_add((case as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

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

    /// True one time in `n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
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

/// Fragments that make header values interesting: numbers at the edges of
/// `f64` and `Duration`, date parts out of range, the two booleans.
const HEADER_TOKENS: &[&str] = &[
    "0",
    "1",
    "9",
    "-",
    "+",
    ".",
    "e",
    "E",
    "e-",
    "e308",
    "1e30",
    "99999999999999999999",
    "18446744073709551616",
    "NaN",
    "inf",
    "infinity",
    " ",
    "\t",
    ",",
    ":",
    "GMT",
    "UTC",
    "Feb",
    "Dec",
    "29",
    "30",
    "31",
    "60",
    "99",
    "23:59:60",
    "9999",
    "10000",
    "300000000000",
    "1969",
    "true",
    "false",
    "\u{0}",
    "\u{a0}",
    "\u{1F600}",
];

/// One mutant of `input`: 1 to 4 edits (flip, delete, insert a token,
/// duplicate a slice, truncate), kept on char boundaries.
fn mutate(rng: &mut Rng, input: &str) -> String {
    mutate_with(rng, input, TOKENS)
}

/// [`mutate`], inserting fragments from `tokens`.
fn mutate_with(rng: &mut Rng, input: &str, tokens: &[&str]) -> String {
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
                s.insert_str(i, tokens[rng.below(tokens.len())]);
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

/// Each seed also runs unmutated and as two stress shapes.
const EXTRAS: usize = 3;

/// Feeds mutants of every seed to `target`, [`MUTANTS`] per seed unless
/// `AXE_FUZZ_EXECS` says how many executions in all; panics with the seed
/// and case of the first input that made it panic.
fn fuzz(name: &str, seeds: &[String], target: impl Fn(&str)) {
    let default = seeds.len() * (MUTANTS + EXTRAS);
    fuzz_with(name, seeds, TOKENS, default, target)
}

/// [`fuzz`], mutating with `tokens`, `default` executions in all unless
/// `AXE_FUZZ_EXECS` is set.
fn fuzz_with(name: &str, seeds: &[String], tokens: &[&str], default: usize, target: impl Fn(&str)) {
    let count = seeds.len().max(1);
    let execs = execs_or(default);
    let mutants = execs.saturating_sub(count * EXTRAS).div_ceil(count);
    let seed = settings().seed;
    let mut rng = Rng(seed | 1);
    let started = Instant::now();
    let mut runs = 0;
    for (n, input) in seeds.iter().enumerate() {
        // The unmutated seed, and shapes that stress recursion and size.
        for extra in [input.clone(), "[".repeat(10_000), "{\"a\":".repeat(5_000)] {
            let ok = catch_unwind(AssertUnwindSafe(|| target(&extra)));
            assert!(ok.is_ok(), "{name}: seed {n} itself panicked");
            runs += 1;
        }
        for case in 0..mutants {
            let input = mutate_with(&mut rng, input, tokens);
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                panic!(
                    "{name}: panic on seed {n}, case {case} (AXE_FUZZ_SEED={seed:#x}):\n{input:?}"
                );
            }
            runs += 1;
        }
    }
    report(name, runs, started, "no panic");
    assert!(runs >= execs, "{name}: {runs} executions of {execs}");
}

fn report(name: &str, runs: usize, started: Instant, what: &str) {
    eprintln!(
        "fuzz {name}: {runs} executions in {:.2} s, {what}",
        started.elapsed().as_secs_f64()
    );
}

/// The response bodies of `fixtures/responses/` whose names start with
/// `prefix`.
fn fixtures(prefix: &str) -> Vec<String> {
    fixtures_in("responses", prefix)
}

/// The files of `fixtures/<folder>/` whose names start with `prefix`, in
/// name order (at least one).
fn fixtures_in(folder: &str, prefix: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(folder);
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {prefix} files in fixtures/{folder}");
    out
}

mod bodies;
mod cases;
mod hints;
mod http;
mod sse;
