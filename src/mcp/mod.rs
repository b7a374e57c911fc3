//! MCP servers as tools (design §9): a blocking client of the Model
//! Context Protocol, in either of its eras (`era`) — JSON-RPC 2.0 over a server's stdio (`stdio`, its
//! input written by `pipe`), over streamable HTTP (`http`) or the older SSE
//! (`sse`), the messages (`rpc`), the protocol's steps (`client`), a
//! server's tools taken within caps (`listing`) and a call's result as text
//! (`result`) — the servers of a run (`registry`) and how they are declared
//! (`config`).

pub mod client;
pub mod config;
mod era;
mod http;
mod listing;
mod pipe;
pub mod registry;
mod result;
pub mod rpc;
mod sse;
mod stdio;

pub use client::{McpTool, Outcome, Server};
pub use config::{ServerConfig, ServerFile, Transport};
pub use registry::{Bound, Servers};

/// An agent's MCP servers (design §9.1): `mcp_servers` and `mcp_tools`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentMcp {
    /// The servers it may use, in order.
    pub servers: Vec<ServerRef>,
    /// When not empty, the only tools offered (`<server>__<tool>`).
    pub tools: Vec<String>,
}

/// A server an agent lists.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerRef {
    /// A name from config.toml's `[[mcp_servers]]`.
    Name(String),
    /// A table in the agent file itself.
    Defined(ServerConfig),
}

impl AgentMcp {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}
