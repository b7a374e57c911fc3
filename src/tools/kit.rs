//! What an agent's tool calls need, made once when the agent is resolved
//! (design §8): the tools it listed, its workdir opened as the root every
//! path is resolved beneath (its writes held to what protects the user,
//! §8.2), and the sandbox policy its commands run under.

use std::sync::Arc;

use super::ToolsConfig;
use super::artifacts::{self, Artifacts};
use crate::error::Error;
use crate::paths;
use crate::sandbox::beneath::Follow;
use crate::sandbox::guard::Guard;
use crate::sandbox::opened::{self, Opened};
use crate::sandbox::{self, Mode, Policy, Root};

/// An agent's tools, ready to run.
#[derive(Debug)]
pub struct Kit {
    /// The built-in tools it listed, each once, in the order listed.
    pub names: Vec<String>,
    pub root: Root,
    pub policy: Policy,
    pub allowed_hosts: Vec<String>,
    pub private_networks: bool,
    /// The artifact directory, when the agent has one (design §8.9).
    pub artifacts: Option<Arc<Artifacts>>,
}

impl Kit {
    /// Whether the agent listed tool `name`.
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// The kit for an agent whose workdir is `workdir` (opened when it was
/// resolved); none when it lists no tool. `run_command` where the kernel
/// has no Landlock is refused here, before anything is sent, unless the
/// file turned the sandbox off. Its `[sandbox]` paths are opened here,
/// relative ones beneath the workdir's descriptor, none through a link
/// (design §8.7). An artifact directory is writable to its commands too,
/// and named to them in `AXE_ARTIFACT_DIR` (design §8.9).
pub fn kit(
    config: &ToolsConfig,
    workdir: &Opened,
    artifacts: Option<Arc<Artifacts>>,
) -> Result<Option<Kit>, Error> {
    if config.names.is_empty() {
        return Ok(None);
    }
    let mut names: Vec<String> = Vec::new();
    for n in &config.names {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let sb = &config.sandbox;
    let mode = if sb.landlock {
        match sandbox::landlock_abi() {
            0 if names.iter().any(|n| n == "run_command") => {
                return Err(Error::config(
                    "run_command needs Landlock, which this kernel does not offer (Linux 5.13 or \
                     later with Landlock enabled); to run commands without it, set [sandbox] \
                     mode = \"off\" in the agent file",
                ));
            }
            abi => Mode::Landlock(abi),
        }
    } else {
        Mode::Off
    };
    let root = workdir
        .root(Follow::Inside)
        .map_err(|e| {
            Error::config(format!(
                "cannot open the workdir {}: {e}",
                workdir.path().display()
            ))
        })?
        .guarded(Guard::new(workdir.path(), &paths::own_dirs()));
    let mut write = opened::granted(workdir, &sb.write, "write").map_err(Error::config)?;
    let mut vars = Vec::new();
    if let Some(a) = &artifacts {
        write.push(a.dir.clone());
        vars.push((
            artifacts::VAR.to_string(),
            a.path().to_string_lossy().into_owned(),
        ));
    }
    let policy = Policy {
        workdir: workdir.clone(),
        read: opened::granted(workdir, &sb.read, "read").map_err(Error::config)?,
        write,
        network: sb.network,
        env: sb.env.clone(),
        vars,
        mode,
        protect: sb.protect,
    };
    if names.iter().any(|n| n == "run_command") {
        sandbox::namespace::required(&policy).map_err(Error::config)?;
    }
    Ok(Some(Kit {
        names,
        root,
        policy,
        allowed_hosts: config.allowed_hosts.clone(),
        private_networks: sb.private_networks,
        artifacts,
    }))
}
