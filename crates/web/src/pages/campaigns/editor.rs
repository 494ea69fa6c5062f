//! A campaign's editor: New campaign, and a DRAFT or SCHEDULED campaign's page. The form's
//! fields are the API's (`name`, `subject`, `body`, `from` on a verified domain, `fromName`,
//! `replyTo`, `audienceType`, `segmentId`, the `audienceFilter` tree in the filter builder);
//! saved through `routes::campaigns::create` / `replace`. The body can start from a template
//! (its subject and body copied in), and the preview is the templates' (`Engine::preview`
//! through `templates/preview` and `templates/frame`). The live recipient count is the API's
//! `recipient_count` (subscribed contacts of the audience, as a send counts them).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::campaigns::{CampaignRequest, campaign_of, recipient_count, replace};
use herald_api::routes::templates::{template, template_id};
use herald_core::campaign::CampaignStatus;
use herald_store::campaigns::Campaign;
use serde::Deserialize;
use serde_json::Value;

use super::{contacts, status_badge, utc_words};
use crate::assets;
use crate::filter_builder::{Builder, Group, Item, Settings, from_form, from_tree};
use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::pages::templates::editor::Values as TemplateValues;
use crate::pages::templates::preview::{PreviewView, Sample};
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const STARTER_BODY: &str = "<h1>Hello {{firstName ?? \"there\"}}</h1>\n<p>Write your news here.</p>\n<p><a href=\"https://example.com\">Read more</a></p>\n";

/// The builder of a FILTERED audience: the tree under `audienceFilter`, counted as a campaign
/// counts (subscribed contacts only).
pub fn builder_settings() -> Settings {
    Settings {
        prefix: "audienceFilter".into(),
        subscribed: true,
        ..Settings::default()
    }
}

/// The form's fields as typed.
#[derive(Clone, Default)]
pub struct Values {
    pub name: String,
    pub subject: String,
    pub body: String,
    /// The part of the sender's address before `@`.
    pub from_local: String,
    /// The sender's domain (one of the project's verified domains).
    pub from_domain: String,
    pub from_name: String,
    pub reply_to: String,
    /// ALL, SEGMENT or FILTERED.
    pub audience: String,
    pub segment_id: String,
}

impl Values {
    pub fn new_campaign() -> Self {
        Values {
            from_local: "hello".to_owned(),
            body: STARTER_BODY.to_owned(),
            audience: "ALL".to_owned(),
            ..Values::default()
        }
    }

    pub fn from_form(form: &FormData) -> Self {
        let mut v = Values {
            name: form.get("name"),
            subject: form.get("subject"),
            body: form.get("body"),
            from_local: form.get("from").trim().to_owned(),
            from_domain: form.get("fromDomain"),
            from_name: form.get("fromName"),
            reply_to: form.get("replyTo"),
            audience: form.get("audienceType"),
            segment_id: form.get("segmentId"),
        };
        // A whole address typed in From wins over the domain select.
        if let Some((local, domain)) = v.from_local.clone().rsplit_once('@') {
            v.from_local = local.to_owned();
            v.from_domain = domain.to_owned();
        }
        if v.audience.is_empty() {
            v.audience = "ALL".to_owned();
        }
        v
    }

    pub fn from_campaign(c: &Campaign) -> Self {
        let (local, domain) = c
            .content
            .from_email
            .rsplit_once('@')
            .map(|(l, d)| (l.to_owned(), d.to_owned()))
            .unwrap_or_else(|| (c.content.from_email.clone(), String::new()));
        Values {
            name: c.content.name.clone(),
            subject: c.content.subject.clone(),
            body: c.content.body.clone(),
            from_local: local,
            from_domain: domain,
            from_name: c.content.from_name.clone().unwrap_or_default(),
            reply_to: c.content.reply_to.clone().unwrap_or_default(),
            audience: c.content.audience_type.as_str().to_owned(),
            segment_id: c
                .content
                .segment_id
                .map(|s| s.to_string())
                .unwrap_or_default(),
        }
    }

    /// The sender's address as the API takes it.
    pub fn from(&self) -> String {
        match (self.from_local.is_empty(), self.from_domain.is_empty()) {
            (true, true) => String::new(),
            (_, true) => self.from_local.clone(),
            _ => format!("{}@{}", self.from_local, self.from_domain),
        }
    }

