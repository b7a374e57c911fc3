//! The built-in tools on a temp workdir: what each returns, and that every
//! escape is refused (the kernel's part is tested in `sandbox::tests`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::*;
use crate::sandbox::{Mode, Policy, Root};

struct Work {
    dir: PathBuf,
    root: Root,
    policy: Policy,
}

impl Work {
    fn new() -> Work {
        let base = std::env::temp_dir().join(format!(
            "axe-tools-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        let dir = base.join("work");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(base.join("secret.txt"), "the secret").unwrap();
        std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(
            dir.join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        )
        .unwrap();
        std::fs::write(dir.join("blob.bin"), b"\x00\x01\x02").unwrap();
        std::fs::write(dir.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(dir.join("ignored.txt"), "fn hidden() {}\n").unwrap();
        let root = Root::open(&dir).unwrap();
        let policy = Policy {
            workdir: crate::sandbox::Opened::own(&dir).unwrap(),
            read: Vec::new(),
            write: Vec::new(),
            network: false,
            env: Vec::new(),
            vars: Vec::new(),
            mode: Mode::Off,
            protect: true,
        };
        Work { dir, root, policy }
    }

    fn call(&self, name: &str, args: &[(&str, &str)]) -> Done {
        let args: Args = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = Env {
            root: &self.root,
            policy: &self.policy,
            allowed_hosts: &[],
            private_networks: false,
            deadline: Instant::now() + Duration::from_secs(10),
            cancel: &crate::deadline::Cancel::default(),
            artifacts: None,
        };
        run(name, &args, &env)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Some(base) = self.dir.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

#[test]
fn read_file_numbers_lines_and_pages() {
    let w = Work::new();
    assert_eq!(
        w.call("read_file", &[("path", "notes.txt")]).text,
        "1: one\n2: two\n3: three\n"
    );
    let d = w.call(
        "read_file",
        &[("path", "notes.txt"), ("offset", "2"), ("limit", "1")],
    );
    assert!(
        d.text
            .starts_with("2: two\n[lines 2-2 shown; the file goes on: read on with offset 3]"),
        "{}",
        d.text
    );
    assert!(
        w.call("read_file", &[("path", "blob.bin")])
            .text
            .contains("a binary file")
    );
    for escape in ["../secret.txt", "/etc/passwd", "src/../../secret.txt"] {
        let d = w.call("read_file", &[("path", escape)]);
        assert!(
            d.is_error && !d.text.contains("the secret"),
            "{escape}: {}",
            d.text
        );
    }
    assert!(w.call("read_file", &[]).is_error);
}

#[test]
fn list_write_and_edit() {
    let w = Work::new();
    let d = w.call("list_directory", &[]);
    assert!(
        d.text.contains("src/\n") && d.text.contains("notes.txt\n"),
        "{}",
        d.text
    );
    let d = w.call(
        "write_file",
        &[("path", "out/new.txt"), ("content", "a a b")],
    );
    assert_eq!(d.text, "wrote 5 bytes to out/new.txt");
    let d = w.call(
        "edit_file",
        &[
            ("path", "out/new.txt"),
            ("old_string", "a"),
            ("new_string", "c"),
        ],
    );
    assert!(
        d.is_error && d.text.contains("occurs 2 times"),
        "{}",
        d.text
    );
    let d = w.call(
        "edit_file",
        &[
            ("path", "out/new.txt"),
            ("old_string", "a"),
            ("new_string", "c"),
            ("replace_all", "true"),
        ],
    );
    assert!(!d.is_error, "{}", d.text);
    assert_eq!(
        std::fs::read_to_string(w.dir.join("out/new.txt")).unwrap(),
        "c c b"
    );
    assert!(
        w.call("write_file", &[("path", "../x.txt"), ("content", "no")])
            .is_error
    );
}

#[test]
fn search_files_respects_gitignore_and_skips_binaries() {
    let w = Work::new();
    let d = w.call("search_files", &[("pattern", r"fn \w+")]);
    assert_eq!(d.text, "src/main.rs:1: fn main() {", "{}", d.text);
    let d = w.call(
        "search_files",
        &[("pattern", "(?i)PRINTLN"), ("glob", "*.rs")],
    );
    assert!(d.text.starts_with("src/main.rs:2:"), "{}", d.text);
    assert!(
        w.call("search_files", &[("pattern", "x"), ("path", "..")])
            .is_error
    );
}

#[test]
fn results_are_capped_with_a_marker() {
    let long = "x".repeat(MAX_RESULT_BYTES + 100);
    let capped = crate::text::cap(long, MAX_RESULT_BYTES);
    assert!(capped.ends_with("[cut: 100 more bytes not shown]"));
}

#[test]
fn unknown_names_get_a_suggestion() {
    assert_eq!(did_you_mean("read_files"), Some("read_file"));
    assert_eq!(did_you_mean("zzz"), None);
    assert!(exists("run_command") && !exists("call_agent"));
}

#[test]
fn private_and_local_addresses_are_not_public() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::",
        // IPv4 inside IPv6, judged by the IPv4 address.
        "::127.0.0.1",
        "::a9fe:a9fe",
        "::ffff:0:7f00:1",
        "::ffff:0:a00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1",
        "2002:7f00:1::1",
        "2002:c0a8:101::",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "2001:0:5db8:0:0:0:f5ff:fffe",
        "2001:0:a00:1:0:0:f7f7:f7f7",
        "fec0::1",
        "100::1",
        "2001:db8::1",
        "3fff::1",
        "1:2::3",
    ] {
        assert!(!url_fetch::is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
    for ip in [
        "93.184.216.34",
        "1.1.1.1",
        "2606:4700::1111",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "::ffff:0:808:808",
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
    ] {
        assert!(url_fetch::is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
    let allowed = vec!["example.com".to_string(), "*.github.io".to_string()];
    assert!(url_fetch::host_allowed("Example.COM", &allowed));
    assert!(url_fetch::host_allowed("a.b.github.io", &allowed));
    assert!(!url_fetch::host_allowed("github.io", &allowed));
    assert!(!url_fetch::host_allowed("evil-example.com", &allowed));
}
