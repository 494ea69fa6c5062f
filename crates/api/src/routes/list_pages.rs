//! The list pages: `GET|POST /unsubscribe/{token}`, `GET|POST /subscribe/{token}`,
//! `GET|POST /manage/{token}`. Public (the token is the only credential), never rate limited,
//! not in the OpenAPI document (see docs/tracking.md).
//!
//! Invariants:
//! - A GET never changes anything (mail scanners follow links); every change is a POST.
//! - `POST /unsubscribe/{token}` accepts any body (a form, or RFC 8058's
//!   `List-Unsubscribe=One-Click`) and answers 200 every time; the contact update path records
//!   `contact.unsubscribed` only on the first. `POST /manage/{token}` takes the form field
//!   `subscribed` (`true` / `false`).
//! - Pages are in the contact's `locale`, else the project's language ([`PageSubject`]).
//! - A bad token is 400 and a contact that no longer exists 404: an HTML page for clients that
//!   accept HTML (browsers), the error envelope for others.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use herald_core::link_token::ListPage;
use herald_core::list_i18n;
use herald_engine::list_pages::{PageError, PageSubject};

use crate::error::ApiError;
use crate::pages::{self, button_form, document, link, manage_form, paragraph, status};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/unsubscribe/{token}",
            get(unsubscribe_page).post(unsubscribe),
        )
        .route("/subscribe/{token}", get(subscribe_page).post(subscribe))
        .route("/manage/{token}", get(manage_page).post(manage))
}

type PageResult = Result<Response, Response>;

/// The subject of a page, or the error response.
async fn subject_of(
    state: &AppState,
    headers: &HeaderMap,
    token: &str,
    page: ListPage,
) -> Result<PageSubject, Response> {
    state
        .engine
        .list_page(token, page)
        .await
        .map_err(|e| page_error(e, headers))
}

fn page_error(e: PageError, headers: &HeaderMap) -> Response {
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let s = list_i18n::english();
    let (status, title, body, api) = match e {
        PageError::BadLink => (
            StatusCode::BAD_REQUEST,
            s.invalid_title,
            s.invalid_body,
            ApiError::bad_request("The link is invalid or has been altered"),
        ),
        PageError::Gone => (
            StatusCode::NOT_FOUND,
            s.gone_title,
            s.gone_body,
            ApiError::not_found("CONTACT_NOT_FOUND", "Contact"),
        ),
        PageError::Store(e) => return ApiError::from(e).into_response(),
    };
    if wants_html {
        pages::respond(status, document(s.code, title, &paragraph(body, "")))
    } else {
        api.into_response()
    }
}

fn page(subject: &PageSubject, title: &str, main: String) -> Response {
    pages::respond(StatusCode::OK, document(subject.strings.code, title, &main))
}

fn unsubscribed_view(state: &AppState, subject: &PageSubject) -> Response {
    let s = subject.strings;
    let email = &subject.contact.email;
    let main = [
        status(s.unsubscribed_body, email),
        button_form(
            &state.engine.page_path(subject, ListPage::Subscribe),
            s.resubscribe_button,
            &[],
        ),
        link(
            &state.engine.page_path(subject, ListPage::Manage),
            s.manage_link,
        ),
    ]
    .concat();
    page(subject, s.unsubscribed_title, main)
}

fn subscribed_view(state: &AppState, subject: &PageSubject) -> Response {
    let s = subject.strings;
    let main = [
        status(s.subscribed_body, &subject.contact.email),
        link(
            &state.engine.page_path(subject, ListPage::Manage),
            s.manage_link,
        ),
    ]
    .concat();
    page(subject, s.subscribed_title, main)
}

async fn unsubscribe_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Unsubscribe).await?;
    if !subject.contact.subscribed {
        return Ok(unsubscribed_view(&state, &subject));
    }
    let s = subject.strings;
    let main = [
        paragraph(s.unsubscribe_prompt, &subject.contact.email),
        button_form(
            &format!("/unsubscribe/{token}"),
            s.unsubscribe_button,
            &[("List-Unsubscribe", "One-Click")],
        ),
    ]
    .concat();
    Ok(page(&subject, s.unsubscribe_title, main))
}

async fn unsubscribe(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Unsubscribe).await?;
    state
        .engine
        .set_subscription(&subject, false)
        .await
        .map_err(|e| page_error(e, &headers))?;
    Ok(unsubscribed_view(&state, &subject))
}

async fn subscribe_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Subscribe).await?;
    if subject.contact.subscribed {
        return Ok(subscribed_view(&state, &subject));
    }
    let s = subject.strings;
    let main = [
        paragraph(s.subscribe_prompt, &subject.contact.email),
        button_form(&format!("/subscribe/{token}"), s.subscribe_button, &[]),
    ]
    .concat();
    Ok(page(&subject, s.subscribe_title, main))
}

async fn subscribe(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Subscribe).await?;
    state
        .engine
        .set_subscription(&subject, true)
        .await
        .map_err(|e| page_error(e, &headers))?;
    Ok(subscribed_view(&state, &subject))
}

fn manage_view(token: &str, subject: &PageSubject, subscribed: bool, saved: bool) -> Response {
    let s = subject.strings;
    let mut main = String::new();
    if saved {
        main.push_str(&status(s.manage_saved, ""));
    }
    main.push_str(&paragraph(s.manage_intro, &subject.contact.email));
    main.push_str(&manage_form(&format!("/manage/{token}"), s, subscribed));
    page(subject, s.manage_title, main)
}

async fn manage_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Manage).await?;
    Ok(manage_view(
        &token,
        &subject,
        subject.contact.subscribed,
        false,
    ))
}

async fn manage(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
    body: Bytes,
) -> PageResult {
    let subject = subject_of(&state, &headers, &token, ListPage::Manage).await?;
    let wanted = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "subscribed")
        .map(|(_, v)| v.trim().to_ascii_lowercase());
    let subscribed = match wanted.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => {
            return Err(ApiError::field(
                "subscribed",
                "subscribed must be true or false",
                "invalid_value",
            )
            .into_response());
        }
    };
    let contact = state
        .engine
        .set_subscription(&subject, subscribed)
        .await
        .map_err(|e| page_error(e, &headers))?;
    Ok(manage_view(&token, &subject, contact.subscribed, true))
}
