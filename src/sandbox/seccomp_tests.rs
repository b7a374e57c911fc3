//! The filter's program run by a small interpreter of the instructions it
//! uses, on system calls as the kernel describes them (`seccomp_data`):
//! every architecture's program can be checked here, whatever this
//! machine runs. The integration tests (tests/it/walls/net.rs) check the
//! loaded filter through the binary.

use super::*;

const X86_64: Arch = Arch {
    audit: 0xC000_003E,
    socket: 41,
    socketpair: 53,
    io_uring: [425, 426, 427],
    x32_bit: Some(0x4000_0000),
};

const AARCH64: Arch = Arch {
    audit: 0xC000_00B7,
    socket: 198,
    socketpair: 199,
    io_uring: [425, 426, 427],
    x32_bit: None,
};

const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;
const EPERM: u32 = errno(libc::EPERM);
const ENOSYS: u32 = errno(libc::ENOSYS);

/// What `program` returns for system call `nr` with `args` under `arch`.
fn run(program: &Program, arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let mut data = Vec::with_capacity(64);
    data.extend_from_slice(&nr.to_ne_bytes());
    data.extend_from_slice(&arch.to_ne_bytes());
    data.extend_from_slice(&0u64.to_ne_bytes());
    for a in args {
        data.extend_from_slice(&a.to_ne_bytes());
    }
    let (mut a, mut pc) = (0u32, 0usize);
    let code = |c: u32| c as u16;
    loop {
        let ins = program.instructions()[pc];
        pc += 1;
        match ins.code {
            c if c == code(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) => {
                let k = ins.k as usize;
                a = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
            }
            c if c == code(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) => {
                pc += usize::from(if a == ins.k { ins.jt } else { ins.jf });
            }
            c if c == code(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) => {
                pc += usize::from(if a >= ins.k { ins.jt } else { ins.jf });
            }
            c if c == code(libc::BPF_RET | libc::BPF_K) => return ins.k,
            other => panic!("an instruction the program should not have: {other:#x}"),
        }
    }
}

fn args(family: i32, protocol: i32) -> [u64; 6] {
    [
        family as u64,
        libc::SOCK_STREAM as u64,
        protocol as u64,
        0,
        0,
        0,
    ]
}

#[test]
fn with_the_network_off_only_unix_sockets_are_made() {
    for arch in [X86_64, AARCH64] {
        let p = program(&arch, false);
        let socket = |family, proto| run(&p, arch.audit, arch.socket, args(family, proto));
        assert_eq!(socket(libc::AF_UNIX, 0), ALLOW);
        for family in [
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_BLUETOOTH,
            libc::AF_ALG,
            255,
        ] {
            assert_eq!(socket(family, 0), EPERM, "family {family}");
        }
        // IPPROTO_MPTCP is an AF_INET socket: refused with the family.
        assert_eq!(socket(libc::AF_INET, 262), EPERM);
        let pair = |family| run(&p, arch.audit, arch.socketpair, args(family, 0));
        assert_eq!(pair(libc::AF_UNIX), ALLOW);
        assert_eq!(pair(libc::AF_INET), EPERM);
    }
}

#[test]
fn with_the_network_on_ip_and_routing_sockets_are_made_and_no_other() {
    for arch in [X86_64, AARCH64] {
        let p = program(&arch, true);
        let socket = |family, proto| run(&p, arch.audit, arch.socket, args(family, proto));
        for family in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(family, 0), ALLOW, "family {family}");
        }
        assert_eq!(socket(libc::AF_INET, 262), ALLOW);
        assert_eq!(socket(libc::AF_NETLINK, libc::NETLINK_ROUTE), ALLOW);
        assert_eq!(socket(libc::AF_NETLINK, libc::NETLINK_SOCK_DIAG), EPERM);
        assert_eq!(
            socket(libc::AF_NETLINK, libc::NETLINK_KOBJECT_UEVENT),
            EPERM
        );
        for family in [libc::AF_PACKET, libc::AF_VSOCK, libc::AF_BLUETOOTH, 255] {
            assert_eq!(socket(family, 0), EPERM, "family {family}");
        }
        let pair = |family| run(&p, arch.audit, arch.socketpair, args(family, 0));
        assert_eq!(pair(libc::AF_UNIX), ALLOW);
        assert_eq!(pair(libc::AF_INET), EPERM);
    }
}

#[test]
fn only_the_low_32_bits_of_an_int_argument_count_as_the_kernel_reads_them() {
    let p = program(&X86_64, false);
    let high = 0xFFFF_FFFF_0000_0000u64;
    let mut a = args(libc::AF_INET, 0);
    a[0] |= high;
    assert_eq!(run(&p, X86_64.audit, X86_64.socket, a), EPERM);
    let mut a = args(libc::AF_UNIX, 0);
    a[0] |= high;
    assert_eq!(run(&p, X86_64.audit, X86_64.socket, a), ALLOW);
}

#[test]
fn io_uring_is_missing_and_other_calls_pass() {
    for network in [false, true] {
        for arch in [X86_64, AARCH64] {
            let p = program(&arch, network);
            for nr in arch.io_uring {
                assert_eq!(run(&p, arch.audit, nr, [0; 6]), ENOSYS, "{nr}");
            }
            for nr in [0, 1, 57, 59, 63, 220, 424, 428] {
                assert_eq!(run(&p, arch.audit, nr, [0; 6]), ALLOW, "{nr}");
            }
        }
    }
}

#[test]
fn a_call_under_another_abi_kills_the_process() {
    for network in [false, true] {
        let p = program(&X86_64, network);
        // i386's socketcall (102) and socket (359) through int 0x80.
        assert_eq!(run(&p, AUDIT_ARCH_I386, 102, [1; 6]), KILL);
        assert_eq!(run(&p, AUDIT_ARCH_I386, 359, args(libc::AF_INET, 0)), KILL);
        // x32's socket: the x86_64 architecture, the x32 bit in the number.
        let x32_socket = 0x4000_0000 | 41;
        assert_eq!(
            run(&p, X86_64.audit, x32_socket, args(libc::AF_INET, 0)),
            KILL
        );
        assert_eq!(run(&p, X86_64.audit, 0x4000_0000, [0; 6]), KILL);
        let p = program(&AARCH64, network);
        assert_eq!(run(&p, AUDIT_ARCH_ARM, 281, args(libc::AF_INET, 0)), KILL);
        assert_eq!(run(&p, X86_64.audit, 41, args(libc::AF_INET, 0)), KILL);
    }
}

#[test]
fn the_native_table_is_this_machines() {
    let Some(arch) = native() else {
        crate::sandbox::tests::not_tested(
            "the seccomp filter's native table",
            &format!(
                "no filter for this architecture ({})",
                std::env::consts::ARCH
            ),
        );
        return;
    };
    if cfg!(target_arch = "x86_64") {
        assert_eq!(
            (arch.audit, arch.socket, arch.socketpair, arch.io_uring),
            (
                X86_64.audit,
                X86_64.socket,
                X86_64.socketpair,
                X86_64.io_uring
            )
        );
    }
    if cfg!(target_arch = "aarch64") {
        assert_eq!(
            (arch.audit, arch.socket, arch.socketpair, arch.io_uring),
            (
                AARCH64.audit,
                AARCH64.socket,
                AARCH64.socketpair,
                AARCH64.io_uring
            )
        );
    }
    assert!(Program::new(false).is_ok());
}
