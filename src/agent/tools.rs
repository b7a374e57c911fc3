//! An agent file's tools (design §8.1): `tools = [...]`, `allowed_hosts`
//! and the `[sandbox]` table, as written and validated. What they mean when
//! a call runs is in `crate::tools` and `crate::sandbox`.

use serde::Deserialize;

use crate::error::Error;
use crate::tools::{SandboxConfig, ToolsConfig};

/// `[sandbox]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct SandboxFile {
    mode: Option<String>,
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    network: bool,
    #[serde(default)]
    private_networks: bool,
    #[serde(default)]
    env: Vec<String>,
    protect: Option<bool>,
}

impl SandboxFile {
    fn validate(self) -> Result<SandboxConfig, Error> {
        let landlock = match self.mode.as_deref() {
            None | Some("landlock") => true,
            Some("off") => false,
            Some(other) => {
                return Err(Error::config(format!(
                    "sandbox.mode must be \"landlock\" or \"off\", not {other:?}"
                )));
            }
        };
        for name in &self.env {
            let plain =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !plain {
                return Err(Error::config(format!(
                    "sandbox.env: {name:?} is not an environment variable name"
                )));
            }
            if crate::sandbox::looks_secret(name) {
                return Err(Error::config(format!(
                    "sandbox.env: {name} looks like it holds a secret; commands never get one"
                )));
            }
        }
        Ok(SandboxConfig {
            landlock,
            read: self.read,
            write: self.write,
            network: self.network,
            private_networks: self.private_networks,
            env: self.env,
            protect: self.protect.unwrap_or(true),
        })
    }
}

/// `tools`, `allowed_hosts` and `[sandbox]`: every tool name known (an
/// unknown one is exit 2, with the closest known name).
pub(super) fn validate(
    names: Vec<String>,
    allowed_hosts: Vec<String>,
    sandbox: SandboxFile,
) -> Result<ToolsConfig, Error> {
    for name in &names {
        if name == super::CALL_AGENT {
            return Err(Error::config(
                "tools: call_agent is not a tool to list: it is offered by sub_agents",
            ));
        }
        if !crate::tools::exists(name) {
            let hint = crate::tools::did_you_mean(name)
                .map(|n| format!(" (did you mean \"{n}\"?)"))
                .unwrap_or_default();
            let known: Vec<&str> = crate::tools::names().collect();
            return Err(Error::config(format!(
                "tools: unknown tool \"{name}\"{hint}; the tools are {}",
                known.join(", ")
            )));
        }
    }
    Ok(ToolsConfig {
        names,
        allowed_hosts,
        sandbox: sandbox.validate()?,
    })
}

/// `mcp_servers` and `mcp_tools`: each server a valid name or table, none
/// twice; each tool named `<server>__<tool>` for a listed server.
pub(super) fn validate_mcp(
    entries: Vec<super::file::McpEntry>,
    tools: Vec<String>,
) -> Result<crate::mcp::AgentMcp, Error> {
    use super::file::McpEntry;
    use crate::mcp::{ServerRef, config::check_name};
    let mut servers: Vec<ServerRef> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let r = match entry {
            McpEntry::Name(name) => {
                check_name(&name).map_err(|e| Error::config(format!("mcp_servers: {e}")))?;
                ServerRef::Name(name)
            }
            McpEntry::Table(file) => {
                ServerRef::Defined(file.validate(&format!("mcp_servers[{i}]"))?)
            }
        };
        let name = match &r {
            ServerRef::Name(n) => n.clone(),
            ServerRef::Defined(c) => c.name.clone(),
        };
        if names.contains(&name) {
            return Err(Error::config(format!(
                "mcp_servers names must be unique: {name:?}"
            )));
        }
        names.push(name);
        servers.push(r);
    }
    for t in &tools {
        let listed = t
            .split_once("__")
            .is_some_and(|(server, tool)| !tool.is_empty() && names.iter().any(|n| n == server));
        if !listed {
            return Err(Error::config(format!(
                "mcp_tools: {t:?} is not <server>__<tool> for a server in mcp_servers"
            )));
        }
    }
    Ok(crate::mcp::AgentMcp { servers, tools })
}
