//! Resolution: from an agent file and a run's overrides to what is sent —
//! the model, the workdir, the context files, the skill and the system
//! prompt, assembled byte for byte as design §2.6–§2.8 say.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};

use crate::agent::Agent;
use crate::deadline::Deadline;
use crate::error::{During, Error};
use crate::paths;
use crate::provider::ModelRef;
use crate::read::{self, Unreadable};
use crate::schema::{self, OutputSchema};

/// The user message when neither `--prompt` nor stdin gives one.
pub const DEFAULT_USER_MESSAGE: &str = "Execute the task described in your instructions.";

/// Where the user message came from.
#[derive(Debug, Clone, PartialEq)]
pub enum UserInput {
    Prompt(String),
    Stdin(String),
    Default,
}

impl UserInput {
    pub fn text(&self) -> &str {
        match self {
            UserInput::Prompt(t) | UserInput::Stdin(t) => t,
            UserInput::Default => DEFAULT_USER_MESSAGE,
        }
    }
}

/// What goes between the skill and the first context file.
const FILES_HEADER: &str = "\n\n---\n\n## Context Files\n\n";

/// Command-line overrides of an agent's settings (empty for sub-agents),
/// and the caller's model for an agent whose file names none.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub model: Option<String>,
    /// The model the caller runs on: what a sub-agent without `model` gets
    /// (design D21). None at top level.
    pub caller_model: Option<ModelRef>,
    /// `--output-schema`: a JSON Schema file (relative to the current
    /// directory) in place of the agent's `[output]` schema.
    pub output_schema: Option<String>,
    pub skill: Option<String>,
    pub workdir: Option<String>,
}

/// A context file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextFile {
    /// `/`-separated, relative to the workdir.
    pub path: String,
    pub content: String,
}

/// A file a glob matched but that was not used, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// Everything needed to build the first request of a run.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub agent: Agent,
    pub model: ModelRef,
    pub workdir: PathBuf,
    pub skill_path: Option<PathBuf>,
    pub skill: Option<String>,
    pub files: Vec<ContextFile>,
    pub skipped: Vec<Skipped>,
    pub system_prompt: String,
    /// The output schema the answer must match, compiled (design D22).
    pub output_schema: Option<Arc<OutputSchema>>,
    /// The built-in tools it listed, with its workdir opened and its
    /// sandbox policy (design §10); none when it lists no tool.
    pub tools: Option<Arc<crate::tools::Kit>>,
}

/// Resolves `agent` with `overrides`; relative paths given on the command line
/// resolve against `cwd`. Reading the context files stops at the run's
/// deadline (a `**` glob over a huge tree must not outlive `--timeout`).
pub fn resolve(
    agent: Agent,
    overrides: &Overrides,
    cwd: &Path,
    deadline: &Deadline,
) -> Result<Resolved, Error> {
    let model = match (
        &overrides.model,
        &agent.config.model,
        &overrides.caller_model,
    ) {
        (Some(m), _, _) | (None, Some(m), _) => ModelRef::parse(m)?,
        (None, None, Some(caller)) => caller.clone(),
        (None, None, None) => {
            return Err(Error::NoModel);
        }
    };
    let output_schema = schema::load(
        agent.config.output.as_ref(),
        overrides.output_schema.as_deref(),
        agent.config_dir(),
        cwd,
    )?
    .map(Arc::new);
    let workdir = resolve_workdir(&agent, overrides, cwd)?;
    let max_file_bytes = agent.config.file_limit();
    let (skill_path, skill) = resolve_skill(&agent, overrides, cwd, max_file_bytes)?;
    let (files, mut skipped) =
        collect_files(&workdir, &agent.config.files, max_file_bytes, deadline)?;
    let base = agent.config.system_prompt.as_deref().unwrap_or("");
    let (files, over) = within_prompt_limit(
        system_prompt(base, skill.as_deref(), &[]).len(),
        files,
        agent.config.prompt_limit(),
    )?;
    skipped.extend(over);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let system_prompt = system_prompt(base, skill.as_deref(), &files);
    let tools = crate::tools::kit(&agent.config.tools, &workdir)?.map(Arc::new);
    Ok(Resolved {
        agent,
        model,
        workdir,
        skill_path,
        skill,
        files,
        skipped,
        system_prompt,
        output_schema,
        tools,
    })
}

/// `system_prompt`, then the skill, then the context files, with the
/// separators of design §2.8.
pub fn system_prompt(base: &str, skill: Option<&str>, files: &[ContextFile]) -> String {
    let mut sp = base.to_string();
    if let Some(skill) = skill {
        sp.push_str("\n\n---\n\n## Skill\n\n");
        sp.push_str(skill);
    }
    if !files.is_empty() {
        sp.push_str(FILES_HEADER);
        let blocks: Vec<String> = files.iter().map(file_block).collect();
        sp.push_str(&blocks.join("\n\n"));
    }
    sp
}

