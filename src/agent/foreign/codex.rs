//! Codex's custom agent files (`.codex/agents/<name>.toml`, design §3.17):
//! `name`, `description`, `developer_instructions` (the prompt), `model`,
//! `model_reasoning_effort`, `sandbox_mode` and `mcp_servers` become axe's
//! keys; any other key is named in one warning. `sandbox_mode` chooses the
//! tools; every command still runs in axe's sandbox, whatever the file
//! says. `mcp_servers` are refused unless config.toml allows them, and then
//! a server's command is sandboxed too.

use toml::{Table, Value};

use super::{Context, Imported};
use crate::config::tomlfile;

/// The reading tools: what `read-only` (and a file without `sandbox_mode`)
/// is offered.
pub(super) const READING: [&str; 3] = ["read_file", "list_directory", "search_files"];

/// What `workspace-write` adds to [`READING`].
pub(super) const WRITING: [&str; 3] = ["write_file", "edit_file", "run_command"];

/// The file `text` of agent `id` as axe's keys, or why it cannot be read.
pub(super) fn read(cx: &Context, id: &str, text: &str) -> Result<Imported, String> {
    let (file, _): (Table, _) = tomlfile::parse(text, &|_| None)?;
    let mut out = Imported {
        table: Table::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
    };
    let mut unused = Vec::new();
    let mut sandbox = None;
    for (key, value) in &file {
        let text = || {
            value
                .as_str()
                .map(str::to_string)
                .ok_or(format!("`{key}` must be a string"))
        };
        match key.as_str() {
            "name" => {
                let name = text()?;
                if name.trim() != id {
                    out.warnings.push(format!(
                        "name {name:?} is not the file's name: axe calls the agent \"{id}\""
                    ));
                }
                out.table.insert("name".into(), Value::String(name));
            }
            "description" => {
                out.table
                    .insert("description".into(), Value::String(text()?));
            }
            "developer_instructions" => {
                let prompt = text()?.trim().to_string();
                out.table
                    .insert("system_prompt".into(), Value::String(prompt));
            }
            "model" => model(&mut out, &text()?),
            "model_reasoning_effort" => reasoning_effort(&mut out, &text()?),
            "sandbox_mode" => sandbox = Some(text()?),
            "mcp_servers" => {
                let servers = value.as_table().ok_or("`mcp_servers` must be a table")?;
                refuse_servers(cx, servers)?;
                mcp_servers(&mut out, &mut unused, servers)?;
            }
            _ => unused.push(key.clone()),
        }
    }
    // On by default for an imported agent, as Codex reads the project's
    // AGENTS.md (design §3.17).
    out.table.insert("agents_md".into(), Value::Boolean(true));
    out.table
        .entry("name")
        .or_insert_with(|| Value::String(id.to_string()));
    sandbox_mode(cx, &mut out, sandbox.as_deref())?;
    if !unused.is_empty() {
        out.warnings
            .push(format!("keys axe does not use: {}", unused.join(", ")));
    }
    Ok(out)
}

/// `model_reasoning_effort` as `[params] reasoning_effort`. Codex's
/// efforts beyond axe's are said: `xhigh` runs as `high`, `none` (and any
/// other) asks for nothing (design §4.15).
fn reasoning_effort(out: &mut Imported, effort: &str) {
    let axes = match effort {
        "xhigh" => {
            out.warnings
                .push("model_reasoning_effort \"xhigh\" runs as \"high\"".into());
            "high"
        }
        e if crate::provider::Effort::named(e).is_some() => e,
        other => {
            out.notes.push(format!(
                "model_reasoning_effort = {other:?} is not sent: axe's efforts are minimal, \
                 low, medium and high"
            ));
            return;
        }
    };
    let mut params = Table::new();
    params.insert("reasoning_effort".into(), Value::from(axes));
    out.table.insert("params".into(), Value::Table(params));
}

/// `model`: a bare model is OpenAI's (Codex's own provider); a
/// `provider/model` as it is.
fn model(out: &mut Imported, model: &str) {
    let model = model.trim();
    if model.is_empty() {
        return;
    }
    let model = if model.contains('/') {
        model.to_string()
    } else {
        format!("openai/{model}")
    };
    out.table.insert("model".into(), Value::String(model));
}

/// `sandbox_mode` as the tools offered. `danger-full-access` is refused
/// unless config.toml's `[import] allow_full_access` says otherwise, and then
/// runs as `workspace-write`: axe never runs a command outside its sandbox.
fn sandbox_mode(cx: &Context, out: &mut Imported, mode: Option<&str>) -> Result<(), String> {
    let write = match mode {
        None => {
            out.notes.push(
                "the file has no `sandbox_mode`: axe offers it the reading tools \
                 (read-only); set `sandbox_mode = \"workspace-write\"` to let it write"
                    .into(),
            );
            false
        }
        Some("read-only") => false,
        Some("workspace-write") => true,
        Some("danger-full-access") if cx.global.import.allow_full_access => {
            out.warnings.push(
                "sandbox_mode \"danger-full-access\" runs as \"workspace-write\": \
                 axe never runs a command outside its sandbox"
                    .into(),
            );
            true
        }
        Some("danger-full-access") => {
            return Err(
                "sandbox_mode \"danger-full-access\" is refused: axe never runs \
                        outside its sandbox; config.toml's `[import] allow_full_access = true` \
                        runs it as \"workspace-write\""
                    .into(),
            );
        }
        Some(other) => {
            return Err(format!(
                "sandbox_mode {other:?}: expected \"read-only\", \"workspace-write\" \
                 or \"danger-full-access\""
            ));
        }
    };
    let mut tools: Vec<Value> = READING.iter().map(|t| Value::from(*t)).collect();
    if write {
        tools.extend(WRITING.iter().map(|t| Value::from(*t)));
    }
    out.table.insert("tools".into(), Value::Array(tools));
    Ok(())
}

