//! The MCP server: `tools/list` from [`crate::catalog`] with schemas from the OpenAPI document,
//! and `tools/call` as the tool's REST call on a [`Backend`].

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value};

use crate::backend::{Backend, Caller, RawReply};
use crate::call::{lookup_by_email, rest_call};
use crate::catalog::{Access, Shape, TOOLS, ToolSpec};
use crate::confirm::{Confirmation, confirm};
use crate::refusal::{Refusal, from_reply};
use crate::schema::input_schema;

/// `HERALD_MCP_READ_ONLY` and `HERALD_MCP_ALLOW_UNCONFIRMED`.
#[derive(Clone, Copy, Debug, Default)]
pub struct McpSettings {
    pub read_only: bool,
    pub allow_unconfirmed: bool,
}

/// The tools of one Herald server (cheap to clone: one per HTTP request).
#[derive(Clone)]
pub struct HeraldTools {
    inner: Arc<Inner>,
}

struct Inner {
    tools: Vec<(&'static ToolSpec, Tool)>,
    backend: Backend,
    settings: McpSettings,
    /// Whether the transport keeps a session (stdio), so the server can ask the client a
    /// question in the middle of a call.
    sessions: bool,
}

impl HeraldTools {
    /// The tools offered under `settings`, their schemas read from the API's OpenAPI document.
    pub fn new(backend: Backend, settings: McpSettings, sessions: bool) -> anyhow::Result<Self> {
        let doc = herald_api::documented().1;
        let mut tools = Vec::with_capacity(TOOLS.len());
        for spec in TOOLS {
            if settings.read_only && spec.access != Access::Read {
                continue;
            }
            let schema = input_schema(&doc, spec).map_err(anyhow::Error::msg)?;
            tools.push((spec, describe(spec, &doc, schema)));
        }
        Ok(HeraldTools {
            inner: Arc::new(Inner {
                tools,
                backend,
                settings,
                sessions,
            }),
        })
    }

    /// The tools offered, as `tools/list` gives them.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.tools.iter().map(|(_, t)| t.clone()).collect()
    }

    /// The tool offered under this name: unknown names and writes in read-only mode are not.
    pub(crate) fn offered(&self, name: &str) -> Option<&'static ToolSpec> {
        self.inner
            .tools
            .iter()
            .map(|(s, _)| *s)
            .find(|s| s.name == name)
    }

    /// Whether a call of `spec` must be confirmed by the person before it runs.
    pub(crate) fn needs_confirmation(&self, spec: &ToolSpec) -> bool {
        spec.access == Access::Confirm && !self.inner.settings.allow_unconfirmed
    }

    /// The tool's REST answer as it came (for `get_contact` by email, the lookup's answer
    /// when that is not a 200), unparsed: the fast path of `POST /mcp` writes it out as it is.
    pub(crate) async fn reply(
        &self,
        spec: &ToolSpec,
        args: Map<String, Value>,
        caller: &Caller,
    ) -> Result<RawReply, Refusal> {
        let backend = &self.inner.backend;
        let mut args = args;
        if spec.shape == Shape::ContactByIdOrEmail
            && args.get("id").is_none_or(Value::is_null)
            && let Some(email) = args.remove("email").filter(|e| !e.is_null())
        {
            let found = backend.send_raw(&lookup_by_email(&email), caller).await?;
            if found.status != 200 {
                return Ok(found);
            }
            let Some(id) = found.parse().body["found"][0]["id"]
                .as_str()
                .map(str::to_owned)
            else {
                return Err(Refusal::new(404, "CONTACT_NOT_FOUND", "Contact not found"));
            };
            args.insert("id".into(), Value::String(id));
        }
        if spec.shape == Shape::ContactByIdOrEmail {
            args.remove("email");
        }
        let call = rest_call(spec, args)?;
        backend.send_raw(&call, caller).await
    }

    async fn run(
        &self,
        spec: &ToolSpec,
        args: Map<String, Value>,
        caller: &Caller,
    ) -> Result<rmcp::model::CallToolResult, Refusal> {
        let reply = self.reply(spec, args, caller).await?;
        Ok(from_reply(reply.parse()))
    }
}

/// The tool as listed: name, description with the route's own documentation and an example,
/// schema, and hints.
fn describe(spec: &ToolSpec, doc: &Value, schema: Map<String, Value>) -> Tool {
    let op = &doc["paths"][spec.path][spec.method.to_ascii_lowercase()];
    let mut description = spec.summary.to_owned();
    for key in ["summary", "description"] {
        if let Some(text) = op[key].as_str().filter(|t| !t.is_empty())
            && !description.contains(text)
        {
            description.push_str("\n\n");
            description.push_str(text);
        }
    }
    description.push_str(&format!(
        "\n\nREST: {} {}. Example arguments: {}",
        spec.method, spec.path, spec.example
    ));
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(spec.access == Access::Read);
    annotations.destructive_hint = Some(spec.access == Access::Confirm);
    annotations.open_world_hint = Some(matches!(
        spec.name,
        "send_email" | "send_campaign" | "test_campaign" | "verify_email" | "check_domain"
    ));
    Tool::new(spec.name, description, Arc::new(schema)).with_annotations(annotations)
}

impl ServerHandler for HeraldTools {
    fn get_info(&self) -> ServerConfig {
        // The newest protocol (stateless confirmation round trips); older clients negotiate down.
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::LATEST)
            .with_server_info(Implementation::new("herald", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Herald: contacts, templates, campaigns, segments, workflows and transactional \
                 email of one project (the API key's). Each tool is the REST route it names, \
                 with the same rules and limits. Tools that send mail or delete ask the person \
                 to confirm.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner
            .tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, t)| t.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A tool that is not offered (unknown, or a write in read-only mode) is the protocol's
        // invalid-params error, as the MCP specification words it.
        let Some(spec) = self.offered(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        };
        let args = request.arguments.clone().unwrap_or_default();
        if self.needs_confirmation(spec) {
            match confirm(spec, &args, &request, &context, self.inner.sessions).await {
                Confirmation::Go => {}
                Confirmation::Ask(ask) => return Ok(ask.into()),
                Confirmation::Refuse(refusal) => return Ok(refusal.into_result().into()),
            }
        }
        let caller = caller(&context);
        Ok(match self.run(spec, args, &caller).await {
            Ok(result) => result,
            Err(refusal) => refusal.into_result(),
        }
        .into())
    }
}

/// What the in-process call needs from the `/mcp` request (absent on stdio).
fn caller(context: &RequestContext<RoleServer>) -> Caller {
    context
        .extensions
        .get::<Parts>()
        .map_or_else(Caller::default, Caller::from_parts)
}
