//! The artifact directory (the Go original's `[artifacts]`, design §8.9):
//! where it is (`--artifact-dir`, else the file's `dir`, else one made
//! under the cache directory for the run), made and opened once when the
//! agent is resolved for a run, the root the file tools' `artifact`
//! argument resolves paths beneath (the same resolver and guard as the
//! workdir's, so no `..`, absolute name or link leads out), the writes it
//! received for `--json`, and its removal when the run ends if axe made it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::error::Error;
use crate::paths;
use crate::sandbox::Root;
use crate::sandbox::beneath::{Base, Follow};
use crate::sandbox::guard::Guard;
use crate::sandbox::opened::{self, Opened};

/// The variable a command (and a sub-agent's `dir`) finds it in.
pub const VAR: &str = "AXE_ARTIFACT_DIR";

/// `[artifacts]`, as the agent file validated it (`crate::agent`): `dir`
/// only with `enabled`, never with `..`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArtifactsConfig {
    pub enabled: bool,
    pub dir: Option<String>,
    /// `write_file` without an `artifact` argument writes there.
    pub default_write: bool,
}

/// What a run asks of artifact directories, beyond the agent file.
#[derive(Debug, Clone, Default)]
pub struct ArtifactRun {
    /// `--artifact-dir`: this directory, whatever the file says.
    pub dir: Option<String>,
    /// `--keep-artifacts`: a directory axe made is left in place.
    pub keep: bool,
    /// Make and open it: a run, not a dry run nor a listing.
    pub make: bool,
    /// The caller's directory: what `${AXE_ARTIFACT_DIR}` in a sub-agent's
    /// `dir` means.
    pub caller: Option<PathBuf>,
}

/// A file written to the directory: its path as the model named it, the
/// agent that wrote it, its size (the Go original's `--json` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: String,
    pub agent: String,
    pub size: u64,
}

/// An agent's artifact directory, opened for its run.
#[derive(Debug)]
pub struct Artifacts {
    pub root: Root,
    /// Granted to its commands for writing, by descriptor (design §8.7).
    pub dir: Opened,
    /// `write_file` without `artifact` writes here.
    pub default_write: bool,
    agent: String,
    /// Made by axe for this run: removed when it ends, unless kept.
    made: bool,
    keep: bool,
    entries: Mutex<Vec<Entry>>,
}

impl Artifacts {
    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Notes a write of `size` bytes to `path`; a file written again is
    /// listed once, with its last size.
    pub fn record(&self, path: &str, size: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|e| e.path != path);
        entries.push(Entry {
            path: path.to_string(),
            agent: self.agent.clone(),
            size,
        });
    }

    /// The writes so far, in the order they were made.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Artifacts {
    /// A directory axe made goes with the run (what a command left in it
    /// too: `remove_dir_all` follows no link); kept, its path is said.
    fn drop(&mut self) {
        if !self.made {
            return;
        }
        let path = self.dir.path().to_path_buf();
        if self.keep {
            // The Go original's line, asked for: printed even with `--quiet`.
            crate::io::stderr::lines(format!("artifacts preserved: {}\n", path.display()));
        } else if let Err(e) = std::fs::remove_dir_all(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            crate::io::stderr::warn(&format!("cannot remove {}: {e}", path.display()));
        }
    }
}

/// Where `config` and `run` put the directory of an agent whose workdir is
/// `workdir`, and, for one the user named, the name as written with its
/// variables expanded (none: axe makes it for the run); none when neither
/// the flag nor `enabled` asks for one. A relative path is the workdir's.
pub fn place(
    config: &ArtifactsConfig,
    run: &ArtifactRun,
    workdir: &Path,
) -> Result<Option<(PathBuf, Option<String>)>, Error> {
    let written = match (&run.dir, &config.dir) {
        (Some(d), _) if !d.trim().is_empty() => d,
        (_, Some(d)) if config.enabled => d,
        _ if config.enabled => return Ok(Some((auto_path()?, None))),
        _ => return Ok(None),
    };
    let expanded = expand(written, run.caller.as_deref());
    if expanded.trim().is_empty() {
        return Err(Error::config(format!(
            "the artifact directory {written:?} expands to nothing (is {VAR} set?)"
        )));
    }
    let path = paths::resolve_against(workdir, &expanded);
    Ok(Some((path, Some(expanded))))
}