    /// The API's create or replace body; `tree` is the builder's (sent for FILTERED only).
    pub fn request(&self, tree: Option<Value>) -> CampaignRequest {
        let filtered = self.audience == "FILTERED";
        CampaignRequest {
            name: Some(self.name.clone()),
            subject: Some(self.subject.clone()),
            body: Some(self.body.clone()),
            from: Some(self.from()),
            from_name: Some(self.from_name.clone()).filter(|n| !n.trim().is_empty()),
            reply_to: Some(self.reply_to.clone()).filter(|r| !r.trim().is_empty()),
            audience_type: Some(self.audience.clone()),
            segment_id: (self.audience == "SEGMENT").then(|| self.segment_id.clone()),
            audience_filter: if filtered { tree } else { None },
            ..CampaignRequest::default()
        }
    }

    /// The templates' preview reads these fields (marketing mail: the footer note).
    fn preview_values(&self) -> TemplateValues {
        TemplateValues {
            name: self.name.clone(),
            subject: self.subject.clone(),
            body: self.body.clone(),
            kind: "MARKETING".to_owned(),
            from: self.from(),
        }
    }
}

/// The live recipient count, or why the audience cannot be counted.
pub struct Recipients {
    pub count: Option<i64>,
    pub message: String,
}

impl Recipients {
    pub async fn of_form(
        state: &AppState,
        page: &ProjectPage,
        values: &Values,
        tree: Option<Value>,
    ) -> Result<Recipients, ApiError> {
        match recipient_count(state, page.id(), &values.request(tree)).await {
            Ok(n) => Ok(Recipients {
                count: Some(n),
                message: format!("{} will receive it", contacts(n)),
            }),
            Err(e) if e.status.is_client_error() => Ok(Recipients {
                count: None,
                message: e
                    .errors
                    .first()
                    .map(|f| f.message.clone())
                    .unwrap_or(e.message),
            }),
            Err(e) => Err(e),
        }
    }
}

pub struct Choice {
    pub value: String,
    pub label: String,
    pub chosen: bool,
}

/// The send actions of a saved campaign.
pub struct Actions {
    pub id: String,
    pub status: CampaignStatus,
    pub status_words: &'static str,
    pub status_tone: &'static str,
    /// The saved audience's size now, in words (what Send now and Schedule say).
    pub audience_words: String,
    /// SCHEDULED: when, in UTC words and ISO.
    pub scheduled: Option<(String, String)>,
    pub test_email: String,
    pub test_errors: Errors,
    pub send_errors: Errors,
    pub send_at: String,
    /// Without JavaScript: the second step of Send now / Schedule / Cancel campaign.
    pub confirm: Option<Confirm>,
}

/// A second step asked by the server (the script asks in a dialog instead).
pub struct Confirm {
    pub action: String,
    pub question: String,
    pub button: &'static str,
    pub scheduled_for: String,
}

#[derive(Template)]
#[template(path = "pages/campaign_edit.html")]
pub struct EditorPage {
    shell: Shell,
    editor_js: String,
    base: String,
    templates_base: String,
    action: String,
    heading: String,
    values: Values,
    errors: Errors,
    domains: Vec<Choice>,
    settings_domains: String,
    segments: Vec<Choice>,
    templates: Vec<Choice>,
    builder: Builder,
    recipients: Recipients,
    count_url: String,
    sample: Sample,
    preview: PreviewView,
    pub actions: Option<Actions>,
    notice: Option<String>,
}

/// What the editor needs besides the values: the project's verified domains, segments and
/// templates.
async fn choices(
    state: &AppState,
    page: &ProjectPage,
    values: &Values,
) -> Result<(Vec<Choice>, Vec<Choice>, Vec<Choice>), ApiError> {
    let mut domains: Vec<Choice> = state
        .store
        .domains_of_project(page.id())
        .await?
        .into_iter()
        .filter(|d| d.verified)
        .map(|d| Choice {
            chosen: d.domain.eq_ignore_ascii_case(&values.from_domain),
            label: d.domain.clone(),
            value: d.domain,
        })
        .collect();
    // A sender whose domain is no longer verified stays visible (the send will say why).
    if !values.from_domain.is_empty() && !domains.iter().any(|d| d.chosen) {
        domains.push(Choice {
            value: values.from_domain.clone(),
            label: format!("{} (not verified)", values.from_domain),
            chosen: true,
        });
    }
    let segments = state
        .store
        .list_segments(page.id())
        .await?
        .into_iter()
        .map(|s| Choice {
            chosen: s.id.to_string() == values.segment_id,
            value: s.id.to_string(),
            label: s.name,
        })
        .collect();
    let templates =
        herald_api::routes::templates::template_list(state, page.id(), 1, 100, None, None)
            .await?
            .templates
            .into_iter()
            .map(|t| Choice {
                value: t.id,
                label: t.name,
                chosen: false,
            })
            .collect();
    Ok((domains, segments, templates))
}