/// One context file as the system prompt shows it.
fn file_block(f: &ContextFile) -> String {
    let ext = Path::new(&f.path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    format!("### {}\n```{ext}\n{}\n```", f.path, f.content)
}

/// The context files that fit in a system prompt of at most `max` bytes
/// after its first `before` bytes (prompt and skill), in order; the rest
/// are skipped. Prompt and skill alone over `max` are a config error.
fn within_prompt_limit(
    before: usize,
    files: Vec<ContextFile>,
    max: u64,
) -> Result<(Vec<ContextFile>, Vec<Skipped>), Error> {
    let before = u64::try_from(before).unwrap_or(u64::MAX);
    if before > max {
        return Err(Error::config(format!(
            "the system prompt and skill are {before} bytes, over max_prompt_bytes ({max})"
        )));
    }
    let mut size = before;
    let (mut kept, mut over) = (Vec::new(), Vec::new());
    for f in files {
        // The header before the first block, the blank line before others.
        let sep = if kept.is_empty() {
            FILES_HEADER.len()
        } else {
            2
        };
        let grown =
            u64::try_from(sep + file_block(&f).len()).map_or(u64::MAX, |n| size.saturating_add(n));
        if grown > max {
            over.push(Skipped {
                path: f.path,
                reason: format!("the system prompt would pass max_prompt_bytes, {max}"),
            });
        } else {
            size = grown;
            kept.push(f);
        }
    }
    Ok((kept, over))
}

/// `--workdir`, then the TOML `workdir` (relative to `cwd`), then `cwd`.
fn resolve_workdir(agent: &Agent, overrides: &Overrides, cwd: &Path) -> Result<PathBuf, Error> {
    let dir = match overrides
        .workdir
        .as_deref()
        .or(agent.config.workdir.as_deref())
    {
        Some(d) if !d.trim().is_empty() => paths::resolve_against(cwd, d),
        _ => return Ok(cwd.to_path_buf()),
    };
    match fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(Error::WorkdirNotDirectory { path: dir }),
        Err(_) => Err(Error::WorkdirNotFound { path: dir }),
    }
}

/// `--skill` (relative to `cwd`), else the TOML `skill` (relative to the
/// config directory). A directory means its `SKILL.md`.
fn resolve_skill(
    agent: &Agent,
    overrides: &Overrides,
    cwd: &Path,
    max_file_bytes: u64,
) -> Result<(Option<PathBuf>, Option<String>), Error> {
    let path = match (&overrides.skill, &agent.config.skill) {
        (Some(s), _) if !s.trim().is_empty() => paths::resolve_against(cwd, s),
        (_, Some(s)) if !s.trim().is_empty() => {
            let config_dir = match agent.config_dir() {
                Some(d) => d.to_path_buf(),
                None => paths::config_dir()?,
            };
            paths::resolve_against(&config_dir, s)
        }
        _ => return Ok((None, None)),
    };
    let path = if path.is_dir() {
        path.join("SKILL.md")
    } else {
        path
    };
    match read::bytes(&path, max_file_bytes) {
        Ok(bytes) => Ok((
            Some(path),
            Some(String::from_utf8_lossy(&bytes).into_owned()),
        )),
        Err(Unreadable::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::SkillNotFound { path })
        }
        Err(e) => Err(Error::SkillUnreadable {
            why: why_unread(&e),
            path,
        }),
    }
}

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
            root.clone()
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

    // A match of an absolute pattern that lies in the workdir is shown, and
    // de-duplicated, by its path relative to the workdir.
    let matched: BTreeMap<String, PathBuf> = matched
        .into_iter()
        .map(|(rel, path)| match path.strip_prefix(&root) {
            Ok(inner) if rel.starts_with('/') => (inner.to_string_lossy().replace('\\', "/"), path),
            _ => (rel, path),
        })
        .collect();
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

/// Why a file was not read, as a skip reason or after `cannot read skill X: `.
fn why_unread(e: &Unreadable) -> String {
    match e {
        Unreadable::TooLarge { size, limit } => {
            format!("larger than max_file_bytes, {limit}: {size} bytes")
        }
        other => other.to_string(),
    }
}

/// The error for a deadline that passed while context files were read.
fn deadline_passed(deadline: &Deadline) -> Error {
    Error::TimedOut {
        secs: deadline.secs,
        during: During::ReadingContextFiles,
    }
}

/// One glob's walk: the matches so far, and when to give up.
struct Walk<'a> {
    matcher: &'a GlobMatcher,
    deadline: Instant,
    out: &'a mut BTreeMap<String, PathBuf>,
}

/// The walk reached the deadline.
struct DeadlinePassed;

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
    fn system_prompt_is_assembled_byte_for_byte() {
        let files = vec![
            ContextFile {
                path: "a.rs".into(),
                content: "fn a() {}".into(),
            },
            ContextFile {
                path: "docs/b".into(),
                content: "B".into(),
            },
        ];
        let sp = system_prompt("You help.", Some("SKILL"), &files);
        assert_eq!(
            sp,
            "You help.\n\n---\n\n## Skill\n\nSKILL\n\n---\n\n## Context Files\n\n### a.rs\n```rs\nfn a() {}\n```\n\n### docs/b\n```\nB\n```"
        );
        assert_eq!(system_prompt("Only.", None, &[]), "Only.");
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
        assert!(files.iter().any(|f| f.path == "src/resolve.rs"));
    }
}
