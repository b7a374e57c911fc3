//! `axe runs --since DURATION` and `axe runs --total`: the run log's
//! records of a recent span, and their tokens and cost summed by agent
//! (design §7.8).

use std::time::SystemTime;

use serde::Serialize;

use super::print_stdout;
use crate::error::Error;
use crate::text::one_line;
use crate::text::redact::redact;
use crate::trace::run_log::Record;

/// The earliest start `--since` keeps, as the log writes starts (RFC 3339
/// in UTC, milliseconds, so that the two compare as text); `""` without it.
pub(super) fn since(flag: Option<&str>) -> Result<String, Error> {
    let Some(text) = flag else {
        return Ok(String::new());
    };
    let span = humantime::parse_duration(text.trim()).map_err(|e| {
        Error::config(format!(
            "--since must be a duration such as 30m, 24h or 7d, not {text:?}: {e}"
        ))
    })?;
    let from = SystemTime::now()
        .checked_sub(span)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(crate::trace::event::rfc3339(from))
}

/// One agent's runs summed.
#[derive(Debug, Default, Serialize)]
struct Sum {
    agent: String,
    runs: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// The known costs summed, in USD.
    cost_usd: f64,
    /// Runs that used tokens but have no cost (a model with no price, or a
    /// line from an axe before costs): `cost_usd` leaves them out.
    unpriced_runs: u64,
}

/// `--total`: per agent, in order of their newest run, then a `total` line.
pub(super) fn total(
    records: &[Record],
    agent: Option<&str>,
    since: &str,
    json: bool,
) -> Result<(), Error> {
    let mut sums: Vec<Sum> = Vec::new();
    let kept = records
        .iter()
        .filter(|r| agent.is_none_or(|a| r.agent == a) && *r.start >= *since);
    for r in kept {
        let i = match sums.iter().position(|s| s.agent == r.agent) {
            Some(i) => i,
            None => {
                sums.push(Sum {
                    agent: r.agent.clone(),
                    ..Sum::default()
                });
                sums.len() - 1
            }
        };
        add(&mut sums[i], r);
    }
    if json {
        // Serializing strings and numbers cannot fail.
        let text = serde_json::to_string(&sums).unwrap_or_default();
        return print_stdout(&redact(&format!("{text}\n")));
    }
    let mut all = Sum {
        agent: "total".into(),
        ..Sum::default()
    };
    for s in &sums {
        all.runs += s.runs;
        all.input_tokens = all.input_tokens.saturating_add(s.input_tokens);
        all.output_tokens = all.output_tokens.saturating_add(s.output_tokens);
        all.cost_usd += s.cost_usd;
        all.unpriced_runs += s.unpriced_runs;
    }
    let header = ["AGENT", "RUNS", "INPUT", "OUTPUT", "COST", "UNPRICED"].map(String::from);
    let rows: Vec<[String; 6]> = std::iter::once(header)
        .chain(sums.iter().chain(std::iter::once(&all)).map(cells))
        .collect();
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = format!("{:<w$}", r[0], w = widths[0]);
        for (cell, w) in r.iter().zip(widths).skip(1) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    print_stdout(&redact(&out))
}

fn add(s: &mut Sum, r: &Record) {
    s.runs += 1;
    s.input_tokens = s.input_tokens.saturating_add(r.input_tokens);
    s.output_tokens = s.output_tokens.saturating_add(r.output_tokens);
    match r.cost_usd {
        Some(c) => s.cost_usd += c,
        None if r.input_tokens > 0 || r.output_tokens > 0 => s.unpriced_runs += 1,
        None => {}
    }
}

fn cells(s: &Sum) -> [String; 6] {
    [
        one_line(&s.agent),
        s.runs.to_string(),
        s.input_tokens.to_string(),
        s.output_tokens.to_string(),
        format!("${:.6}", s.cost_usd),
        s.unpriced_runs.to_string(),
    ]
}
