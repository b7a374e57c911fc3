//! Nothing lost: `config init` and `agents init` on a full disk and on a
//! read-only filesystem, run for real.
//!
//! A full disk and a read-only mount are made with a small tmpfs inside a
//! new user and mount namespace (`unshare -rm`), so the tests need no
//! privileges and leave nothing mounted behind; plain permissions would not
//! do, since CI runs as root. Where this machine does not allow namespaces
//! the tests skip, and `make test` lists them at the end (tests/common/skips.rs),
//! unless `AXE_TEST_REQUIRE_UNSHARE=1` makes that a failure.

use std::process::Command;

use crate::common::*;

/// What one run of axe inside the namespace left: its exit code, output and
/// the files (mode, size, path) under the mount afterwards.
#[derive(Debug)]
struct Step {
    code: i32,
    stdout: String,
    stderr: String,
    files: Vec<String>,
}

/// The steps of one namespace run, and the directory (outside the mount)
/// where the script may leave copies of files for the test to read.
struct Ran {
    out: TempDir,
    steps: Vec<Step>,
}

/// Runs `steps` (shell lines) inside a new user and mount namespace, where
/// `$MNT` is a 64 KiB tmpfs, `$AXE` the binary, and `axe_step NAME ARGS...`
/// runs axe with `XDG_CONFIG_HOME=$MNT` and records a [`Step`] under NAME.
/// Returns None (after saying why) when namespaces are not available here.
fn in_namespace(steps: &str, names: &[&str]) -> Option<Ran> {
    let out = TempDir::new("disk");
    let mnt = out.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let script = format!(
        r#"set -u
MNT="$1"; OUT="$2"
mount -t tmpfs -o size=64k,mode=0755 tmpfs "$MNT" || exit 90
axe_step() {{
    name="$1"; shift
    XDG_CONFIG_HOME="$MNT" HOME="$MNT" "$AXE" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    echo $? >"$OUT/$name.code"
    (cd "$MNT" && find . -mindepth 1 ! -name filler -printf '%m %s %p\n' | sort) >"$OUT/$name.files"
}}
fill() {{ dd if=/dev/zero of="$MNT/filler" bs=4k >/dev/null 2>&1; true; }}
{steps}
"#
    );
    let run = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script, "sh"])
        .arg(&mnt)
        .arg(out.path())
        .env("AXE", env!("CARGO_BIN_EXE_axe"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OLLAMA_API_KEY")
        .output();
    let usable = matches!(&run, Ok(o) if o.status.code() != Some(90) && o.status.success());
    if !usable {
        let why = match &run {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        if std::env::var("AXE_TEST_REQUIRE_UNSHARE").is_ok_and(|v| v == "1") {
            panic!("user and mount namespaces are required here: {why}");
        }
        not_tested(
            "a full disk and a read-only mount (in a namespace of the test's own)",
            &format!(
                "no user and mount namespaces here (unshare -rm): {}",
                why.trim()
            ),
        );
        return None;
    }
    let read = |name: &str, ext: &str| {
        std::fs::read_to_string(out.path().join(format!("{name}.{ext}")))
            .unwrap_or_else(|e| panic!("step {name} left no .{ext}: {e}"))
    };
    let steps = names
        .iter()
        .map(|name| Step {
            code: read(name, "code").trim().parse().unwrap(),
            stdout: read(name, "out"),
            stderr: read(name, "err"),
            files: read(name, "files").lines().map(str::to_string).collect(),
        })
        .collect();
    Some(Ran { out, steps })
}

/// One `axe: ...` line on stderr containing `what`, and nothing on stdout.
fn assert_one_error_line(step: &Step, what: &str) {
    assert_eq!(step.code, 2, "{step:?}");
    assert!(step.stdout.is_empty(), "{step:?}");
    assert_eq!(step.stderr.lines().count(), 1, "{step:?}");
    assert!(step.stderr.starts_with("axe: "), "{step:?}");
    assert!(step.stderr.contains(what), "{step:?}");
}

/// No temporary file is ever left behind.
fn assert_no_temp_files(step: &Step) {
    assert!(
        !step.files.iter().any(|f| f.contains(".tmp-")),
        "temporary file left: {:?}",
        step.files
    );
}

/// The `find` line (mode, size, path) of the entry whose line ends with `path`.
fn entry(step: &Step, path: &str) -> Option<String> {
    step.files.iter().find(|f| f.ends_with(path)).cloned()
}

#[test]
fn config_init_on_a_full_disk_exits_2_writes_nothing_and_completes_once_space_is_freed() {
    let Some(ran) = in_namespace(
        "fill\naxe_step full config init\nrm \"$MNT/filler\"\naxe_step freed config init\n\
         cp \"$MNT/axe/config.toml\" \"$MNT/axe/skills/sample/SKILL.md\" \"$OUT/\"",
        &["full", "freed"],
    ) else {
        return;
    };
    let [full, freed] = [&ran.steps[0], &ran.steps[1]];

    assert_one_error_line(full, "No space left on device");
    assert!(full.stderr.contains("cannot write "), "{full:?}");
    // Neither file exists, not even empty: a reader never sees half a file,
    // and a re-run never keeps a truncated one.
    assert!(entry(full, "/SKILL.md").is_none(), "{full:?}");
    assert!(entry(full, "/config.toml").is_none(), "{full:?}");
    assert_no_temp_files(full);

    // Re-running once there is room finishes the job, with their modes (design §6.6).
    assert_eq!(freed.code, 0, "{freed:?}");
    assert!(freed.stdout.trim_end().ends_with("/mnt/axe"), "{freed:?}");
    let config = entry(freed, " ./axe/config.toml").expect("config.toml written");
    assert!(config.starts_with("600 "), "{config}");
    let skill = entry(freed, " ./axe/skills/sample/SKILL.md").expect("SKILL.md written");
    assert!(skill.starts_with("644 "), "{skill}");
    assert!(entry(freed, " ./axe/agents").is_some(), "{freed:?}");
    assert_no_temp_files(freed);

    // Every byte is there: the same files as `config init` on a healthy disk.
    let home = Home::new();
    std::fs::remove_dir_all(home.config_dir()).unwrap();
    assert_eq!(code(&home.run(&["config", "init"])), 0);
    for (copied, reference) in [
        ("config.toml", home.config_dir().join("config.toml")),
        ("SKILL.md", home.config_dir().join("skills/sample/SKILL.md")),
    ] {
        let got = std::fs::read(ran.out.path().join(copied)).unwrap();
        assert_eq!(got, std::fs::read(reference).unwrap(), "{copied}");
    }
}

#[test]
fn agents_init_on_a_full_disk_exits_2_and_leaves_no_agent_file() {
    let Some(ran) = in_namespace(
        "mkdir -p \"$MNT/axe/agents\"\nfill\naxe_step full agents init helper\n\
         rm \"$MNT/filler\"\naxe_step freed agents init helper",
        &["full", "freed"],
    ) else {
        return;
    };
    let [full, freed] = [&ran.steps[0], &ran.steps[1]];
    assert_one_error_line(full, "No space left on device");
    assert!(full.stderr.contains("helper.toml"), "{full:?}");
    assert!(entry(full, "/helper.toml").is_none(), "{full:?}");
    assert_no_temp_files(full);

    assert_eq!(freed.code, 0, "{freed:?}");
    let agent = entry(freed, " ./axe/agents/helper.toml").expect("written");
    assert!(agent.starts_with("644 "), "{agent}");
    assert!(
        freed
            .stdout
            .trim_end()
            .ends_with("/mnt/axe/agents/helper.toml")
    );
}

#[test]
fn a_read_only_config_dir_refuses_writes_clearly_and_still_runs_agents() {
    let Some(ran) = in_namespace(
        "mount -o remount,ro \"$MNT\"\naxe_step ro_empty config init\n\
         mount -o remount,rw \"$MNT\"\naxe_step init config init\n\
         printf 'name = \"x\"\\nmodel = \"openai/gpt-4o\"\\n' >\"$MNT/axe/agents/x.toml\"\n\
         mount -o remount,ro \"$MNT\"\n\
         axe_step ro_rerun config init\n\
         axe_step ro_agent agents init helper\n\
         axe_step ro_dry run x --dry-run -p hello",
        &["ro_empty", "init", "ro_rerun", "ro_agent", "ro_dry"],
    ) else {
        return;
    };
    let [ro_empty, init, ro_rerun, ro_agent, ro_dry] = [0, 1, 2, 3, 4].map(|i| &ran.steps[i]);
    // Nothing there and nothing can be made: the directory is named.
    assert_one_error_line(ro_empty, "Read-only file system");
    assert!(
        ro_empty.stderr.contains("cannot create directory"),
        "{ro_empty:?}"
    );
    assert_eq!(init.code, 0, "{init:?}");
    // Everything already there: re-running `config init` has nothing to
    // write, so it succeeds even on a read-only filesystem.
    assert_eq!(ro_rerun.code, 0, "{ro_rerun:?}");
    // It says it left each part as it was, and nothing else.
    let left: Vec<&str> = ro_rerun.stderr.lines().collect();
    assert_eq!(left.len(), 3, "{ro_rerun:?}");
    assert!(
        left.iter().all(|l| l.starts_with("left as it was: ")),
        "{ro_rerun:?}"
    );
    // A new agent cannot be written: the file is named, nothing is left.
    assert_one_error_line(ro_agent, "Read-only file system");
    assert!(ro_agent.stderr.contains("cannot write "), "{ro_agent:?}");
    assert!(ro_agent.stderr.contains("helper.toml"), "{ro_agent:?}");
    assert!(entry(ro_agent, "/helper.toml").is_none(), "{ro_agent:?}");
    assert_no_temp_files(ro_agent);
    // Reading is all a run needs.
    assert_eq!(ro_dry.code, 0, "{ro_dry:?}");
    assert!(ro_dry.stdout.contains("hello"), "{ro_dry:?}");
}
