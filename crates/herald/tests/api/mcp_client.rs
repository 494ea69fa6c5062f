//! The MCP side of the harness: rmcp's own client over Streamable HTTP (`POST /mcp` of the
//! test server) and over stdio (`herald mcp` as a child process), and a client handler that
//! answers confirmations the way a person would.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Map, Value};

use crate::helpers::TestApp;

/// A client that offers elicitation and answers every confirmation with `accept`, counting
/// the questions.
#[derive(Clone)]
pub struct Person {
    pub accept: bool,
    pub asked: Arc<AtomicUsize>,
    pub protocol: ProtocolVersion,
}

impl Person {
    pub fn approving() -> Person {
        Person {
            accept: true,
            asked: Arc::default(),
            protocol: ProtocolVersion::LATEST,
        }
    }

    pub fn declining() -> Person {
        Person {
            accept: false,
            ..Person::approving()
        }
    }

    /// On an older protocol, where the server asks during the call (stdio sessions only).
    pub fn on(mut self, protocol: ProtocolVersion) -> Person {
        self.protocol = protocol;
        self
    }

    pub fn questions(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("herald-tests", "0"),
        )
        .with_protocol_version(self.protocol.clone())
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(if self.accept {
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::json!({"confirm": true}))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }
}

/// rmcp's client over Streamable HTTP to the app's `/mcp` with `key`.
pub async fn http<H: ClientHandler>(
    app: &TestApp,
    key: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp")).auth_header(key),
    );
    handler
        .serve(transport)
        .await
        .expect("MCP client connects over HTTP")
}

/// rmcp's client over stdio to `herald mcp` forwarding to `url` with `key`.
pub async fn stdio<H: ClientHandler>(
    url: &str,
    key: Option<&str>,
    handler: H,
) -> RunningService<RoleClient, H> {
    let command = tokio::process::Command::new(env!("CARGO_BIN_EXE_herald")).configure(|c| {
        c.arg("mcp")
            .env("HERALD_URL", url)
            .env("HERALD_LOG", "warn")
            .env_remove("HERALD_API_KEY")
            .kill_on_drop(true);
        if let Some(k) = key {
            c.env("HERALD_API_KEY", k);
        }
    });
    let transport = TokioChildProcess::new(command).expect("spawn herald mcp");
    handler
        .serve(transport)
        .await
        .expect("MCP client connects over stdio")
}

/// `tools/call` with JSON arguments.
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
}

/// The structured result of a call that succeeded.
pub async fn ok<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
) -> Value {
    let result = call(client, tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
    assert_ne!(result.is_error, Some(true), "{tool} {args}: {result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    // The text content is the same JSON.
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).ok(),
        Some(structured.clone())
    );
    structured
}

/// The error envelope of a call refused as a tool result (`isError: true`), checked to carry
/// `code`.
pub async fn refused<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    args: Value,
    code: &str,
) -> Value {
    let result = call(client, tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: protocol error {e}"));
    assert_eq!(result.is_error, Some(true), "{tool} {args}: {result:?}");
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    let envelope: Value = serde_json::from_str(&text).expect("the text is the error envelope");
    assert_eq!(envelope["error"]["code"], code, "{tool} {args}: {envelope}");
    assert!(envelope["error"]["message"].is_string(), "{envelope}");
    envelope
}
