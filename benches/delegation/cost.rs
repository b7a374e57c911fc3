//! What cost accounting (design §7.8) adds to a sub-agent's run, against
//! the CPU the N = 256 fan-out measured per sub-agent: each sub-agent's
//! provider looks its price up once (the table's cache after the first)
//! and each of its responses is priced once and added to two sums (its
//! agent's and the budgets'). Timed in this process, on the library the
//! binaries are built from, since a binary cannot run with the accounting
//! taken out.

use std::hint::black_box;
use std::time::Instant;

use axe::cost::{Billed, Cost, builtin};

use crate::Bin;
use crate::report::Row;

/// Rounds timed; the mean is taken.
const ROUNDS: u32 = 200_000;

/// The nanoseconds one sub-agent's cost accounting takes: a price looked
/// up, a response priced and added twice.
fn per_sub_agent_ns() -> f64 {
    let billed = Billed {
        input: 120,
        output: 12,
        cache_read: 0,
        cache_write: 0,
    };
    let mut sum = Cost::default();
    let started = Instant::now();
    for _ in 0..ROUNDS {
        let price = builtin(black_box("openai"), black_box("gpt-4o"));
        let cost = Cost::of(price.as_ref(), black_box(&billed));
        sum = sum.plus(cost).plus(cost);
    }
    black_box(sum);
    started.elapsed().as_nanos() as f64 / f64::from(ROUNDS)
}

/// The row: cost accounting's share of each binary's CPU per sub-agent at
/// N = 256 (`cpu_us`, one per binary, as the fan-out measured it).
pub(crate) fn cost_row(bins: &[Bin], cpu_us: &[Option<f64>], rows: &mut Vec<Row>) {
    let ns = per_sub_agent_ns();
    let mut row = Row::new("fan-out N=256: cost accounting's CPU", "%", "<= 1");
    for (bin, cpu) in bins.iter().zip(cpu_us) {
        match cpu {
            Some(us) if bin.label != "go" => row.push(
                Some(ns / 10.0 / us),
                format!("{ns:.0} ns per sub-agent (price looked up, response priced and summed, timed in process) of {us:.0} us"),
            ),
            _ => row.push(None, "no cost accounting".into()),
        }
    }
    rows.push(row);
}
