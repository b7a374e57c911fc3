//! The test harness: what the integration tests (tests/it), the standalone
//! test crates and the bench share. A fake provider on loopback
//! ([`server`]), the providers' documented answers ([`wire`]), and a
//! temporary config home for running the real binary ([`home`]).

mod home;
mod server;
mod wire;

pub use home::*;
pub use server::*;
pub use wire::*;
