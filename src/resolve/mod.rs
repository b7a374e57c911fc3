//! Resolution: from an agent file and a run's overrides to what is sent —
//! the model, the workdir, the context files, the skill, the memory and
//! the system prompt, assembled byte for byte as design §2.6–§2.8 and
//! §10.2 say. The context
//! files' globs are walked and read in `files`, the `AGENTS.md` files
//! (`agents_md = true`) in `agents_md`.

mod agents_md;
mod attach;
mod files;
pub mod template;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::Agent;
use crate::config::GlobalConfig;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::memory::{self, Memory};
use crate::paths;
use crate::provider::ModelRef;
use crate::sandbox::beneath::{Anchored, Base, Denied};
use crate::sandbox::opened::{self, Opened};
use crate::sandbox::read::{self, Unreadable};
use crate::schema::OutputSchema;
use crate::tools::artifacts::{self, ArtifactRun, Artifacts};
pub use attach::refused_by_wire as attachments_refused;
use files::collect_files;
pub use files::{Found, matches as glob_matches};

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

    /// What the agent's memory records as the task (design §10.2): the
    /// prompt, or the default message; stdin is not stored (it may be
    /// large, or private), only how much of it there was.
    pub fn task(&self) -> String {
        match self {
            UserInput::Stdin(t) => format!("(stdin, {} bytes, not stored)", t.len()),
            other => other.text().to_string(),
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
    /// `--artifact-dir`, `--keep-artifacts`, the caller's directory, and
    /// whether the directory is made (design §8.9).
    pub artifacts: ArtifactRun,
    /// `-a, --attach`: files (relative to the current directory) sent
    /// with the first message (design §4.16).
    pub attach: Vec<String>,
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
    /// sandbox policy (design §8); none when it lists no tool.
    pub tools: Option<Arc<crate::tools::Kit>>,
    /// Its memory, when `[memory]` enables it: the entries at the end of
    /// the system prompt, and the file a successful run appends to (design
    /// ch. 10).
    pub memory: Option<Memory>,
    /// Its artifact directory, made for a run (design §8.9); removed
    /// when the last holder drops it, if axe made it.
    pub artifacts: Option<Arc<Artifacts>>,
    /// The files sent with its first message: its file's `attach`, then
    /// `-a`'s (design §4.16). A caller's are never its sub-agents'.
    pub attachments: Vec<crate::provider::Attachment>,
}

/// Resolves `agent` with `overrides`, its provider named as `global` says
/// (design §4.12); relative paths given on the command line
/// resolve against `cwd`. Reading the context files stops at the run's
/// deadline (a `**` glob over a huge tree must not outlive `--timeout`).
pub fn resolve(
    agent: Agent,
    overrides: &Overrides,
    global: &GlobalConfig,
    cwd: &Path,
    deadline: &Deadline,
) -> Result<Resolved, Error> {
    // `--model` wins before the file's is read: it is how a file still
    // holding the scaffold's placeholder runs.
    let model = match &overrides.model {
        Some(m) => global.model_ref(m)?,
        None => match (agent.own_model(global)?, &overrides.caller_model) {
            (Some(m), _) => m,
            (None, Some(caller)) => caller.clone(),
            (None, None) => {
                return Err(Error::NoModel.in_agent_file(&agent.path));
            }
        },
    };
    let output_schema = crate::agent::output_schema(
        agent.config.output.as_ref(),
        overrides.output_schema.as_deref(),
        agent.config_dir(),
        cwd,
    )
    .map_err(|e| match overrides.output_schema {
        // The file's `[output]` names the file; `--output-schema` is said
        // by its own message.
        None => e.in_agent_file(&agent.path),
        Some(_) => e,
    })?
    .map(Arc::new);
    let workdir = resolve_workdir(&agent, overrides, cwd)?;
    let max_file_bytes = agent.config.file_limit();
    let (skill_path, skill) = resolve_skill(&agent, overrides, cwd, max_file_bytes)?;
    let (mut files, mut skipped) =
        collect_files(&workdir, &agent.config.files, max_file_bytes, deadline)?;
    if agent.config.agents_md {
        // Ahead of the globbed files, so that the prompt's limit keeps
        // them first; a glob that matched the workdir's is not read twice.
        let (mut md, md_skipped) = agents_md::collect(&workdir, max_file_bytes);
        files.retain(|f| f.path != agents_md::NAME);
        skipped.retain(|f| f.path != agents_md::NAME);
        md.append(&mut files);
        files = md;
        skipped.extend(md_skipped);
    }
    let base = agent.config.system_prompt.as_deref().unwrap_or("");
    let head = system_prompt(base, skill.as_deref(), &[]).len();
    let limit = agent.config.prompt_limit();
    let memory = memory_within(&agent, cwd, head, limit);
    let memory_len = memory.as_ref().map_or(0, |m| m.section().len());
    let (files, over) = within_prompt_limit(head + memory_len, files, limit)?;
    skipped.extend(over);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let mut system_prompt = system_prompt(base, skill.as_deref(), &files);
    if let Some(m) = &memory {
        system_prompt.push_str(&m.section());
    }
    let artifacts = artifacts::open(
        &agent.config.name,
        &agent.config.artifacts,
        &overrides.artifacts,
        workdir.path(),
    )?;
    let attachments = attach::read_all(
        &workdir,
        &agent.config.attach,
        cwd,
        &overrides.attach,
        &model,
    )?;
    let tools = crate::tools::kit(&agent.config.tools, &workdir, artifacts.clone())?.map(Arc::new);
    Ok(Resolved {
        agent,
        model,
        workdir: workdir.path().to_path_buf(),
        skill_path,
        skill,
        files,
        skipped,
        system_prompt,
        output_schema,
        tools,
        memory,
        artifacts,
        attachments,
    })
}

impl Resolved {
    /// This agent with its system prompt assembled again from `base` and
    /// `skill` in place of the file's (the same texts with their `{{KEY}}`
    /// filled, design §11.3): the context files are kept, as many as still
    /// fit within `max_prompt_bytes`, and the memory's entries are the
    /// same. Nothing is read again.
    pub fn with_prompts(&self, base: &str, skill: Option<String>) -> Result<Resolved, Error> {
        let mut r = self.clone();
        let head = system_prompt(base, skill.as_deref(), &[]).len();
        let memory_len = r.memory.as_ref().map_or(0, |m| m.section().len());
        let limit = r.agent.config.prompt_limit();
        let (files, over) =
            within_prompt_limit(head + memory_len, std::mem::take(&mut r.files), limit)?;
        r.skipped.extend(over);
        r.files = files;
        r.system_prompt = system_prompt(base, skill.as_deref(), &r.files);
        if let Some(m) = &r.memory {
            r.system_prompt.push_str(&m.section());
        }
        r.skill = skill;
        Ok(r)
    }
}

/// The agent's memory (design §10.2), its entries cut to what fits in the
/// system prompt after the prompt and skill (`head` bytes); the context
/// files get what is left.
fn memory_within(agent: &Agent, cwd: &Path, head: usize, limit: u64) -> Option<Memory> {
    let mut memory = memory::load(&agent.id, agent.config.memory.as_ref(), cwd)?;
    if let Some(room) = u64::try_from(head).ok().and_then(|h| limit.checked_sub(h)) {
        memory.fit(room);
    }
    Some(memory)
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

/// `--workdir`, then the TOML `workdir` (relative to `cwd`), then `cwd`,
/// opened once beneath the directory it is written against with no link
/// followed below it (design §8.7): another agent's command may have
/// swapped it, or a directory above it, for a link. The file tools, the
/// context files and the commands all work from this descriptor.
fn resolve_workdir(agent: &Agent, overrides: &Overrides, cwd: &Path) -> Result<Opened, Error> {
    let written = match overrides
        .workdir
        .as_deref()
        .or(agent.config.workdir.as_deref())
    {
        Some(d) if !d.trim().is_empty() => d,
        _ => ".",
    };
    let path = || paths::resolve_against(cwd, written);
    match Opened::open(Base::Dir(cwd), written, true) {
        Ok(dir) if written == "." => Ok(dir.shown_as(cwd)),
        Ok(dir) => Ok(dir),
        Err(Denied::NotFound) => Err(Error::WorkdirNotFound { path: path() }),
        Err(Denied::NotADirectory) => Err(Error::WorkdirNotDirectory { path: path() }),
        Err(e) => Err(Error::config(opened::refusal("the workdir", &path(), &e))),
    }
}

/// `--skill` (relative to `cwd`), else the TOML `skill` (relative to the
/// config directory). A directory means its `SKILL.md`. The skill may lie
/// where an agent writes: it is read beneath the directory its path is
/// written against, with no link followed (design §8.7).
fn resolve_skill(
    agent: &Agent,
    overrides: &Overrides,
    cwd: &Path,
    max_file_bytes: u64,
) -> Result<(Option<PathBuf>, Option<String>), Error> {
    let config_dir;
    let (base, written) = match (&overrides.skill, &agent.config.skill) {
        (Some(s), _) if !s.trim().is_empty() => (Base::Cwd(cwd), s),
        (_, Some(s)) if !s.trim().is_empty() => {
            config_dir = match agent.config_dir() {
                Some(d) => d.to_path_buf(),
                None => paths::config_dir()?,
            };
            (Base::Dir(&config_dir), s)
        }
        _ => return Ok((None, None)),
    };
    let at = match Anchored::new(base, written) {
        Ok(at) => at,
        Err(e) => {
            let path = paths::resolve_against(base.path(), written);
            return Err(skill_error(path, Unreadable::Io(e)));
        }
    };
    let (root, rest) = at.parts();
    let (path, read) = match root.dir(rest, false) {
        Ok(dir) => (
            at.path().join("SKILL.md"),
            read::bytes_in(&dir, "SKILL.md", max_file_bytes),
        ),
        // A file, or the reason it cannot be read.
        Err(_) => (
            at.path().to_path_buf(),
            read::bytes_in(root, rest, max_file_bytes),
        ),
    };
    match read {
        Ok(bytes) => Ok((
            Some(path),
            Some(String::from_utf8_lossy(&bytes).into_owned()),
        )),
        Err(e) => Err(skill_error(path, e)),
    }
}

fn skill_error(path: PathBuf, e: Unreadable) -> Error {
    match e {
        Unreadable::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Error::SkillNotFound { path }
        }
        e => Error::SkillUnreadable {
            why: why_unread(&e),
            path,
        },
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
