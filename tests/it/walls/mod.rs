//! The walls of issue 31 (D28, design chapter 10), each attacked through the
//! binary as a hostile model, MCP server, HTTP client or web page would,
//! one file per wall.

mod links;
