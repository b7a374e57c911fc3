//! The network and what a confined process inherits (issue 31, design
//! §8.3), through the binary: a scripted model has `run_command` and the
//! probe server (`fixtures/walls/probe_server.py`, sandboxed or not) run
//! `fixtures/walls/probe.py`, which tries every kind of socket (MPTCP
//! past Landlock's TCP rules, UDP, packet, netlink, vsock..., io_uring, a
//! system call under i386's ABI), reads its signal mask and a descriptor
//! axe was started with. Loopback listeners of the test's own see what got
//! through. Last, what of `/etc` a command reads when axe runs as root.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::*;

/// A home whose agent `hands` has `run_command` and, when `server` is
/// `Some(sandboxed)`, the probe server; the network as `network` says, for
/// both. The probes are copied into the workdir.
fn setup(network: bool, server: Option<bool>) -> ToolsSetup {
    let servers = if server.is_some() {
        "mcp_servers = [\"probe\"]\n"
    } else {
        ""
    };
    let net = if network {
        "[sandbox]\nnetwork = true\n"
    } else {
        ""
    };
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], &format!("{servers}{net}"));
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/walls");
    for f in ["probe.py", "probe_server.py"] {
        std::fs::copy(fixtures.join(f), s.work.join(f)).unwrap();
    }
    if let Some(sandboxed) = server {
        let sandbox = if sandboxed {
            format!("[mcp_servers.sandbox]\nnetwork = {network}\n")
        } else {
            String::new()
        };
        s.home.config(&format!(
            "[[mcp_servers]]\nname = \"probe\"\ncommand = \"python3\"\nargs = [{:?}]\ncwd = {:?}\n{sandbox}",
            s.work.join("probe_server.py").display().to_string(),
            s.work.display().to_string(),
        ));
    }
    s
}

/// Runs `hands`, whose model makes `calls` then ends; axe gets `secret` on
/// descriptor 7 when given. What the model got back, in call order.
fn run(s: &ToolsSetup, calls: &[Call], secret: Option<&std::fs::File>) -> Vec<String> {
    let first = P::OpenAi.tool_calls(calls);
    let done = P::OpenAi.text("done");
    let server = FakeServer::tool_loop(first, done);
    let mut cmd = s.home.axe();
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "hands", "-p", "go", "--timeout", "60"]);
    if let Some(file) = secret {
        use std::os::unix::process::CommandExt;
        let fd = file.as_raw_fd();
        // SAFETY: dup2 between fork and exec; the copy on 7 is not
        // close-on-exec, as a descriptor a parent passes on purpose.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, 7) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap_or_default()
}

/// The probe's lines of a result, without run_command's status line.
fn lines(result: &str) -> String {
    let kept: Vec<&str> = result.lines().filter(|l| !l.starts_with('[')).collect();
    kept.join("\n")
}

/// What `probe.py net` prints when the filter holds.
fn expected(network: bool) -> String {
    let (ip, route) = if network {
        ("ok", "ok")
    } else {
        ("EPERM", "EPERM")
    };
    let mut v = vec![
        format!("tcp-connect: {ip}"),
        format!("mptcp-connect: {ip}"),
        format!("mptcp-listen: {ip}"),
        format!("udp-send: {ip}"),
        format!("tcp6: {ip}"),
        format!("udp6: {ip}"),
        "packet: EPERM".into(),
        format!("netlink-route: {route}"),
    ];
    for other in [
        "netlink-diag",
        "vsock",
        "bluetooth",
        "alg",
        "tipc",
        "can",
        "xdp",
    ] {
        v.push(format!("{other}: EPERM"));
    }
    for fine in ["unix", "unix-pair"] {
        v.push(format!("{fine}: ok"));
    }
    v.push("io_uring: ENOSYS".into());
    v.push("resolve: ok".into());
    v.push("resolve-addrconfig: ok".into());
    v.join("\n")
}

/// Loopback listeners a probe is pointed at.
struct Listeners {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl Listeners {
    fn new() -> Listeners {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        Listeners { tcp, udp }
    }

    fn args(&self) -> Vec<String> {
        let tcp = self.tcp.local_addr().unwrap().port().to_string();
        let udp = self.udp.local_addr().unwrap().port().to_string();
        vec!["net".into(), tcp, udp]
    }

