//! The sandbox (design §8.2–§8.6): what a model's tool call may touch
//! is decided by the kernel. Paths are opened beneath the workdir with
//! `openat2` (`beneath`); commands run under Landlock (`landlock`, with
//! what of `/etc` any user may read, `etc`) and a seccomp filter on the
//! sockets they may make (`seccomp`), in a session of their own
//! (`process`), in namespaces of their own where the kernel allows
//! (`namespace`, `init`): nothing they start outlives them, and what
//! protects the user is read-only to them (`protected`); they inherit no
//! signal handling and no descriptor of axe's (`inherit`); descendants a
//! command leaves behind otherwise are collected and killed (`orphans`).
//! axe's own files, which may lie where an agent writes (design §8.7),
//! are opened through the same resolver with no link followed
//! (`beneath_own`), and read (`read`: bounded, never blocking, regular
//! files only) and written (`write`: create-only or replaced whole, never
//! half-written) by the one reader and writer every module uses.

pub mod beneath;
pub mod etc;
pub mod guard;
pub mod inherit;
mod init;
pub mod landlock;
pub mod namespace;
pub mod opened;
pub mod orphans;
pub mod process;
pub mod protected;
pub(crate) mod read;
pub mod seccomp;
pub mod view;
pub(crate) mod write;

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub use beneath::{Denied, Root};
pub use opened::Opened;
pub use process::{Exit, Finished};

/// Environment variables a command gets from axe's own environment, when
/// set: what programs need to find themselves and speak the user's
/// language, never a key.
pub const PASSED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
];

/// How a command is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Landlock, with this ABI.
    Landlock(i32),
    /// The agent file turned the sandbox off (`sandbox = "off"`): a session
    /// of its own, `no_new_privs`, the reduced environment, the deadline,
    /// but no Landlock.
    Off,
}

/// What an agent's commands may touch: each path opened once, when the
/// agent was resolved (design §8.7), and granted by its descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub workdir: Opened,
    /// Extra paths readable (and executable).
    pub read: Vec<Opened>,
    /// Extra paths readable and writable.
    pub write: Vec<Opened>,
    pub network: bool,
    /// Variables passed through beyond [`PASSED_ENV`] (never a key: the
    /// agent file's check refuses names that look like one).
    pub env: Vec<String>,
    /// Variables axe sets itself (`AXE_ARTIFACT_DIR`, design §8.9).
    pub vars: Vec<(String, String)>,
    pub mode: Mode,
    /// `.git`, `axe/`, `.claude/` and `.codex/` under a writable directory
    /// are read-only to commands (design §8.6), and commands are refused
    /// where the kernel cannot make them so; false only when the agent file
    /// says `[sandbox] protect = false`.
    pub protect: bool,
}

/// One command to run under a policy.
pub struct Request<'a> {
    pub script: &'a str,
    pub policy: &'a Policy,
    pub deadline: Instant,
    /// Stops the command as the deadline would, when set.
    pub cancel: Option<&'a crate::deadline::Cancel>,
    pub max_output: usize,
}

/// The Landlock ABI the kernel offers (0: none), asked once.
pub fn landlock_abi() -> i32 {
    static ABI: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *ABI.get_or_init(landlock::abi)
}

/// A policy made ready to apply: its Landlock ruleset and seccomp filter
/// (neither when the sandbox is off) and the private temporary directory
/// (`TMPDIR`), removed when this is dropped. A command keeps one while it
/// runs; an MCP server (design §9.4) as long as it lives.
#[derive(Debug)]
pub struct Confinement {
    ruleset: Option<OwnedFd>,
    filter: Option<seccomp::Program>,
    tmp: TempDir,
    /// The workdir, the process's working directory (none: axe's own).
    cwd: Option<Arc<OwnedFd>>,
    /// The namespaces it runs in, where the kernel allows them.
    namespaces: Option<Arc<namespace::Plan>>,
}

impl Confinement {
    /// Builds the ruleset for `policy`, the workdir and a new private
    /// temporary directory writable, and the filter for its network.
    pub fn new(policy: &Policy) -> Result<Confinement, String> {
        let tmp = TempDir::new().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        let private =
            Opened::own(&tmp.0).map_err(|e| format!("cannot open a temporary directory: {e}"))?;
        let (ruleset, filter) = match policy.mode {
            Mode::Landlock(abi) => {
                let mut write = vec![policy.workdir.clone(), private.clone()];
                write.extend(policy.write.iter().cloned());
                let grants = landlock::Grants {
                    write,
                    read: policy.read.clone(),
                    network: policy.network,
                };
                let filter = seccomp::Program::new(policy.network)?;
                (Some(landlock::ruleset(&grants, abi)?), Some(filter))
            }
            Mode::Off => (None, None),
        };
        let namespaces = namespace::plan(policy, &private)?.map(Arc::new);
        Ok(Confinement {
            ruleset,
            filter,
            tmp,
            cwd: policy.workdir.shared(),
            namespaces,
        })
    }

