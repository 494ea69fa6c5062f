//! `herald mcp`: the MCP server over stdio for desktop clients (Claude Desktop, Cursor, ...),
//! forwarding each tool call to a Herald server (`HERALD_URL`) with `HERALD_API_KEY`
//! ([`Backend::Remote`]). It starts without a key or a reachable server: each tool call then
//! answers a tool error saying which is missing, so the client shows why instead of a crashed
//! server. Nothing but JSON-RPC is written to stdout (logs go to stderr).

use rmcp::ServiceExt;

use crate::backend::Backend;
use crate::handler::{HeraldTools, McpSettings};

/// Serves stdin/stdout until the client closes them.
pub async fn run(url: &str, key: Option<String>, settings: McpSettings) -> anyhow::Result<()> {
    let tools = HeraldTools::new(Backend::remote(url, key)?, settings, true)?;
    let running = tools.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
