//! Herald's MCP server (Model Context Protocol, for AI agents): the tools of DECISIONS.md "MCP
//! server", each the REST route it names, over Streamable HTTP (`POST /mcp`, [`http`]) and
//! stdio (`herald mcp`, [`stdio`]). docs/mcp.md describes it for users.
#![forbid(unsafe_code)]

pub mod backend;
pub mod call;
pub mod catalog;
pub mod confirm;
pub mod fast_call;
pub mod handler;
pub mod http;
pub mod refusal;
pub mod schema;
pub mod stdio;

pub use handler::{HeraldTools, McpSettings};
