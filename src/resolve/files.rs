//! The context files: every glob of `files` expanded beneath the workdir,
//! walked until the run's deadline, each match read or skipped with its
//! reason (design §2.7). The workdir is where an agent writes, so the walk
//! and the reads go by descriptor beneath it with no link followed (design
//! §8.7): a link a glob matches is skipped and said to be, and one
//! swapped in while the run reads is refused by the kernel, never read.

use std::collections::BTreeMap;
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};

use super::{ContextFile, Skipped, why_unread};
use crate::deadline::Deadline;
use crate::error::{During, Error};
use crate::io::stderr;
use crate::sandbox::Opened;
use crate::sandbox::beneath::{Denied, Follow, Kind, Root};
use crate::sandbox::read::{self, Unreadable};

/// What a glob matched, as the walk saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    File,
    /// A symbolic link: never followed.
    Link,
    /// A FIFO, socket or device: never opened.
    NotRegular,
    /// A pattern that leads outside the directory walked.
    Outside,
}

/// One glob's walk: the matches so far, and when to give up.
struct Walk<'a> {
    matcher: &'a GlobMatcher,
    deadline: Instant,
    out: &'a mut BTreeMap<String, Found>,
}

/// The walk reached the deadline.
struct DeadlinePassed;

/// The skip reason of a symbolic link.
const LINK: &str = "a symbolic link, not followed";

/// Expands every glob against `workdir`: matches de-duplicated and sorted by
/// relative path; skipped are symbolic links (never followed: one warning
/// says how many), what lies outside the workdir, what is not a regular
/// file (never opened), files over `max_file_bytes` (never read), binary
/// files (only their first bytes read) and unreadable files. An invalid
/// glob is a config error; reaching `deadline` is a timeout (an API error,
/// exit 3).
pub fn collect_files(
    opened: &Opened,
    patterns: &[String],
    max_file_bytes: u64,
    deadline: &Deadline,
) -> Result<(Vec<ContextFile>, Vec<Skipped>), Error> {
    if patterns.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let workdir = opened.path();
    let root = opened
        .root(Follow::Nothing)
        .map_err(|e| Error::config(format!("cannot open workdir {}: {e}", workdir.display())))?;
    let matched = matches(&root, patterns, deadline)?;
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for (rel, found) in matched {
        if deadline.passed() {
            return Err(deadline_passed(deadline));
        }
        let reason = match found {
            Found::Link => LINK.to_string(),
            Found::NotRegular => "not a regular file".to_string(),
            Found::Outside => "outside the workdir".to_string(),
            Found::File => match read::text_in(&root, &rel, max_file_bytes) {
                Ok(Some(content)) => {
                    files.push(ContextFile { path: rel, content });
                    continue;
                }
                Ok(None) => "binary".to_string(),
                Err(Unreadable::Link) => LINK.to_string(),
                Err(Unreadable::Outside) => "outside the workdir".to_string(),
                Err(Unreadable::Io(e)) => format!("unreadable: {e}"),
                Err(e) => why_unread(&e),
            },
        };
        skipped.push(Skipped { path: rel, reason });
    }
    let links = skipped.iter().filter(|s| s.reason == LINK).count();
    if links > 0 {
        let (what, are) = match links {
            1 => ("1 context file".to_string(), "is a symbolic link"),
            n => (format!("{n} context files"), "are symbolic links"),
        };
        stderr::warn_once(&format!(
            "{what} matched in {} {are}, which axe does not follow where an agent may \
             write; --verbose lists the files skipped",
            workdir.display()
        ));
    }
    Ok((files, skipped))
}

/// The names every glob of `patterns` matches beneath `root`, each with
/// what the listing saw it as (never a directory), keyed and sorted by
/// their path as the glob spells it (relative to `root`; an absolute
/// pattern that lies in `root` is made relative to it first),
/// de-duplicated. The walk goes by descriptor and enters no link: a link
/// the glob matches is [`Found::Link`], and so is a pattern's literal
/// directory that is one; a pattern that leads outside `root` (where
/// `root` keeps names beneath it) is [`Found::Outside`]. Nothing is read:
/// `--each-file` reads each file as its turn comes. An invalid glob is a
/// config error; reaching `deadline` is a timeout.
pub fn matches(
    root: &Root,
    patterns: &[String],
    deadline: &Deadline,
) -> Result<BTreeMap<String, Found>, Error> {
    let mut matched: BTreeMap<String, Found> = BTreeMap::new();
    for pattern in patterns {
        let pattern = normalize_pattern(root.relative(pattern));
        let matcher = compile(&pattern)?;
        let (base, rest) = split_literal_base(&pattern);
        let max_depth = if rest.iter().any(|c| c.contains("**")) {
            usize::MAX
        } else {
            rest.len()
        };
        let start = match root.dir(if base.is_empty() { "." } else { &base }, false) {
            Ok(dir) => dir,
            Err(Denied::Link) => {
                matched.insert(base, Found::Link);
                continue;
            }
            Err(Denied::Outside) => {
                matched.insert(pattern.clone(), Found::Outside);
                continue;
            }
            Err(_) => continue,
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
    Ok(matched)
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
    /// Walks `dir` (whose path as the glob spells it is `rel`) up to
    /// `depth` levels, adding every entry but a directory whose path
    /// matches (links, FIFOs, sockets and devices too: they are skipped,
    /// unopened). A link is never entered; `.git` is not entered.
    fn dir(&mut self, dir: &Root, rel: &str, depth: usize) -> Result<(), DeadlinePassed> {
        if depth == 0 {
            return Ok(());
        }
        if Instant::now() >= self.deadline {
            return Err(DeadlinePassed);
        }
        let Ok(entries) = dir.list(".") else {
            return Ok(());
        };
        for entry in entries {
            let child_rel = match rel {
                "" => entry.name.clone(),
                "/" => format!("/{}", entry.name),
                _ => format!("{rel}/{}", entry.name),
            };
            // A filesystem that does not say in its listing is asked.
            let kind = match entry.kind {
                Kind::Other => dir.stat(&entry.name).map_or(Kind::Other, |s| s.kind),
                kind => kind,
            };
            if kind == Kind::Dir {
                if entry.name != ".git"
                    && let Ok(sub) = dir.dir(&entry.name, false)
                {
                    self.dir(&sub, &child_rel, depth - 1)?;
                }
            } else if self.matcher.is_match(&child_rel) {
                let found = match kind {
                    Kind::File => Found::File,
                    Kind::Link => Found::Link,
                    _ => Found::NotRegular,
                };
                self.out.insert(child_rel, found);
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
        let err = collect_files(&here(), &["src/[".into()], 1 << 20, &later()).unwrap_err();
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

    /// The current directory, opened.
    fn here() -> Opened {
        Opened::own(std::path::Path::new(".")).unwrap()
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
        let err = collect_files(&here(), &["src/**/*.rs".into()], 1 << 20, &passed).unwrap_err();
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
            collect_files(&here(), &["src/**/*.rs".into()], 1 << 20, &later()).unwrap();
        assert!(files.iter().any(|f| f.path == "src/resolve/files.rs"));
    }
}
