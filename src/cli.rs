//! The command line: argument parsing (argh) and one function per command.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use argh::FromArgs;

use crate::agent;
use crate::config::{self, GlobalConfig};
use crate::deadline::Deadline;
use crate::error::{During, Error};
use crate::graph;
use crate::interrupt;
use crate::ledger::{Budget, Ledger, Place};
use crate::paths;
use crate::progress::{self, Progress};
use crate::report;
use crate::resolve::UserInput;
use crate::resolve::{self, Overrides};
use crate::run::{self, Ctx};
use crate::stderr::{self, Verbose};
use crate::text::one_line;
use crate::write::{Created, create_new};

/// Default `--timeout`, seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

#[derive(FromArgs, Debug)]
/// Run LLM agents defined in TOML files. Agents live in
/// $XDG_CONFIG_HOME/axe/agents/<name>.toml (default ~/.config/axe).
struct Axe {
    /// print the version and exit
    #[argh(switch)]
    version: bool,
    #[argh(subcommand)]
    command: Option<Command>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Command {
    Run(RunCmd),
    Agents(AgentsCmd),
    Config(ConfigCmd),
    Version(VersionCmd),
}

#[derive(FromArgs, Debug)]
/// Print the version.
#[argh(subcommand, name = "version")]
struct VersionCmd {}

#[derive(FromArgs, Debug)]
/// Show or create the config directory.
#[argh(subcommand, name = "config")]
struct ConfigCmd {
    #[argh(subcommand)]
    command: ConfigSub,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum ConfigSub {
    Path(ConfigPath),
    Init(ConfigInit),
}

#[derive(FromArgs, Debug)]
/// Print the config directory (creates nothing).
#[argh(subcommand, name = "path")]
struct ConfigPath {}

#[derive(FromArgs, Debug)]
/// Create the config directory, agents/, a sample skill and config.toml where
/// missing; never overwrites.
#[argh(subcommand, name = "init")]
struct ConfigInit {}

#[derive(FromArgs, Debug)]
/// List, show, create, edit and check agents.
#[argh(subcommand, name = "agents")]
struct AgentsCmd {
    #[argh(subcommand)]
    command: AgentsSub,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum AgentsSub {
    List(AgentsList),
    Show(AgentsShow),
    Init(AgentsInit),
    Edit(AgentsEdit),
    Check(AgentsCheck),
    Ledger(AgentsTree),
}

#[derive(FromArgs, Debug)]
/// List agents: one line each, "name - description", sorted.
#[argh(subcommand, name = "list")]
struct AgentsList {}

#[derive(FromArgs, Debug)]
/// Show an agent's settings.
#[argh(subcommand, name = "show")]
struct AgentsShow {
    /// agent name
    #[argh(positional)]
    agent: String,
}

#[derive(FromArgs, Debug)]
/// Write a scaffold agent file and print its path; never overwrites.
#[argh(subcommand, name = "init")]
struct AgentsInit {
    /// agent name
    #[argh(positional)]
    agent: String,
}

#[derive(FromArgs, Debug)]
/// Open an agent file in $VISUAL or $EDITOR.
#[argh(subcommand, name = "edit")]
struct AgentsEdit {
    /// agent name
    #[argh(positional)]
    agent: String,
}

#[derive(FromArgs, Debug)]
/// Check the delegation graph of an agent (or of every agent): missing or
/// invalid agents, bad models, missing API keys, cycles. Exit 2 on problems.
#[argh(subcommand, name = "check")]
struct AgentsCheck {
    /// agent name (default: every agent)
    #[argh(positional)]
    agent: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Print an agent's delegation graph as a tree, as far as its max_depth goes.
#[argh(subcommand, name = "tree")]
struct AgentsTree {
    /// agent name
    #[argh(positional)]
    agent: String,
}

#[derive(FromArgs, Debug)]
/// Run an agent: the user message is --prompt, else stdin, else "Execute the
/// task described in your instructions."; the answer goes to stdout.
#[argh(subcommand, name = "run")]
struct RunCmd {
    /// agent name
    #[argh(positional)]
    agent: String,
    /// model override, as provider/model (default: the agent's model)
    #[argh(option)]
    model: Option<String>,
    /// a JSON Schema file the answer must match, over the agent's [output]
    #[argh(option)]
    output_schema: Option<String>,
    /// skill file override (default: the agent's skill)
    #[argh(option)]
    skill: Option<String>,
    /// working directory override (default: the agent's, else the current one)
    #[argh(option)]
    workdir: Option<String>,
    /// seconds for the whole run, sub-agents included (default: 120)
    #[argh(option, default = "DEFAULT_TIMEOUT_SECS")]
    timeout: u64,
    /// print what would be sent, send nothing (no API key needed)
    #[argh(switch)]
    dry_run: bool,
    /// print diagnostics to stderr
    #[argh(switch, short = 'v')]
    verbose: bool,
    /// print one JSON object to stdout instead of the answer
    #[argh(switch)]
    json: bool,
    /// the user message (beats stdin)
    #[argh(option, short = 'p')]
    prompt: Option<String>,
    /// retries of one failed HTTP request (429, 5xx, refused), over any
    /// [retry] setting (default: 2)
    #[argh(option)]
    retries: Option<u32>,
    /// append a JSON Lines trace of the whole tree to FILE (also AXE_TRACE)
    #[argh(option)]
    trace: Option<String>,
    /// include messages and answers in the trace
    #[argh(switch)]
    trace_bodies: bool,
    /// token budget (input plus output) for the whole tree, over the
    /// agent's [budget] max_tokens; exit 4 when spent
    #[argh(option)]
    max_tokens: Option<u64>,
    /// request budget for the whole tree, over the agent's [budget]
    /// max_turns; exit 4 when spent
    #[argh(option)]
    max_turns: Option<u64>,
    /// no live progress view (shown when stderr is a terminal) and no
    /// warnings on stderr
    #[argh(switch, short = 'q')]
    quiet: bool,
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let axe = match Axe::from_args(&["axe"], &rest) {
        Ok(a) => a,
        Err(early) => return early_exit(early),
    };
    if axe.version {
        return print_stdout(&version());
    }
    // Commands that write files or run agents end cleanly on SIGINT,
    // SIGTERM and SIGHUP (before any thread is started; see interrupt).
    if matches!(
        &axe.command,
        Some(Command::Run(_))
            | Some(Command::Config(ConfigCmd {
                command: ConfigSub::Init(_)
            }))
            | Some(Command::Agents(AgentsCmd {
                command: AgentsSub::Init(_)
            }))
    ) {
        interrupt::install();
    }
    match axe.command {
        None => match Axe::from_args(&["axe"], &["--help"]) {
            Err(early) => early_exit(early),
            Ok(_) => Ok(()),
        },
        Some(Command::Version(_)) => print_stdout(&version()),
        Some(Command::Config(c)) => match c.command {
            ConfigSub::Path(_) => print_stdout(&format!("{}\n", paths::config_dir()?.display())),
            ConfigSub::Init(_) => print_stdout(&format!("{}\n", config::init()?.display())),
        },
        Some(Command::Agents(a)) => match a.command {
            AgentsSub::List(_) => agents_list(),
            AgentsSub::Show(s) => agents_show(&s.agent),
            AgentsSub::Init(i) => agents_init(&i.agent),
            AgentsSub::Edit(e) => agents_edit(&e.agent),
            AgentsSub::Check(c) => agents_check(c.agent.as_deref()),
            AgentsSub::Ledger(t) => agents_tree(&t.agent),
        },
        Some(Command::Run(r)) => run(r),
    }
}

fn version() -> String {
    format!("axe version {}\n", env!("CARGO_PKG_VERSION"))
}

/// `--help` (exit 0, stdout) or a usage error (exit 1, one line on stderr).
fn early_exit(early: argh::EarlyExit) -> Result<(), Error> {
    match early.status {
        Ok(()) => print_stdout(&format!("{}\n", early.output.trim_end())),
        Err(()) => {
            let text = one_line(&early.output);
            let text = if text.is_empty() {
                "invalid arguments".to_string()
            } else {
                text
            };
            Err(Error::general(format!("{text} (see axe --help)")))
        }
    }
}

/// Writes to stdout; a closed pipe (`axe ... | head -1`) is not an error.
fn print_stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::general(format!("cannot write to stdout: {e}"))),
    }
}

fn load_agent(name: &str) -> Result<agent::Agent, Error> {
    let a = agent::load(name)?;
    for w in &a.warnings {
        stderr::warn(w);
    }
    Ok(a)
}

/// The agents in the agents directory, each file that is not one warned of.
fn agent_ids() -> Result<Vec<String>, Error> {
    let (ids, warnings) = agent::list_ids()?;
    for w in &warnings {
        stderr::warn(w);
    }
    Ok(ids)
}

fn agents_list() -> Result<(), Error> {
    let mut out = String::new();
    for id in agent_ids()? {
        match agent::load(&id) {
            Ok(a) if a.config.description.trim().is_empty() => out.push_str(&format!("{id}\n")),
            Ok(a) => out.push_str(&format!("{id} - {}\n", one_line(&a.config.description))),
            Err(e) => stderr::warn(&format!("skipping agent {id}: {e}")),
        }
    }
    print_stdout(&out)
}

fn agents_show(name: &str) -> Result<(), Error> {
    // A key pasted into an agent file is not shown either. A config.toml
    // that does not load is `axe run`'s to report, not this command's.
    if let Ok((global, _)) = GlobalConfig::load() {
        global.register_secrets();
    }
    let a = load_agent(name)?;
    print_stdout(&crate::redact::redact(&agent::show(&a)))
}

fn agents_init(name: &str) -> Result<(), Error> {
    let path = paths::agent_file(name)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::config(format!("cannot create directory {}: {e}", dir.display()))
        })?;
    }
    match create_new(&path, agent::scaffold(name).as_bytes(), 0o644) {
        Ok(Created::Written) => print_stdout(&format!("{}\n", path.display())),
        Ok(Created::AlreadyExists) => Err(Error::config(format!(
            "agent config already exists: {}",
            path.display()
        ))),
        Err(e) => Err(Error::config(format!(
            "cannot write {}: {e}",
            path.display()
        ))),
    }
}

