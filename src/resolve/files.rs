//! The context files: every glob of `files` expanded beneath the workdir,
//! walked until the run's deadline, each match read or skipped with its
//! reason (design §2.7).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};

use super::{ContextFile, Skipped, why_unread};
use crate::deadline::Deadline;
use crate::error::{During, Error};
use crate::read::{self, Unreadable};

/// One glob's walk: the matches so far, and when to give up.
struct Walk<'a> {
    matcher: &'a GlobMatcher,
    deadline: Instant,
    out: &'a mut BTreeMap<String, PathBuf>,
}

/// The walk reached the deadline.
struct DeadlinePassed;

/// Expands every glob against `workdir`: matches de-duplicated and sorted by
/// relative path; skipped are files outside the workdir (also through
/// symlinks), what is not a regular file (never opened), files over
/// `max_file_bytes` (never read), binary files (only their first bytes
/// read) and unreadable files. An invalid glob is a config error; reaching
/// `deadline` is a timeout (an API error, exit 3).
pub fn collect_files(
    workdir: &Path,
    patterns: &[String],
    max_file_bytes: u64,
    deadline: &Deadline,
) -> Result<(Vec<ContextFile>, Vec<Skipped>), Error> {
    if patterns.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let root = workdir
        .canonicalize()
        .map_err(|e| Error::config(format!("cannot resolve workdir {}: {e}", workdir.display())))?;
    let matched = matches(&root, patterns, deadline)?;
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for (rel, path) in matched {
        if deadline.passed() {
            return Err(deadline_passed(deadline));
        }
        let inside = path
            .canonicalize()
            .is_ok_and(|real| real.starts_with(&root));
        if !inside {
            skipped.push(Skipped {
                path: rel,
                reason: "outside the workdir".into(),
            });
            continue;
        }
        let reason = match read::text(&path, max_file_bytes) {
            Ok(Some(content)) => {
                files.push(ContextFile { path: rel, content });
                continue;
            }
            Ok(None) => "binary".to_string(),
            Err(Unreadable::Io(e)) => format!("unreadable: {e}"),
            Err(e) => why_unread(&e),
        };
        skipped.push(Skipped { path: rel, reason });
    }
    Ok((files, skipped))
}

/// The paths every glob of `patterns` matches beneath `root` (canonical),
/// keyed and sorted by their path relative to `root`, de-duplicated; a
/// match of an absolute pattern that lies in `root` is keyed relative to
/// it too. Nothing is read: `--each-file` reads each file as its turn
/// comes. An invalid glob is a config error; reaching `deadline` is a
/// timeout.
pub fn matches(
    root: &Path,
    patterns: &[String],
    deadline: &Deadline,
) -> Result<BTreeMap<String, PathBuf>, Error> {
    let mut matched: BTreeMap<String, PathBuf> = BTreeMap::new();
    for pattern in patterns {
        let pattern = normalize_pattern(pattern);
        let matcher = compile(&pattern)?;
        let (base, rest) = split_literal_base(&pattern);
        let max_depth = if rest.iter().any(|c| c.contains("**")) {
            usize::MAX
        } else {
            rest.len()
        };
        let start = if base.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&base)
        };
        let mut walk = Walk {
            matcher: &matcher,
            deadline: deadline.at,
            out: &mut matched,
        };
        if walk.dir(&start, &base, max_depth).is_err() {
            return Err(deadline_passed(deadline));
        }
    }
    Ok(matched
        .into_iter()
        .map(|(rel, path)| match path.strip_prefix(root) {
            Ok(inner) if rel.starts_with('/') => (inner.to_string_lossy().replace('\\', "/"), path),
            _ => (rel, path),
        })
        .collect())
}

/// Drops `./` components, which would otherwise never match.
fn normalize_pattern(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|c| *c != ".").collect();
    let joined = parts.join("/");
    if p.starts_with('/') && !joined.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

fn compile(pattern: &str) -> Result<GlobMatcher, Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| Error::InvalidGlob {
            pattern: pattern.to_string(),
            why: e.kind().to_string(),
        })
}

