//! The test harness: what the integration tests (tests/it), the standalone
//! test crates and the bench share. A fake provider on loopback
//! ([`server`]), the providers' documented answers ([`wire`]), a temporary
//! config home for running the real binary ([`home`]) and for the built-in
//! tools ([`tools`]), memory files as the Go original writes them
//! ([`memory`]), and one check run on many cells at once ([`cells`]).

mod cells;
mod home;
mod memory;
mod server;
mod tools;
mod wire;

pub use cells::*;
pub use home::*;
pub use memory::*;
pub use server::*;
pub use tools::*;
pub use wire::*;
