//! The live progress view: while a run goes on and stderr is a terminal, a
//! compact tree of the agents running now (name, depth, turn, elapsed time)
//! and of the built-in tool calls each is running (name, arguments,
//! elapsed time) is redrawn in place on stderr about ten times a second, and erased when
//! the run ends, so the terminal is left as if it had never been there.
//!
//! The view is drawn by one thread from the tree's lists of running agents
//! and tool calls ([`crate::trace::ledger::Ledger::running`],
//! [`crate::trace::ledger::Ledger::tools_running`]), and each frame is queued on stderr's
//! one writer ([`crate::io::stderr::frame`]), where verbose lines and warnings
//! go too: the writer erases the view before a line, and the next frame
//! draws it again below.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::io::stderr;
use crate::trace::ledger::{Ledger, Running, RunningTool};

/// How often the view is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// Nothing is drawn for a run shorter than this (no flicker).
const FIRST_DRAW: Duration = Duration::from_millis(200);
/// The most agent lines shown; more are summed up in one line.
const MAX_LINES: usize = 12;
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The running view; dropping it stops the thread and erases the view.
pub struct Progress {
    _drawn: Redraw,
}

/// A frame redrawn on stderr by a thread of its own every tick until it is
/// dropped, then erased: the run's view here and the batch's line
/// (`batch::progress`) both are one.
pub struct Redraw {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// Whether the view should be shown: stderr is a terminal that can move its
/// cursor (not `TERM=dumb`), neither `--json` nor `--quiet` was given, and
/// the trace does not go to a terminal.
#[allow(clippy::disallowed_methods, reason = "asks whether it is a terminal")]
pub fn wanted(json: bool, quiet: bool, ledger: &Ledger) -> bool {
    use std::io::IsTerminal;
    !json
        && !quiet
        // A trace written to a terminal would be drawn over.
        && !ledger.trace_on_terminal()
        && std::io::stderr().is_terminal()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Whether to color the view: not when `NO_COLOR` is set to anything.
pub fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

impl Progress {
    /// Starts drawing `tree`'s running agents. Never fails: without a
    /// thread there is simply no view.
    pub fn start(ledger: Arc<Ledger>, color: bool) -> Progress {
        let mut frame = 0usize;
        let drawn = Redraw::start("axe-progress", TICK, move |elapsed| {
            if elapsed < FIRST_DRAW {
                return None;
            }
            frame += 1;
            let (width, rows) = screen_size();
            // A frame taller than the screen scrolls, and its erase would miss.
            let lines = MAX_LINES.min(rows.saturating_sub(2)).max(1);
            Some(render(
                &ledger.running(),
                &ledger.tools_running(),
                frame,
                color,
                width,
                lines,
            ))
        });
        Progress { _drawn: drawn }
    }
}

impl Redraw {
    /// Starts a thread named `name` that queues `frame(time since the
    /// start)` on stderr every `tick` (nothing when it gives None). Never
    /// fails: without a thread there is simply no view.
    pub fn start(
        name: &str,
        tick: Duration,
        mut frame: impl FnMut(Duration) -> Option<String> + Send + 'static,
    ) -> Redraw {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let started = Instant::now();
                    let (lock, cv) = &*stop;
                    let mut stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                    loop {
                        let (guard, _) = cv
                            .wait_timeout(stopped, tick)
                            .unwrap_or_else(PoisonError::into_inner);
                        stopped = guard;
                        if *stopped {
                            return;
                        }
                        if let Some(f) = frame(started.elapsed()) {
                            stderr::frame(f);
                        }
                    }
                })
                .ok()
        };
        Redraw { stop, thread }
    }
}

impl Drop for Redraw {
    fn drop(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        stderr::end_view();
    }
}

/// The terminal's size on stderr, `(columns, rows)`, read afresh each time
/// so that a resized terminal gets frames that fit; `$COLUMNS` and `$LINES`,
/// else 80 by 24, when the terminal does not say.
#[allow(clippy::disallowed_methods, reason = "asks the terminal its size")]
fn screen_size() -> (usize, usize) {
    if let Some((terminal_size::Width(w), terminal_size::Height(h))) =
        terminal_size::terminal_size_of(std::io::stderr())
        && w > 0
        && h > 0
    {
        return (usize::from(w), usize::from(h));
    }
    let var = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
            .unwrap_or(default)
    };
    (var("COLUMNS", 80), var("LINES", 24))
}