/// The editor's form as it stands, with its builder (its count or refusal).
pub struct Form {
    pub values: Values,
    pub root: Group,
    pub sample: Sample,
    /// Re-rendered for a builder button: values still to fill in are not errors yet.
    pub quiet: bool,
}

impl Form {
    pub fn new_campaign() -> Self {
        Form {
            values: Values::new_campaign(),
            root: Group::starter(),
            sample: Sample::default(),
            quiet: false,
        }
    }

    pub fn of_campaign(c: &Campaign) -> Self {
        Form {
            values: Values::from_campaign(c),
            root: c
                .content
                .audience_filter
                .as_ref()
                .map(from_tree)
                .unwrap_or_else(Group::starter),
            sample: Sample::default(),
            quiet: false,
        }
    }

    pub fn posted(form: &FormData) -> Self {
        Form {
            values: Values::from_form(form),
            root: from_form(form, builder_settings().key()),
            sample: Sample::from_form(form),
            quiet: form.opt("builder").is_some(),
        }
    }
}

/// The editor page for `form`, with the API's `refusal` on its fields and rows.
pub async fn render(
    state: &AppState,
    page: &ProjectPage,
    form: Form,
    saved: Option<&Campaign>,
    refusal: Option<&ApiError>,
    status: StatusCode,
) -> Response {
    match editor_page(state, page, form, saved, refusal).await {
        Ok(p) => html(status, &p),
        Err(e) => not_found::api_error(&e),
    }
}

pub async fn editor_page(
    state: &AppState,
    page: &ProjectPage,
    form: Form,
    saved: Option<&Campaign>,
    refusal: Option<&ApiError>,
) -> Result<EditorPage, ApiError> {
    let Form {
        values,
        root,
        sample,
        quiet,
    } = form;
    let mut builder = Builder::counted(state, page, builder_settings(), root, quiet).await?;
    let mut errors = Errors::default();
    if let Some(e) = refusal {
        builder.refuse(e);
        errors = field_errors(&builder, e);
    }
    // A FILTERED audience's count is the builder's (the same function, counted once).
    let recipients = match (values.audience.as_str(), builder.count) {
        ("FILTERED", Some(n)) => Recipients {
            count: Some(n),
            message: format!("{} will receive it", contacts(n)),
        },
        ("FILTERED", None) => Recipients {
            count: None,
            message: builder.refusal.clone().unwrap_or_default(),
        },
        _ => Recipients::of_form(state, page, &values, None).await?,
    };
    let (domains, segments, templates) = choices(state, page, &values).await?;
    let preview = PreviewView::render(state, page.id(), &values.preview_values(), &sample);
    let base = page.href("campaigns");
    let actions = match saved {
        Some(c) => Some(actions_of(state, page, c).await?),
        None => None,
    };
    let (title, action) = match saved {
        Some(c) => (c.content.name.clone(), format!("{base}/{}", c.id)),
        None => ("New campaign".to_owned(), base.clone()),
    };
    Ok(EditorPage {
        shell: page.shell("Campaigns", &title),
        editor_js: assets::url("editor.js"),
        templates_base: page.href("templates"),
        count_url: format!("{base}/count"),
        settings_domains: format!("{}?tab=domains", page.href("settings")),
        action,
        heading: title,
        base,
        values,
        errors,
        domains,
        segments,
        templates,
        builder,
        recipients,
        sample,
        preview,
        actions,
        notice: None,
    })
}

/// The messages of a refusal for the form's own fields (the builder shows the tree's). The
/// sender's domain losing its verification (403, no field) belongs to From.
pub fn field_errors(builder: &Builder, e: &ApiError) -> Errors {
    if e.code == "DOMAIN_NOT_VERIFIED" {
        let mut out = Errors::default();
        out.push("from", &e.message);
        return out;
    }
    builder.other_errors(e)
}

/// The actions panel of a saved campaign.
pub async fn actions_of(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
) -> Result<Actions, ApiError> {
    // A deleted segment matches nobody: 0 (the send refuses it with the reason).
    let audience = state.engine.campaign_audience_size(c).await?;
    let audience = i64::try_from(audience).unwrap_or(i64::MAX);
    let (status_words, status_tone) = status_badge(c.status);
    Ok(Actions {
        id: c.id.to_string(),
        status: c.status,
        status_words,
        status_tone,
        audience_words: contacts(audience),
        scheduled: (c.status == CampaignStatus::Scheduled)
            .then_some(c.scheduled_at)
            .flatten()
            .map(|at| (utc_words(at), herald_core::time::iso(at))),
        test_email: page.viewer.user.email.clone(),
        test_errors: Errors::default(),
        send_errors: Errors::default(),
        send_at: String::new(),
        confirm: None,
    })
}