/// An imported file's MCP servers are refused unless config.toml's
/// `[import] allow_mcp_servers` says otherwise: a file that came with a
/// cloned repository would start its own command, or send its own headers,
/// when the agent runs (design §3.17).
fn refuse_servers(cx: &Context, servers: &Table) -> Result<(), String> {
    let enabled = servers
        .iter()
        .find(|(_, s)| s.get("enabled").and_then(Value::as_bool) != Some(false));
    match enabled {
        Some((name, _)) if !cx.global.import.allow_mcp_servers => Err(format!(
            "`mcp_servers.{name}` is refused: an imported file's MCP servers are not \
             started unless config.toml's `[import] allow_mcp_servers = true` (a command \
             then runs in axe's sandbox); or declare the server in config.toml"
        )),
        _ => Ok(()),
    }
}

/// A value of an imported server's `env` or `http_headers`: as
/// written, so `${VAR}` (which axe's own files take from the environment)
/// is refused rather than filled with a secret the file's author chose.
fn literal<'v>(name: &str, key: &str, value: &'v Value) -> Result<&'v Value, String> {
    let texts: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Table(t) => t.values().collect(),
        other => vec![other],
    };
    if texts
        .iter()
        .any(|v| v.as_str().is_some_and(|t| t.contains("${")))
    {
        return Err(format!(
            "`mcp_servers.{name}.{key}` has a `${{`: axe does not take variables from \
             the environment for an imported file"
        ));
    }
    Ok(value)
}

/// An imported server's `cwd`: beneath the directory axe runs in, which a
/// sandboxed server may write (its own directory), never `/` or `~`.
fn beneath<'v>(name: &str, value: &'v Value) -> Result<&'v Value, String> {
    let dir = value.as_str().unwrap_or_default();
    let path = std::path::Path::new(dir);
    let inside = !dir.starts_with('~')
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    if !inside {
        return Err(format!(
            "`mcp_servers.{name}.cwd` {dir:?}: an imported server's directory must be \
             beneath the one axe runs in"
        ));
    }
    Ok(value)
}

/// `[mcp_servers.<name>]` as axe's `[[mcp_servers]]` tables (their shapes
/// are alike: `command`, `args`, `env`, `cwd`, or `url`); `enabled_tools` as
/// `mcp_tools`; a server with `enabled = false` is left out. Keys axe does
/// not read are added to `unused` as `mcp_servers.<name>.<key>`.
fn mcp_servers(
    out: &mut Imported,
    unused: &mut Vec<String>,
    servers: &Table,
) -> Result<(), String> {
    let mut tables = Vec::new();
    let mut tools = Vec::new();
    // Servers without `enabled_tools`: axe's `mcp_tools` is one list over
    // all of an agent's servers, so once another server names its tools,
    // these offer none (narrowing is safe, widening is not): warned of.
    let mut unlisted = Vec::new();
    for (name, server) in servers {
        let server = server
            .as_table()
            .ok_or(format!("`mcp_servers.{name}` must be a table"))?;
        if server.get("enabled").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        if !server.contains_key("enabled_tools") {
            unlisted.push(name.as_str());
        }
        let mut t = Table::new();
        t.insert("name".into(), Value::String(name.clone()));
        for (key, value) in server {
            match key.as_str() {
                "command" => {
                    t.insert(key.clone(), value.clone());
                    // Never unconfined, whatever the file says (design §3.17).
                    t.insert("sandbox".into(), Value::Boolean(true));
                }
                // `args` go to the command as they are: axe never expands them.
                "url" | "args" => {
                    t.insert(key.clone(), value.clone());
                }
                "env" => {
                    t.insert(key.clone(), literal(name, key, value)?.clone());
                }
                "cwd" => {
                    t.insert(key.clone(), beneath(name, value)?.clone());
                }
                "http_headers" => {
                    t.insert("headers".into(), literal(name, key, value)?.clone());
                }
                "tool_timeout_sec" => {
                    let secs = value
                        .as_integer()
                        .or_else(|| value.as_float().map(|f| f.ceil() as i64))
                        .ok_or(format!("`mcp_servers.{name}.{key}` must be a number"))?;
                    t.insert("timeout".into(), Value::Integer(secs));
                }
                "enabled" => {}
                "enabled_tools" => {
                    let names = value
                        .as_array()
                        .ok_or(format!("`mcp_servers.{name}.{key}` must be a list"))?;
                    for tool in names {
                        let tool = tool
                            .as_str()
                            .ok_or(format!("`mcp_servers.{name}.{key}` must list names"))?;
                        tools.push(Value::String(format!("{name}__{tool}")));
                    }
                }
                _ => unused.push(format!("mcp_servers.{name}.{key}")),
            }
        }
        tables.push(Value::Table(t));
    }
    if !tables.is_empty() {
        out.table.insert("mcp_servers".into(), Value::Array(tables));
    }
    if !tools.is_empty() {
        out.table.insert("mcp_tools".into(), Value::Array(tools));
        if !unlisted.is_empty() {
            out.warnings.push(format!(
                "MCP servers without `enabled_tools` offer no tools, since another names its \
                 own (axe's mcp_tools is one list): {}",
                unlisted.join(", ")
            ));
        }
    }
    Ok(())
}
