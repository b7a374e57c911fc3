//! The seccomp filter a confined process gets (design §8.3): which sockets
//! it may make is the kernel's to decide, whatever the protocol. Landlock's
//! network rules see only TCP (`IPPROTO_TCP`): an MPTCP socket
//! (`IPPROTO_MPTCP`) connected and listened past them, UDP and every other
//! family (packet, netlink, vsock...) were not covered at all (issue 31).
//!
//! - `socket(2)` makes an `AF_UNIX` socket only; with the network on, also
//!   `AF_INET` and `AF_INET6` (any protocol: the network is the command's)
//!   and `AF_NETLINK` for `NETLINK_ROUTE` alone, which glibc's
//!   `getaddrinfo` asks for the addresses configured (`AI_ADDRCONFIG`). With
//!   the network off, glibc takes that refusal as "both families
//!   configured", so `localhost` still resolves from `/etc/hosts`. Any other
//!   family is `EPERM`.
//! - `socketpair(2)` makes `AF_UNIX` pairs only.
//! - `io_uring_setup`, `io_uring_enter` and `io_uring_register` are
//!   `ENOSYS`, as on a kernel without io_uring (programs fall back to plain
//!   calls): an io_uring `IORING_OP_SOCKET` makes a socket no filter on
//!   `socket(2)` sees.
//! - A system call made under another ABI than axe's own kills the process:
//!   the numbers above are axe's architecture's, and i386's `int 0x80` on
//!   x86_64 (its `socketcall` multiplexer, or its own `socket` number), x32's
//!   numbers (`__X32_SYSCALL_BIT`) or arm32's on aarch64 would pass them by.
//!
//! The program is classic BPF written out here (under thirty instructions),
//! not built by a crate: it is small enough to read whole, and the crate
//! (seccompiler) would add code for what a handful of jumps say. It is
//! built in axe, before `fork`, and only loaded in the child
//! (`load`), after Landlock, last before `exec`.

use std::io;

/// The filter for one network setting, ready to load.
#[derive(Debug, Clone)]
pub struct Program(Vec<libc::sock_filter>);

/// What the program needs to know of an architecture.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arch {
    /// `AUDIT_ARCH_*` (linux/audit.h), as `seccomp_data.arch` has it.
    pub audit: u32,
    pub socket: u32,
    pub socketpair: u32,
    /// `io_uring_setup`, `io_uring_enter`, `io_uring_register`.
    pub io_uring: [u32; 3],
    /// x86_64 only: x32 system calls share its `audit` value and set this
    /// bit in their number (`__X32_SYSCALL_BIT`).
    pub x32_bit: Option<u32>,
}

/// The architecture axe was built for, `None` where the filter is not
/// written for it (and confinement is refused).
pub(super) fn native() -> Option<Arch> {
    // Numbers as libc has them for this target.
    let n = |nr: libc::c_long| nr as u32;
    let io_uring = [
        n(libc::SYS_io_uring_setup),
        n(libc::SYS_io_uring_enter),
        n(libc::SYS_io_uring_register),
    ];
    let (audit, x32_bit) = if cfg!(target_arch = "x86_64") {
        (0xC000_003E, Some(0x4000_0000))
    } else if cfg!(target_arch = "aarch64") {
        (0xC000_00B7, None)
    } else if cfg!(target_arch = "riscv64") {
        (0xC000_00F3, None)
    } else {
        return None;
    };
    Some(Arch {
        audit,
        socket: n(libc::SYS_socket),
        socketpair: n(libc::SYS_socketpair),
        io_uring,
        x32_bit,
    })
}