    /// TCP connections accepted and datagrams received since the last look.
    fn reached(&self) -> (usize, Vec<String>) {
        let mut conns = 0;
        while self.tcp.accept().is_ok() {
            conns += 1;
        }
        let mut grams = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = self.udp.recv(&mut buf) {
            grams.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        (conns, grams)
    }
}

fn probes_run() -> bool {
    crate::common::python3("the network walls (socket probes)") && landlock()
}

fn command(script: String) -> Value {
    json!({ "command": script })
}

fn probe(args: &[String]) -> Value {
    json!({ "args": args })
}

/// The probes from a command and from the sandboxed probe server, with the
/// network off then on: each socket the filter allows and no other, and
/// the listeners reached only with the network on.
#[test]
fn a_confined_process_makes_only_the_sockets_its_network_setting_allows() {
    if !probes_run() {
        return;
    }
    for network in [false, true] {
        let l = Listeners::new();
        let s = setup(network, Some(true));
        let script = format!("python3 probe.py {}", l.args().join(" "));
        let calls: Vec<Call> = vec![
            ("c1", "run_command", command(script)),
            ("c2", "probe__probe", probe(&l.args())),
        ];
        let got = run(&s, &calls, None);
        for (who, result) in ["the command", "the server"].iter().zip(&got) {
            assert_eq!(lines(result), expected(network), "{who}, network {network}");
        }
        let (conns, grams) = l.reached();
        if network {
            // tcp-connect and mptcp-connect, each from both.
            assert_eq!(conns, 4, "network on");
            assert_eq!(grams, vec!["probe", "probe"], "network on");
        } else {
            assert_eq!(
                (conns, grams),
                (0, Vec::new()),
                "the network off let through"
            );
        }
    }
}

/// A socket asked for through i386's `int 0x80` from an x86_64 process
/// (the filter's numbers are x86_64's) kills the process, network on or
/// off, from a command and from the sandboxed server.
#[test]
fn a_system_call_under_another_abi_kills_the_process() {
    if !cfg!(target_arch = "x86_64") {
        not_tested("the foreign-ABI wall", "i386's ABI is x86_64's only");
        return;
    }
    if !probes_run() {
        return;
    }
    for network in [false, true] {
        let s = setup(network, Some(true));
        let calls: Vec<Call> = vec![
            ("c1", "run_command", command("python3 probe.py i386".into())),
            ("c2", "probe__probe", probe(&["i386".into()])),
        ];
        let got = run(&s, &calls, None);
        for result in &got {
            assert_eq!(
                lines(result),
                "i386: killed by signal 31",
                "network {network}"
            );
        }
    }
}

/// What a command, a sandboxed server and a server outside the sandbox
/// start with: no signal blocked, none ignored (the server is Python,
/// which ignores SIGPIPE and SIGXFSZ itself), so a stop's TERM ends them.
#[test]
fn spawned_processes_start_with_no_signal_blocked_or_ignored() {
    if !probes_run() {
        return;
    }
    for sandboxed in [true, false] {
        let s = setup(false, Some(sandboxed));
        let calls: Vec<Call> = vec![
            (
                "c1",
                "run_command",
                command("grep -E '^Sig(Blk|Ign)' /proc/self/status".into()),
            ),
            ("c2", "probe__probe", probe(&["status".into()])),
        ];
        let got = run(&s, &calls, None);
        let got: Vec<String> = got.iter().map(|r| lines(r)).collect();
        assert_eq!(
            got,
            [
                "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000",
                "SigBlk:\t0000000000000000\nSigIgn:\t0000000001001000",
            ],
            "the command, then the server (sandboxed: {sandboxed})"
        );
    }
}

/// axe started with a secret file open on descriptor 7 (not
/// close-on-exec): neither a command nor a server, sandboxed or not, can
/// read it through that descriptor.
#[test]
fn a_descriptor_axe_inherited_reaches_no_command_nor_server() {
    if !probes_run() {
        return;
    }
    for sandboxed in [true, false] {
        let s = setup(false, Some(sandboxed));
        let mut secret = std::fs::File::open(s.home.dir.path().join("secret.txt")).unwrap();
        let mut text = String::new();
        secret.read_to_string(&mut text).unwrap();
        let secret = std::fs::File::open(s.home.dir.path().join("secret.txt")).unwrap();
        let calls: Vec<Call> = vec![
            ("c1", "run_command", command("cat <&7".into())),
            ("c2", "probe__probe", probe(&["fd".into(), "7".into()])),
        ];
        let got = run(&s, &calls, Some(&secret));
        assert!(!got[0].contains(&text), "the command read it: {}", got[0]);
        assert!(got[0].contains("Bad file descriptor"), "{}", got[0]);
        assert_eq!(lines(&got[1]), "fd 7: EBADF", "sandboxed: {sandboxed}");
    }
}

/// Files made in `/etc` for the test (where it may write there: root),
/// removed when dropped, each with the directory made for it.
struct Planted(Vec<PathBuf>);

impl Planted {
    fn file(&mut self, path: &str, mode: u32) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = PathBuf::from(path);
        let parent = path.parent().unwrap();
        if !parent.exists() {
            std::fs::create_dir(parent).ok()?;
            self.0.push(parent.to_path_buf());
        }
        if path.exists() {
            return Some(path);
        }
        std::fs::write(&path, "PLANTED-SECRET\n").ok()?;
        self.0.push(path.clone());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).ok()?;
        Some(path)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
        }
    }
}

