//! The command line as argh reads it: every command, subcommand, option
//! and switch, with the help text `--help` prints. What each command does
//! is in its own file beside this one.

use argh::FromArgs;

pub(super) use super::run_args::RunCmd;
pub use crate::deadline::DEFAULT_TIMEOUT_SECS;

#[derive(FromArgs, Debug)]
/// Run LLM agents defined in TOML files. Agents live in ./axe/agents or
/// $XDG_CONFIG_HOME/axe/agents/<name>.toml (default ~/.config/axe).
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct Axe {
    /// print the version and exit
    #[argh(switch)]
    pub(super) version: bool,
    #[argh(subcommand)]
    pub(super) command: Option<Command>,
}

// `run`'s flags make its variant the largest by far; the enum is made once
// per process, and argh cannot take a boxed subcommand.
#[allow(clippy::large_enum_variant, reason = "said just above")]
#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(super) enum Command {
    Run(RunCmd),
    Agents(AgentsCmd),
    Config(ConfigCmd),
    Mcp(McpCmd),
    Gc(GcCmd),
    Version(VersionCmd),
    Runs(RunsCmd),
    Serve(ServeCmd),
}

/// Default `axe runs -n`.
pub const DEFAULT_RUNS_SHOWN: usize = 20;

#[derive(FromArgs, Debug)]
/// List past runs from the run log, newest first: id, start (UTC), agent,
/// exit status, duration, tokens, cost, the answer's first line. `axe runs show
/// ID` prints one run.
#[argh(subcommand, name = "runs")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct RunsCmd {
    /// only the runs of this agent
    #[argh(positional)]
    pub(super) agent: Option<String>,
    /// how many runs to list (default: 20; 0 for all)
    #[argh(option, short = 'n', default = "DEFAULT_RUNS_SHOWN")]
    pub(super) n: usize,
    /// print the records as one JSON array
    #[argh(switch)]
    pub(super) json: bool,
    /// only the runs started in the last DURATION (30m, 24h, 7d)
    #[argh(option)]
    pub(super) since: Option<String>,
    /// tokens and cost summed by agent instead of a line per run
    #[argh(switch)]
    pub(super) total: bool,
    #[argh(subcommand)]
    pub(super) command: Option<RunsSub>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(super) enum RunsSub {
    Show(RunsShow),
}

#[derive(FromArgs, Debug)]
/// Print one run's record and its answer; with --chrome, write its trace
/// as Chrome trace-event JSON (Perfetto, chrome://tracing) instead.
#[argh(subcommand, name = "show")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct RunsShow {
    /// the run id, or a prefix of it that no other run has
    #[argh(positional)]
    pub(super) id: String,
    /// write the run's trace as Chrome trace-event JSON to FILE ("-":
    /// stdout); needs a run made with --trace
    #[argh(option)]
    pub(super) chrome: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Send an agent's memory to a model that finds patterns in it, print its
/// report, then trim the memory file to its last entries (last_n, else
/// max_entries); what is removed is appended to <file>.bak.
#[argh(subcommand, name = "gc")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct GcCmd {
    /// agent name (or --all)
    #[argh(positional)]
    pub(super) agent: Option<String>,
    /// every agent whose memory is enabled
    #[argh(switch)]
    pub(super) all: bool,
    /// show what would be sent and trimmed; send nothing, change nothing
    #[argh(switch)]
    pub(super) dry_run: bool,
    /// the model to analyse with (provider/model), over the agent's
    #[argh(option)]
    pub(super) model: Option<String>,
    /// seconds for each agent's request (default: 120)
    #[argh(option, default = "DEFAULT_TIMEOUT_SECS")]
    pub(super) timeout: u64,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

/// Default `axe mcp tools --timeout`, seconds.
pub const DEFAULT_MCP_TIMEOUT_SECS: u64 = 30;

#[derive(FromArgs, Debug)]
/// List the MCP servers configured, or the tools of one; or serve agents
/// as MCP tools.
#[argh(subcommand, name = "mcp")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct McpCmd {
    // None: the command's own help is printed (`cli::help`).
    #[argh(subcommand)]
    pub(super) command: Option<McpSub>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(super) enum McpSub {
    List(McpList),
    Tools(McpTools),
    Serve(super::mcp_serve::McpServeCmd),
}

#[derive(FromArgs, Debug)]
/// List the MCP servers: config.toml's, and with --agent the agent's own;
/// one line each: name, transport, command or URL, where it is defined.
#[argh(subcommand, name = "list")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct McpList {
    /// also the servers this agent's file defines
    #[argh(option)]
    pub(super) agent: Option<String>,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Start an MCP server, list its tools as the model sees them
/// (<server>__<tool>, description, input schema), and stop it.
#[argh(subcommand, name = "tools")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct McpTools {
    /// server name
    #[argh(positional)]
    pub(super) server: String,
    /// look the server up in this agent's file first, then config.toml
    #[argh(option)]
    pub(super) agent: Option<String>,
    /// seconds to start the server and list its tools (default: 30)
    #[argh(option, default = "DEFAULT_MCP_TIMEOUT_SECS")]
    pub(super) timeout: u64,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Print the version.
#[argh(subcommand, name = "version")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct VersionCmd {}

#[derive(FromArgs, Debug)]
/// Show or create the config directory.
#[argh(subcommand, name = "config")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct ConfigCmd {
    // None: the command's own help is printed (`cli::help`).
    #[argh(subcommand)]
    pub(super) command: Option<ConfigSub>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(super) enum ConfigSub {
    Path(ConfigPath),
    Init(ConfigInit),
}

#[derive(FromArgs, Debug)]
/// Print the config directory (creates nothing).
#[argh(subcommand, name = "path")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct ConfigPath {}

