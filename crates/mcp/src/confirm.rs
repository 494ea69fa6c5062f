//! Confirmation of the tools that send mail or delete ([`Access::Confirm`]): the person at the
//! client approves each call through MCP elicitation before it runs.
//!
//! - A client on protocol `2026-07-28` or later that offers elicitation gets an input-required
//!   result (the stateless multi-round-trip form, SEP-2322): it asks the person and calls again
//!   with the answer, so any node can serve the second call.
//! - On a session (the stdio bridge) with an older client that offers elicitation, the server
//!   asks during the call (`elicitation/create`).
//! - Otherwise the call is refused with `CONFIRMATION_REQUIRED`, unless the server runs with
//!   `HERALD_MCP_ALLOW_UNCONFIRMED=true`.
//!
//! A declined or cancelled confirmation is `CONFIRMATION_DECLINED`; nothing is sent or deleted.
//!
//! [`Access::Confirm`]: crate::catalog::Access::Confirm

use rmcp::model::{
    CallToolRequestParams, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use crate::catalog::ToolSpec;
use crate::refusal::Refusal;

/// The key of the confirmation in the input requests and responses.
const KEY: &str = "confirm";

pub enum Confirmation {
    Go,
    Ask(InputRequiredResult),
    Refuse(Refusal),
}

/// Whether `spec` may run now with `args`.
pub async fn confirm(
    spec: &ToolSpec,
    args: &Map<String, Value>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    sessions: bool,
) -> Confirmation {
    if let Some(answer) = request.input_responses.as_ref().and_then(|r| r.get(KEY)) {
        return match serde_json::from_value::<ElicitResult>(answer.clone()) {
            Ok(result) => decide(&result),
            Err(_) => Confirmation::Refuse(Refusal::new(
                422,
                "VALIDATION_ERROR",
                "inputResponses.confirm is not an elicitation result",
            )),
        };
    }
    let elicits = context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    let stateless = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let message = question(spec, args);
    if elicits && stateless {
        let mut requests = InputRequests::new();
        requests.insert(
            KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(form(message))),
        );
        return Confirmation::Ask(InputRequiredResult::new(
            Some(requests),
            Some(spec.name.to_owned()),
        ));
    }
    if elicits && sessions {
        return match context.peer.create_elicitation(form(message)).await {
            Ok(result) => decide(&result),
            Err(e) => Confirmation::Refuse(Refusal::new(
                428,
                "CONFIRMATION_REQUIRED",
                format!("The confirmation could not be asked: {e}"),
            )),
        };
    }
    Confirmation::Refuse(Refusal::new(
        428,
        "CONFIRMATION_REQUIRED",
        format!(
            "{} needs the person's confirmation, and this client cannot ask for it (MCP \
                 elicitation). The server operator can set HERALD_MCP_ALLOW_UNCONFIRMED=true.",
            spec.name
        ),
    ))
}

fn decide(result: &ElicitResult) -> Confirmation {
    let confirmed = result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .is_some_and(|c| c[KEY] == Value::Bool(true));
    if confirmed {
        Confirmation::Go
    } else {
        Confirmation::Refuse(Refusal::new(
            409,
            "CONFIRMATION_DECLINED",
            "The person did not confirm this action; nothing was done",
        ))
    }
}

/// A one-checkbox form.
fn form(message: String) -> ElicitRequestParams {
    let schema = json!({
        "type": "object",
        "properties": {
            KEY: {
                "type": "boolean",
                "title": "Confirm",
                "description": "Check to let the agent go ahead",
            }
        },
        "required": [KEY],
    });
    // A constant of the shape elicitation allows (an object of primitive properties): the
    // confirmation tests fail at once if it ever does not parse.
    #[allow(clippy::expect_used)]
    let requested_schema: ElicitationSchema = serde_json::from_value(schema)
        .expect("the confirmation form is a valid elicitation schema");
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// What the person is asked: the tool and its arguments, shortened.
fn question(spec: &ToolSpec, args: &Map<String, Value>) -> String {
    let mut shown = Value::Object(args.clone()).to_string();
    if shown.chars().count() > 600 {
        shown = shown.chars().take(600).collect::<String>() + "…";
    }
    format!(
        "An AI agent wants to run Herald's {} ({}) with {shown}. Allow it?",
        spec.name,
        spec.summary.split(". ").next().unwrap_or(spec.summary)
    )
}
