//! The walls (design chapter 10, D28): each way out that a hostile model,
//! MCP server or HTTP client would try, through the binary, refused by the
//! kernel. One file per wall.

mod processes;
