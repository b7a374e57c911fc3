//! `axe config path` and `axe config init`.

use super::args::ConfigSub;
use super::print_stdout;
use crate::error::Error;
use crate::io::{interrupt, stderr};
use crate::paths;

/// Runs the `config` subcommand.
pub(super) fn main(sub: ConfigSub) -> Result<(), Error> {
    match sub {
        ConfigSub::Path(_) => print_stdout(&format!("{}\n", paths::config_dir()?.display())),
        ConfigSub::Init(_) => init(),
    }
}

/// Creates what is missing of the config directory and prints its path
/// (stdout: the spec's output, which scripts read), then on stderr one line
/// for each of its parts: created, or left as it was.
fn init() -> Result<(), Error> {
    // It writes files: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    let init = crate::config::init()?;
    print_stdout(&format!("{}\n", init.dir.display()))?;
    let mut said = String::new();
    for (path, created) in &init.done {
        let slash = if path.is_dir() { "/" } else { "" };
        let what = if *created {
            "created"
        } else {
            "left as it was"
        };
        said.push_str(&format!("{what}: {}{slash}\n", path.display()));
    }
    stderr::lines(said);
    Ok(())
}