fn agents_edit(name: &str) -> Result<(), Error> {
    let path = paths::agent_file(name)?;
    if !path.is_file() {
        return Err(Error::AgentNotFound {
            name: name.to_string(),
        });
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .ok_or_else(|| Error::general("no editor configured: set $VISUAL or $EDITOR"))?;
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or_default();
    let status = std::process::Command::new(program)
        .args(words)
        .arg(&path)
        .status()
        .map_err(|e| Error::general(format!("cannot start editor \"{editor}\": {e}")))?;
    if !status.success() {
        return Err(Error::general(format!(
            "editor \"{editor}\" exited with {status}"
        )));
    }
    Ok(())
}

/// `axe agents check [agent]`: the problems and a summary on stdout; exit 2
/// with a count on stderr when there is any problem.
fn agents_check(name: Option<&str>) -> Result<(), Error> {
    let (global, warnings) = GlobalConfig::load()?;
    global.register_secrets();
    for w in &warnings {
        stderr::warn(w);
    }
    let config_dir = paths::config_dir()?;
    let roots = match name {
        Some(n) => {
            paths::check_agent_name(n)?;
            vec![n.to_string()]
        }
        None => agent_ids()?,
    };
    let graph = graph::load(&config_dir, &roots, u32::MAX);
    for w in &graph.warnings {
        stderr::warn(w);
    }
    let report = graph::check(&graph, &global);
    print_stdout(&crate::redact::redact(&graph::report_text(&report)))?;
    if report.total() == 0 {
        return Ok(());
    }
    let problems = report.describe_total();
    let scope = match name {
        Some(n) => format!("the delegation graph of {n}"),
        None => graph::count(report.checked, "agent"),
    };
    Err(Error::config(format!("{problems} in {scope}")))
}

/// `axe agents tree <agent>`: exit 2 only when the root does not load.
fn agents_tree(name: &str) -> Result<(), Error> {
    // As for `agents show`: no key is shown, and a config.toml that does not
    // load is `axe run`'s to report.
    if let Ok((global, _)) = GlobalConfig::load() {
        global.register_secrets();
    }
    let config_dir = paths::config_dir()?;
    paths::check_agent_name(name)?;
    let graph = graph::load_tree(&config_dir, name);
    for w in &graph.warnings {
        stderr::warn(w);
    }
    let text = graph::tree(&graph, name)?;
    print_stdout(&crate::redact::redact(&text))
}

/// The most of stdin axe reads: a larger input is refused, not cut.
pub const MAX_STDIN_BYTES: u64 = 32 << 20;

/// `--prompt`, else stdin when it is not a terminal and not blank, else the
/// default. Reading stdin ends at the run's deadline.
fn user_input(prompt: Option<String>, deadline: &Deadline) -> Result<UserInput, Error> {
    if let Some(p) = prompt {
        // A blank prompt would be rejected by some APIs; it means the default.
        return Ok(if p.trim().is_empty() {
            UserInput::Default
        } else {
            UserInput::Prompt(p)
        });
    }
    if std::io::stdin().is_terminal() {
        return Ok(UserInput::Default);
    }
    let text = String::from_utf8_lossy(&read_stdin(deadline)?).into_owned();
    Ok(if text.trim().is_empty() {
        UserInput::Default
    } else {
        UserInput::Stdin(text)
    })
}

/// Stdin to its end, at most [`MAX_STDIN_BYTES`], waiting for each piece
/// with poll() so that a writer that never finishes (`sleep 9 | axe run
/// ...`) is bounded by the deadline: a blocking read cannot be given one.
/// (A thread per read did the same for the price of a thread in every run.)
fn read_stdin(deadline: &Deadline) -> Result<Vec<u8>, Error> {
    const FD: i32 = 0;
    let failed = |e: std::io::Error| Error::general(format!("cannot read stdin: {e}"));
    let mut bytes = Vec::new();
    let mut piece = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.left();
        if left.is_zero() {
            return Err(Error::TimedOut {
                secs: deadline.secs,
                during: During::ReadingStdin,
            });
        }
        let mut ready = libc::pollfd {
            fd: FD,
            events: libc::POLLIN,
            revents: 0,
        };
        let wait = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: one valid pollfd, and its count.
        if unsafe { libc::poll(&mut ready, 1, wait) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(failed(e));
        }
        if ready.revents == 0 {
            continue; // the wait ended; the deadline is checked above
        }
        // SAFETY: `piece` is a writable buffer of `piece.len()` bytes.
        let n = unsafe { libc::read(FD, piece.as_mut_ptr().cast(), piece.len()) };
        let Ok(n) = usize::try_from(n) else {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN) => continue,
                // No stdin at all reads as an empty one.
                Some(libc::EBADF) => return Ok(bytes),
                _ => return Err(failed(e)),
            }
        };
        if n == 0 {
            return Ok(bytes);
        }
        bytes.extend_from_slice(&piece[..n]);
        if bytes.len() as u64 > MAX_STDIN_BYTES {
            return Err(Error::general(format!(
                "stdin is larger than {} MiB",
                MAX_STDIN_BYTES >> 20
            )));
        }
    }
}

