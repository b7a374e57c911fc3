//! What stays read-only under a directory a tool may write (D28, design
//! §10.6): the repository's `.git` (and, when `.git` is a file, the
//! directory it points to and that one's common directory), axe's own
//! `axe/` and the agent directories of other tools (`.claude/`, `.codex/`),
//! and any directory axe reads agents or its config from that lies beneath
//! a writable one. A model that could write there could plant a git hook,
//! an `fsmonitor` command or an agent file that the user's next command
//! runs unconfined.
//!
//! This module finds the paths; commands get them as read-only mounts
//! (`namespace`) and axe's own file tools refuse them. A name that does not
//! exist has nothing to mount over: one a command creates is moved aside
//! when the command returns ([`absent`], [`set_aside`]).

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

/// The protected names missing now at the top of each of `writable`: a
/// command may create one (no mount can be made over nothing), and
/// [`set_aside`] moves it away when the command returns.
pub fn absent(writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = writable
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .flat_map(|root| NAMES.iter().map(move |n| root.join(n)))
        .filter(|p| {
            std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Moves each of `absent` that exists now to `<name>.refused-by-axe`
/// beside it (`-2`, `-3`... when that is taken; never over anything, and a
/// link is moved, not followed), so that nothing a command made there is
/// read by git, axe or another tool; each moved path with where it went.
pub fn set_aside(absent: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let mut moved = Vec::new();
    for path in absent {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        for n in 1..100 {
            let suffix = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            let to = path.with_file_name(format!("{name}.refused-by-axe{suffix}"));
            match rename_no_replace(path, &to) {
                Ok(()) => {
                    moved.push((path.clone(), to));
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(_) => break,
            }
        }
    }
    moved
}

/// `renameat2(RENAME_NOREPLACE)`: fails rather than replace `to`.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let cstr = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (from, to) = (cstr(from)?, cstr(to)?);
    // SAFETY: renameat2(2) on two NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

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
    let bytes = crate::read::bytes(file, POINTER_BYTES).ok()?;
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
