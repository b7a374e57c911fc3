//! The Landlock ruleset a sandboxed command runs under (design §8.3):
//! read and execute on the system's directories and what of `/etc` any
//! user may read (`super::etc`), read and write
//! on the workdir, the command's private temporary directory and what the
//! agent adds, nothing else; TCP connect and bind denied unless the agent
//! allows the network (ABI 4 and later); signals and abstract Unix sockets
//! scoped to the sandbox (ABI 6 and later). The ruleset is built here, in
//! axe, and only applied in the child between `fork` and `exec`.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::Opened;

/// Directories a shell and the usual tools read and run programs from.
/// `/etc` among them is granted entry by entry: what any user may read
/// there ([`ETC`], `super::etc`).
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// The one system directory not granted whole.
pub const ETC: &str = "/etc";

/// Device files every program may read and write.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What a sandboxed command may touch, beyond the system's directories:
/// each path by the descriptor opened when the agent was resolved (design
/// §8.7), so a rule holds on what was opened, whatever its name leads to
/// by now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    /// Read and write (the workdir, the private temporary directory, and
    /// the agent's `write_paths`).
    pub write: Vec<Opened>,
    /// Read and execute (the agent's `read_paths`).
    pub read: Vec<Opened>,
    /// TCP connect and bind allowed.
    pub network: bool,
}

/// The Landlock ABI the kernel offers, 0 when it offers none (not built
/// in, or turned off at boot).
pub fn abi() -> i32 {
    // SAFETY: the documented version query: a null attribute, size 0 and
    // LANDLOCK_CREATE_RULESET_VERSION; no memory is passed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// The ruleset for `grants` under ABI `version`, as the descriptor
/// `landlock_restrict_self(2)` takes. A path in `grants` that did not exist
/// when opened, or one of the system list that does not, is left out
/// (there is nothing to reach there).
pub fn ruleset(grants: &Grants, version: i32) -> Result<OwnedFd, String> {
    let abi = ABI::from(version);
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let file_rw = AccessFs::from_file(abi) & !BitFlags::from(AccessFs::Execute);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| e.to_string())?;
    if !grants.network && version >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| e.to_string())?;
    }
    if version >= 6 {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(|e| e.to_string())?;
    }
    let mut created = ruleset.create().map_err(|e| e.to_string())?;
    let system = SYSTEM_READ.iter().filter(|p| **p != ETC).map(Path::new);
    let rules = system
        .map(|p| (p, read))
        .chain(DEVICES.iter().map(|p| (Path::new(*p), file_rw)));
    for (path, access) in rules {
        created = add(created, path, access, path.is_dir(), abi)?;
    }
    let granted = grants.read.iter().map(|p| (p, read));
    for (opened, access) in granted.chain(grants.write.iter().map(|p| (p, all))) {
        created = add_opened(created, opened, access, abi)?;
    }
    // `/etc` and the directories beneath it may be listed (names are no
    // secret: `ls /etc`); files are read only as `etc` grants them.
    let list = BitFlags::from(AccessFs::ReadDir);
    created = add(created, Path::new(ETC), list, true, abi)?;
    for entry in super::etc::readable().iter() {
        created = add(created, &entry.path, read, entry.dir, abi)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| "the kernel did not create a Landlock ruleset".to_string())
}

/// Grants `access` beneath `opened`, by its descriptor (a file takes only
/// the rights a file can have); nothing for a path that did not exist.
fn add_opened(
    created: RulesetCreated,
    opened: &Opened,
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> Result<RulesetCreated, String> {
    let Some(fd) = opened.fd() else {
        return Ok(created);
    };
    let access = if opened.is_dir() {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("{}: {e}", opened.path().display()))
}

/// Grants `access` beneath `path`, a directory when `dir` (a file takes only
/// the rights a file can have). A path that cannot be opened is left out.
fn add(
    created: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    dir: bool,
    abi: ABI,
) -> Result<RulesetCreated, String> {
    let Ok(fd) = PathFd::new(path) else {
        return Ok(created);
    };
    let access = if dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("{}: {e}", path.display()))
}