fn run(cmd: RunCmd) -> Result<(), Error> {
    if cmd.timeout == 0 {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    let started = Instant::now();
    let deadline = Deadline::after(cmd.timeout);
    let verbose = Verbose::new(cmd.verbose);
    stderr::set_quiet(cmd.quiet);

    let (global, warnings) = GlobalConfig::load()?;
    global.register_secrets();
    for w in &warnings {
        stderr::warn(w);
    }
    let agent = load_agent(&cmd.agent)?;
    let overrides = Overrides {
        model: cmd.model,
        skill: cmd.skill,
        workdir: cmd.workdir,
        caller_model: None,
        output_schema: cmd.output_schema,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    let resolved = resolve::resolve(agent, &overrides, &cwd, &deadline)?;
    let input = user_input(cmd.prompt, &deadline)?;

    report::verbose_header(&verbose, &resolved, &input, cmd.timeout);
    if cmd.dry_run {
        return print_stdout(&report::dry_run(&resolved, &input, cmd.timeout));
    }
    let config_dir = paths::config_dir()?;
    let trace = cmd.trace.filter(|t| !t.trim().is_empty()).or_else(|| {
        std::env::var("AXE_TRACE")
            .ok()
            .filter(|t| !t.trim().is_empty())
    });
    let ledger = match &trace {
        Some(path) => Ledger::with_trace(Path::new(path), cmd.trace_bodies)
            .map_err(|e| Error::config(format!("cannot open trace file {path}: {e}")))?,
        None => Ledger::new(),
    };
    let file_budget = &resolved.agent.config.budget;
    let (max_tokens, max_turns) = (
        cmd.max_tokens.or(file_budget.max_tokens),
        cmd.max_turns.or(file_budget.max_turns),
    );
    let budgets = if max_tokens.is_some() || max_turns.is_some() {
        vec![Arc::new(Budget::new(max_tokens, max_turns))]
    } else {
        Vec::new()
    };
    let ctx = Ctx {
        global: &global,
        config_dir: &config_dir,
        cwd: &cwd,
        depth: 0,
        max_depth: resolved.agent.config.sub_agents_config.max_depth,
        deadline,
        verbose,
        retries: cmd.retries,
        ledger: Arc::new(ledger),
        place: Place::root(&cmd.agent),
        budgets,
        snapshot: Arc::default(),
    };
    let _closes_trace = {
        let ledger = ctx.ledger.clone();
        interrupt::on_signal(move |why| ledger.interrupt(why))
    };
    let progress = progress::wanted(cmd.json, cmd.quiet)
        .then(|| Progress::start(ctx.ledger.clone(), progress::color()));
    let outcome = run::run_agent(&resolved, input.text(), &ctx);
    // Erases the view before anything else is printed.
    drop(progress);
    let mut outcome = outcome?;
    outcome.duration = started.elapsed();
    if let Some(what) = outcome.incomplete() {
        stderr::warn(&what);
    }
    let usage = ctx.ledger.usage();
    report::verbose_footer(&ctx.verbose, &outcome, &usage);

    if cmd.json {
        print_stdout(&format!(
            "{}\n",
            report::json(&resolved, &outcome, &ctx.ledger.run_id, &usage)
        ))
    } else {
        // The answer is printed as the model gave it (design §6.7).
        let mut text = outcome.content;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        print_stdout(&text)
    }
}
