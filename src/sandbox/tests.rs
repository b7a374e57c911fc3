//! The sandbox against commands that try to get out: each escape is
//! refused by the kernel (Landlock), never performed. Tests that need
//! Landlock skip where the kernel lacks it, and say so where `make test`
//! lists it ([`not_tested`]).

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::*;

/// Says that `what` was not tested because this kernel cannot have it
/// (`why`): SKIPPED on stderr, which cargo hides, and a line in the file
/// `make test` names in `AXE_TEST_SKIPS` and lists at the end (the same
/// one tests/common/skips.rs writes; such a skip is allowed there).
pub(super) fn not_tested(what: &str, why: &str) {
    use std::io::Write;
    eprintln!("SKIPPED: {what} not tested: {why}");
    let Some(path) = std::env::var_os("AXE_TEST_SKIPS") else {
        return;
    };
    // One append of one line: whole even when tests add theirs at once.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(format!("cannot\t{what}: {why}\n").as_bytes());
    }
}

struct Place {
    base: PathBuf,
    work: PathBuf,
}

impl Place {
    fn new() -> Place {
        let base = std::env::temp_dir().join(format!(
            "axe-sandbox-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        let work = base.join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(base.join("secret.txt"), "the secret").unwrap();
        std::fs::write(work.join("mine.txt"), "my file").unwrap();
        Place { base, work }
    }

    fn policy(&self, network: bool) -> Option<Policy> {
        let abi = landlock_abi();
        if abi == 0 {
            not_tested(
                "the sandbox's unit tests (commands under Landlock)",
                "this kernel has no Landlock",
            );
            return None;
        }
        Some(Policy {
            workdir: Opened::own(&self.work).unwrap(),
            read: Vec::new(),
            write: Vec::new(),
            network,
            env: Vec::new(),
            vars: Vec::new(),
            mode: Mode::Landlock(abi),
            protect: true,
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn sh(policy: &Policy, script: &str, secs: u64) -> Finished {
    run(&Request {
        script,
        policy,
        deadline: Instant::now() + Duration::from_secs(secs),
        cancel: None,
        max_output: 64 * 1024,
    })
    .unwrap()
}

#[test]
fn the_workdir_is_readable_and_writable_and_nothing_outside_it() {
    let p = Place::new();
    let Some(policy) = p.policy(false) else {
        return;
    };
    let r = sh(
        &policy,
        "cat mine.txt && echo new > new.txt && cat new.txt",
        10,
    );
    assert_eq!(r.exit, Exit::Code(0), "{}", r.output);
    assert_eq!(r.output, "my filenew\n");
    let r = sh(&policy, "cat ../secret.txt", 10);
    assert_ne!(r.exit, Exit::Code(0));
    assert!(!r.output.contains("the secret"), "{}", r.output);
    let r = sh(
        &policy,
        "echo x > ../written.txt; echo y > /tmp/axe-escape-$$.txt; ls ~",
        10,
    );
    assert_ne!(r.exit, Exit::Code(0));
    assert!(!p.base.join("written.txt").exists());
    // System programs still run.
    let r = sh(&policy, "ls /usr/bin >/dev/null && echo ok", 10);
    assert_eq!(r.output, "ok\n");
}

#[test]
fn axe_s_own_environment_cannot_be_read_through_proc() {
    let p = Place::new();
    let Some(policy) = p.policy(false) else {
        return;
    };
    let pid = std::process::id();
    let r = sh(&policy, &format!("cat /proc/{pid}/environ | wc -c"), 10);
    assert_eq!(r.output.lines().last(), Some("0"), "{}", r.output);
    // Nor with a capability: a command has none, even run as root.
    let r = sh(
        &policy,
        "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status",
        10,
    );
    for line in r.output.lines() {
        assert!(line.ends_with("0000000000000000"), "{}", r.output);
    }
    assert_eq!(r.output.lines().count(), 4, "{}", r.output);
    // Its own environment is the short list.
    let r = sh(&policy, "env | cut -d= -f1 | sort | tr '\\n' ' '", 10);
    for name in r.output.split_whitespace() {
        assert!(
            PASSED_ENV.contains(&name)
                || ["TMPDIR", "SHELL", "PWD", "SHLVL", "OLDPWD", "_"].contains(&name),
            "{name} in {}",
            r.output
        );
    }
}

#[test]
fn tcp_connect_is_denied_unless_the_network_is_on() {
    let p = Place::new();
    let Some(off) = p.policy(false) else { return };
    if landlock_abi() < 4 {
        not_tested(
            "the sandbox's network rule (unit test)",
            &format!(
                "this kernel's Landlock (ABI {}) has no network rules",
                landlock_abi()
            ),
        );
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(\"127.0.0.1:{port}\") or die \"refused: $!\\n\"; print \"connected\\n\"'"
    );
    let r = sh(&off, &script, 10);
    assert!(!r.output.contains("connected"), "{}", r.output);
    let on = p.policy(true).unwrap();
    let r = sh(&on, &script, 10);
    assert!(r.output.contains("connected"), "{}", r.output);
}

#[test]
fn what_a_command_leaves_running_is_gone_when_it_returns() {
    let p = Place::new();
    let Some(policy) = p.policy(false) else {
        return;
    };
    // In its group, and in a session of its own.
    let mark = format!("axe-unit-{}", fastrand::u64(..));
    let script =
        format!("export AXE_UNIT_MARK={mark}; sleep 100 & (setsid sleep 100 &); sleep 0.2");
    let r = sh(&policy, &script, 10);
    assert_eq!(r.exit, Exit::Code(0), "{}", r.output);
    assert!(gone(&mark), "what the command left survived it");
}

/// Whether no process with `AXE_UNIT_MARK=<mark>` in its environment is
/// left, waiting up to 10 s (a loaded machine may be slow to act on the
/// kill). A zombie's environment reads empty: it is dead.
fn gone(mark: &str) -> bool {
    let needle = format!("AXE_UNIT_MARK={mark}\0");
    let marked = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
    };
    for _ in 0..1000 {
        if !marked() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn the_deadline_stops_the_whole_group() {
    let p = Place::new();
    let Some(policy) = p.policy(false) else {
        return;
    };
    let started = Instant::now();
    let r = run(&Request {
        script: "sleep 100 & sleep 100",
        policy: &policy,
        deadline: Instant::now() + Duration::from_millis(300),
        cancel: None,
        max_output: 1024,
    })
    .unwrap();
    assert_eq!(r.exit, Exit::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_flood_of_output_is_cut_in_bounded_memory() {
    let p = Place::new();
    let Some(policy) = p.policy(false) else {
        return;
    };
    let r = sh(
        &policy,
        "head -c 268435456 /dev/zero | tr '\\0' a; echo; echo the end",
        60,
    );
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.bytes, 268_435_456 + 9);
    assert!(r.output.len() < 64 * 1024 + 100, "{}", r.output.len());
    assert!(r.output.contains("bytes of output cut"));
    assert!(r.output.ends_with("the end\n"));
}
