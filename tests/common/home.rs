//! Driving the real `axe` binary: a temporary config home, a clean
//! environment, and runs bounded in time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use super::server::FakeServer;
use super::wire::P;

/// The OpenAI key runs get from [`Home::axe_on`]: long enough to count as
/// a secret (design §6.7), so it must never show in any output.
pub const OPENAI_KEY: &str = "sk-test-openai-0123456789";

/// The Anthropic key runs get from [`Home::axe_on`].
pub const ANTHROPIC_KEY: &str = "sk-ant-test-anthropic-0123456789";

/// A run that nothing makes wait long (no slow server, no long
/// `--timeout`) and is still going after this has hung.
pub const HUNG: Duration = Duration::from_secs(20);

/// Millisecond retries for config.toml, so that a case that retries stays
/// quick; the count stays the default.
pub const FAST_RETRIES: &str = "[retry]\ninitial_delay_ms = 1\nmax_delay_ms = 5\n";

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "axe-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p.canonicalize().unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `XDG_CONFIG_HOME` (and `HOME`) in a temp dir; the config dir is `<home>/axe`.
pub struct Home {
    pub dir: TempDir,
}

impl Home {
    pub fn new() -> Home {
        let dir = TempDir::new("home");
        std::fs::create_dir_all(dir.path().join("axe/agents")).unwrap();
        Home { dir }
    }

    /// A home whose config.toml is [`FAST_RETRIES`].
    pub fn fast_retries() -> Home {
        let home = Home::new();
        home.config(FAST_RETRIES);
        home
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().join("axe")
    }

