//! The test harness: what the integration tests (tests/it), the standalone
//! test crates and the bench share. A fake provider on loopback
//! ([`server`]), the providers' documented answers ([`wire`], the
//! Responses API's in [`responses`]), streamed
//! answers ([`streams`]) and a fake of Anthropic's prompt cache that bills
//! them ([`cache`]), a temporary config home for running the real binary
//! ([`home`]) and for the built-in tools ([`tools`]), memory files as the
//! Go original writes them ([`memory`]), one check run on many cells at
//! once ([`cells`]), and the tests that could not run here ([`skips`],
//! [`walls`]).

mod cache;
mod cells;
mod home;
mod memory;
mod python;
mod responses;
mod server;
mod skips;
mod streams;
mod tools;
mod walls;
mod wire;

pub use cache::*;
pub use cells::*;
pub use home::*;
pub use memory::*;
pub use python::*;
pub use responses::*;
pub use server::*;
pub use skips::*;
pub use streams::*;
pub use tools::*;
pub use walls::*;
pub use wire::*;