/// The directory of an agent named `agent`, made and opened, when `run`
/// makes one and `config` or the flag asks for it.
pub fn open(
    agent: &str,
    config: &ArtifactsConfig,
    run: &ArtifactRun,
    workdir: &Path,
) -> Result<Option<Arc<Artifacts>>, Error> {
    if !run.make {
        return Ok(None);
    }
    let Some((mut path, named)) = place(config, run, workdir)? else {
        return Ok(None);
    };
    let made = named.is_none();
    let cannot = |p: &Path, e: &dyn std::fmt::Display| {
        Error::config(format!(
            "cannot make the artifact directory {}: {e}",
            p.display()
        ))
    };
    if made {
        // A name taken (another run in the same second) gets a new suffix.
        let mut tries = 0;
        loop {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| cannot(parent, &e))?;
            }
            match std::fs::create_dir(&path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                    tries += 1;
                    path = auto_path()?;
                }
                Err(e) => return Err(cannot(&path, &e)),
            }
        }
    } else {
        std::fs::create_dir_all(&path).map_err(|e| cannot(&path, &e))?;
    }
    // Opened once, with no link followed on the way (design §8.7): from
    // then on the tools, the Landlock rule and the command's variable all
    // name this directory, whatever its path comes to lead to.
    // A named one against what it is written against, as a workdir is
    // (`~/` the home, a relative path the workdir); one axe made by its
    // name, as the private `TMPDIR` is.
    let dir = match &named {
        None => Opened::own(&path).map_err(|e| cannot(&path, &e))?,
        Some(written) => Opened::open(Base::Dir(workdir), written, true)
            .map_err(|e| Error::config(opened::refusal("the artifact directory", &path, &e)))?,
    };
    let root = dir
        .root(Follow::Inside)
        .map_err(|e| cannot(&path, &e))?
        .guarded(Guard::new(&path, &paths::own_dirs()));
    Ok(Some(Arc::new(Artifacts {
        root,
        dir,
        default_write: config.default_write,
        agent: agent.to_string(),
        made,
        keep: run.keep,
        entries: Mutex::new(Vec::new()),
    })))
}

/// `<cache>/artifacts/<UTC time>-<6 hex digits>`, as the Go original names
/// its run directories (`20260321T143022-a1b2c3`).
fn auto_path() -> Result<PathBuf, Error> {
    let now = crate::trace::event::rfc3339(std::time::SystemTime::now());
    let stamp: String = now
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .take(15)
        .collect();
    let id = format!("{stamp}-{:06x}", fastrand::u32(..0x0100_0000));
    Ok(paths::cache_dir()?.join("artifacts").join(id))
}

/// `text` with `$NAME` and `${NAME}` replaced as the Go original's
/// `os.ExpandEnv` does (an unset variable is empty), `~/` expanded later;
/// [`VAR`] is the caller's directory when there is a caller with one.
fn expand(text: &str, caller: Option<&Path>) -> String {
    let value = |name: &str| match (name, caller) {
        (VAR, Some(dir)) => dir.to_string_lossy().into_owned(),
        _ => std::env::var(name).unwrap_or_default(),
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&value(name));
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_reads_both_forms_and_the_callers_directory() {
        let caller = Path::new("/runs/parent");
        assert_eq!(
            expand("${AXE_ARTIFACT_DIR}/x", Some(caller)),
            "/runs/parent/x"
        );
        assert_eq!(expand("$AXE_ARTIFACT_DIR", Some(caller)), "/runs/parent");
        assert_eq!(expand("a$/b${", None), "a$/b${");
        assert_eq!(expand("${AXE_SURELY_UNSET_VAR_1}x", None), "x");
    }

    #[test]
    fn the_flag_wins_then_the_file_then_an_auto_directory() {
        let wd = Path::new("/w");
        let file = ArtifactsConfig {
            enabled: true,
            dir: Some("out".into()),
            default_write: false,
        };
        let flag = ArtifactRun {
            dir: Some("/flag".into()),
            ..ArtifactRun::default()
        };
        assert_eq!(
            place(&file, &flag, wd).unwrap(),
            Some((PathBuf::from("/flag"), Some("/flag".into())))
        );
        let none = ArtifactRun::default();
        assert_eq!(
            place(&file, &none, wd).unwrap(),
            Some((PathBuf::from("/w/out"), Some("out".into())))
        );
        let off = ArtifactsConfig::default();
        assert_eq!(place(&off, &none, wd).unwrap(), None);
        let auto = ArtifactsConfig {
            enabled: true,
            ..ArtifactsConfig::default()
        };
        assert_eq!(place(&auto, &none, wd).unwrap().unwrap().1, None);
    }
}
