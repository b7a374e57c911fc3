//! The walk on a made-up `/etc`: what is granted whole, entry by entry,
//! and held back. The real `/etc` through the binary is in
//! tests/it/walls/net.rs.

use std::os::unix::fs::PermissionsExt;

use super::*;

struct Tree(PathBuf);

impl Tree {
    fn new() -> Tree {
        let root = std::env::temp_dir().join(format!(
            "axe-etc-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&root).unwrap();
        Tree(root)
    }

    fn file(&self, rel: &str, mode: u32) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, rel).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn dir_mode(&self, rel: &str, mode: u32) {
        let p = self.0.join(rel);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn rel(&self, list: &[Entry]) -> Vec<String> {
        let mut v: Vec<String> = list
            .iter()
            .map(|e| {
                let p = e.path.strip_prefix(&self.0).unwrap_or(&e.path);
                let p = p.display().to_string();
                if e.dir { format!("{p}/") } else { p }
            })
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_directory_with_nothing_held_back_is_one_entry() {
    let t = Tree::new();
    t.file("passwd", 0o644);
    t.file("alternatives/editor", 0o644);
    assert_eq!(t.rel(&walk(&t.0, &[])), vec!["/"]);
}

#[test]
fn what_others_may_not_read_and_the_named_secrets_are_held_back() {
    let t = Tree::new();
    for f in [
        "passwd",
        "hosts",
        "sudoers",
        "ssh/ssh_config",
        "ssh/ssh_host_rsa_key.pub",
    ] {
        t.file(f, 0o644);
    }
    // Named: held back even when a careless mode opens them.
    t.file("ssh/ssh_host_rsa_key", 0o644);
    t.file("axe/token", 0o644);
    t.file("sudoers.d/admins", 0o644);
    t.file("shadow", 0o640);
    t.file("shadow-", 0o644);
    t.file("security/opasswd", 0o600);
    t.file("security/limits.conf", 0o644);
    t.file("ssl/certs/ca.pem", 0o644);
    t.file("ssl/private/key.pem", 0o644);
    t.dir_mode("ssl/private", 0o710);
    let axe_config = t.file("axe-config/axe/config.toml", 0o644);
    t.file("axe-config/axe/agents/a.toml", 0o644);
    let got = t.rel(&walk(&t.0, &[axe_config]));
    assert_eq!(
        got,
        vec![
            "axe-config/axe/agents/",
            "hosts",
            "passwd",
            "security/limits.conf",
            "ssh/ssh_config",
            "ssh/ssh_host_rsa_key.pub",
            "ssl/certs/",
        ]
    );
}

#[test]
fn a_link_in_a_directory_given_by_entries_has_its_file_target_granted() {
    let t = Tree::new();
    let outside = Tree::new();
    t.file("shadow", 0o600);
    let resolv = outside.file("run/resolv.conf", 0o644);
    let closed = outside.file("root/secret", 0o644);
    outside.dir_mode("root", 0o700);
    let link = |name: &str, to: &Path| std::os::unix::fs::symlink(to, t.0.join(name)).unwrap();
    link("resolv.conf", &resolv);
    link("secret", &closed);
    link("shadow-link", &t.0.join("shadow"));
    link("dangling", &t.0.join("nowhere"));
    link("a-dir", &outside.0.join("run"));
    let got = walk(&t.0, &[]);
    let resolv = std::fs::canonicalize(&resolv).unwrap();
    assert_eq!(
        got,
        vec![Entry {
            path: resolv,
            dir: false
        }]
    );
}

#[test]
fn the_walk_stops_at_its_bound_and_grants_nothing_it_did_not_see() {
    let t = Tree::new();
    t.file("shadow", 0o600);
    for i in 0..60 {
        let p = t.0.join(format!("d/f{i}"));
        if i == 0 {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        std::fs::write(&p, "").unwrap();
    }
    let got = walk_within(&t.0, &[], 50);
    assert!(got.iter().all(|e| !e.dir), "the big directory is not whole");
    assert!(got.len() < 50, "{}", got.len());
}
