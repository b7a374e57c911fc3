//! The stdio transport (design §9.2): the server is a process axe starts
//! in a process group of its own, kept by the orphan sweep ([`Stdio::start`]);
//! requests are lines on its stdin, written with the caller's deadline
//! (`pipe`); one reader thread takes the lines of its stdout and hands each
//! answer to its waiter, replying to the server's requests only when the
//! reply fits at once (dropped and counted otherwise); another passes its
//! stderr to the log. Stopping it ([`Stdio::stop`]) closes its stdin, waits
//! briefly (not when it is not reading), then TERM, then KILL, to the whole
//! group.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio as Piped};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::pipe::Pipe;
use super::rpc::{self, Failure, Log, Note, Pending};
use crate::sandbox::orphans;
use crate::sandbox::protected::Watch;

/// The longest line a server may write: a longer one fails the requests
/// waiting and is skipped.
pub const MAX_LINE: usize = 16 << 20;

/// How long a stopping server gets after its stdin is closed, and again
/// after SIGTERM.
const GRACE: Duration = Duration::from_millis(1500);

/// A running stdio server.
pub struct Stdio {
    name: String,
    writer: Arc<Writer>,
    pending: Arc<Pending>,
    log: Log,
    child: Mutex<Option<Child>>,
    pid: i32,
    /// The sandbox it runs in, kept (with its temporary directory) while it
    /// lives.
    _confinement: Option<crate::sandbox::Confinement>,
    /// What stood where protected paths are when it started (sandboxed).
    watch: Watch,
}

/// The server's stdin, and the replies to its requests dropped because
/// they could not be written at once.
struct Writer {
    pipe: Pipe,
    dropped: AtomicU64,
}

/// What to start.
pub struct Spawn<'a> {
    pub name: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    /// The whole environment the server gets.
    pub env: Vec<(String, String)>,
    pub cwd: &'a Path,
    pub log: Log,
    /// Run it in the sandbox (design §9.4).
    pub confinement: Option<crate::sandbox::Confinement>,
    /// What stood where protected paths are before it started: what it puts
    /// there is moved aside when it stops (design §8.6).
    pub watch: Watch,
}