#[derive(FromArgs, Debug)]
/// Create the config directory, agents/, a sample skill and config.toml where
/// missing; never overwrites.
#[argh(subcommand, name = "init")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct ConfigInit {}

#[derive(FromArgs, Debug)]
/// List, show, create, edit, check and export agents.
#[argh(subcommand, name = "agents")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsCmd {
    // None: the command's own help is printed (`cli::help`).
    #[argh(subcommand)]
    pub(super) command: Option<AgentsSub>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub(super) enum AgentsSub {
    List(AgentsList),
    Show(AgentsShow),
    Init(AgentsInit),
    Edit(AgentsEdit),
    Check(AgentsCheck),
    Tree(AgentsTree),
    Export(AgentsExport),
}

#[derive(FromArgs, Debug)]
/// List agents: one line each, "name - description", sorted.
#[argh(subcommand, name = "list")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsList {
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Show an agent's settings.
#[argh(subcommand, name = "show")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsShow {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Write an agent (axe's own, Claude Code's or Codex's) as another tool's
/// agent file, on stdout or to a file; what the format cannot hold is named
/// on stderr.
#[argh(subcommand, name = "export")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsExport {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// the format: claude (Claude Code's sub-agent file), codex (Codex's
    /// custom agent file) or axe
    #[argh(option)]
    pub(super) to: String,
    /// write to FILE (atomically) instead of stdout; never over an existing
    /// file without --force
    #[argh(option, short = 'o')]
    pub(super) output: Option<String>,
    /// replace FILE when it exists
    #[argh(switch)]
    pub(super) force: bool,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Write a scaffold agent file and print its path; never overwrites.
#[argh(subcommand, name = "init")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsInit {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// the model to write, as provider/model (default: the placeholder
    /// "provider/model-name", to be edited before a run)
    #[argh(option)]
    pub(super) model: Option<String>,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Open an agent file in $VISUAL or $EDITOR.
#[argh(subcommand, name = "edit")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsEdit {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Check the delegation graph of an agent (or of every agent): missing or
/// invalid agents, bad models, missing API keys, cycles. Exit 2 on problems.
#[argh(subcommand, name = "check")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsCheck {
    /// agent name (default: every agent)
    #[argh(positional)]
    pub(super) agent: Option<String>,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Print an agent's delegation graph as a tree, as far as its max_depth goes.
#[argh(subcommand, name = "tree")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct AgentsTree {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

/// Default `axe serve --listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default `axe serve --max-concurrent`.
pub const DEFAULT_MAX_CONCURRENT: usize = 16;
/// Default `axe serve --max-body`, bytes (4 MiB).
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// Default `axe serve --idle-timeout`, seconds.
pub const DEFAULT_IDLE_SECS: u64 = 10;
/// Default `axe serve --grace`, seconds.
pub const DEFAULT_GRACE_SECS: u64 = 30;

#[derive(FromArgs, Debug)]
/// Serve agents over HTTP as an OpenAI-compatible endpoint: POST
/// /v1/chat/completions with model = an agent name, GET /v1/models, GET
/// /healthz. Loopback only unless --listen says otherwise; any other
/// address needs a bearer token (--token-file or AXE_SERVE_TOKEN).
#[argh(subcommand, name = "serve")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct ServeCmd {
    /// address to listen on (default: 127.0.0.1:8080)
    #[argh(option, default = "DEFAULT_LISTEN.to_string()")]
    pub(super) listen: String,
    /// requests run at once; more are answered 429 (default: 16)
    #[argh(option, default = "DEFAULT_MAX_CONCURRENT")]
    pub(super) max_concurrent: usize,
    /// a file holding the bearer token clients must send (else
    /// AXE_SERVE_TOKEN); required on a non-loopback address
    #[argh(option)]
    pub(super) token_file: Option<String>,
    /// seconds for each request's run, sub-agents included (default: the
    /// agent file's timeout, else 120)
    #[argh(option)]
    pub(super) timeout: Option<u64>,
    /// the largest request body, bytes (default: 4194304)
    #[argh(option, default = "DEFAULT_MAX_BODY")]
    pub(super) max_body: usize,
    /// seconds a connection may send nothing (mid-request) or take nothing
    /// (mid-answer) before it is closed; at least 2 (default: 10)
    #[argh(option, default = "DEFAULT_IDLE_SECS")]
    pub(super) idle_timeout: u64,
    /// seconds running requests get to finish after SIGTERM (default: 30)
    #[argh(option, default = "DEFAULT_GRACE_SECS")]
    pub(super) grace: u64,
    /// serve only this agent (repeatable; default: every agent on the
    /// search path)
    #[argh(option)]
    pub(super) agent: Vec<String>,
    /// what a request's system and developer messages get: append (after
    /// the agent's own prompt, said to be the client's; the default) or
    /// refuse (400)
    #[argh(option)]
    pub(super) system_messages: Option<String>,
    /// take requests that give tools (`tools`, `functions`, a `tool_choice`
    /// that requires a call) and ignore those (default: refused, 400: the
    /// agents use their own tools)
    #[argh(switch)]
    pub(super) ignore_client_tools: bool,
    /// append a JSON Lines trace of every request's tree to FILE (a
    /// regular file)
    #[argh(option)]
    pub(super) trace: Option<String>,
    /// include messages and answers in the trace
    #[argh(switch)]
    pub(super) trace_bodies: bool,
    /// retries of one failed HTTP request to a provider (default: 2)
    #[argh(option)]
    pub(super) retries: Option<u32>,
    /// leave no record of the requests' runs in the run log
    #[argh(switch)]
    pub(super) no_log: bool,
    /// no access log lines on stderr
    #[argh(switch, short = 'q')]
    pub(super) quiet: bool,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}
