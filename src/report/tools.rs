//! The `--- Tools ---` section of `--dry-run` (design §2.9): the built-in
//! tools an agent lists and what they may touch — the paths its file tools
//! reach, the sandbox its commands would run under, the hosts `url_fetch`
//! may fetch from — as this machine would apply them (design §8); and the
//! `--- MCP Servers ---` section, the MCP servers it lists (design §9.5).

use std::path::Path;

use crate::agent::yes_no;
use crate::mcp::{AgentMcp, ServerRef};
use crate::sandbox::landlock::{DEVICES, SYSTEM_READ};
use crate::sandbox::{Mode, PASSED_ENV, Root};
use crate::tools::Kit;

/// Width of a label and its padding, so that the values line up.
const LABEL: usize = 18;

/// Tools that read paths beneath the workdir.
const READERS: [&str; 3] = ["read_file", "list_directory", "search_files"];
/// Tools that write paths beneath the workdir.
const WRITERS: [&str; 2] = ["write_file", "edit_file"];

/// The section, from its heading to its last line.
pub(super) fn section(kit: &Kit) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(paths) = paths(kit) {
        rows.push(("Paths", paths));
    }
    if kit.has("run_command") {
        rows.extend(sandbox(kit));
    } else {
        rows.push(("Sandbox", "not used (no run_command)".into()));
    }
    if kit.has("url_fetch") {
        let hosts = if kit.allowed_hosts.is_empty() {
            "any public host".to_string()
        } else {
            kit.allowed_hosts.join(", ")
        };
        rows.push(("url_fetch hosts", hosts));
        rows.push(("Private networks", yes_no(kit.private_networks).into()));
    }
    let mut s = format!("\n--- Tools ---\n{}\n", kit.names.join(", "));
    for (label, value) in rows {
        s.push_str(&format!("{:<LABEL$}{value}\n", format!("{label}:")));
    }
    s
}

/// What the file tools reach: none listed, nothing.
fn paths(kit: &Kit) -> Option<String> {
    let writes = WRITERS.iter().any(|t| kit.has(t));
    if !writes && !READERS.iter().any(|t| kit.has(t)) {
        return None;
    }
    let what = if writes { "read and write" } else { "read" };
    let how = if Root::kernel_resolves() {
        "the kernel resolves each path (openat2)"
    } else {
        "no openat2: a walk that refuses symlinks"
    };
    Some(format!("{what} beneath the workdir; {how}"))
}

/// The sandbox a command would run under (design §8.3).
fn sandbox(kit: &Kit) -> Vec<(&'static str, String)> {
    let p = &kit.policy;
    let mut env: Vec<&str> = PASSED_ENV.to_vec();
    for name in &p.env {
        if !env.contains(&name.as_str()) && name != "TMPDIR" && name != "SHELL" {
            env.push(name);
        }
    }
    env.extend(["TMPDIR", "SHELL"]);
    let env = ("Env", env.join(", "));
    let Mode::Landlock(abi) = p.mode else {
        return vec![
            ("Sandbox", "off (mode = \"off\")".into()),
            ("Readable", "whatever this user can read".into()),
            ("Writable", "whatever this user can write".into()),
            ("Network", "on".into()),
            env,
        ];
    };
    let mut read: Vec<String> = SYSTEM_READ.iter().map(|s| s.to_string()).collect();
    read.extend(p.read.iter().map(|p| shown(p.path())));
    let mut write = vec![shown(p.workdir.path()), "a private TMPDIR".to_string()];
    write.extend(p.write.iter().map(|p| shown(p.path())));
    write.extend(DEVICES.iter().map(|s| s.to_string()));
    let network = match (p.network, abi) {
        (true, _) => "on".to_string(),
        // TCP rules came with ABI 4: before it, nothing can be denied.
        (false, 0..=3) => format!("on (Landlock ABI {abi} cannot deny TCP)"),
        (false, _) => "off".to_string(),
    };
    let read_only = if p.protect {
        format!(
            "{} beneath what is writable",
            crate::sandbox::protected::NAMES.join(", ")
        )
    } else {
        "nothing (protect = false)".to_string()
    };
    vec![
        ("Sandbox", format!("Landlock ABI {abi}")),
        ("Readable", read.join(", ")),
        ("Writable", write.join(", ")),
        ("Read-only", read_only),
        ("Network", network),
        env,
    ]
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// The `--- MCP Servers ---` section: each server the agent lists and
/// where it is defined. A dry run starts none, so their tools are not
/// known yet (design §9.5).
pub(super) fn mcp_section(mcp: &AgentMcp) -> String {
    let mut s = String::from("\n--- MCP Servers ---\n");
    for r in &mcp.servers {
        let line = match r {
            ServerRef::Name(name) => format!("{name}: from config.toml"),
            ServerRef::Defined(c) => format!(
                "{}: {} {} (the agent file)",
                c.name,
                c.transport.kind(),
                c.summary()
            ),
        };
        s.push_str(&format!(
            "{line}; tools listed when it starts (not started in a dry run)\n"
        ));
    }
    if !mcp.tools.is_empty() {
        s.push_str(&format!("Only tools: {}\n", mcp.tools.join(", ")));
    }
    s
}
