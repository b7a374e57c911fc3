//! An MCP server as `[[mcp_servers]]` declares it, in `config.toml` or an
//! agent file (design §9.1): the TOML shape, its validation, and `${VAR}`
//! taken from the environment in `env` and `headers` values.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;

/// One `[[mcp_servers]]` table as written. The Go original's keys (`name`,
/// `url`, `transport`, `headers`) and stdio's (`command`, `args`, `env`,
/// `cwd`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ServerFile {
    #[serde(default)]
    pub name: String,
    pub transport: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Seconds one `tools/call` may take (the run's deadline when unset).
    pub timeout: Option<i64>,
    /// `sandbox = true`, or a `[mcp_servers.sandbox]` table: a stdio server
    /// runs confined as `run_command`'s commands are.
    pub sandbox: Option<SandboxEntry>,
}

/// `sandbox` as written: a switch, or what the server may touch beyond
/// its directory.
#[derive(Debug, Clone, PartialEq)]
pub enum SandboxEntry {
    On(bool),
    Table(SandboxFile),
}

/// `[mcp_servers.sandbox]`: the agent file's `[sandbox]` keys that make
/// sense for a server.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct SandboxFile {
    /// Extra paths readable (and executable): the server's own files.
    #[serde(default)]
    pub read: Vec<String>,
    /// Extra paths readable and writable.
    #[serde(default)]
    pub write: Vec<String>,
    /// TCP allowed.
    #[serde(default)]
    pub network: bool,
    /// `false`: the server may write what protects the user beneath its
    /// directories, and runs where the kernel cannot keep it from them
    /// (design §8.6). Default true.
    #[serde(default)]
    pub protect: Option<bool>,
}

/// How axe talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A process axe starts, JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// As written: `${VAR}` is expanded when the server starts.
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    /// A URL axe POSTs to (streamable HTTP).
    Http {
        url: String,
        /// As written: `${VAR}` is expanded when the server starts.
        headers: BTreeMap<String, String>,
    },
    /// The older HTTP+SSE transport: an event stream at `url`, messages
    /// POSTed where it says (the Go original's `transport = "sse"`).
    Sse {
        url: String,
        /// As written: `${VAR}` is expanded when the server starts.
        headers: BTreeMap<String, String>,
    },
}

/// A validated server definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub timeout: Option<Duration>,
    /// A stdio server confined by the kernel (design §9.4); paths as
    /// written, resolved against the server's directory when it starts.
    pub sandbox: Option<ServerSandbox>,
}

/// What a sandboxed server may touch beyond its directory, the system's
/// directories and a private temporary directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSandbox {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub network: bool,
    /// What protects the user beneath its directories read-only to it
    /// (design §8.6).
    pub protect: bool,
}

impl Default for ServerSandbox {
    fn default() -> ServerSandbox {
        ServerSandbox {
            read: Vec::new(),
            write: Vec::new(),
            network: false,
            protect: true,
        }
    }
}

impl Transport {
    /// `stdio` or `streamable-http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "streamable-http",
            Transport::Sse { .. } => "sse",
        }
    }

    /// Its command line or URL with the names (not
    /// the values) of its environment variables or headers.
    pub fn summary(&self) -> String {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut s = word(command);
                for a in args {
                    s.push(' ');
                    s.push_str(&word(a));
                }
                if !env.is_empty() {
                    let names: Vec<&str> = env.keys().map(String::as_str).collect();
                    s.push_str(&format!(" [env: {}]", names.join(", ")));
                }
                if let Some(dir) = cwd {
                    s.push_str(&format!(" [cwd: {}]", word(dir)));
                }
                s
            }
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                let mut s = url.clone();
                if !headers.is_empty() {
                    let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                    s.push_str(&format!(" [headers: {}]", names.join(", ")));
                }
                s
            }
        }
    }
}

impl ServerConfig {
    /// [`Transport::summary`], and whether (and how) it is sandboxed.
    pub fn summary(&self) -> String {
        let mut s = self.transport.summary();
        if let Some(sb) = &self.sandbox {
            let mut parts = Vec::new();
            if !sb.read.is_empty() {
                parts.push(format!("read {}", sb.read.join(", ")));
            }
            if !sb.write.is_empty() {
                parts.push(format!("write {}", sb.write.join(", ")));
            }
            if sb.network {
                parts.push("network".to_string());
            }
            match parts.is_empty() {
                true => s.push_str(" [sandboxed]"),
                false => s.push_str(&format!(" [sandboxed: {}]", parts.join("; "))),
            }
        }
        s
    }
}

/// A word of a command line, quoted when it would not read as one.
fn word(w: &str) -> String {
    let plain = !w.is_empty()
        && !w
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'');
    if plain {
        w.to_string()
    } else {
        format!("{w:?}")
    }
}