/// Splits a pattern into the leading directories without glob syntax (where
/// the walk starts) and the remaining components.
fn split_literal_base(pattern: &str) -> (String, Vec<String>) {
    let comps: Vec<&str> = pattern.split('/').collect();
    let is_meta = |c: &str| c.contains(['*', '?', '[', '{', '\\']);
    let n = comps
        .iter()
        .take(comps.len().saturating_sub(1))
        .take_while(|c| !is_meta(c))
        .count();
    let base = comps[..n].join("/");
    // An absolute pattern keeps its leading `/`.
    let base = if pattern.starts_with('/') && base.is_empty() {
        "/".to_string()
    } else {
        base
    };
    (base, comps[n..].iter().map(|c| c.to_string()).collect())
}

/// The error for a deadline that passed while context files were read.
fn deadline_passed(deadline: &Deadline) -> Error {
    Error::TimedOut {
        secs: deadline.secs,
        during: During::ReadingContextFiles,
    }
}

impl Walk<'_> {
    /// Walks `dir` (whose path relative to the workdir is `rel`) up to
    /// `depth` levels, adding every entry but a directory whose relative
    /// path matches (FIFOs, sockets and devices too: they are skipped,
    /// unopened, when read). Symlinked directories are not entered (no
    /// loops); `.git` is not entered.
    fn dir(&mut self, dir: &Path, rel: &str, depth: usize) -> Result<(), DeadlinePassed> {
        if depth == 0 {
            return Ok(());
        }
        if Instant::now() >= self.deadline {
            return Err(DeadlinePassed);
        }
        let Ok(entries) = fs::read_dir(dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let child_rel = match rel {
                "" => name.clone(),
                "/" => format!("/{name}"),
                _ => format!("{rel}/{name}"),
            };
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if name != ".git" {
                    self.dir(&path, &child_rel, depth - 1)?;
                }
            } else if !(ft.is_symlink() && path.is_dir()) && self.matcher.is_match(&child_rel) {
                self.out.insert(child_rel, path);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_base_stops_at_the_first_glob_component() {
        assert_eq!(
            split_literal_base("src/**/*.rs"),
            ("src".into(), vec!["**".into(), "*.rs".into()])
        );
        assert_eq!(
            split_literal_base("README.md"),
            (String::new(), vec!["README.md".into()])
        );
        assert_eq!(
            split_literal_base("a/b/c.txt"),
            ("a/b".into(), vec!["c.txt".into()])
        );
        assert_eq!(
            split_literal_base("/etc/*.conf"),
            ("/etc".into(), vec!["*.conf".into()])
        );
        assert_eq!(normalize_pattern("./src/./*.rs"), "src/*.rs");
    }

    #[test]
    fn invalid_glob_is_a_config_error() {
        let err = collect_files(Path::new("."), &["src/[".into()], 1 << 20, &later()).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidGlob { pattern, .. } if pattern == "src/["),
            "{err:?}"
        );
        assert_eq!(err.exit_code(), crate::error::Code::Config);
        assert!(
            err.to_string().starts_with("invalid glob \"src/[\""),
            "{}",
            err
        );
    }

    fn later() -> Deadline {
        Deadline::after(60)
    }

    #[test]
    fn reading_files_stops_at_the_deadline() {
        let passed = Deadline {
            at: Instant::now(),
            secs: 7,
        };
        let err =
            collect_files(Path::new("."), &["src/**/*.rs".into()], 1 << 20, &passed).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TimedOut {
                    secs: 7,
                    during: During::ReadingContextFiles
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.exit_code(), crate::error::Code::Api);
        assert_eq!(
            err.to_string(),
            "timeout after 7s (while reading context files)"
        );
        // The same glob with time left reads this crate's sources.
        let (files, _) =
            collect_files(Path::new("."), &["src/**/*.rs".into()], 1 << 20, &later()).unwrap();
        assert!(files.iter().any(|f| f.path == "src/resolve/files.rs"));
    }
}
