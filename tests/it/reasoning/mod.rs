//! Reasoning (issue 39, design §4.15): `[params]`'s `reasoning_effort` and
//! `thinking_budget` and `--reasoning-effort`, read and refused
//! (`params.rs`); each wire's own form in the bodies the fakes receive, and
//! what each wire's answer says of the model's thinking (`wires.rs`);
//! Anthropic's thinking blocks sent back across tool turns to a fake that
//! refuses a request that drops or alters one, as the API does
//! (`anthropic.rs`); reasoning tokens counted and the thinking text kept
//! out of the answer (`report.rs`).

mod anthropic;
mod bedrock;
mod params;
mod report;
mod wires;

use crate::common::*;

/// A home whose agent `thinker` runs on `model` with `params` (TOML lines
/// of its `[params]` table).
fn thinker(model: &str, params: &str) -> Home {
    let home = Home::new();
    home.agent(
        "thinker",
        &format!("name = \"thinker\"\nmodel = \"{model}\"\n\n[params]\n{params}\n"),
    );
    home
}
