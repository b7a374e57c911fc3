//! The integration tests, in one crate (one build, one link, one binary).

#[path = "../common/mod.rs"]
mod common;

mod answers_not_whole;
mod budgets;
mod call_agent;
mod cli;
mod delegation;
mod full_disk;
mod graph;
mod machine;
mod model_inheritance;
mod odd_servers;
mod output_schema;
mod output_schema_anthropic;
mod output_schema_bounds;
mod placeholder_keys;
mod progress;
mod provider_faults;
mod providers;
mod retries;
mod secrets;
mod snapshot;
mod token_counts;
mod trace;
mod tree_fake;
