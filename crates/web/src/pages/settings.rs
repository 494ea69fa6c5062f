//! Project settings in tabs: General (name, tracking, language), API keys (regenerate after
//! confirming; the new secret key shown once), Domains (add, the DNS records with a copy
//! button each, Verify), Members (invite, role, remove), Billing when a payment provider is
//! configured (`settings_billing.rs`), and the danger zone (reset, delete).
//! Every change goes through the API's own function, so its role rules and checks apply.

use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::auth::{ProjectAuth, Role};
use herald_api::error::ApiError;
use herald_api::language::RequestLanguage;
use herald_api::routes::accounts::{
    UpdateProjectRequest, change_project, remove_project, replace_project_keys,
};
use herald_api::routes::domains::{DomainResponse, ensure_can_manage};
use herald_api::routes::members::{InviteRequest, RoleRequest, change_role, invite, remove};
use herald_api::routes::project_admin::{ProjectResetRequest, reset};
use herald_core::kinds::TrackingMode;
use serde::Deserialize;

use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::pages::settings_billing::{self, BillingView};
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

pub struct Tab {
    pub label: &'static str,
    pub href: String,
    pub current: bool,
}

const TABS: [(&str, &str); 6] = [
    ("general", "General"),
    ("keys", "API keys"),
    ("domains", "Domains"),
    ("members", "Members"),
    ("billing", "Billing"),
    ("danger", "Reset and delete"),
];

/// Billing is a tab only where a payment provider is configured.
fn offered(state: &AppState, tab: &str) -> bool {
    tab != "billing" || state.engine.payments.is_some()
}

pub struct MemberRow {
    pub user_id: String,
    pub email: String,
    /// Every role, and whether it is this member's.
    pub roles: Vec<(&'static str, bool)>,
    pub you: bool,
}

/// The options of a role or mode `<select>`: each value and whether it is `current`.
/// A tracking mode in words, for the select.
fn tracking_words(mode: TrackingMode) -> &'static str {
    match mode {
        TrackingMode::Enabled => "On for all mail",
        TrackingMode::Disabled => "Off",
        TrackingMode::MarketingOnly => "Marketing mail only",
    }
}

fn options(all: impl Iterator<Item = &'static str>, current: &str) -> Vec<(&'static str, bool)> {
    all.map(|v| (v, v == current)).collect()
}

