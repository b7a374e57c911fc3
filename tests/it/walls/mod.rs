//! The walls (design chapter 10, D28): each test plays a hostile model,
//! MCP server, HTTP client or web page and checks that it reaches nothing
//! it was not given. One file a wall.

mod links;
mod mcp;
mod net;
mod processes;
mod readonly;
mod serve;
mod trust;
mod url_fetch;
