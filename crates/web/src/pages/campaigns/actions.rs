//! A saved campaign's actions, each through the API's own function: Send test
//! (`routes::campaigns::test_send`, the send path's `only_recipient` rule), Send now and
//! Schedule (`send`: status, a future time, the sender's verified domain, the segment, the
//! billing limit), Cancel campaign (`cancel`). Send now, Schedule and Cancel campaign confirm
//! inside the page: the script asks in a dialog that states the recipient count and posts
//! `confirm=yes`; without it the server answers the page with a second step.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::campaigns::{cancel, send, test_send};
use herald_store::campaigns::Campaign;

use super::editor::{Actions, Confirm, Form, editor_page, load_posted};
use super::{contacts, report, utc_words};
use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;

/// The editor of `c` (as saved) with the API's `refusal` on its fields and `change` applied
/// to its actions panel.
async fn editor_with(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
    refusal: Option<&ApiError>,
    status: StatusCode,
    change: impl FnOnce(&mut Actions),
) -> Response {
    match editor_page(state, page, Form::of_campaign(c), Some(c), refusal).await {
        Ok(mut p) => {
            if let Some(a) = p.actions.as_mut() {
                change(a);
            }
            html(status, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// Every message of a refusal, for the summary beside the buttons (a field's message also
/// beside its field there: `scheduledFor`).
fn summary(e: &ApiError) -> Errors {
    let mut out = Errors::default();
    for f in &e.errors {
        out.push(&f.field, &f.message);
    }
    if e.errors.is_empty() {
        out.general.push(e.message.clone());
    }
    out
}

fn campaign_href(page: &ProjectPage, c: &Campaign, notice: &str) -> String {
    let base = format!("{}/{}", page.href("campaigns"), c.id);
    if notice.is_empty() {
        base
    } else {
        format!("{base}?notice={notice}")
    }
}

/// `POST campaigns/{id}/test`: Send test of the saved campaign to `email`.
pub async fn test(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let (c, form) = match load_posted(&state, &page, &raw, &body).await {
        Ok(loaded) => loaded,
        Err(r) => return r,
    };
    let email = form.get("email");
    match test_send(&state, page.id(), &c, &email).await {
        Ok(sent) => {
            let notice: String =
                form_urlencoded::byte_serialize(format!("sent:{}", sent.email).as_bytes())
                    .collect();
            see_other(&campaign_href(&page, &c, &notice))
        }
        Err(e) if e.status.is_client_error() => {
            let mut errors = Errors::default();
            for f in &e.errors {
                if f.field == "email" {
                    errors.push("email", &f.message);
                } else {
                    errors.general.push(f.message.clone());
                }
            }
            if e.errors.is_empty() {
                errors.general.push(e.message.clone());
            }
            editor_with(&state, &page, &c, None, e.status, |a| {
                a.test_email = email;
                a.test_errors = errors;
            })
            .await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST campaigns/{id}/send`: Send now, after the confirmation.
pub async fn send_now(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let (c, form) = match load_posted(&state, &page, &raw, &body).await {
        Ok(loaded) => loaded,
        Err(r) => return r,
    };
    if form.get("confirm") != "yes" {
        let action = format!("{}/send", campaign_href(&page, &c, ""));
        return editor_with(&state, &page, &c, None, StatusCode::OK, |a| {
            a.confirm = Some(Confirm {
                action,
                question: format!("Send to {} now?", a.audience_words),
                button: "Send now",
                scheduled_for: String::new(),
            });
        })
        .await;
    }
    match send(&state, page.id(), c.id, None).await {
        Ok(_) => see_other(&campaign_href(&page, &c, "")),
        Err(e) if e.status.is_client_error() => refused(&state, &page, &c, &e, "").await,
        Err(e) => not_found::api_error(&e),
    }
}

/// A refused send or schedule: the messages on the fields they concern and beside the
/// buttons.
async fn refused(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
    e: &ApiError,
    send_at: &str,
) -> Response {
    let send_errors = summary(e);
    let send_at = send_at.to_owned();
    // The form shows what concerns its fields (the sender, the segment, the tree); the time,
    // the status and the billing limit are the send panel's alone.
    let on_form =
        e.code == "DOMAIN_NOT_VERIFIED" || e.errors.iter().any(|f| f.field != "scheduledFor");
    editor_with(state, page, c, on_form.then_some(e), e.status, |a| {
        a.send_errors = send_errors;
        a.send_at = send_at;
    })
    .await
}

/// The time of a Schedule: `scheduledFor` as the script wrote it (ISO 8601 in UTC, from the
/// browser's time zone), else `sendAt` as typed, read as UTC.
fn scheduled_for(form: &FormData) -> String {
    if let Some(iso) = form.opt("scheduledFor") {
        return iso;
    }
    match form.opt("sendAt") {
        Some(local) if local.len() == 16 => format!("{local}:00Z"),
        Some(local) => local,
        None => String::new(),
    }
}

/// `POST campaigns/{id}/schedule`: Schedule at the chosen time, after the confirmation.
pub async fn schedule(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let (c, form) = match load_posted(&state, &page, &raw, &body).await {
        Ok(loaded) => loaded,
        Err(r) => return r,
    };
    let at = scheduled_for(&form);
    let send_at = form.get("sendAt");
    if at.is_empty() {
        let e = ApiError::field(
            "scheduledFor",
            "choose the date and time to send at",
            "required",
        );
        return refused(&state, &page, &c, &e, &send_at).await;
    }
    if form.get("confirm") != "yes" {
        let action = format!("{}/schedule", campaign_href(&page, &c, ""));
        let when = herald_core::time::parse_iso(&at)
            .map(utc_words)
            .unwrap_or_else(|| at.clone());
        return editor_with(&state, &page, &c, None, StatusCode::OK, |a| {
            a.send_at = send_at;
            a.confirm = Some(Confirm {
                action,
                question: format!("Schedule to {} for {when}?", a.audience_words),
                button: "Schedule",
                scheduled_for: at,
            });
        })
        .await;
    }
    match send(&state, page.id(), c.id, Some(&at)).await {
        Ok(_) => see_other(&campaign_href(&page, &c, "scheduled")),
        Err(e) if e.status.is_client_error() => refused(&state, &page, &c, &e, &send_at).await,
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST campaigns/{id}/cancel`: Cancel campaign (SCHEDULED or SENDING), after the
/// confirmation.
pub async fn cancel_submit(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let (c, form) = match load_posted(&state, &page, &raw, &body).await {
        Ok(loaded) => loaded,
        Err(r) => return r,
    };
    let action = format!("{}/cancel", campaign_href(&page, &c, ""));
    let question = format!(
        "Cancel {}? Messages not sent yet will not be sent{}.",
        c.content.name,
        if c.total_recipients > 0 {
            format!(" ({} queued so far)", contacts(c.total_recipients))
        } else {
            String::new()
        }
    );
    let confirm = Confirm {
        action,
        question,
        button: "Cancel campaign",
        scheduled_for: String::new(),
    };
    if form.get("confirm") != "yes" {
        if c.status.is_editable() {
            return editor_with(&state, &page, &c, None, StatusCode::OK, |a| {
                a.confirm = Some(confirm);
            })
            .await;
        }
        return report::render_confirm(&state, &page, &c, Some(confirm), None).await;
    }
    match cancel(&state, page.id(), c.id).await {
        Ok(_) => see_other(&campaign_href(&page, &c, "")),
        Err(e) if e.status.is_client_error() => {
            if c.status.is_editable() {
                refused(&state, &page, &c, &e, "").await
            } else {
                report::render_confirm(&state, &page, &c, None, Some(&e)).await
            }
        }
        Err(e) => not_found::api_error(&e),
    }
}