impl Stdio {
    /// Starts the server and its reader threads.
    pub fn start(s: Spawn) -> Result<Stdio, String> {
        let mut cmd = Command::new(s.command);
        cmd.args(s.args)
            .env_clear()
            .envs(s.env.iter().map(|(k, v)| (k, v)))
            .stdin(Piped::piped())
            .stdout(Piped::piped())
            .stderr(Piped::piped());
        match &s.confinement {
            // A session of its own (its own group), as a command's, in
            // its directory by the descriptor opened (`Confinement`).
            Some(c) => {
                cmd.env("TMPDIR", c.tmp());
                c.apply(&mut cmd);
            }
            None => {
                cmd.current_dir(s.cwd).process_group(0);
                crate::sandbox::inherit::clean(&mut cmd);
            }
        }
        let mut child = orphans::spawn_kept(|| cmd.spawn())
            .map_err(|e| format!("cannot start {:?}: {e}", s.command))?;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the server's pipes are missing".into());
        };
        let writer = Arc::new(Writer {
            pipe: Pipe::new(stdin),
            dropped: AtomicU64::new(0),
        });
        let pending = Arc::new(Pending::default());
        let server = Stdio {
            name: s.name.to_string(),
            writer: writer.clone(),
            pending: pending.clone(),
            log: s.log.clone(),
            child: Mutex::new(Some(child)),
            pid,
            _confinement: s.confinement,
            watch: s.watch,
        };
        let (name, log) = (s.name.to_string(), s.log.clone());
        let reader = std::thread::Builder::new()
            .name(format!("mcp-{name}"))
            .spawn(move || read_stdout(stdout, &pending, &writer, &log, &name, pid));
        let (name, log) = (s.name.to_string(), s.log);
        let errors = std::thread::Builder::new()
            .name(format!("mcp-{name}-err"))
            .spawn(move || read_stderr(stderr, &log, &name));
        if reader.is_err() || errors.is_err() {
            server.stop();
            return Err("cannot start a thread to read the server".into());
        }
        Ok(server)
    }

    /// Sends a request and waits for its answer until `deadline`; one still
    /// running then gets `notifications/cancelled` when `cancel`.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: bool,
    ) -> rpc::Answer {
        // The cancel is past the deadline: written at once or not at all.
        let late = |line: &str| {
            self.writer.pipe.send_now(line);
        };
        rpc::call(
            &self.pending,
            method,
            &params,
            deadline,
            &|line, until| self.writer.pipe.send(line, until),
            cancel.then_some(&late as &dyn Fn(&str)),
        )
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends a notification: a second at most, and not past `deadline`.
    pub fn notify(&self, method: &str, params: &Value, deadline: Instant) -> Result<(), Failure> {
        let deadline = deadline.min(Instant::now() + Duration::from_secs(1));
        self.writer
            .pipe
            .send(&rpc::notification(method, params), deadline)
    }

    /// Stops the server: stdin closed (without waiting for a writer), a
    /// grace period (none when it is not reading its input: it would not
    /// see the close), TERM, another, KILL; the whole process group is
    /// killed and the server reaped. Later requests fail. The replies
    /// dropped are counted in the log. Safe to call more than once.
    pub fn stop(&self) {
        let deaf = self.writer.pipe.close();
        self.pending
            .break_with(&format!("the MCP server \"{}\" was stopped", self.name));
        let dropped = self.writer.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let text = format!(
                "{dropped} replies to the server's requests in all, its input full or busy"
            );
            (self.log)(&Note {
                server: &self.name,
                kind: "dropped",
                text: &text,
            });
        }
        let Some(mut child) = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let pid = self.pid;
        if pid > 0 && (deaf || !exited_within(pid, GRACE)) {
            // SAFETY: signals to the group of our own unreaped child.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            if !exited_within(pid, GRACE) {
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        if pid > 0 {
            // What the server started in its group goes with it; the group
            // still exists while the leader is unreaped.
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = child.wait();
        orphans::release(pid);
        // Its namespace is empty now (the keeper ends after it): nothing
        // of it writes any more.
        for (path, to) in self.watch.set_aside() {
            let said = match to {
                Ok(to) => format!("moved to {}", to.display()),
                Err(why) => format!("it could not be moved aside ({why}): remove it"),
            };
            crate::io::stderr::warn(&format!(
                "the MCP server \"{}\" created {}, which it may not write; {said}",
                self.name,
                path.display()
            ));
        }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Writer {
    /// Sends the reply to a server's request if it can go at once; else
    /// drops it and counts it, saying so in the log the first time.
    fn reply(&self, line: &str, log: &Log, name: &str) {
        if self.pipe.send_now(line) {
            return;
        }
        if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
            log(&Note {
                server: name,
                kind: "dropped",
                text: "a reply to the server's request: its input is full or busy \
                       (replies are never waited for; counted when it stops)",
            });
        }
    }
}

/// Whether `pid` (our child) exited within `wait`; it is left unreaped.
fn exited_within(pid: i32, wait: Duration) -> bool {
    let end = Instant::now() + wait;
    loop {
        if exit_status(pid).is_some() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How `pid` (our child) ended, if it has, without reaping it.
fn exit_status(pid: i32) -> Option<String> {
    // SAFETY: waitid with WNOWAIT only reads our child's state.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, pid.unsigned_abs(), &mut info, flags) != 0
            || info.si_pid() == 0
        {
            return None;
        }
        Some(match info.si_code {
            libc::CLD_EXITED => format!("exit status {}", info.si_status()),
            _ => format!("killed by signal {}", info.si_status()),
        })
    }
}

/// The reader thread: each line of the server's stdout handled in turn,
/// until it closes; then every request waiting fails.
fn read_stdout(
    stdout: impl Read,
    pending: &Pending,
    writer: &Writer,
    log: &Log,
    name: &str,
    pid: i32,
) {
    let mut input = BufReader::with_capacity(64 << 10, stdout);
    let mut line = Vec::new();
    loop {
        // A long line's buffer is not kept for the next.
        if line.capacity() > 1 << 20 {
            line = Vec::new();
        }
        match read_line(&mut input, &mut line, MAX_LINE) {
            Ok(Line::Eof) | Err(_) => break,
            Ok(Line::TooLong) => pending.fail_all(&format!(
                "the MCP server \"{name}\" wrote a line over {} MiB",
                MAX_LINE >> 20
            )),
            Ok(Line::Full) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Line::Full) => {
                let read = rpc::each_message(&line, &mut |m| {
                    if let Some(reply) = rpc::handle(m, pending, log, name) {
                        writer.reply(&reply, log, name);
                    }
                });
                if let Err(why) = read {
                    pending.fail_all(&format!("MCP server \"{name}\": {why}"));
                }
            }
        }
    }
    // EOF can come a moment before the exit.
    let mut how = None;
    for _ in 0..20 {
        how = exit_status(pid);
        if how.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let how = how.map_or_else(
        || "closed its output".to_string(),
        |h| format!("exited ({h})"),
    );
    pending.break_with(&format!("the MCP server \"{name}\" {how}"));
}

/// The stderr thread: each line to the log, never to the answer.
fn read_stderr(stderr: impl Read, log: &Log, name: &str) {
    let mut input = BufReader::new(stderr);
    let mut line = Vec::new();
    while let Ok(Line::Full | Line::TooLong) = read_line(&mut input, &mut line, 64 << 10) {
        let text = String::from_utf8_lossy(&line);
        let text = crate::text::one_line(text.trim_end());
        if !text.is_empty() {
            log(&rpc::Note {
                server: name,
                kind: "stderr",
                text: &text,
            });
        }
    }
}

/// How reading a line ended.
#[derive(Debug, PartialEq)]
pub(super) enum Line {
    /// `buf` holds the line, without its newline.
    Full,
    /// The line was longer than the cap; it was skipped to its end.
    TooLong,
    Eof,
}

/// Reads one line into `buf`, holding at most `cap` bytes of it.
pub(super) fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut over = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match (over, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Full,
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !over {
            if buf.len() + take > cap {
                over = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(if done { take + 1 } else { take });
        if done {
            return Ok(if over { Line::TooLong } else { Line::Full });
        }
    }
}

/// The environment a stdio server gets: the few variables programs need
/// from axe's own (never a key), then the server's `env`.
pub fn environment(own: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = crate::sandbox::PASSED_ENV
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| ((*n).to_string(), v)))
        .collect();
    for (k, v) in own {
        env.retain(|(n, _)| n != k);
        env.push((k.clone(), v.clone()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_cap_is_skipped_to_its_end() {
        let data = b"{\"a\":1}\nxxxxxxxxxxxxxxxxxxxx\n{\"b\":2}\ntail";
        let mut input = BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf, 10).ok(), Some(Line::Full));
        assert_eq!(buf, b"{\"a\":1}");
        assert_eq!(
            read_line(&mut input, &mut buf, 10).ok(),
            Some(Line::TooLong)
        );
        assert_eq!(read_line(&mut input, &mut buf, 10).ok(), Some(Line::Full));
        assert_eq!(buf, b"{\"b\":2}");
        assert_eq!(read_line(&mut input, &mut buf, 10).ok(), Some(Line::Full));
        assert_eq!(buf, b"tail");
        assert_eq!(read_line(&mut input, &mut buf, 10).ok(), Some(Line::Eof));
    }
}
