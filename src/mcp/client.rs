//! One MCP server, connected (design §9.2): probed with `server/discover`
//! once (design §9.7); a server of the stateless revision is spoken to in
//! it from then on (the envelope on every request, no handshake), any
//! other gets `initialize` with the protocol version negotiated and
//! `notifications/initialized`. Then its tools listed (every
//! page, within the caps of `listing`), and `tools/call` with the result
//! turned into the text a tool result carries (`result`). The transport
//! (`stdio`, `http`, `sse`) only moves messages. What the server says of
//! itself is kept as one escaped line.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::config::{ServerConfig, Transport};
use super::era::{self, Era};
use super::listing::Listing;
use super::rpc::{self, Failure, Log, shown, string};
use super::{http, sse, stdio};

/// The revisions of the protocol axe speaks, newest first: it asks for the
/// first and takes any of them in answer.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The most pages of `tools/list` read (a server that pages forever).
const MAX_PAGES: usize = 100;

pub use super::result::MAX_RESULT_BYTES;

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
    /// The protocol version agreed on (2026-07-28: the stateless era).
    pub version: String,
    /// It speaks the stateless revision: every request carries the
    /// envelope.
    pub stateless: bool,
    /// `serverInfo.name` and `.version`, as the server says, on one
    /// escaped line.
    pub info: String,
    pub tools: Vec<McpTool>,
    /// What listing its tools left out, a warning each (design §9.3).
    pub warnings: Vec<String>,
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
    fn request(&self, method: &str, params: Value, deadline: Instant, cancel: bool) -> rpc::Answer {
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
                let (confinement, watch) = match &config.sandbox {
                    Some(sb) => {
                        let (c, w) = confine(sb, cwd, own.as_deref().unwrap_or("."))?;
                        (Some(c), w)
                    }
                    None => (None, crate::sandbox::protected::Watch::default()),
                };
                Conn::Stdio(stdio::Stdio::start(stdio::Spawn {
                    name: &config.name,
                    command,
                    args,
                    env: stdio::environment(&vars),
                    cwd: &dir,
                    log: log.clone(),
                    confinement,
                    watch,
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
            stateless: false,
            info: String::new(),
            tools: Vec::new(),
            warnings: Vec::new(),
            timeout: config.timeout,
        };
        let started = server
            .connect(deadline)
            .and_then(|()| server.list(deadline));
        match started {
            Ok(listing) => {
                server.warnings = listing.warnings(&server.name);
                server.tools = listing.tools;
                Ok(server)
            }
            Err(e) => {
                server.conn.stop();
                Err(e)
            }
        }
    }

    /// The probe, then the era it shows: the stateless one taken as it
    /// is, the handshake made. One round trip more than the handshake for
    /// a server of that era, none for one of the stateless revision.
    fn connect(&mut self, deadline: Instant) -> Result<(), String> {
        // The older SSE transport (2024-11-05) is of the handshake era only.
        if matches!(self.conn, Conn::Sse(_)) {
            return self.initialize(deadline);
        }
        let answer = self.probe(deadline);
        let timed_out = matches!(answer, Err(Failure::Timeout));
        if timed_out && Instant::now() >= deadline {
            return Err(format!("server/discover: {}", Failure::Timeout.describe()));
        }
        let era = era::verdict(answer).map_err(|f| format!("server/discover: {}", f.describe()))?;
        if let Era::Stateless(info) = era {
            self.adopt(info);
            return Ok(());
        }
        self.set_stateless(false);
        let answer = self.ask_initialize(deadline);
        // A server slow to start answers the probe after its wait, and is
        // then of the stateless era: it refuses `initialize` with -32022
        // (unsupported version), known by its code, never by its text.
        // Probed once more, as the official SDKs do; it answers at once now.
        if timed_out && matches!(answer, Err(Failure::Rpc(era::UNSUPPORTED, _))) {
            if let Ok(Era::Stateless(info)) = era::verdict(self.probe(deadline)) {
                self.adopt(info);
                return Ok(());
            }
            self.set_stateless(false);
        }
        let result = answer.map_err(|f| format!("initialize: {}", f.describe()))?;
        self.initialized(&result, deadline)
    }

    /// `server/discover`, in the stateless era's form, waited for
    /// [`era::PROBE_WAIT`] at most, or the server's own `timeout` (which
    /// bounds the probe as it does a call).
    fn probe(&mut self, deadline: Instant) -> rpc::Answer {
        self.set_stateless(true);
        let wait = self
            .timeout
            .map_or(era::PROBE_WAIT, |t| t.min(era::PROBE_WAIT));
        let until = deadline.min(Instant::now() + wait);
        let params = era::envelope(json!({}));
        self.conn.request("server/discover", params, until, false)
    }

    /// The stateless era, and what the server said of itself.
    fn adopt(&mut self, info: Option<(String, String)>) {
        let (name, version) = info.unwrap_or_else(|| ("?".into(), "?".into()));
        self.version = era::STATELESS.to_string();
        self.info = format!("{} {}", shown(&name, 100), shown(&version, 40));
    }

    fn set_stateless(&mut self, on: bool) {
        self.stateless = on;
        if let Conn::Http(h) = &self.conn {
            h.set_stateless(on);
        }
    }

    /// A request in the server's era: in the stateless one, with the
    /// envelope.
    fn request(&self, method: &str, params: Value, deadline: Instant, cancel: bool) -> rpc::Answer {
        let params = if self.stateless {
            era::envelope(params)
        } else {
            params
        };
        self.conn.request(method, params, deadline, cancel)
    }

    /// `initialize`, the version checked, then `notifications/initialized`.
    fn initialize(&mut self, deadline: Instant) -> Result<(), String> {
        let result = self
            .ask_initialize(deadline)
            .map_err(|f| format!("initialize: {}", f.describe()))?;
        self.initialized(&result, deadline)
    }

    /// `initialize` sent, its answer as it came.
    fn ask_initialize(&mut self, deadline: Instant) -> rpc::Answer {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": {},
            "clientInfo": {"name": "axe", "version": env!("CARGO_PKG_VERSION")},
        });
        self.conn.request("initialize", params, deadline, false)
    }

    /// The handshake finished from `initialize`'s `result`: the version
    /// checked and kept, who the server is, `notifications/initialized`.
    fn initialized(&mut self, result: &RawValue, deadline: Instant) -> Result<(), String> {
        let init = serde_json::from_str::<Init>(result.get())
            .map_err(|_| "initialize: the answer is not an object".to_string())?;
        let version = string(init.version).unwrap_or_default();
        if !PROTOCOL_VERSIONS.contains(&version.as_str()) {
            return Err(format!(
                "the server speaks protocol version \"{}\"; axe speaks {}",
                shown(&version, 40),
                PROTOCOL_VERSIONS.join(", ")
            ));
        }
        if let Conn::Http(h) = &self.conn {
            h.set_version(&version);
        }
        self.version = version;
        let info = init
            .info
            .and_then(|i| serde_json::from_str::<Info>(i.get()).ok());
        let (name, version) = info.map_or((None, None), |i| (string(i.name), string(i.version)));
        self.info = format!(
            "{} {}",
            shown(name.as_deref().unwrap_or("?"), 100),
            shown(version.as_deref().unwrap_or("?"), 40)
        );
        self.conn
            .notify("notifications/initialized", &json!({}), deadline)
            .map_err(|f| format!("notifications/initialized: {}", f.describe()))
    }

    /// Every page of `tools/list`, within the caps.
    fn list(&self, deadline: Instant) -> Result<Listing, String> {
        let mut listing = Listing::default();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self
                .request("tools/list", params, deadline, true)
                .map_err(|f| format!("tools/list: {}", f.describe()))?;
            match listing
                .page(&page)
                .map_err(|e| format!("tools/list: {e}"))?
            {
                Some(next) => cursor = Some(next),
                None => return Ok(listing),
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
        let answer = match &self.conn {
            Conn::Http(h) if self.stateless => {
                let mirrored = self
                    .tools
                    .iter()
                    .find(|t| t.name == name)
                    .map(|t| era::param_headers(&t.schema, &arguments))
                    .unwrap_or_default();
                let params = era::envelope(json!({"name": name, "arguments": arguments}));
                h.request_with("tools/call", params, deadline, true, mirrored)
            }
            _ => self.request("tools/call", call_params(name, arguments), deadline, true),
        };
        match answer {
            Ok(result) => match era::unanswerable(&result) {
                None => super::result::outcome(&result),
                Some(why) => Outcome {
                    text: format!(
                        "Error: MCP tool \"{name}\" on server \"{}\" - {why}",
                        self.name
                    ),
                    is_error: true,
                },
            },
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

/// `tools/call`'s params, `arguments` moved in (`json!` would copy them
/// whole: a call's arguments can be a file's text).
fn call_params(name: &str, arguments: Value) -> Value {
    let mut params = serde_json::Map::new();
    params.insert("name".into(), Value::String(name.into()));
    params.insert("arguments".into(), arguments);
    Value::Object(params)
}

/// What axe reads of `initialize`'s answer, leniently.
#[derive(Deserialize)]
struct Init<'a> {
    #[serde(borrow, default, rename = "protocolVersion")]
    version: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "serverInfo")]
    info: Option<&'a RawValue>,
}

