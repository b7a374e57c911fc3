//! Measuring one run of a binary from outside: wall time, CPU, peak RSS and
//! peak thread count. The bench re-runs itself as a shim whose only child is
//! the measured command, so that getrusage(RUSAGE_CHILDREN) is that one
//! child's high-water mark and CPU, and the shim's own start-up is not
//! counted.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first argument that turns the bench binary into the shim.
pub const SHIM_FLAG: &str = "--measure-child";

/// What the shim measured of its one child.
#[derive(Debug, Default, Clone, Copy)]
pub struct Measured {
    /// From spawn to exit, timed by the shim.
    pub wall: Duration,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    /// User plus system CPU time.
    pub cpu: Duration,
    /// The most threads seen at once (sampled every millisecond from
    /// /proc; 0 where there is no /proc).
    pub threads: u64,
}

/// Runs `cmd` under the shim with `stdin` as its standard input, and
/// panics if it fails: a run that failed must not read as a fast one.
pub fn measure(cmd: &Command, stdin: &str) -> Measured {
    let me = std::env::current_exe().expect("the bench's own path");
    let mut shim = Command::new(me);
    shim.arg(SHIM_FLAG).arg(stdin);
    // AXE_BENCH_WRAP="strace -c -f -o FILE" (or `perf record ...`, `valgrind
    // ...`) runs the measured command under that wrapper: for profiling one
    // scenario as the bench sets it up; the figures then include the wrapper.
    if let Ok(wrap) = std::env::var("AXE_BENCH_WRAP") {
        shim.args(wrap.split_whitespace());
    }
    shim.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => shim.env(k, v),
            None => shim.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        shim.current_dir(dir);
    }
    let out = shim
        .stdin(Stdio::null())
        .output()
        .expect("run the measuring shim");
    let text = String::from_utf8_lossy(&out.stdout);
    let n: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match (out.status.success(), &n[..]) {
        (true, &[wall_us, rss, cpu_us, threads]) => Measured {
            wall: Duration::from_micros(wall_us),
            max_rss_kib: rss,
            cpu: Duration::from_micros(cpu_us),
            threads,
        },
        _ => panic!(
            "the measured run failed: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The shim: `SHIM_FLAG STDIN PROGRAM ARGS...`. Prints
/// `wall_us max_rss_kib cpu_us threads`.
pub fn shim(args: &[String]) {
    let (stdin, cmd) = (&args[0], &args[1..]);
    let started = Instant::now();
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the measured command");
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin.as_bytes());
    }
    // Threads are sampled on a thread of their own, so that this one waits
    // for the child's exit blocked in wait(), not polling (which would add
    // up to a poll interval to the wall time).
    let status_path = format!("/proc/{}/status", child.id());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(thread_count(&status_path));
                std::thread::sleep(Duration::from_millis(1));
            }
            most
        })
    };
    // The pipes are drained on threads of their own too.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = child.wait().expect("wait for the measured command");
    let wall = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let threads = sampler.join().unwrap_or(0);
    let _ = out.join();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        eprintln!("{status}: {}", String::from_utf8_lossy(&err));
        #[allow(clippy::exit, reason = "the shim is a process of its own")]
        std::process::exit(1);
    }
    let (rss, cpu) = rusage(RUSAGE_CHILDREN);
    println!("{} {rss} {} {threads}", wall.as_micros(), cpu.as_micros());
}

/// The `Threads:` line of a /proc status file; 0 when unreadable.
fn thread_count(path: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

pub const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;

/// Peak RSS (KiB) and user + system CPU of `who` (0s where unsupported).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn rusage(who: i32) -> (u64, Duration) {
    #[repr(C)]
    struct Rusage {
        utime: [i64; 2],
        stime: [i64; 2],
        maxrss: i64,
        rest: [i64; 13],
    }
    unsafe extern "C" {
        fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
    let mut usage = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        rest: [0; 13],
    };
    // SAFETY: `usage` is a properly laid out, writable `struct rusage` for
    // 64-bit Linux, and getrusage writes nothing else.
    if unsafe { getrusage(who, &mut usage) } != 0 {
        return (0, Duration::ZERO);
    }
    let tv = |t: [i64; 2]| {
        Duration::from_secs(u64::try_from(t[0]).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t[1]).unwrap_or(0))
    };
    (
        u64::try_from(usage.maxrss).unwrap_or(0),
        tv(usage.utime) + tv(usage.stime),
    )
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn rusage(_: i32) -> (u64, Duration) {
    (0, Duration::ZERO)
}
