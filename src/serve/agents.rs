//! The agent files `axe serve` runs (design §12.2, §8.8): read once, at
//! the start, every agent served and every agent they delegate to, from
//! the search path less the directories an agent of them may write
//! unconfined, and again on SIGHUP; never from a request, so one request's
//! writes never reach a later one. A request takes the catalog as it is
//! when it starts and keeps it to its end; a reading that fails keeps the
//! one before.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::agent::{Catalog, Place, Roots};
use crate::config::GlobalConfig;
use crate::error::Error;
use crate::paths::AgentDirs;

/// The catalog requests run from, and how to read it again.
pub struct AgentFiles {
    search: AgentDirs,
    roots: Roots,
    cwd: PathBuf,
    current: Mutex<Arc<Catalog>>,
}

impl AgentFiles {
    /// Reads the agents `allowed` (`--agent`; empty: every agent on
    /// `search`) and their trees, each directory left out said on stderr.
    pub fn read(
        search: AgentDirs,
        allowed: &[String],
        global: &GlobalConfig,
        cwd: &Path,
    ) -> Result<AgentFiles, Error> {
        let roots = match allowed {
            [] => Roots::All,
            names => Roots::Named(names.to_vec()),
        };
        let catalog = read(&search, &roots, global, cwd)?;
        Ok(AgentFiles {
            search,
            roots,
            cwd: cwd.to_path_buf(),
            current: Mutex::new(Arc::new(catalog)),
        })
    }

    /// Reads the agents again (SIGHUP), from the same search path with
    /// the same config.toml: requests that start after it run the new
    /// files, those running keep theirs. On a failure the files read
    /// before stay, and a warning says why.
    pub fn reload(&self, global: &GlobalConfig) {
        match read(&self.search, &self.roots, global, &self.cwd) {
            Ok(catalog) => {
                let n = catalog.roots().len();
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
                crate::io::stderr::lines(format!("axe: serve: agents read again (SIGHUP): {n}\n"));
            }
            Err(e) => crate::io::stderr::warn(&format!(
                "SIGHUP: the agents could not be read again, the ones read before stay: {}",
                e.one_line()
            )),
        }
    }

    /// The catalog a request starting now runs from.
    pub fn current(&self) -> Arc<Catalog> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// One reading of the agents, sealed, its directories left out warned of.
fn read(
    search: &AgentDirs,
    roots: &Roots,
    global: &GlobalConfig,
    cwd: &Path,
) -> Result<Catalog, Error> {
    let place = Place {
        global,
        cwd,
        workdir: None,
        sealed: true,
    };
    let (catalog, left_out) = Catalog::read(search, roots, &place)?;
    for l in &left_out {
        crate::io::stderr::warn(&l.to_string());
    }
    Ok(catalog)
}
