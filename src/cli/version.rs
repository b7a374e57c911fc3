//! `axe version` and `axe --version`.

use super::print_stdout;
use crate::error::Error;

/// Prints `axe version <version>`.
pub(super) fn main() -> Result<(), Error> {
    print_stdout(&format!("axe version {}\n", env!("CARGO_PKG_VERSION")))
}
