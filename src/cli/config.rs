//! `axe config path` and `axe config init`.

use super::args::ConfigSub;
use super::print_stdout;
use crate::error::Error;
use crate::io::interrupt;
use crate::paths;

/// Runs the `config` subcommand.
pub(super) fn main(sub: ConfigSub) -> Result<(), Error> {
    match sub {
        ConfigSub::Path(_) => print_stdout(&format!("{}\n", paths::config_dir()?.display())),
        ConfigSub::Init(_) => init(),
    }
}

/// Creates what is missing of the config directory and prints its path.
fn init() -> Result<(), Error> {
    // It writes files: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    print_stdout(&format!("{}\n", crate::config::init()?.display()))
}