    /// The private temporary directory.
    pub fn tmp(&self) -> &Path {
        &self.tmp.0
    }

    /// Makes `cmd` start confined, in the workdir (by its descriptor, so
    /// whatever its name leads to by now): its namespaces, its view of the
    /// filesystem and read-only mounts, a session of its own, no privileges
    /// to gain, killed with axe, then the ruleset; then nothing inherited
    /// of axe's signals and descriptors,
    /// then the filter (design §8.3). The filter comes last: it needs
    /// `no_new_privs`, and nothing after it but `exec` makes a system call
    /// it could refuse.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let ruleset = self.ruleset.as_ref().map(AsRawFd::as_raw_fd);
        let filter = self.filter.clone();
        let namespaces = self.namespaces.clone();
        let cwd = self.cwd.clone();
        // SAFETY: the closure runs in the child between fork and exec and
        // makes only async-signal-safe system calls on what was built
        // before the fork: no allocation, no locks.
        unsafe {
            cmd.pre_exec(move || {
                let cwd = cwd.as_deref().map(AsRawFd::as_raw_fd);
                process::confine(cwd, ruleset, namespaces.as_deref())?;
                // In the command alone (the namespace's keeper and init
                // stay behind in `confine`), whatever they blocked.
                inherit::reset()?;
                match &filter {
                    Some(f) => seccomp::load(f),
                    None => Ok(()),
                }
            });
        }
    }
}

/// Runs `req.script` with `sh -c` under `req.policy`. The command gets a
/// private temporary directory (`TMPDIR`), removed when it returns.
pub fn run(req: &Request) -> Result<Finished, String> {
    let policy = req.policy;
    // A protected name that does not exist has nothing to mount over, and
    // a directory above a protected one can be renamed and made again:
    // what the command puts there is moved aside when it returns (design
    // §8.6). Noted before the mounts are planned: what appears between
    // the two is then moved aside too, never taken as the user's.
    let watch = if namespace::protects(policy) {
        protected::Watch::new(&namespace::writable(policy))
    } else {
        protected::Watch::default()
    };
    let confinement = Confinement::new(policy)?;
    let spec = process::Spec {
        script: req.script,
        env: environment(policy, confinement.tmp()),
        confinement: &confinement,
        deadline: req.deadline,
        cancel: req.cancel,
        max_output: req.max_output,
    };
    let _running = orphans::Running::start();
    let mut finished = process::run(&spec).map_err(|e| format!("cannot start the command: {e}"))?;
    for (path, to) in watch.set_aside() {
        let said = match to {
            Ok(to) => format!(
                "the command created {}, which commands may not write; it was moved to {}",
                path.display(),
                to.display()
            ),
            Err(why) => format!(
                "the command created {}, which commands may not write, and it could not be \
                 moved aside ({why}): do not run git or axe there before removing it",
                path.display()
            ),
        };
        crate::io::stderr::warn(&said);
        finished.output.push_str(&format!("\n[{said}]\n"));
    }
    Ok(finished)
}

/// The command's environment: [`PASSED_ENV`] and the agent's names as axe
/// has them, `TMPDIR` its own, `SHELL` plain.
fn environment(policy: &Policy, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = PASSED_ENV
        .iter()
        .copied()
        .chain(policy.env.iter().map(String::as_str))
        .filter(|name| *name != "TMPDIR")
        .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v)))
        .collect();
    env.extend(policy.vars.iter().map(|(k, v)| (k.into(), v.into())));
    env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
    env.push(("SHELL".into(), "/bin/sh".into()));
    env
}

/// Whether an environment variable's name looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|w| upper.contains(w))
}

/// A private directory (0700) removed with everything in it on drop, or
/// at the process's end if it is still alive then ([`remove_temp_dirs`]).
#[derive(Debug)]
struct TempDir(PathBuf);

/// The private directories alive now. A signal or the deadline ends the
/// process without dropping what its threads hold, and a directory of a
/// command still running would be left in `/tmp` (design §8.3).
static LIVE_TEMP_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every private directory still alive: for the end of the
/// process, after its commands are killed (`orphans::sweep_all`).
pub(crate) fn remove_temp_dirs() {
    let dirs = std::mem::take(
        &mut *LIVE_TEMP_DIRS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for _ in 0..8 {
            let p = base.join(format!(
                "axe-cmd-{}-{:08x}",
                std::process::id(),
                fastrand::u32(..)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => {
                    // A signal ending the process removes it too.
                    crate::io::interrupt::sweep_on_end(orphans::sweep_all);
                    LIVE_TEMP_DIRS
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(p.clone());
                    return Ok(TempDir(p));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free temporary name"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        LIVE_TEMP_DIRS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|p| *p != self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;
