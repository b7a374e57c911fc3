//! `axe run`'s flags as argh reads them, with the help text each has in
//! argh's own listing (`axe run --help` prints `help.rs`'s grouped text
//! instead). Beside `args.rs`, which holds the other commands.

use argh::FromArgs;

#[derive(FromArgs, Debug)]
/// Run an agent: the user message is --prompt, else stdin, else "Execute the
/// task described in your instructions."; the answer goes to stdout.
#[argh(subcommand, name = "run")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct RunCmd {
    /// agent name
    #[argh(positional)]
    pub(super) agent: String,
    /// model override, as provider/model (default: the agent's model)
    #[argh(option)]
    pub(super) model: Option<String>,
    /// a JSON Schema file the answer must match, over the agent's [output]
    #[argh(option)]
    pub(super) output_schema: Option<String>,
    /// reasoning effort override: minimal, low, medium or high (default:
    /// the agent's [params] reasoning_effort)
    #[argh(option)]
    pub(super) reasoning_effort: Option<String>,
    /// skill file override (default: the agent's skill)
    #[argh(option)]
    pub(super) skill: Option<String>,
    /// working directory override (default: the agent's, else the current one)
    #[argh(option)]
    pub(super) workdir: Option<String>,
    /// seconds for the whole run, sub-agents included (default: 120, or
    /// the agent file's timeout)
    #[argh(option)]
    pub(super) timeout: Option<u64>,
    /// print what would be sent, send nothing (no API key needed)
    #[argh(switch)]
    pub(super) dry_run: bool,
    /// print diagnostics to stderr
    #[argh(switch, short = 'v')]
    pub(super) verbose: bool,
    /// print one JSON object to stdout instead of the answer
    #[argh(switch)]
    pub(super) json: bool,
    /// stream the answer: print its text as it comes (with --json or an
    /// output schema, streamed but printed at the end)
    #[argh(switch)]
    pub(super) stream: bool,
    /// the user message (beats stdin)
    #[argh(option, short = 'p')]
    pub(super) prompt: Option<String>,
    /// a file sent with the message: PNG, JPEG, GIF, WebP, PDF or plain
    /// text (repeatable; at most 20 MiB each, 32 MiB in all)
    #[argh(option, short = 'a')]
    pub(super) attach: Vec<String>,
    /// retries of one failed HTTP request (429, 5xx, refused), over any
    /// [retry] setting (default: 2)
    #[argh(option)]
    pub(super) retries: Option<u32>,
    /// append a JSON Lines trace of the whole tree to FILE (also AXE_TRACE)
    #[argh(option)]
    pub(super) trace: Option<String>,
    /// include messages and answers in the trace
    #[argh(switch)]
    pub(super) trace_bodies: bool,
    /// token budget (input plus output) for the whole tree, over the
    /// agent's [budget] max_tokens; exit 4 when spent
    #[argh(option)]
    pub(super) max_tokens: Option<u64>,
    /// request budget for the whole tree, over the agent's [budget]
    /// max_turns; exit 4 when spent
    #[argh(option)]
    pub(super) max_turns: Option<u64>,
    /// money budget in USD for the tree (--each: the batch); exit 4 when spent
    #[argh(option)]
    pub(super) max_cost: Option<f64>,
    /// mark nothing for the provider's prompt cache (the agent's
    /// prompt_cache = false; its sub-agents keep their own setting)
    #[argh(switch)]
    pub(super) no_prompt_cache: bool,
    /// no live progress view (shown when stderr is a terminal) and no
    /// warnings on stderr
    #[argh(switch, short = 'q')]
    pub(super) quiet: bool,
    /// leave no record of this run in the run log (see axe runs)
    #[argh(switch)]
    pub(super) no_log: bool,
    /// go on with the agent's last run (or run ID's): its conversation,
    /// then this run's prompt (bare: the last run)
    #[argh(option, long = "continue")]
    pub(super) continues: Option<String>,
    /// print --json's object with the conversation's messages
    #[argh(switch)]
    pub(super) json_messages: bool,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
    /// artifact directory (relative: the workdir's), over the file's
    /// [artifacts]; kept after the run
    #[argh(option)]
    pub(super) artifact_dir: Option<String>,
    /// keep the artifact directory axe made for the run
    #[argh(switch)]
    pub(super) keep_artifacts: bool,
    /// fill {{KEY}} in the system prompt, the skill and --prompt with
    /// VALUE (KEY=VALUE; repeatable)
    #[argh(option)]
    pub(super) var: Vec<String>,
    /// run once per line of FILE ("-": stdin), plain text or JSON Lines,
    /// printing one JSON line per input (see docs/guide/batches.md)
    #[argh(option)]
    pub(super) each: Option<String>,
    /// run once per file matching GLOB (relative to the current
    /// directory), the file's text as the prompt
    #[argh(option)]
    pub(super) each_file: Option<String>,
    /// with --each or --each-file: inputs run at once (default: 4)
    #[argh(option)]
    pub(super) jobs: Option<usize>,
    /// with --each or --each-file: print each line as its input ends, not
    /// in input order
    #[argh(switch)]
    pub(super) unordered: bool,
    /// with --each or --each-file: skip the inputs that succeeded in
    /// FILE (a previous batch's output) and append the rest's lines to it
    #[argh(option)]
    pub(super) resume: Option<String>,
    /// with --each on JSON Lines: the field that is the prompt (default:
    /// prompt)
    #[argh(option)]
    pub(super) prompt_field: Option<String>,
    /// with --each or --each-file: only share K of N of the inputs (K/N,
    /// K from 0), so that N workers given the same inputs run each once
    #[argh(option)]
    pub(super) shard: Option<String>,
    /// with --each: send the inputs as one of the provider's own batches
    /// (OpenAI's, Anthropic's), at its batch price, and wait for it
    #[argh(switch)]
    pub(super) provider_batch: bool,
    /// with --provider-batch: the longest wait for the batch (e.g. 90m,
    /// 24h; default: 24h)
    #[argh(option)]
    pub(super) batch_wait: Option<String>,
}

/// What a bare `--continue` stands for: the agent's last run.
pub(super) const LAST: &str = "last";

/// `axe run`'s `--continue` takes a run id or nothing: a bare one (the
/// last argument, or one followed by a flag) is given [`LAST`], as argh
/// has no option whose value may be left out. Only `run`'s arguments
/// before `--` are looked at.
pub(super) fn bare_continue(args: Vec<&str>) -> Vec<&str> {
    if args.first() != Some(&"run") {
        return args;
    }
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut rest = args.into_iter().peekable();
    while let Some(a) = rest.next() {
        out.push(a);
        if a == "--" {
            out.extend(rest.by_ref());
            break;
        }
        if a == "--continue" && rest.peek().is_none_or(|next| next.starts_with('-')) {
            out.push(LAST);
        }
    }
    out
}
