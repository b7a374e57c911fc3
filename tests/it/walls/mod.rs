//! The walls of issue 31, each attack through the binary: a file per part.

mod mcp;
