//! A test send of a saved template to a member of its project (the dashboard's Send test).
//!
//! The template goes through the path every send takes: merged by `merge_with_template`, its
//! subject marked "[Test]" as a campaign's test send marks it, then the sender-domain rule and
//! the acceptance of `/v1/send` (`Engine::submit_send`). The address is upserted as a contact
//! like any recipient (a new one is not subscribed), and a MARKETING template reaches it even
//! when that contact unsubscribed, as a campaign's test does.

use herald_core::campaign::test_subject;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_engine::send::{Recipient, SendOverrides, SendPlan, SubmitError, merge_with_template};

use super::template_not_found;
use crate::error::{ApiError, ApiResult};
use crate::routes::send::accept_error;
use crate::state::AppState;

/// The message a test send queued.
#[derive(Debug)]
pub struct TestSent {
    pub message_id: Uuid,
    pub email: String,
}

/// Sends template `id` once to `email`, which must be the address of a member of the project.
pub async fn send_test(
    state: &AppState,
    project: Uuid,
    id: Uuid,
    email: &str,
) -> ApiResult<TestSent> {
    let t = state
        .store
        .template(project, id)
        .await?
        .ok_or_else(template_not_found)?;
    let to = herald_core::rules::address(email)
        .map_err(|v| ApiError::field("email", v.message, v.code))?;
    let members = state.store.list_members(project).await?;
    if !members
        .iter()
        .any(|m| m.email.eq_ignore_ascii_case(to.as_str()))
    {
        return Err(ApiError::field(
            "email",
            "a test goes to a member of the project; choose one of their addresses",
            "not_a_member",
        ));
    }
    let overrides = SendOverrides {
        subject: Some(test_subject(&t.subject)),
        ..SendOverrides::default()
    };
    let message = merge_with_template(overrides, Some(&t)).map_err(|missing| {
        let first = missing.first().map(|m| m.field).unwrap_or("from");
        ApiError::field(
            first,
            "set the template's From to an address on a verified domain, then send the test",
            "required",
        )
    })?;
    let plan = SendPlan {
        project_id: project,
        recipients: vec![Recipient {
            email: to,
            name: None,
        }],
        message,
        subscribed: None,
        data: DataPatch::default(),
        headers: Vec::new(),
        attachments: Vec::new(),
        idempotency_key: None,
        ignore_subscription: true,
    };
    let accepted = state.engine.submit_send(&plan).await.map_err(|e| match e {
        SubmitError::Sender(s) => ApiError::from(s),
        SubmitError::Accept(a) => accept_error(a),
    })?;
    let first = crate::routes::send::only_recipient(accepted)?;
    Ok(TestSent {
        message_id: first.message_id,
        email: first.email,
    })
}
