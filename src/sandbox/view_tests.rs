//! Tests of `view`: the layout of binds a grant list makes, each path at
//! its own place. The view through the binary is in tests/it/walls/view.rs.

use super::*;

fn g(path: &str, dir: bool, read_only: bool) -> Grant {
    Grant {
        path: path.into(),
        id: None,
        dir,
        read_only,
    }
}

fn paths(v: &[PathBuf]) -> Vec<&str> {
    v.iter().map(|p| p.to_str().unwrap()).collect()
}

fn bound(l: &Layout) -> Vec<(&str, bool)> {
    l.binds
        .iter()
        .map(|g| (g.path.to_str().unwrap(), g.read_only))
        .collect()
}

#[test]
fn each_path_is_bound_at_its_own_place_with_the_directories_above_it_made() {
    let l = layout(vec![
        g("/usr", true, true),
        g("/etc", true, true),
        g("/home/u/proj", true, false),
        g("/tmp/axe-cmd-1", true, false),
        g("/dev/null", false, false),
    ])
    .unwrap();
    assert_eq!(
        paths(&l.dirs),
        [
            "/dev",
            "/etc",
            "/home",
            "/home/u",
            "/home/u/proj",
            "/proc",
            "/tmp",
            "/tmp/axe-cmd-1",
            "/usr"
        ]
    );
    assert_eq!(paths(&l.files), ["/dev/null"]);
    assert_eq!(
        bound(&l),
        [
            ("/dev/null", false),
            ("/etc", true),
            ("/home/u/proj", false),
            ("/tmp/axe-cmd-1", false),
            ("/usr", true)
        ]
    );
}

#[test]
fn a_link_target_of_etc_elsewhere_is_bound_as_a_file_where_it_lies() {
    // resolv.conf -> /run/systemd/resolve/stub-resolv.conf: the file is
    // there, read-only; nothing else of /run is.
    let l = layout(vec![
        g("/etc", true, true),
        g("/run/systemd/resolve/stub-resolv.conf", false, true),
        g("/usr/share/zoneinfo/UTC", false, true),
        g("/usr", true, true),
        g("/proc/42/mounts", false, true),
    ])
    .unwrap();
    assert_eq!(
        paths(&l.dirs),
        [
            "/dev",
            "/etc",
            "/proc",
            "/run",
            "/run/systemd",
            "/run/systemd/resolve",
            "/usr"
        ]
    );
    assert_eq!(paths(&l.files), ["/run/systemd/resolve/stub-resolv.conf"]);
    assert_eq!(
        bound(&l),
        [
            ("/etc", true),
            ("/run/systemd/resolve/stub-resolv.conf", true),
            ("/usr", true)
        ]
    );
}

#[test]
fn a_path_inside_another_is_bound_again_only_when_more_writable() {
    let l = layout(vec![
        g("/usr", true, true),
        g("/usr/local/share/data", true, false),
        g("/usr/local/share/data/sub", true, true),
        g("/w", true, false),
        g("/w/read", true, true),
        g("/w/read/write", true, false),
        g("/r", true, true),
        g("/r/write", true, false),
        g("/r/write/read", true, true),
    ])
    .unwrap();
    assert_eq!(
        bound(&l),
        [
            ("/r", true),
            ("/r/write", false),
            ("/usr", true),
            ("/usr/local/share/data", false),
            ("/w", false)
        ]
    );
    // Only what lies in no bind gets a place made.
    assert_eq!(paths(&l.dirs), ["/dev", "/proc", "/r", "/usr", "/w"]);
}

#[test]
fn the_same_path_twice_is_bound_once_writable_when_either_is() {
    let mut work = g("/usr", true, false);
    work.id = Some((1, 2));
    let l = layout(vec![g("/usr", true, true), work]).unwrap();
    assert_eq!(bound(&l), [("/usr", false)]);
    assert_eq!(l.binds[0].id, Some((1, 2)));
}

#[test]
fn granting_the_root_itself_leaves_no_view() {
    assert_eq!(
        layout(vec![g("/usr", true, true), g("/", true, true)]),
        None
    );
}
