//! What stays read-only under a directory a tool may write (D28, design
//! §8.6): the repository's `.git` (and, when `.git` is a file, the
//! directory it points to and that one's common directory), axe's own
//! `axe/` and the agent directories of other tools (`.claude/`, `.codex/`),
//! and any directory axe reads agents or its config from that lies beneath
//! a writable one. A model that could write there could plant a git hook,
//! an `fsmonitor` command or an agent file that the user's next command
//! runs unconfined.
//!
//! This module finds the paths; commands get them as read-only mounts
//! (`namespace`) and axe's own file tools refuse them. A name that does not
//! exist has nothing to mount over, and a directory above a protected one
//! may be renamed and made again: what a command puts there is moved
//! aside when it returns ([`Watch`]).

use std::path::{Path, PathBuf};

/// The names protected in every writable directory, at its top.
pub const NAMES: &[&str] = &[".git", "axe", ".claude", ".codex"];

/// The most of a `.git` or `commondir` file read: a `gitdir:` line.
const POINTER_BYTES: u64 = 4096;

/// The protected paths that exist now beneath any of `writable`, each in
/// its canonical form (symlinks resolved, as the kernel will find it), no
/// path twice: the [`NAMES`] at the top of each, the directories a `.git`
/// file there points to, and wherever beneath, `also` and axe's own
/// directories (`paths::own_dirs`: the config directory, the current
/// directory's `axe/`, every agent directory searched, `--agents-dir`
/// among them), each of which an agent file or config.toml is read from.
pub fn paths(writable: &[PathBuf], also: &[PathBuf]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = writable
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .collect();
    let mut found: Vec<PathBuf> = Vec::new();
    for root in &roots {
        for name in NAMES {
            let path = root.join(name);
            if let Ok(real) = path.canonicalize() {
                found.push(real);
            }
            if *name == ".git" {
                found.extend(pointed_git_dirs(&path));
            }
        }
    }
    let own = crate::paths::own_dirs();
    found.extend(
        also.iter()
            .chain(&own)
            .filter_map(|p| p.canonicalize().ok()),
    );
    found.retain(|p| roots.iter().any(|r| p.starts_with(r)));
    found.sort();
    found.dedup();
    found
}

#[path = "protected_watch.rs"]
mod watch;
pub use watch::{SetAside, Watch};

/// When `.git` is a file (a linked worktree, a submodule), the directory its
/// `gitdir:` line names, and that directory's `commondir` (where a
/// worktree's hooks and config live).
fn pointed_git_dirs(dot_git: &Path) -> Vec<PathBuf> {
    let Some(base) = dot_git.parent() else {
        return Vec::new();
    };
    let Some(gitdir) = pointer(dot_git, "gitdir:").map(|p| base.join(p)) else {
        return Vec::new();
    };
    let Ok(gitdir) = gitdir.canonicalize() else {
        return Vec::new();
    };
    let common =
        pointer(&gitdir.join("commondir"), "").and_then(|p| gitdir.join(p).canonicalize().ok());
    std::iter::once(gitdir).chain(common).collect()
}

/// The path a small pointer file holds after `prefix`, trimmed.
fn pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    let bytes = crate::sandbox::read::bytes(file, POINTER_BYTES).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let rest = text.lines().next()?.strip_prefix(prefix)?.trim();
    (!rest.is_empty()).then(|| PathBuf::from(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("axe-protected-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn finds_the_names_that_exist_beneath_a_writable_root() {
        let root = dir();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("axe/agents")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        let found = paths(std::slice::from_ref(&root), &[]);
        assert_eq!(found, vec![root.join(".git"), root.join("axe")]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn follows_a_git_file_to_its_directory_and_common_directory() {
        let root = dir();
        let main = root.join("main/.git");
        std::fs::create_dir_all(main.join("worktrees/wt")).unwrap();
        std::fs::write(main.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        let line = format!("gitdir: {}\n", main.join("worktrees/wt").display());
        std::fs::write(root.join("wt/.git"), line).unwrap();
        let found = paths(&[root.join("wt"), root.join("main")], &[]);
        assert_eq!(
            found,
            vec![
                main.clone(),
                main.join("worktrees/wt"),
                root.join("wt/.git")
            ]
        );
        // Only the worktree writable: its own pointer file; the main
        // repository is not beneath anything writable.
        let found = paths(&[root.join("wt")], &[]);
        assert_eq!(found, vec![root.join("wt/.git")]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn also_counts_only_beneath_a_writable_root() {
        let root = dir();
        std::fs::create_dir_all(root.join("home/.config/axe")).unwrap();
        let elsewhere = dir();
        let also = [root.join("home/.config/axe"), elsewhere.clone()];
        let found = paths(std::slice::from_ref(&root), &also);
        assert_eq!(found, vec![root.join("home/.config/axe")]);
        std::fs::remove_dir_all(root).unwrap();
        std::fs::remove_dir_all(elsewhere).unwrap();
    }
}
