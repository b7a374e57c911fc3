//! The static build (`make static`): no dynamic dependencies, and it works
//! in an empty root, dry run and real run with a sub-agent alike.
//!
//! The binary is the one `make static` left at
//! `target/<arch>-unknown-linux-musl/release/axe`; `make test` builds it
//! first. Where it has not been built, or is older than the sources, the
//! tests skip and say so where `make test` counts it (tests/common/skips.rs):
//! a failure of `make test` unless `AXE_TEST_ALLOW_SKIP=1`, and of the test
//! itself with `AXE_TEST_REQUIRE_STATIC=1`. The empty root is made with
//! `unshare -r chroot` (a user namespace, no privileges); where namespaces
//! are not allowed the chroot test skips, listed and allowed, unless
//! `AXE_TEST_REQUIRE_UNSHARE=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use common::{FakeServer, Home, Reply, code, delegate, openai_text, openai_tool_calls, stderr};

/// What the program headers of an ELF file say about loading it.
#[derive(Debug)]
struct Linking {
    /// A PT_INTERP header: the dynamic loader the kernel must start first.
    interpreter: Option<String>,
    /// DT_NEEDED entries of the dynamic section: shared libraries it needs.
    needed: usize,
}

/// Reads the program headers of a little-endian ELF64 file.
fn linking(bytes: &[u8]) -> Linking {
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(bytes[4], 2, "not ELF64");
    assert_eq!(bytes[5], 1, "not little-endian");
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    let mut found = Linking {
        interpreter: None,
        needed: 0,
    };
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let (kind, offset, size) = (u32_at(ph), u64_at(ph + 8), u64_at(ph + 0x20));
        let body = &bytes[offset..offset + size];
        match kind {
            // PT_INTERP: the loader's path, NUL-terminated.
            3 => {
                let path = body.split(|&b| b == 0).next().unwrap_or_default();
                found.interpreter = Some(String::from_utf8_lossy(path).into_owned());
            }
            // PT_DYNAMIC: (tag, value) pairs up to DT_NULL; DT_NEEDED is 1.
            2 => {
                for entry in body.chunks_exact(16) {
                    let tag = u64::from_le_bytes(entry[..8].try_into().unwrap());
                    if tag == 0 {
                        break;
                    }
                    if tag == 1 {
                        found.needed += 1;
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// The static binary, or None (after saying so) when it has not been built.
fn static_binary() -> Option<PathBuf> {
    // CARGO_BIN_EXE_axe is <target dir>/<profile>/axe: the static build sits
    // beside it under the musl target's directory.
    let target_dir = Path::new(env!("CARGO_BIN_EXE_axe"))
        .parent()
        .and_then(Path::parent)
        .expect("the target directory");
    let triple = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
    let bin = target_dir.join(triple).join("release/axe");
    let why = match std::fs::metadata(&bin).and_then(|m| m.modified()) {
        Err(_) => format!("{} is not built (make static)", bin.display()),
        // A binary built before the last edit would test old code.
        Ok(built) if built < newest_source(&bin) => {
            format!("{} is older than the sources (make static)", bin.display())
        }
        Ok(_) => return Some(bin),
    };
    if std::env::var("AXE_TEST_REQUIRE_STATIC").is_ok_and(|v| v == "1") {
        panic!("the static build is required here: {why}");
    }
    common::missing("the static build's tests", &why);
    None
}

/// When the files the static build at `bin` was made of were last changed,
/// from the list cargo leaves beside it (`axe.d`): a build older than that
/// would test other code. The files cargo rebuilds for, and only those (a
/// test module or an editor's swap file is no change to the binary).
fn newest_source(bin: &Path) -> SystemTime {
    let list = std::fs::read_to_string(bin.with_extension("d")).unwrap_or_default();
    let files = list.split_once(": ").map_or("", |(_, files)| files);
    files
        .split_whitespace()
        .filter_map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .fold(SystemTime::UNIX_EPOCH, SystemTime::max)
}

#[test]
fn the_static_build_has_no_loader_and_no_shared_libraries() {
    // The reader itself is checked on the ordinary build, which has both.
    let dynamic = linking(&std::fs::read(env!("CARGO_BIN_EXE_axe")).unwrap());
    assert!(dynamic.interpreter.is_some(), "{dynamic:?}");
    assert!(dynamic.needed > 0, "{dynamic:?}");

    let Some(bin) = static_binary() else { return };
    let bytes = std::fs::read(&bin).unwrap();
    let found = linking(&bytes);
    assert_eq!(found.interpreter, None, "{}: {found:?}", bin.display());
    assert_eq!(found.needed, 0, "{}: {found:?}", bin.display());
    assert!(
        bytes.len() <= 6 << 20,
        "the static build is {} bytes, over the 6 MiB budget (D29)",
        bytes.len()
    );
}

#[test]
fn the_static_build_is_linked_by_lld_which_takes_the_run_order() {
    // GNU ld, the musl target's default, cannot place a single run's
    // functions first (build.rs): the static build is linked by lld, which
    // signs the binary's `.comment`.
    let Some(bin) = static_binary() else { return };
    let bytes = std::fs::read(&bin).unwrap();
    let signed = bytes.windows(11).any(|w| w == b"Linker: LLD");
    assert!(signed, "{} was not linked by lld", bin.display());
}

/// Runs `/bin/axe args` chrooted into `root`, which holds nothing but the
/// binary and the agents, with only `env` in the environment. None when
/// namespaces are not available here.
fn in_empty_root(root: &Path, env: &[(&str, &str)], args: &[&str]) -> Option<Output> {
    let mut c = Command::new("unshare");
    c.args(["-r", "chroot"])
        .arg(root)
        .arg("/bin/axe")
        .args(args);
    c.env_clear().envs(env.iter().copied());
    // unshare and chroot themselves are found through the caller's PATH.
    c.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let out = c.output().expect("run unshare");
    if out.status.code() == Some(1) && stderr(&out).contains("unshare") {
        if std::env::var("AXE_TEST_REQUIRE_UNSHARE").is_ok_and(|v| v == "1") {
            panic!("user namespaces are required here: {}", stderr(&out));
        }
        common::not_tested(
            "the static build in an empty root",
            &format!(
                "no user namespaces here (unshare -r): {}",
                stderr(&out).trim()
            ),
        );
        return None;
    }
    Some(out)
}

#[test]
fn the_static_build_runs_in_an_empty_root_dry_and_for_real_with_a_sub_agent() {
    let Some(bin) = static_binary() else { return };
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("helper", "count"))], 10, 5),
        ),
        ("lead", true) => Reply::Json(
            200,
            openai_text(&format!("lead read: {}", req.tool_result_texts()[0]), 7, 3),
        ),
        _ => Reply::Json(200, openai_text("three", 4, 2)),
    });
    // The root: the binary and the config home, nothing else (no /etc, no
    // /lib, no /dev, no /tmp).
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home.named_agent("helper", "openai/gpt-4o", "");
    // (The config home's agents are at /axe/agents, so the binary is /bin/axe.)
    std::fs::create_dir(home.dir.path().join("bin")).unwrap();
    std::fs::copy(&bin, home.dir.path().join("bin/axe")).unwrap();
    let root = home.dir.path();
    let env = [
        ("XDG_CONFIG_HOME", "/"),
        ("HOME", "/"),
        ("OPENAI_API_KEY", "sk-static"),
        ("AXE_OPENAI_BASE_URL", server.url.as_str()),
    ];

    let Some(version) = in_empty_root(root, &env, &["--version"]) else {
        return;
    };
    assert_eq!(code(&version), 0, "{version:?}");
    assert!(common::stdout(&version).starts_with("axe "), "{version:?}");

    let dry = in_empty_root(root, &env, &["run", "lead", "--dry-run", "-p", "go"]).unwrap();
    assert_eq!(code(&dry), 0, "{dry:?}");
    assert!(common::stdout(&dry).contains("You are lead."), "{dry:?}");
    assert!(server.requests().is_empty(), "a dry run sent a request");

    let real = in_empty_root(root, &env, &["run", "lead", "-p", "go"]).unwrap();
    assert_eq!(code(&real), 0, "{real:?}");
    assert_eq!(common::stdout(&real).trim_end(), "lead read: three");
    let who: Vec<String> = server.requests().iter().map(|r| r.who()).collect();
    assert_eq!(who, ["lead", "helper", "lead"]);
}
