//! One MCP server, connected (design §11.2): `initialize` with the protocol
//! version negotiated, `notifications/initialized`, its tools listed (every
//! page), and `tools/call` with the result turned into the text a tool
//! result carries. The transport (`stdio`, `http`) only moves messages.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::config::{ServerConfig, Transport};
use super::rpc::{Failure, Log};
use super::{http, sse, stdio};

/// The revisions of the protocol axe speaks, newest first: it asks for the
/// first and takes any of them in answer.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The most pages of `tools/list` read (a server that pages forever).
const MAX_PAGES: usize = 100;

/// The longest tool result passed to the model; the rest is cut with a note.
pub const MAX_RESULT_BYTES: usize = 256 << 10;

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// `inputSchema` exactly as listed.
    pub schema: Value,
}

/// A connected, initialized server.
pub struct Server {
    pub name: String,
    pub conn: Conn,
    /// The protocol version agreed on.
    pub version: String,
    /// `serverInfo.name` and `.version`, as the server says.
    pub info: String,
    pub tools: Vec<McpTool>,
    /// Its `timeout`: the longest one call may take.
    pub timeout: Option<Duration>,
}

/// How messages reach the server.
pub enum Conn {
    Stdio(stdio::Stdio),
    Http(Box<http::Http>),
    Sse(Box<sse::Sse>),
}

/// The text of a call's result, and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub text: String,
    pub is_error: bool,
}

impl Conn {
    fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: bool,
    ) -> Result<Value, Failure> {
        match self {
            Conn::Stdio(s) => s.request(method, params, deadline, cancel),
            Conn::Http(h) => h.request(method, params, deadline, cancel),
            Conn::Sse(h) => h.request(method, params, deadline, cancel),
        }
    }

    fn notify(&self, method: &str, params: &Value, deadline: Instant) -> Result<(), Failure> {
        match self {
            Conn::Stdio(s) => s.notify(method, params, deadline),
            Conn::Http(h) => h.notify(method, params, deadline),
            Conn::Sse(h) => h.notify(method, params, deadline),
        }
    }

    fn stop(&self) {
        match self {
            Conn::Stdio(s) => s.stop(),
            Conn::Http(h) => h.stop(),
            Conn::Sse(h) => h.stop(),
        }
    }
}

impl Server {
    /// Starts (or connects to) the server, initializes it and lists its
    /// tools, all before `deadline`. `cwd` is where a relative `cwd` key
    /// and the process start.
    pub fn start(
        config: &ServerConfig,
        cwd: &std::path::Path,
        log: Log,
        deadline: Instant,
    ) -> Result<Server, String> {
        let conn = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd: own,
            } => {
                let mut vars = Vec::new();
                for (k, v) in env {
                    vars.push((k.clone(), super::config::expand(v)?));
                }
                let dir = own.as_deref().map_or_else(
                    || cwd.to_path_buf(),
                    |d| crate::paths::resolve_against(cwd, d),
                );
                let confinement = match &config.sandbox {
                    Some(sb) => Some(confine(sb, &dir)?),
                    None => None,
                };
                Conn::Stdio(stdio::Stdio::start(stdio::Spawn {
                    name: &config.name,
                    command,
                    args,
                    env: stdio::environment(&vars),
                    cwd: &dir,
                    log: log.clone(),
                    confinement,
                })?)
            }
            Transport::Http { url, headers } => {
                let mut hs = Vec::new();
                for (k, v) in headers {
                    hs.push((k.clone(), super::config::expand(v)?));
                }
                Conn::Http(Box::new(http::Http::new(
                    &config.name,
                    url,
                    hs,
                    log.clone(),
                )))
            }
            Transport::Sse { url, headers } => {
                let mut hs = Vec::new();
                for (k, v) in headers {
                    hs.push((k.clone(), super::config::expand(v)?));
                }
                Conn::Sse(Box::new(sse::Sse::start(
                    &config.name,
                    url,
                    hs,
                    log.clone(),
                    deadline,
                )?))
            }
        };
        let mut server = Server {
            name: config.name.clone(),
            conn,
            version: String::new(),
            info: String::new(),
            tools: Vec::new(),
            timeout: config.timeout,
        };
        let started = server
            .initialize(deadline)
            .and_then(|()| server.list(deadline));
        match started {
            Ok(tools) => {
                server.tools = tools;
                Ok(server)
            }
            Err(e) => {
                server.conn.stop();
                Err(e)
            }
        }
    }

    /// `initialize`, the version checked, then `notifications/initialized`.
    fn initialize(&mut self, deadline: Instant) -> Result<(), String> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": {},
            "clientInfo": {"name": "axe", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self
            .conn
            .request("initialize", params, deadline, false)
            .map_err(|f| format!("initialize: {}", f.describe()))?;
        let version = result["protocolVersion"].as_str().unwrap_or("");
        if !PROTOCOL_VERSIONS.contains(&version) {
            return Err(format!(
                "the server speaks protocol version {version:?}; axe speaks {}",
                PROTOCOL_VERSIONS.join(", ")
            ));
        }
        self.version = version.to_string();
        if let Conn::Http(h) = &self.conn {
            h.set_version(version);
        }
        let info = &result["serverInfo"];
        self.info = format!(
            "{} {}",
            info["name"].as_str().unwrap_or("?"),
            info["version"].as_str().unwrap_or("?")
        );
        self.conn
            .notify("notifications/initialized", &json!({}), deadline)
            .map_err(|f| format!("notifications/initialized: {}", f.describe()))
    }

    /// Every page of `tools/list`.
    fn list(&self, deadline: Instant) -> Result<Vec<McpTool>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self
                .conn
                .request("tools/list", params, deadline, true)
                .map_err(|f| format!("tools/list: {}", f.describe()))?;
            let Some(list) = page["tools"].as_array() else {
                return Err("tools/list: the answer has no tools array".into());
            };
            for t in list {
                let Some(name) = t["name"].as_str() else {
                    continue;
                };
                tools.push(McpTool {
                    name: name.to_string(),
                    description: t["description"].as_str().unwrap_or("").to_string(),
                    schema: t["inputSchema"].clone(),
                });
            }
            match page["nextCursor"].as_str() {
                Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
                _ => return Ok(tools),
            }
        }
        Err(format!("tools/list: more than {MAX_PAGES} pages"))
    }

    /// Calls tool `name` with `arguments` (a JSON object) until `deadline`
    /// (or the server's own `timeout`, if sooner). Every failure is an
    /// error outcome.
    pub fn call(&self, name: &str, arguments: Value, deadline: Instant) -> Outcome {
        let deadline = match self.timeout {
            Some(t) => deadline.min(Instant::now() + t),
            None => deadline,
        };
        let params = json!({"name": name, "arguments": arguments});
        match self.conn.request("tools/call", params, deadline, true) {
            Ok(result) => result_outcome(&result),
            Err(Failure::Timeout) => Outcome {
                text: format!(
                    "Error: MCP tool \"{name}\" on server \"{}\" did not answer before its deadline; the call was cancelled",
                    self.name
                ),
                is_error: true,
            },
            Err(f) => Outcome {
                text: format!(
                    "Error: MCP tool \"{name}\" on server \"{}\" failed - {}",
                    self.name,
                    f.describe()
                ),
                is_error: true,
            },
        }
    }

    /// The server process's id (stdio).
    pub fn pid(&self) -> Option<i32> {
        match &self.conn {
            Conn::Stdio(s) => Some(s.pid()),
            Conn::Http(_) | Conn::Sse(_) => None,
        }
    }

    /// Stops the server (or ends the HTTP session).
    pub fn stop(&self) {
        self.conn.stop();
    }
}