/// The view: one line per running agent, children under their parent,
/// indented by depth, and under each agent one line per built-in tool call
/// it is running; at most `max_lines` lines of both, the rest summed up in
/// one more; each cut to `width - 1` columns so it never wraps.
pub fn render(
    running: &[Running],
    tools: &[RunningTool],
    frame: usize,
    color: bool,
    width: usize,
    max_lines: usize,
) -> String {
    let mut agents: Vec<&Running> = running.iter().collect();
    agents.sort_by(|a, b| a.place.path.cmp(&b.place.path));
    let mut lines: Vec<Line> = Vec::new();
    for (i, r) in agents.iter().enumerate() {
        lines.push(agent_line(r, i == 0, frame));
        let calls = tools.iter().filter(|t| t.place.path == r.place.path);
        lines.extend(calls.map(tool_line));
    }
    let (dim, cyan, reset) = if color {
        ("\x1b[2m", "\x1b[36m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let shown = lines.len().min(max_lines);
    let mut out = String::new();
    for l in &lines[..shown] {
        let plain = format!("{}{}{}", l.lead, l.name, l.rest);
        let cut: String = plain.chars().take(width.saturating_sub(1)).collect();
        if color && cut.len() == plain.len() {
            let (lead, name, rest) = (&l.lead, &l.name, &l.rest);
            // An agent's name in color; a tool's as the terminal writes.
            let (on, off) = if l.agent { (cyan, reset) } else { ("", "") };
            out.push_str(&format!("{lead}{on}{name}{off}{dim}{rest}{reset}\n"));
        } else {
            out.push_str(&cut);
            out.push('\n');
        }
    }
    if shown < lines.len() {
        let more = format!("  … and {} more running", lines.len() - shown);
        let cut: String = more.chars().take(width.saturating_sub(1)).collect();
        out.push_str(&format!("{dim}{cut}{reset}\n"));
    }
    out
}

/// One line of the view, in three parts: the lead, the name (an agent's
/// in color) and the rest (dimmed).
struct Line {
    lead: String,
    name: String,
    rest: String,
    /// An agent's line (its name in color), not a tool call's.
    agent: bool,
}

/// `⠋ lead  depth 0  turn 2  3.1s`, or `  └ researcher#1  depth 1 ...`.
fn agent_line(r: &Running, first: bool, frame: usize) -> Line {
    let name = r.place.path.rsplit('/').next().unwrap_or(&r.place.agent);
    let lead = if first {
        format!("{} ", SPINNER[frame % SPINNER.len()])
    } else {
        format!("{}└ ", "  ".repeat(r.place.depth as usize))
    };
    let turn = if r.turn == 0 {
        "starting".to_string()
    } else {
        format!("turn {}", r.turn)
    };
    Line {
        lead,
        name: name.to_string(),
        rest: format!(
            "  depth {}  {turn}  {:.1}s",
            r.place.depth,
            r.started.elapsed().as_secs_f64()
        ),
        agent: true,
    }
}

/// `    · read_file path "src/x.rs"  1.2s`: indented one level below its
/// agent.
fn tool_line(t: &RunningTool) -> Line {
    let summary = if t.summary.is_empty() {
        String::new()
    } else {
        format!(" {}", t.summary)
    };
    Line {
        lead: format!("{}· ", "  ".repeat(t.place.depth as usize + 1)),
        name: t.name.clone(),
        rest: format!("{summary}  {:.1}s", t.started.elapsed().as_secs_f64()),
        agent: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ledger::Place;

    fn running(path: &str, depth: u32, turn: u32) -> Running {
        Running {
            place: Place::new(path.rsplit('/').next().unwrap(), path, depth),
            turn,
            started: Instant::now(),
        }
    }

    #[test]
    fn render_puts_children_under_their_parent_indented_by_depth() {
        let view = render(
            &[
                running("lead/b#1", 1, 1),
                running("lead", 0, 2),
                running("lead/a#1/x#1", 2, 0),
                running("lead/a#1", 1, 3),
            ],
            &[],
            0,
            false,
            80,
            MAX_LINES,
        );
        let names: Vec<&str> = view
            .lines()
            .map(|l| l.split("  depth").next().unwrap())
            .collect();
        assert_eq!(names, ["⠋ lead", "  └ a#1", "    └ x#1", "  └ b#1"]);
        assert!(
            view.lines()
                .next()
                .unwrap()
                .contains("depth 0  turn 2  0.0s")
        );
        assert!(view.contains("x#1  depth 2  starting"));
        assert!(!view.contains('\x1b'), "no color asked for");
    }

    #[test]
    fn render_cuts_lines_to_the_width_and_sums_up_the_rest() {
        let many: Vec<Running> = (0..20)
            .map(|i| running(&format!("lead/a-very-long-agent-name#{i}"), 1, 1))
            .collect();
        let view = render(&many, &[], 3, true, 30, MAX_LINES);
        assert_eq!(view.lines().count(), MAX_LINES + 1);
        assert!(
            view.lines()
                .take(MAX_LINES)
                .all(|l| l.chars().count() <= 29)
        );
        assert!(view.contains("and 8 more running"));
    }

    #[test]
    fn render_puts_tool_calls_under_their_agent_before_its_children() {
        let ledger = Ledger::new();
        let agents = [running("lead", 0, 1), running("lead/a#1", 1, 2)];
        let _read = ledger.tool_started(&agents[0].place, "read_file", "path \"src/x.rs\"");
        let _run = ledger.tool_started(&agents[1].place, "run_command", "command \"sleep 1\"");
        let view = render(&agents, &ledger.tools_running(), 0, false, 80, MAX_LINES);
        let lines: Vec<&str> = view.lines().collect();
        assert_eq!(lines.len(), 4, "{view}");
        assert!(lines[0].starts_with("⠋ lead  depth 0"), "{view}");
        assert_eq!(lines[1], "  · read_file path \"src/x.rs\"  0.0s");
        assert!(lines[2].starts_with("  └ a#1  depth 1  turn 2"), "{view}");
        assert_eq!(lines[3], "    · run_command command \"sleep 1\"  0.0s");
        // In color, a tool's name is left as the terminal writes it.
        let colored = render(&agents, &ledger.tools_running(), 0, true, 80, MAX_LINES);
        assert!(colored.contains("  · read_file\x1b[2m path \"src/x.rs\"  0.0s\x1b[0m\n"));
    }

    #[test]
    fn render_counts_tool_calls_in_the_line_limit() {
        let ledger = Ledger::new();
        let agents = [running("lead", 0, 1), running("lead/a#1", 1, 1)];
        let _calls: Vec<_> = (0..5)
            .map(|i| ledger.tool_started(&agents[0].place, "read_file", &format!("path \"{i}\"")))
            .collect();
        let view = render(&agents, &ledger.tools_running(), 0, false, 80, 4);
        let lines: Vec<&str> = view.lines().collect();
        assert_eq!(lines.len(), 5, "{view}");
        assert_eq!(lines[4], "  … and 3 more running", "{view}");
    }
}