    /// Where the run log is: `$XDG_STATE_HOME/axe`.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state/axe")
    }

    /// Every line of the run log (`runs.jsonl`), each parsed as JSON; none
    /// when there is no log.
    pub fn run_log(&self) -> Vec<serde_json::Value> {
        let path = self.state_dir().join("runs.jsonl");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Vec::new();
        };
        assert!(text.ends_with('\n'), "whole lines only: {text}");
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Writes `<config>/agents/<name>.toml`.
    pub fn agent(&self, name: &str, toml: &str) -> PathBuf {
        let p = self
            .config_dir()
            .join("agents")
            .join(format!("{name}.toml"));
        std::fs::write(&p, toml).unwrap();
        p
    }

    /// Writes agent `name` of two lines: its name and `model`.
    pub fn plain_agent(&self, name: &str, model: &str) -> PathBuf {
        self.agent(name, &format!("name = \"{name}\"\nmodel = \"{model}\"\n"))
    }

    /// Writes agent `name` on `model` whose system prompt is `You are
    /// <name>.` (what [`Recorded::who`] reads back), with `extra` appended
    /// (sub_agents, [sub_agents_config], ...).
    pub fn named_agent(&self, name: &str, model: &str, extra: &str) -> PathBuf {
        self.agent(
            name,
            &format!(
                "name = \"{name}\"\nmodel = \"{model}\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        )
    }

    /// Writes `<config>/config.toml`.
    pub fn config(&self, toml: &str) {
        std::fs::write(self.config_dir().join("config.toml"), toml).unwrap();
    }

    /// The `axe` binary with this home and a clean environment: no keys, no
    /// base URLs, no editor from the developer's shell. Stdin is null.
    pub fn axe(&self) -> Command {
        self.command(env!("CARGO_BIN_EXE_axe"))
    }

    /// [`Home::axe`] for any binary of the same CLI (the bench measures
    /// others too).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("XDG_CONFIG_HOME", self.dir.path())
            .env("HOME", self.dir.path())
            // The run log goes to the temp home, never the developer's.
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env_remove("XDG_DATA_HOME")
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for var in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OLLAMA_API_KEY",
            "AXE_ANTHROPIC_BASE_URL",
            "AXE_OPENAI_BASE_URL",
            "AXE_OLLAMA_BASE_URL",
            "OLLAMA_HOST",
            // The presets' key variables (design §4.12).
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "GROQ_API_KEY",
            "DEEPSEEK_API_KEY",
            "MISTRAL_API_KEY",
            "TOGETHER_API_KEY",
            "XAI_API_KEY",
            "MINIMAX_API_KEY",
            "OPENCODE_API_KEY",
            "ATLASCLOUD_API_KEY",
            "REQUESTY_API_KEY",
            "EDENAI_API_KEY",
            "AXE_OPENCODE_BASE_URL",
            "AXE_ATLASCLOUD_BASE_URL",
            "AXE_REQUESTY_BASE_URL",
            "AXE_EDENAI_BASE_URL",
            // Bedrock's (AWS's own variables) and its base URL override.
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_PROFILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AXE_BEDROCK_BASE_URL",
            // web_search's (the Go original's Tavily tool).
            "TAVILY_API_KEY",
            "AXE_TAVILY_BASE_URL",
            "AXE_WEB_SEARCH_BASE_URL",
            "VISUAL",
            "EDITOR",
            // ureq honours proxy variables: loopback traffic must not go there.
            "ALL_PROXY",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "all_proxy",
            "http_proxy",
            "https_proxy",
            "no_proxy",
            // OpenTelemetry's: a developer's collector gets no test's spans.
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_SERVICE_NAME",
            "OTEL_RESOURCE_ATTRIBUTES",
            "OTEL_SDK_DISABLED",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            "TRACEPARENT",
        ] {
            c.env_remove(var);
        }
        default_signals(&mut c);
        c
    }

    /// Runs `axe <args>` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.axe().args(args).output().expect("run axe")
    }

    /// [`Home::axe`] with each provider of `servers` pointed at its server
    /// (`AXE_<PROVIDER>_BASE_URL`), and [`OPENAI_KEY`] or
    /// [`ANTHROPIC_KEY`] for those that need one. A provider not listed gets
    /// neither, so no run can leave the loopback for it.
    pub fn axe_on(&self, servers: &[(P, &FakeServer)]) -> Command {
        let mut c = self.axe();
        for (p, server) in servers {
            c.env(p.base_url_var(), &server.url);
            match p {
                P::OpenAi | P::Responses => c.env("OPENAI_API_KEY", OPENAI_KEY),
                P::Anthropic => c.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
                P::Ollama => &mut c,
            };
        }
        c
    }

    /// Runs `axe <args>` on `servers` (see [`Home::axe_on`]), failing the
    /// test if it is still running after `limit`.
    #[track_caller]
    pub fn run_bounded(
        &self,
        servers: &[(P, &FakeServer)],
        args: &[&str],
        limit: Duration,
    ) -> Bounded {
        run_bounded(self.axe_on(servers).args(args), limit)
    }

    /// Runs `axe <args>` on `servers` (see [`Home::axe_on`]).
    pub fn run_on(&self, servers: &[(P, &FakeServer)], args: &[&str]) -> Output {
        self.axe_on(servers).args(args).output().expect("run axe")
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// What [`run_within`] saw.
pub struct Bounded {
    pub output: Output,
    pub took: Duration,
    /// The child was still running at the limit and was killed.
    pub killed: bool,
}

/// `server` as the server of every provider: for a fake that answers
/// whichever wire format its test is about.
pub fn every_wire(server: &FakeServer) -> [(P, &FakeServer); 3] {
    [
        (P::Anthropic, server),
        (P::OpenAi, server),
        (P::Ollama, server),
    ]
}

/// [`run_within`], failing the test if `cmd` was still running at `limit`.
#[track_caller]
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Bounded {
    let b = run_within(cmd, limit);
    assert!(!b.killed, "axe hung: {}", stderr(&b.output));
    b
}

/// Runs `cmd` to the end and returns its output and peak resident memory in
/// KiB: the child's own high-water mark (`VmHWM`), read from /proc every
/// millisecond while it runs. Not `wait4`'s `ru_maxrss`: std spawns with
/// `posix_spawn`, whose child shares this process's memory until it execs,
/// and the kernel records that memory's high-water mark as the child's at
/// the exec — in `cargo test`, whose threads run many tests at once, that
/// was 109 MiB for a child that used 30.
#[allow(clippy::zombie_processes, reason = "reaped by wait4, unknown to std")]
pub fn with_peak_rss(cmd: &mut Command) -> (std::process::Output, u64) {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let pid = child.id() as libc::pid_t;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        let path = format!("/proc/{pid}/status");
        std::thread::spawn(move || {
            let mut most = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let hwm = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
                most = most.max(hwm.unwrap_or(0));
                std::thread::sleep(Duration::from_millis(1));
            }
            most
        })
    };
    let mut status = 0;
    // SAFETY: rusage is plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child, waited once, into our own locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().unwrap();
    use std::os::unix::process::ExitStatusExt;
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    };
    // A child too short-lived to be sampled: the kernel's figure, which
    // is at least as large.
    let peak = if peak == 0 {
        usage.ru_maxrss as u64
    } else {
        peak
    };
    (output, peak)
}

/// Makes a FIFO at `path` (mkfifo(1)).
pub fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// Every line of a trace file (`--trace`), each parsed as JSON.
pub fn trace_events(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("trace file written");
    assert!(text.ends_with('\n'), "whole lines only");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Runs `cmd` (its stdout and stderr piped and collected) and kills it if it
/// has not ended within `limit`, so that a hang fails a test in bounded time.
pub fn run_within(cmd: &mut Command, limit: Duration) -> Bounded {
    let started = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn axe");
    fn collect(mut r: impl std::io::Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    }
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for axe") {
            break status;
        }
        if started.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("wait for axe");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    Bounded {
        output,
        took,
        killed,
    }
}

/// Starts `cmd` with SIGINT, SIGTERM and SIGHUP at their defaults, whatever
/// the test process was started with: axe keeps a signal it inherits
/// ignored (design §6.5: `nohup`, a background job), so under
/// `nohup cargo test &` every test that signals axe would fail. A test
/// that wants one ignored sets it after.
pub fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe; it runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// Sends signal `sig` to `child`, a process the test started.
pub fn signal(child: &std::process::Child, sig: i32) {
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    // SAFETY: kill(2) of the test's own child, by its pid.
    unsafe { libc::kill(pid, sig) };
}