/// A `tools/call` result as a tool result: text as it is, structured
/// content as compact JSON (unless a text part already is that JSON),
/// resources' text, images and audio as a one-line placeholder; `isError`.
pub fn result_outcome(result: &Value) -> Outcome {
    let mut parts: Vec<String> = Vec::new();
    for item in result["content"].as_array().map_or(&[][..], |v| &v[..]) {
        parts.push(content_text(item));
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let same = parts
            .iter()
            .any(|p| serde_json::from_str::<Value>(p).is_ok_and(|v| &v == structured));
        if !same {
            parts.push(structured.to_string());
        }
    }
    let mut text = parts.join("\n");
    if text.len() > MAX_RESULT_BYTES {
        let mut cut = MAX_RESULT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        text.truncate(cut);
        text.push_str(&format!("\n... [cut: the result was {total} bytes]"));
    }
    Outcome {
        text,
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

/// One content item as text.
fn content_text(item: &Value) -> String {
    let kind = item["type"].as_str().unwrap_or("unknown");
    let mime = item["mimeType"].as_str().unwrap_or("unknown type");
    let size = |data: &Value| data.as_str().map_or(0, |d| d.len() / 4 * 3);
    match kind {
        "text" => item["text"].as_str().unwrap_or("").to_string(),
        "image" | "audio" => format!(
            "[{kind}: {mime}, about {} bytes, not shown]",
            size(&item["data"])
        ),
        "resource" => {
            let r = &item["resource"];
            match r["text"].as_str() {
                Some(t) => t.to_string(),
                None => format!(
                    "[resource {}: {}, binary, not shown]",
                    r["uri"].as_str().unwrap_or("?"),
                    r["mimeType"].as_str().unwrap_or("unknown type")
                ),
            }
        }
        "resource_link" => format!(
            "[resource link: {} {}]",
            item["name"].as_str().unwrap_or(""),
            item["uri"].as_str().unwrap_or("?")
        ),
        other => format!("[{other} content, not shown]"),
    }
}

/// The sandbox a stdio server with `sandbox` runs in: `run_command`'s
/// rules (design §10.3), its directory as the workdir. Landlock is required:
/// a server the file asks to confine never runs unconfined.
fn confine(
    sb: &super::config::ServerSandbox,
    dir: &std::path::Path,
) -> Result<crate::sandbox::Confinement, String> {
    use crate::sandbox::{Mode, Policy};
    let abi = crate::sandbox::landlock_abi();
    if abi == 0 {
        return Err("sandbox = true needs Landlock, which this kernel does not offer".into());
    }
    let expand = |list: &[String]| {
        list.iter()
            .map(|p| crate::paths::resolve_against(dir, p))
            .collect::<Vec<_>>()
    };
    let policy = Policy {
        workdir: dir.to_path_buf(),
        read: expand(&sb.read),
        write: expand(&sb.write),
        network: sb.network,
        env: Vec::new(),
        mode: Mode::Landlock(abi),
        protect: true,
    };
    crate::sandbox::Confinement::new(&policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_content_becomes_text() {
        let r = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA==", "mimeType": "x/y"}},
            ],
            "structuredContent": {"a": 1},
            "isError": true
        });
        let o = result_outcome(&r);
        assert!(o.is_error);
        assert_eq!(
            o.text,
            "hello\n[image: image/png, about 3 bytes, not shown]\nbody\n[resource file:///b: x/y, binary, not shown]\n{\"a\":1}"
        );
    }

    #[test]
    fn structured_content_already_in_the_text_is_not_repeated() {
        let r = json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}});
        assert_eq!(result_outcome(&r).text, "{\"a\": 1}");
    }
}
