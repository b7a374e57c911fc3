//! Help that argh cannot lay out by itself: `axe run`'s flags grouped by
//! what they are for (argh lists a struct's options in one block, with a
//! usage line naming all 25), and a command with subcommands run bare
//! (`axe agents`) printing its own help. `-h` is a help trigger of every
//! command (`args`); argh itself leaves an option's value (`--prompt -h`)
//! and what follows `--` alone.

use super::args::Axe;
use crate::error::Error;
use argh::FromArgs;

/// `axe run --help`: every flag of `args::RunCmd`, in four groups, under
/// 50 lines of at most 100 characters; each flag in full is in the docs'
/// command reference. A unit test below keeps it in step with the flags.
const RUN_HELP: &str = r#"Usage: axe run <agent> [options]

Run an agent: the message is --prompt, else stdin; the answer goes to stdout. Flags in full: docs/.

What to run:
  -p, --prompt TEXT      the user message (beats stdin)
  --continue [RUN_ID]    go on with the agent's last run (or RUN_ID's) conversation
  -a, --attach FILE      a file sent with the message: PNG, JPEG, GIF, WebP, PDF, text (repeatable)
  --model P/M            model override, as provider/model (default: the agent's model)
  --reasoning-effort E   minimal, low, medium or high, over the agent's [params] reasoning_effort
  --skill FILE           skill file override (default: the agent's skill)
  --workdir DIR          working directory override (default: the agent's, else the current one)
  --var KEY=VALUE        fill {{KEY}} in the system prompt, the skill and --prompt (repeatable)
  --output-schema FILE   a JSON Schema file the answer must match, over the agent's [output]
  --agents-dir DIR       look for agent files in DIR first, then ./axe/agents, then the config's
  --artifact-dir DIR     the run's artifact directory, over the agent file's [artifacts]
  --keep-artifacts       keep the artifact directory axe made for the run (it is removed at its end)
What to print:
  --dry-run              print what would be sent, send nothing (no API key needed)
  --json                 print one JSON object to stdout instead of the answer
  --json-messages        --json, with the conversation's messages
  --stream               print the answer as it comes (with --json or a schema: at the end)
  -v, --verbose          print diagnostics to stderr
  -q, --quiet            no live progress view (on a terminal) and no warnings on stderr
  --trace FILE           append a JSON Lines trace of the whole tree to FILE (also AXE_TRACE)
  --trace-bodies         include messages and answers in the trace
  --no-log               leave no record of this run in the run log (see axe runs)
Limits:
  --timeout SECS         seconds for the whole run (default: 120, or the agent file's timeout)
  --max-tokens N         token budget (input plus output) for the tree; exit 4 when spent
  --max-turns N          request budget for the tree; exit 4 when spent
  --max-cost USD         money budget for the tree (prices: docs/guide/cost.md); exit 4 when spent
  --retries N            retries of one failed HTTP request (429, 5xx, refused; default: 2)
  --no-prompt-cache      mark nothing for the provider's prompt cache
Batch (one JSON line per input):
  --each FILE            run once per line of FILE ("-": stdin), plain text or JSON Lines
  --each-file GLOB       run once per file matching GLOB, the file's text as the prompt
  --jobs N               inputs run at once (default: 4)
  --unordered            print each line as its input ends, not in input order
  --resume FILE          skip the inputs that succeeded in FILE (a batch's output), append the rest
  --prompt-field NAME    with --each on JSON Lines: the field that is the prompt (default: prompt)
  --shard K/N            only share K (from 0) of N of the inputs, for N workers
  --provider-batch       send the inputs as one provider batch, at its price (OpenAI, Anthropic)
  --batch-wait D         with --provider-batch: the longest wait (90m, 24h, 2d; default: 24h)

  -h, --help, help       display usage information
"#;

/// The help text to print for argh's `output` of a help request: `run`'s
/// own layout in place of argh's, any other command's as argh wrote it.
pub(super) fn text(output: &str) -> &str {
    if output.starts_with("Usage: axe run ") {
        RUN_HELP
    } else {
        output
    }
}

/// The help of the command `path` (`["agents"]`), for a command run
/// without the subcommand it needs: printed as `axe <path> --help` would.
pub(super) fn of(path: &[&str]) -> Result<(), Error> {
    let args: Vec<&str> = path.iter().copied().chain(["--help"]).collect();
    match Axe::from_args(&["axe"], &args) {
        Err(early) => super::early_exit(early),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag argh knows for `run` (from the help it writes), in the
    /// grouped text, and the text within its bounds.
    #[test]
    fn run_help_lists_every_flag_argh_knows_within_50_lines_of_100() {
        let argh = match Axe::from_args(&["axe"], &["run", "--help"]) {
            Err(early) => early.output,
            Ok(_) => panic!("--help is an early exit"),
        };
        // Its usage line names every flag.
        let usage = argh.lines().next().unwrap_or_default();
        let flags: Vec<&str> = usage
            .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']'))
            .filter(|w| w.starts_with('-') && *w != "--")
            .chain(["--help", "-h"])
            .collect();
        assert!(flags.len() > 25, "{argh}");
        let grouped: Vec<&str> = RUN_HELP
            .split(|c: char| c.is_whitespace() || c == ',')
            .collect();
        for flag in flags {
            assert!(grouped.contains(&flag), "run's help lacks {flag}");
        }
        assert!(RUN_HELP.lines().count() < 50);
        for line in RUN_HELP.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
    }
}