#[derive(Deserialize, Default)]
pub struct EditQuery {
    #[serde(default)]
    notice: String,
}

fn notice_words(code: &str) -> Option<String> {
    match code {
        "created" => Some("Campaign created".to_owned()),
        "saved" => Some("Saved".to_owned()),
        "scheduled" => Some("Scheduled".to_owned()),
        _ => code
            .strip_prefix("sent:")
            .map(|to| format!("Test sent to {to}")),
    }
}

/// Loads the project's campaign `raw` or answers the 404 page.
pub async fn load(state: &AppState, page: &ProjectPage, raw: &str) -> Result<Campaign, Response> {
    campaign_of(state, page.id(), raw).await.map_err(|e| {
        if e.status == StatusCode::NOT_FOUND {
            not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND)
        } else {
            not_found::api_error(&e)
        }
    })
}

/// A POST to campaign `raw`: the campaign (or the page answering why not) and the form.
pub async fn load_posted(
    state: &AppState,
    page: &ProjectPage,
    raw: &str,
    body: &Bytes,
) -> Result<(Campaign, FormData), Response> {
    Ok((load(state, page, raw).await?, FormData::parse(body)))
}

/// `GET campaigns/{id}`: the editor while DRAFT or SCHEDULED, else the report.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    Query(q): Query<EditQuery>,
    Query(rq): Query<super::report::ReportQuery>,
) -> Response {
    let c = match load(&state, &page, &raw).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if !c.status.is_editable() {
        return super::report::render(&state, &page, &c, &rq, notice_words(&q.notice)).await;
    }
    match editor_page(&state, &page, Form::of_campaign(&c), Some(&c), None).await {
        Ok(mut p) => {
            p.notice = notice_words(&q.notice);
            html(StatusCode::OK, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// Applies a "Use template" press: the template's subject and body replace the form's.
pub async fn use_template(
    state: &AppState,
    page: &ProjectPage,
    form: &FormData,
    values: &mut Values,
) -> Result<(), ApiError> {
    let raw = form.get("template");
    if raw.is_empty() {
        return Ok(());
    }
    let t = template(state, page.id(), template_id(&raw)?).await?;
    values.subject = t.subject;
    values.body = t.body;
    if values.name.trim().is_empty() {
        values.name = t.name;
    }
    Ok(())
}

/// `POST campaigns/{id}`: a builder button or Use template re-renders the form; otherwise
/// Save (through the API's replace).
pub async fn save(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let (c, data) = match load_posted(&state, &page, &raw, &body).await {
        Ok(loaded) => loaded,
        Err(r) => return r,
    };
    let mut form = Form::posted(&data);
    if data.get("do") == "use-template" {
        if let Err(e) = use_template(&state, &page, &data, &mut form.values).await {
            return render(&state, &page, form, Some(&c), Some(&e), e.status).await;
        }
        form.quiet = true;
        return render(&state, &page, form, Some(&c), None, StatusCode::OK).await;
    }
    if form.quiet {
        return render(&state, &page, form, Some(&c), None, StatusCode::OK).await;
    }
    let tree = match Builder::load(&state, &page, builder_settings(), form.root.clone()).await {
        Ok(b) => b.tree(),
        Err(e) => return not_found::api_error(&e),
    };
    match replace(&state, page.id(), &c, form.values.request(Some(tree))).await {
        Ok(_) => see_other(&format!("{}/{raw}?notice=saved", page.href("campaigns"))),
        Err(e) if e.status.is_client_error() => {
            let status = e.status;
            render(&state, &page, form, Some(&c), Some(&e), status).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

#[derive(Template)]
#[template(path = "components/campaign_count.html")]
struct CountFragment {
    recipients: Recipients,
}

/// `POST campaigns/count`: the live recipient count of the posted form's audience.
pub async fn count(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let data = FormData::parse(&body);
    let form = Form::posted(&data);
    let tree = match Builder::load(&state, &page, builder_settings(), form.root).await {
        Ok(b) => b.tree(),
        Err(e) => return not_found::api_error(&e),
    };
    match Recipients::of_form(&state, &page, &form.values, Some(tree)).await {
        Ok(recipients) => html(StatusCode::OK, &CountFragment { recipients }),
        Err(e) => not_found::api_error(&e),
    }
}
