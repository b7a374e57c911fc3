//! What of `/etc` a command may read (design §8.3). Run as root, a
//! command given `/etc` whole read `/etc/shadow` (issue 31): the kernel's
//! file modes do not hold root back, and Landlock grants a directory with
//! everything beneath it. So `/etc` is granted entry by entry, and a
//! command reads there what any user may:
//!
//! - an entry is readable only when its mode lets others read it (and, for
//!   a directory, enter it): `/etc/shadow`, `gshadow`, `sudoers`, SSH host
//!   keys, `ssl/private`, a `config.toml` axe wrote (0600) are not;
//! - whatever its mode: `shadow`, `gshadow` and their `-` backups,
//!   `sudoers` and `sudoers.d`, `ssh/*_key`, `axe/` (where docs/guide/serving.md
//!   keeps `axe serve`'s token and keys), and axe's own `config.toml` where the
//!   user put it under `/etc`;
//! - a directory holding nothing held back is granted whole (one rule);
//!   one that does is granted entry by entry, down to the files;
//! - a symbolic link in a directory granted entry by entry (as `/etc`
//!   itself is) has its target granted when that is a file readable under
//!   the same rules, in directories others may pass through:
//!   `resolv.conf` may point into `/run`. Through any other link the
//!   kernel checks where it leads, as for any path.
//!
//! The walk is made once per process (about 1,200 entries on a Debian
//! system) and its list reused by every command: files added under a
//! directory granted entry by entry afterwards are not readable until axe
//! starts again. The walk stops at [`MOST`] entries; what it did not see
//! is not granted.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// A path a command may read, and whether it is a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: PathBuf,
    pub dir: bool,
}

/// The most entries the walk looks at.
pub const MOST: usize = 20_000;

/// Names directly under `/etc` held back whatever their mode.
const HELD: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "axe",
];

/// The entries of `/etc` a command may read, walked once per process.
pub fn readable() -> Arc<Vec<Entry>> {
    static LIST: Mutex<Option<Arc<Vec<Entry>>>> = Mutex::new(None);
    let mut list = LIST.lock().unwrap_or_else(PoisonError::into_inner);
    list.get_or_insert_with(|| {
        let held: Vec<PathBuf> = crate::paths::config_file().into_iter().collect();
        Arc::new(walk(Path::new(super::landlock::ETC), &held))
    })
    .clone()
}

/// The entries of `root` a command may read, holding back `held` (exact
/// paths) besides what the rules above hold back.
pub fn walk(root: &Path, held: &[PathBuf]) -> Vec<Entry> {
    walk_within(root, held, MOST)
}

/// [`walk`], looking at `most` entries at most.
fn walk_within(root: &Path, held: &[PathBuf], most: usize) -> Vec<Entry> {
    let mut w = Walk {
        root,
        held,
        most,
        seen: 0,
        links: Vec::new(),
    };
    let mut out = match w.cover(root) {
        Cover::Whole => vec![Entry {
            path: root.to_path_buf(),
            dir: true,
        }],
        Cover::Parts(parts) => parts,
    };
    for link in std::mem::take(&mut w.links) {
        if let Some(file) = w.link_target(&link) {
            out.push(Entry {
                path: file,
                dir: false,
            });
        }
    }
    out
}

struct Walk<'a> {
    root: &'a Path,
    held: &'a [PathBuf],
    most: usize,
    /// Entries looked at so far.
    seen: usize,
    /// Symbolic links met in a directory granted entry by entry.
    links: Vec<PathBuf>,
}

/// A directory granted whole, or the parts of it that may be.
enum Cover {
    Whole,
    Parts(Vec<Entry>),
}

impl Walk<'_> {
    fn cover(&mut self, dir: &Path) -> Cover {
        let Ok(list) = std::fs::read_dir(dir) else {
            return Cover::Parts(Vec::new());
        };
        let (mut parts, mut whole, mut links) = (Vec::new(), true, Vec::new());
        for entry in list {
            self.seen += 1;
            let Ok(entry) = entry else {
                whole = false;
                continue;
            };
            if self.seen > self.most {
                whole = false;
                break;
            }
            let path = entry.path();
            if self.held_back(&path) {
                whole = false;
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                whole = false;
                continue;
            };
            if kind.is_symlink() {
                links.push(path);
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                whole = false;
                continue;
            };
            if !open_to_all(&meta) {
                whole = false;
            } else if kind.is_dir() {
                match self.cover(&path) {
                    Cover::Whole => parts.push(Entry { path, dir: true }),
                    Cover::Parts(p) => {
                        whole = false;
                        parts.extend(p);
                    }
                }
            } else {
                parts.push(Entry { path, dir: false });
            }
        }
        if whole {
            return Cover::Whole;
        }
        self.links.extend(links);
        Cover::Parts(parts)
    }

    /// Whether `path` is held back by name.
    fn held_back(&self, path: &Path) -> bool {
        if self.held.iter().any(|h| h == path) {
            return true;
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let name = name.to_string_lossy();
        (parent == self.root && HELD.contains(&name.as_ref()))
            || (parent == self.root.join("ssh") && name.ends_with("_key"))
    }

    /// The file `link` leads to, when it is one a command may read: open to
    /// all, in directories all may pass through, and neither held back nor
    /// inside something held back.
    fn link_target(&self, link: &Path) -> Option<PathBuf> {
        let target = std::fs::canonicalize(link).ok()?;
        let meta = std::fs::metadata(&target).ok()?;
        if !meta.is_file() || !open_to_all(&meta) {
            return None;
        }
        let mut at = target.as_path();
        loop {
            if self.held_back(at) {
                return None;
            }
            match at.parent() {
                Some(parent) => at = parent,
                None => break,
            }
            // Others must be able to pass through each directory above it.
            let Ok(meta) = std::fs::metadata(at) else {
                return None;
            };
            if meta.permissions().mode() & 0o001 == 0 {
                return None;
            }
        }
        Some(target)
    }
}

/// Readable by others, and for a directory enterable by them too.
fn open_to_all(meta: &std::fs::Metadata) -> bool {
    let mode = meta.permissions().mode();
    mode & 0o004 != 0 && (!meta.is_dir() || mode & 0o001 != 0)
}

#[cfg(test)]
#[path = "etc_tests.rs"]
mod tests;
