//! Tests of `beneath`: escapes refused by `openat2` and by the walk that
//! stands in for it, atomic writes, listings.

use super::*;
use std::os::unix::fs::symlink;

fn tree() -> (tempdir::Dir, Root) {
    let d = tempdir::Dir::new();
    std::fs::create_dir_all(d.0.join("work/sub")).unwrap();
    std::fs::write(d.0.join("work/a.txt"), "inside").unwrap();
    std::fs::write(d.0.join("secret.txt"), "outside").unwrap();
    symlink(d.0.join("secret.txt"), d.0.join("work/out")).unwrap();
    symlink("a.txt", d.0.join("work/in")).unwrap();
    symlink("/", d.0.join("work/root")).unwrap();
    let root = Root::open(&d.0.join("work")).unwrap();
    (d, root)
}

mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            let p = std::env::temp_dir().join(format!(
                "axe-beneath-{}-{}",
                std::process::id(),
                fastrand::u64(..)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn read(root: &Root, name: &str) -> Result<String, String> {
    let mut s = String::new();
    use std::io::Read;
    root.open_file(name)
        .map_err(|e| e.to_string())
        .and_then(|mut f| f.read_to_string(&mut s).map_err(|e| e.to_string()))
        .map(|_| s)
}

#[test]
fn escapes_are_refused_and_inside_paths_read() {
    let (_d, root) = tree();
    assert_eq!(read(&root, "a.txt").unwrap(), "inside");
    assert_eq!(read(&root, "sub/../a.txt").unwrap(), "inside");
    assert_eq!(read(&root, "in").unwrap(), "inside");
    for escape in [
        "../secret.txt",
        "/etc/hostname",
        "out",
        "root/etc/hostname",
        "sub/../../secret.txt",
        "/proc/self/root/etc/hostname",
    ] {
        assert!(read(&root, escape).is_err(), "{escape} was read");
    }
    let abs = format!("{}/a.txt", root.path().display());
    assert_eq!(read(&root, &abs).unwrap(), "inside");
}

#[test]
fn writes_are_atomic_make_parents_and_never_follow_a_link_out() {
    let (d, root) = tree();
    root.write("new/deep/f.txt", b"hello").unwrap();
    assert_eq!(
        std::fs::read_to_string(d.0.join("work/new/deep/f.txt")).unwrap(),
        "hello"
    );
    // A symlink pointing out is replaced by the file, the target untouched.
    root.write("out", b"mine").unwrap();
    assert_eq!(
        std::fs::read_to_string(d.0.join("secret.txt")).unwrap(),
        "outside"
    );
    assert!(root.write("../x.txt", b"no").is_err());
    assert!(root.write("root/tmp/x.txt", b"no").is_err());
    assert!(!d.0.join("x.txt").exists());
}

#[test]
fn a_listing_has_names_and_kinds() {
    let (_d, root) = tree();
    let names: Vec<(String, Kind)> = root
        .list(".")
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert!(names.contains(&("a.txt".into(), Kind::File)));
    assert!(names.contains(&("sub".into(), Kind::Dir)));
    assert!(names.contains(&("out".into(), Kind::Link)));
    assert!(root.list("..").is_err());
}

#[test]
fn the_walk_refuses_what_openat2_refuses() {
    let (_d, root) = tree();
    let flags = libc::O_RDONLY | libc::O_CLOEXEC;
    assert!(walk(&root.fd, "a.txt", flags, 0, true).is_ok());
    assert!(walk(&root.fd, "sub/../a.txt", flags, 0, true).is_ok());
    for escape in [
        "../secret.txt",
        "/etc/hostname",
        "out",
        "in",
        "root/etc/hostname",
    ] {
        assert!(walk(&root.fd, escape, flags, 0, true).is_err(), "{escape}");
    }
}

#[test]
fn axe_own_roots_follow_no_link_by_openat2_or_by_the_walk() {
    let (d, _) = tree();
    let own = Root::own(&d.0.join("work"), Follow::Nothing).unwrap();
    assert!(own.open_with("a.txt", libc::O_RDONLY, 0).is_ok());
    // A link that stays inside is followed by the file tools, not here.
    assert!(matches!(
        own.open_with("in", libc::O_RDONLY, 0),
        Err(Denied::Link)
    ));
    let sub = Root::own(&d.0.join("work/sub"), Follow::NothingAsWritten).unwrap();
    assert!(sub.open_with("../../secret.txt", libc::O_RDONLY, 0).is_ok());
    assert!(sub.open_with("../in", libc::O_RDONLY, 0).is_err());
    // The walk that stands in for openat2 does the same.
    let flags = libc::O_RDONLY | libc::O_CLOEXEC;
    assert!(walk(&sub.fd, "../../secret.txt", flags, 0, false).is_ok());
    assert!(matches!(
        walk(&sub.fd, "../in", flags, 0, false),
        Err(Denied::Link)
    ));
    assert!(walk(&sub.fd, "../../secret.txt", flags, 0, true).is_err());
    // A name in it: made, compared, renamed, never through a link.
    let made = own.dir("new/deep", true).unwrap();
    let f = made
        .open_with("f", libc::O_WRONLY | libc::O_CREAT, 0o600)
        .unwrap();
    assert!(still_named(&f, &made, "f").unwrap());
    made.rename("f", "g").unwrap();
    assert!(!still_named(&f, &made, "f").unwrap());
    assert_eq!(made.stat("g").unwrap().kind, Kind::File);
    assert_eq!(own.stat("out").unwrap().kind, Kind::Link);
}