/// Where in `struct seccomp_data` a value is: the number, the
/// architecture, and the low 32 bits of an argument (the kernel reads an
/// `int` argument from those alone, so the high ones are never looked at).
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low(i: u32) -> u32 {
    let at = 16 + 8 * i;
    if cfg!(target_endian = "little") {
        at
    } else {
        at + 4
    }
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

/// The program for `arch`, with the network on or off.
pub(super) fn program(arch: &Arch, network: bool) -> Program {
    use Op::*;
    let [setup, enter, register] = arch.io_uring;
    let unix = libc::AF_UNIX as u32;
    let deny = Ret(errno(libc::EPERM));
    // The architecture first: every number after it is this one's.
    let mut ops = vec![
        Load(ARCH),
        Jeq(arch.audit, "native", "kill"),
        Here("native"),
    ];
    ops.push(Load(NR));
    if let Some(bit) = arch.x32_bit {
        ops.extend([Jge(bit, "kill", "not x32"), Here("not x32")]);
    }
    ops.extend([
        Jeq(arch.socket, "socket", "1"),
        Here("1"),
        Jeq(arch.socketpair, "socketpair", "2"),
        Here("2"),
        Jeq(setup, "io_uring", "3"),
        Here("3"),
        Jeq(enter, "io_uring", "4"),
        Here("4"),
        Jeq(register, "io_uring", "allow"),
        // socket(domain, type, protocol)
        Here("socket"),
        Load(arg_low(0)),
    ]);
    if network {
        ops.extend([
            Jeq(unix, "allow", "5"),
            Here("5"),
            Jeq(libc::AF_INET as u32, "allow", "6"),
            Here("6"),
            Jeq(libc::AF_INET6 as u32, "allow", "7"),
            Here("7"),
            Jeq(libc::AF_NETLINK as u32, "netlink", "deny"),
            Here("netlink"),
            Load(arg_low(2)),
            Jeq(libc::NETLINK_ROUTE as u32, "allow", "deny"),
        ]);
    } else {
        ops.push(Jeq(unix, "allow", "deny"));
    }
    ops.extend([
        // socketpair(domain, type, protocol, sv)
        Here("socketpair"),
        Load(arg_low(0)),
        Jeq(unix, "allow", "deny"),
        Here("deny"),
        deny,
        Here("io_uring"),
        Ret(errno(libc::ENOSYS)),
        Here("kill"),
        Ret(KILL),
        Here("allow"),
        Ret(ALLOW),
    ]);
    Program(assemble(&ops))
}

/// An instruction, with its jumps to labels rather than counts.
enum Op {
    /// `A = seccomp_data[offset]` (32 bits).
    Load(u32),
    /// `A == k` jumps to the first label, else the second.
    Jeq(u32, &'static str, &'static str),
    /// `A >= k` likewise.
    Jge(u32, &'static str, &'static str),
    Ret(u32),
    /// A label for the instruction that follows.
    Here(&'static str),
}

/// The instructions of `ops`, each jump counted to its label. Jumps go
/// forward only (as BPF's do) and are short: the program is fixed and
/// small, so a bad label or a long jump is a mistake here, not an input.
fn assemble(ops: &[Op]) -> Vec<libc::sock_filter> {
    let mut at = std::collections::HashMap::new();
    let mut n = 0usize;
    for op in ops {
        match op {
            Op::Here(l) => {
                at.insert(*l, n);
            }
            _ => n += 1,
        }
    }
    let mut out = Vec::with_capacity(n);
    for op in ops {
        let pc = out.len();
        #[allow(clippy::expect_used, reason = "a fixed program, not an input")]
        let to = |l: &str| -> u8 {
            let target = at[l];
            assert!(target > pc, "a backward or self jump to {l}");
            u8::try_from(target - pc - 1).expect("a short jump")
        };
        let ins = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        };
        out.push(match op {
            Op::Here(_) => continue,
            Op::Load(k) => ins(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, *k),
            Op::Jeq(k, t, f) => ins(
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                to(t),
                to(f),
                *k,
            ),
            Op::Jge(k, t, f) => ins(
                libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
                to(t),
                to(f),
                *k,
            ),
            Op::Ret(k) => ins(libc::BPF_RET | libc::BPF_K, 0, 0, *k),
        });
    }
    out
}

impl Program {
    /// The filter for axe's own architecture; an error where there is none
    /// or the kernel cannot load one, so that nothing runs with the
    /// network thought confined when it is not.
    pub fn new(network: bool) -> Result<Program, String> {
        let arch =
            native().ok_or("the network filter (seccomp) is not written for this architecture")?;
        if !available() {
            return Err(
                "this kernel has no seccomp filters: the network cannot be confined".into(),
            );
        }
        Ok(program(&arch, network))
    }

    pub(super) fn instructions(&self) -> &[libc::sock_filter] {
        &self.0
    }
}

/// Whether the kernel loads seccomp filters (`CONFIG_SECCOMP_FILTER`),
/// asked once.
fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // SAFETY: PR_GET_SECCOMP takes no pointer; EINVAL means no seccomp.
        unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
    })
}

/// In the child, after `no_new_privs` and Landlock: loads `program`. Only
/// a system call on memory built before `fork`, async-signal-safe.
/// `SECCOMP_FILTER_FLAG_SPEC_ALLOW` keeps kernels before 5.16 from turning
/// on the speculative store bypass mitigation for the command (a cost to
/// its speed, no wall for axe); a kernel without the flag (before 4.17)
/// loads it without.
pub(super) fn load(program: &Program) -> io::Result<()> {
    let filter = program.instructions();
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    for flags in [libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW, 0] {
        // SAFETY: seccomp(2) reads `prog` and the instructions it points
        // to, both alive for the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &prog as *const libc::sock_fprog,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || flags == 0 {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