#[derive(Template)]
#[template(path = "pages/settings.html")]
struct SettingsPage {
    shell: Shell,
    base: String,
    tab: &'static str,
    tabs: Vec<Tab>,
    can_manage: bool,
    is_owner: bool,
    project_name: String,
    errors: Errors,
    notice: Option<String>,
    // General
    name: String,
    /// (value, words, chosen).
    tracking: Vec<(&'static str, &'static str, bool)>,
    language: String,
    // Keys
    public_key: String,
    secret_prefix: String,
    new_secret: Option<String>,
    confirm_regenerate: bool,
    // Domains
    domains: Vec<DomainResponse>,
    domain: String,
    // Members
    members: Vec<MemberRow>,
    members_hidden: Option<String>,
    invite_email: String,
    invite_roles: Vec<(&'static str, bool)>,
    // Billing (loaded on its tab only: it asks the payment provider for invoices)
    billing: Option<BillingView>,
    billing_error: Option<String>,
    provider_url: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct SettingsQuery {
    #[serde(default)]
    tab: String,
    #[serde(default)]
    notice: String,
}

fn tab_of(raw: &str) -> &'static str {
    TABS.iter()
        .find(|(id, _)| *id == raw)
        .map_or("general", |(id, _)| id)
}

fn notice_text(raw: &str) -> Option<String> {
    Some(
        match raw {
            "saved" => "Saved",
            "invited" => "Invitation sent",
            "joined" => "Member added",
            "role" => "Role changed",
            "removed" => "Member removed",
            "domain" => "Domain added: publish the records below, then Verify.",
            "verified" => "Checked the domain's records",
            "reset" => "Project reset",
            "limits" => "Monthly limits saved",
            _ => return None,
        }
        .to_owned(),
    )
}

/// What a refused form on one tab shows (the other tabs as stored).
#[derive(Default)]
pub(crate) struct Edit {
    pub form: Option<FormData>,
    pub errors: Errors,
    pub new_secret: Option<String>,
    pub confirm_regenerate: bool,
    /// The payment provider's page to continue to (Billing).
    pub provider_url: Option<String>,
}

pub(crate) async fn render(
    state: &AppState,
    page: &ProjectPage,
    tab: &'static str,
    status: StatusCode,
    notice: Option<String>,
    edit: Edit,
) -> Response {
    let base = page.href("settings");
    let tab = if offered(state, tab) { tab } else { "general" };
    let p = &page.project;
    let (billing, billing_error) = if tab == "billing" {
        match settings_billing::load(state, page, edit.form.as_ref()).await {
            Ok(view) => (Some(view), None),
            Err(e) => (None, Some(e.message)),
        }
    } else {
        (None, None)
    };
    let field = |name: &str, stored: String| match &edit.form {
        Some(f) if f.0.iter().any(|(k, _)| k == name) => f.get(name),
        _ => stored,
    };
    let domains = match state.engine.project_domains(p.id).await {
        Ok(d) => d.into_iter().map(DomainResponse::from).collect(),
        Err(e) => return not_found::api_error(&ApiError::from(e)),
    };
    let (members, members_hidden) = match state.engine.project_members(page.role, p.id).await {
        Ok(list) => (
            list.into_iter()
                .map(|m| MemberRow {
                    you: m.user_id == page.viewer.user.id,
                    user_id: m.user_id.to_string(),
                    email: m.email,
                    roles: options(Role::ALL.iter().map(|r| r.as_str()), m.role.as_str()),
                })
                .collect(),
            None,
        ),
        Err(e) => (Vec::new(), Some(ApiError::from(e).message)),
    };
    html(
        status,
        &SettingsPage {
            shell: page.shell("Settings", "Settings"),
            tabs: TABS
                .iter()
                .filter(|(id, _)| offered(state, id))
                .map(|(id, label)| Tab {
                    label,
                    href: format!("{base}?tab={id}"),
                    current: *id == tab,
                })
                .collect(),
            base,
            tab,
            can_manage: page.can_manage(),
            is_owner: page.role == Role::Owner,
            project_name: p.name.clone(),
            errors: edit.errors,
            notice,
            name: field("name", p.name.clone()),
            tracking: {
                let current = field("tracking", p.tracking.as_str().to_owned());
                TrackingMode::ALL
                    .iter()
                    .map(|t| (t.as_str(), tracking_words(*t), t.as_str() == current))
                    .collect()
            },
            language: field("language", p.language.clone()),
            public_key: p.public_key.clone(),
            secret_prefix: p.secret_key_prefix.clone(),
            new_secret: edit.new_secret,
            confirm_regenerate: edit.confirm_regenerate,
            domains,
            domain: field("domain", String::new()),
            members,
            members_hidden,
            invite_email: field("email", String::new()),
            invite_roles: options(
                Role::ALL.iter().map(|r| r.as_str()),
                &field("role", "MEMBER".to_owned()),
            ),
            billing,
            billing_error,
            provider_url: edit.provider_url,
        },
    )
}

pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<SettingsQuery>,
) -> Response {
    render(
        &state,
        &page,
        tab_of(&q.tab),
        StatusCode::OK,
        notice_text(&q.notice),
        Edit::default(),
    )
    .await
}