/// As root, a command reads what of `/etc` any user may, and the programs
/// that need `/etc` work; the shadow files, sudoers, SSH host keys, axe's
/// own directory and a file only root may read stay closed to it.
#[test]
fn commands_read_what_programs_need_from_etc_and_no_secret() {
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        not_tested("/etc's secrets as root", "the tests do not run as root");
        return;
    }
    if !landlock() {
        return;
    }
    let pid = std::process::id();
    let mut planted = Planted(Vec::new());
    let mut closed = vec![
        "/etc/shadow".to_string(),
        "/etc/gshadow".into(),
        "/etc/shadow-".into(),
    ];
    let plant = [
        ("/etc/sudoers".to_string(), 0o440),
        (format!("/etc/sudoers.d/axe-walls-{pid}"), 0o440),
        (format!("/etc/ssh/ssh_host_axe_walls_{pid}_key"), 0o600),
        (format!("/etc/axe/token-walls-{pid}"), 0o644),
        (format!("/etc/axe-walls-{pid}.secret"), 0o600),
    ];
    for (path, mode) in plant {
        let made = planted.file(&path, mode);
        assert!(made.is_some(), "cannot plant {path}");
        closed.push(path);
    }
    let open = planted
        .file(&format!("/etc/axe-walls-{pid}.conf"), 0o644)
        .unwrap();
    let mut script = String::new();
    for path in closed.iter().chain([&open.display().to_string()]) {
        script.push_str(&format!(
            "cat {path} >/dev/null 2>&1 && echo 'read {path}' || echo 'closed {path}'\n"
        ));
    }
    // What programs read of /etc works as it does outside the sandbox.
    let works = "head -1 /etc/passwd\ngetent passwd root\ngetent hosts localhost\n\
                 grep -c localhost /etc/hosts\nls /etc | grep -c '^passwd$'\n\
                 ls /etc/alternatives >/dev/null && echo alternatives\n\
                 python3 -c 'import ssl; ssl.create_default_context(); print(\"ssl\")'\n\
                 git --version\necho TZ $(date +%Z)\n";
    script.push_str(works);
    let outside = std::process::Command::new("sh")
        .args(["-c", works])
        .output()
        .unwrap();
    let s = setup(false, None);
    let got = run(&s, &[("c1", "run_command", command(script))], None);
    let mut want: Vec<String> = closed.iter().map(|p| format!("closed {p}")).collect();
    want.push(format!("read {}", open.display()));
    want.push(stdout(&outside).trim_end().to_string());
    assert_eq!(lines(&got[0]), want.join("\n"));
}

/// With the network off a command has a network namespace of its own: the
/// machine's interfaces and connections are not there to see (`/proc/net`),
/// and nothing but a loopback that is down. With it on, the machine's.
#[test]
fn with_the_network_off_a_command_sees_no_interface_or_connection_of_the_machine() {
    if !landlock() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = format!("0100007F:{:04X}", listener.local_addr().unwrap().port());
    let script = "cat /proc/net/dev /proc/net/tcp";
    for network in [false, true] {
        let extra = if network {
            "[sandbox]\nnetwork = true\n"
        } else {
            ""
        };
        let s = ToolsSetup::new(P::OpenAi, &["run_command"], extra);
        let calls = [("c1", "run_command", json!({"command": script}))];
        let (out, results, _) = s.run(P::OpenAi, &calls);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let seen = &results[0];
        // `/proc/net/dev`'s rows are `name: counters`; `/proc/net/tcp`'s
        // start with a number and a colon.
        let interfaces: Vec<&str> = seen
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(name, _)| name.trim())
            .filter(|name| !name.is_empty() && !name.chars().all(|c| c.is_ascii_digit()))
            .collect();
        if network {
            assert!(seen.contains(&port), "the machine's listener: {seen}");
        } else {
            assert!(
                !seen.contains(&port),
                "the machine's listener was seen: {seen}"
            );
            assert_eq!(interfaces, ["lo"], "{seen}");
        }
    }
}