/// `serverInfo`, leniently.
#[derive(Deserialize)]
struct Info<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    version: Option<&'a RawValue>,
}

/// The sandbox a stdio server with `sandbox` runs in: `run_command`'s
/// rules (design §8.3), its directory (`written` against `cwd`) as the
/// workdir. Landlock is required: a server the file asks to confine never
/// runs unconfined. Its directory and paths are opened as an agent's are,
/// none through a link below its anchor (§8.7), and it starts in that
/// directory by descriptor. With it, what stands where a protected path
/// is, noted before the server starts (as for a command), so that what the
/// server puts there is moved aside when it stops.
fn confine(
    sb: &super::config::ServerSandbox,
    cwd: &std::path::Path,
    written: &str,
) -> Result<
    (
        crate::sandbox::Confinement,
        crate::sandbox::protected::Watch,
    ),
    String,
> {
    use crate::sandbox::beneath::Base;
    use crate::sandbox::{Mode, Opened, Policy, namespace, opened, protected::Watch};
    let abi = crate::sandbox::landlock_abi();
    if abi == 0 {
        return Err("sandbox = true needs Landlock, which this kernel does not offer".into());
    }
    let dir = Opened::open(Base::Dir(cwd), written, true).map_err(|e| {
        let path = crate::paths::resolve_against(cwd, written);
        opened::refusal("its cwd", &path, &e)
    })?;
    let policy = Policy {
        read: opened::granted(&dir, &sb.read, "read")?,
        write: opened::granted(&dir, &sb.write, "write")?,
        workdir: dir.clone(),
        network: sb.network,
        env: Vec::new(),
        vars: Vec::new(),
        mode: Mode::Landlock(abi),
        protect: sb.protect,
    };
    let watch = if namespace::protects(&policy) {
        Watch::new(&namespace::writable(&policy))
    } else {
        Watch::default()
    };
    Ok((crate::sandbox::Confinement::new(&policy)?, watch))
}