/// The outcome of a form on `tab`: back to the tab with `notice`, or the form again with the
/// API's messages beside its fields.
pub(crate) async fn after(
    state: &AppState,
    page: &ProjectPage,
    tab: &'static str,
    form: FormData,
    result: Result<&str, ApiError>,
) -> Response {
    match result {
        Ok(notice) => see_other(&format!(
            "{}?tab={tab}&notice={notice}",
            page.href("settings")
        )),
        Err(e) if e.status.is_client_error() => {
            let edit = Edit {
                form: Some(form),
                errors: Errors::from_api(&e),
                ..Edit::default()
            };
            render(state, page, tab, e.status, None, edit).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST settings`: General.
pub async fn save_general(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let request = UpdateProjectRequest {
        name: Some(form.get("name")),
        tracking: Some(form.get("tracking")),
        language: Some(form.get("language")),
    };
    let id = page.id().to_string();
    let result = change_project(&state, page.viewer.user.id, &id, request)
        .await
        .map(|_| "saved");
    after(&state, &page, "general", form, result).await
}

/// `POST settings/keys`: asks first, then replaces both keys and shows the new secret once.
pub async fn regenerate_keys(
    State(state): State<AppState>,
    mut page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    if form.get("confirm") != "yes" {
        let edit = Edit {
            confirm_regenerate: true,
            ..Edit::default()
        };
        return render(&state, &page, "keys", StatusCode::OK, None, edit).await;
    }
    let id = page.id().to_string();
    match replace_project_keys(&state, page.viewer.user.id, &id).await {
        Ok((project, _, secret)) => {
            page.project = project;
            let edit = Edit {
                new_secret: Some(secret),
                ..Edit::default()
            };
            let notice = Some("New keys created: the old ones no longer work".to_owned());
            render(&state, &page, "keys", StatusCode::OK, notice, edit).await
        }
        Err(e) => after(&state, &page, "keys", form, Err(e)).await,
    }
}

fn scope(page: &ProjectPage) -> ProjectAuth {
    ProjectAuth {
        project: Arc::new(page.project.clone()),
        user: Some((page.viewer.user.id, page.role)),
    }
}

/// `POST settings/domains`: Add domain (the engine's checks; RSA key made there).
pub async fn add_domain(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let result = match ensure_can_manage(&scope(&page)) {
        Ok(()) => state
            .engine
            .add_domain(page.id(), &form.get("domain"))
            .await
            .map(|_| "domain")
            .map_err(ApiError::from),
        Err(e) => Err(e),
    };
    after(&state, &page, "domains", form, result).await
}

/// `POST settings/domains/{id}/verify`: look the records up now.
pub async fn verify_domain(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
) -> Response {
    let Some(id) = herald_core::ids::parse_id(&id) else {
        return not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND);
    };
    let result = state
        .engine
        .verify_domain(page.id(), id)
        .await
        .map(|_| "verified")
        .map_err(ApiError::from);
    after(&state, &page, "domains", FormData(Vec::new()), result).await
}

/// `POST settings/members`: Invite.
pub async fn invite_member(
    State(state): State<AppState>,
    page: ProjectPage,
    RequestLanguage(lang): RequestLanguage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let request = InviteRequest {
        email: Some(form.get("email")),
        role: Some(form.get("role")),
    };
    let id = page.id().to_string();
    let result = invite(&state, page.viewer.user.id, &id, request, lang)
        .await
        .map(|i| match i {
            herald_api::routes::members::Invited::Joined(_) => "joined",
            herald_api::routes::members::Invited::Mailed { .. } => "invited",
        });
    after(&state, &page, "members", form, result).await
}

/// `POST settings/members/{user}`: change the role (`role`) or remove (`remove=yes`).
pub async fn change_member(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, user)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let id = page.id().to_string();
    let me = page.viewer.user.id;
    let result = if form.get("remove") == "yes" {
        remove(&state, me, &id, &user).await.map(|()| "removed")
    } else {
        let request = RoleRequest {
            role: Some(form.get("role")),
        };
        change_role(&state, me, &id, &user, request)
            .await
            .map(|_| "role")
    };
    if result.is_ok() && user == me.to_string() && form.get("remove") == "yes" {
        return see_other("/app/");
    }
    after(&state, &page, "members", form, result).await
}

/// `POST settings/reset`: the project's name as confirmation (the API's rule).
pub async fn reset_project(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let request = ProjectResetRequest {
        confirmation: form.opt("confirmation"),
    };
    let id = page.id().to_string();
    let result = reset(&state, page.viewer.user.id, &id, request)
        .await
        .map(|()| "reset");
    after(&state, &page, "danger", form, result).await
}

/// `POST settings/delete`: asks for the project's name, then deletes it (owner only).
pub async fn delete_project(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    if form.get("delete_confirmation") != page.project.name {
        let mut errors = Errors::default();
        errors.push(
            "delete_confirmation",
            "Type the project's name exactly to delete it",
        );
        let edit = Edit {
            form: Some(form),
            errors,
            ..Edit::default()
        };
        return render(
            &state,
            &page,
            "danger",
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            edit,
        )
        .await;
    }
    let id = page.id().to_string();
    match remove_project(&state, page.viewer.user.id, &id).await {
        Ok(()) => see_other("/app/"),
        Err(e) => after(&state, &page, "danger", form, Err(e)).await,
    }
}