impl ServerFile {
    /// Checks the table; `at` names it in messages (`mcp_servers[0]`).
    pub fn validate(self, at: &str) -> Result<ServerConfig, Error> {
        check_name(&self.name).map_err(|e| Error::config(format!("{at}.name: {e}")))?;
        let at = format!("mcp_servers \"{}\"", self.name);
        let kind = match (self.transport.as_deref(), &self.command, &self.url) {
            (Some(t), _, _) => t.to_string(),
            (None, Some(_), None) => "stdio".into(),
            (None, None, Some(_)) => "streamable-http".into(),
            (None, Some(_), Some(_)) => {
                return Err(Error::config(format!(
                    "{at}: set command (stdio) or url (streamable-http), not both"
                )));
            }
            (None, None, None) => {
                return Err(Error::config(format!(
                    "{at}: command (stdio) or url (streamable-http) is required"
                )));
            }
        };
        let transport = match kind.as_str() {
            "stdio" => {
                let command = self
                    .command
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| Error::config(format!("{at}: stdio needs a command")))?;
                for name in self.env.keys() {
                    let plain = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    if !plain {
                        return Err(Error::config(format!(
                            "{at}.env: {name:?} is not an environment variable name"
                        )));
                    }
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                }
            }
            kind @ ("streamable-http" | "http" | "sse") => {
                let url = self
                    .url
                    .filter(|u| !u.trim().is_empty())
                    .ok_or_else(|| Error::config(format!("{at}: {kind} needs a url")))?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(Error::config(format!(
                        "{at}.url must start with http:// or https://"
                    )));
                }
                let headers = self.headers;
                if kind == "sse" {
                    Transport::Sse { url, headers }
                } else {
                    Transport::Http { url, headers }
                }
            }
            other => {
                return Err(Error::config(format!(
                    "{at}.transport must be one of: stdio, streamable-http, sse (not {other:?})"
                )));
            }
        };
        let timeout = match self.timeout {
            None => None,
            Some(n) if n >= 1 => Some(Duration::from_secs(n.unsigned_abs())),
            Some(_) => {
                return Err(Error::config(format!(
                    "{at}.timeout must be a positive integer"
                )));
            }
        };
        let sandbox = match self.sandbox {
            None | Some(SandboxEntry::On(false)) => None,
            Some(SandboxEntry::On(true)) => Some(ServerSandbox::default()),
            Some(SandboxEntry::Table(t)) => Some(ServerSandbox {
                read: t.read,
                write: t.write,
                network: t.network,
                protect: t.protect.unwrap_or(true),
            }),
        };
        if sandbox.is_some() && !matches!(transport, Transport::Stdio { .. }) {
            return Err(Error::config(format!(
                "{at}.sandbox: only a stdio server can be sandboxed (a streamable-http server runs elsewhere)"
            )));
        }
        Ok(ServerConfig {
            name: self.name,
            transport,
            timeout,
            sandbox,
        })
    }
}

impl<'de> Deserialize<'de> for SandboxEntry {
    /// `true`/`false` or a table, read in place (not buffered, as an
    /// untagged enum would be) so that an unknown key in the table is
    /// still warned about.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SandboxEntry, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = SandboxEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or a table")
            }
            fn visit_bool<E>(self, on: bool) -> Result<SandboxEntry, E> {
                Ok(SandboxEntry::On(on))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                m: M,
            ) -> Result<SandboxEntry, M::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(m);
                SandboxFile::deserialize(d).map(SandboxEntry::Table)
            }
        }
        d.deserialize_any(Entry)
    }
}

/// A server's name: letters, digits, `-` and `_`, at most 32, and no `__`
/// (it separates the server from the tool in `<server>__<tool>`).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a server needs a name".into());
    }
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain || name.len() > 32 || name.contains("__") {
        return Err(format!(
            "{name:?} is not a server name (letters, digits, - and _, at most 32, no \"__\")"
        ));
    }
    Ok(())
}

/// Validates a list of tables: each one, and no name twice.
pub fn validate_all(files: Vec<ServerFile>) -> Result<Vec<ServerConfig>, Error> {
    let mut out: Vec<ServerConfig> = Vec::new();
    for (i, f) in files.into_iter().enumerate() {
        let s = f.validate(&format!("mcp_servers[{i}]"))?;
        if out.iter().any(|o| o.name == s.name) {
            return Err(Error::config(format!(
                "mcp_servers names must be unique: {:?}",
                s.name
            )));
        }
        out.push(s);
    }
    Ok(out)
}

/// `text` with every `${VAR}` replaced by the variable's value; an unset or
/// empty one is an error naming it (never its value).
pub fn expand(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed \"${{\" in {text:?}"));
        };
        let var = &after[..end];
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => {
                crate::text::redact::register(&v);
                out.push_str(&v);
            }
            _ => {
                return Err(format!(
                    "environment variable \"{var}\" is not set or empty"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_make_the_wire_name_ambiguous_are_refused() {
        assert!(check_name("git").is_ok());
        assert!(check_name("my-git_2").is_ok());
        assert!(check_name("a__b").is_err());
        assert!(check_name("a.b").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn variables_are_expanded_and_a_missing_one_is_named() {
        // SAFETY: the variable is this test's own.
        unsafe { std::env::set_var("AXE_MCP_TEST_TOKEN", "tok123") };
        assert_eq!(
            expand("Bearer ${AXE_MCP_TEST_TOKEN}!").as_deref(),
            Ok("Bearer tok123!")
        );
        let err = expand("${AXE_MCP_SURELY_UNSET}").unwrap_err();
        assert!(err.contains("AXE_MCP_SURELY_UNSET"), "{err}");
    }

    #[test]
    fn transport_follows_command_or_url() {
        let f = ServerFile {
            name: "t".into(),
            command: Some("x".into()),
            ..ServerFile::default()
        };
        assert!(matches!(
            f.validate("m").map(|s| s.transport),
            Ok(Transport::Stdio { .. })
        ));
        let f = ServerFile {
            name: "t".into(),
            transport: Some("sse".into()),
            url: Some("http://h".into()),
            ..ServerFile::default()
        };
        assert!(matches!(
            f.validate("m").map(|s| s.transport),
            Ok(Transport::Sse { .. })
        ));
        let f = ServerFile {
            name: "t".into(),
            transport: Some("websocket".into()),
            url: Some("http://h".into()),
            ..ServerFile::default()
        };
        assert!(f.validate("m").is_err());
    }
}
