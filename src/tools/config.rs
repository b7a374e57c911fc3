//! What an agent's built-in tools may do (design §8.1): the tools it
//! names, the hosts `url_fetch` may reach and its `[sandbox]`, validated.
//! The agent file reads and checks them (`crate::agent`); the tools and the
//! sandbox act on them.

/// The tools an agent may use and what they may touch, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolsConfig {
    /// Built-in tool names, as listed (each one known).
    pub names: Vec<String>,
    /// Hosts `url_fetch` may reach (exact, or `*.suffix`); empty: any
    /// public host.
    pub allowed_hosts: Vec<String>,
    pub sandbox: SandboxConfig,
}

/// `[sandbox]`, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxConfig {
    /// False only when the file says `mode = "off"`: commands then run
    /// without Landlock (design §8.3).
    pub landlock: bool,
    /// Extra paths commands may read (and run programs from), as written.
    pub read: Vec<String>,
    /// Extra paths commands may read and write, as written.
    pub write: Vec<String>,
    /// Commands may connect and bind TCP.
    pub network: bool,
    /// `url_fetch` may reach private and local addresses.
    pub private_networks: bool,
    /// Environment variables passed to commands beyond the usual few.
    pub env: Vec<String>,
    /// `.git`, `axe/`, `.claude/`, `.codex/` read-only to commands, and
    /// commands refused where the kernel cannot make them so (design
    /// §8.6): true unless the file says `protect = false`.
    pub protect: bool,
}
