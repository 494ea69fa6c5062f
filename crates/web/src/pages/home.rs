//! A project's home: contacts, emails sent and open rate over 30 days with the trend against
//! the 30 before, bounce and complaint rates against the Analytics thresholds, the last 10
//! activities, the keys and a first-send snippet. Read from the same store queries as
//! `GET /analytics/timeseries`, `GET /projects/:id/security` and `GET /activity`.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use herald_api::AppState;
use herald_store::StoreResult;
use herald_store::feed::FeedFilter;

use crate::deliverability::{self, Alert};
use crate::format::{ago, count, percent, trend};
use crate::pages::not_found;
use crate::render::ok;
use crate::session::{LAST_PROJECT, ProjectPage};
use crate::shell::Shell;

const DAY_MS: i64 = 86_400_000;

pub struct Stat {
    pub label: String,
    pub value: String,
    pub trend: String,
    pub tone: &'static str,
    /// The Analytics tab with this figure's detail.
    pub href: String,
}

pub struct Activity {
    pub kind: String,
    pub email: Option<String>,
    pub contact_href: Option<String>,
    pub when: String,
    pub exact: String,
}

#[derive(Template)]
#[template(path = "pages/home.html")]
struct HomePage {
    shell: Shell,
    stats: Vec<Stat>,
    health: Vec<Stat>,
    alerts: Vec<Alert>,
    activities: Vec<Activity>,
    activity_href: String,
    contacts_href: String,
    public_key: String,
    secret_prefix: String,
    settings_href: String,
    snippet: String,
}

/// Sent and opened counts over `[from, to)`.
async fn sent_and_opened(
    state: &AppState,
    project: &ProjectPage,
    from: i64,
    to: i64,
) -> StoreResult<(i64, i64)> {
    let mut sent = 0;
    let mut opened = 0;
    for (_, name, n) in state
        .store
        .mail_event_slots(project.id(), from, to, state.engine.now())
        .await?
    {
        match name.as_str() {
            "email.sent" => sent += n,
            "email.open" => opened += n,
            _ => {}
        }
    }
    Ok((sent, opened))
}

async fn build(state: &AppState, page: &ProjectPage) -> StoreResult<HomePage> {
    let now = state.engine.now();
    let contacts = state.store.count_contacts(page.id(), None, None).await?;
    let (sent, opened) = sent_and_opened(state, page, now - 30 * DAY_MS, now).await?;
    let (sent_before, opened_before) =
        sent_and_opened(state, page, now - 60 * DAY_MS, now - 30 * DAY_MS).await?;
    let rate = |o: i64, s: i64| if s > 0 { o as f64 / s as f64 } else { 0.0 };
    let (sent_trend, sent_tone) = trend(sent as f64, sent_before as f64);
    let (open_trend, open_tone) = trend(rate(opened, sent), rate(opened_before, sent_before));
    let delivery = state
        .store
        .delivery_counts(page.id(), now - 30 * DAY_MS)
        .await?;
    let rates = deliverability::rates(&delivery, &deliverability::THRESHOLDS, "30 days");
    let alerts = deliverability::alerts(&rates);
    let feed = state
        .store
        .feed(page.id(), 10, None, FeedFilter::default())
        .await?;
    let activities = feed
        .entries
        .into_iter()
        .map(|e| {
            let (when, exact) = ago(e.created_at, now);
            Activity {
                kind: e.name,
                email: e.email,
                contact_href: e.contact_id.map(|c| page.href(&format!("contacts/{c}"))),
                when,
                exact,
            }
        })
        .collect();
    let base = state.settings.public_url.trim_end_matches('/');
    let snippet = format!(
        "curl -X POST {base}/v1/send \\\n  -H 'Authorization: Bearer {}…' \\\n  -H 'Content-Type: application/json' \\\n  -d '{{\"to\": \"you@example.com\", \"subject\": \"Hello from Herald\", \"body\": \"<p>It works.</p>\"}}'",
        page.project.secret_key_prefix
    );
    Ok(HomePage {
        shell: page.shell("Home", &page.project.name),
        stats: vec![
            Stat {
                label: "Contacts".to_owned(),
                value: count(contacts),
                trend: String::new(),
                tone: "neutral",
                href: page.href("analytics?tab=audience&range=30"),
            },
            Stat {
                label: "Emails sent, 30 days".to_owned(),
                value: count(sent),
                trend: sent_trend,
                tone: sent_tone,
                href: page.href("analytics?tab=overview&range=30"),
            },
            Stat {
                label: "Open rate, 30 days".to_owned(),
                value: percent(opened, sent),
                trend: open_trend,
                tone: open_tone,
                href: page.href("analytics?tab=overview&range=30"),
            },
        ],
        health: rates
            .into_iter()
            .map(|r| Stat {
                label: r.label,
                value: r.value,
                trend: r.words,
                tone: r.tone,
                href: page.href("analytics?tab=deliverability&range=30"),
            })
            .collect(),
        alerts,
        activities,
        activity_href: page.href("activity"),
        contacts_href: page.href("contacts"),
        public_key: page.project.public_key.clone(),
        secret_prefix: page.project.secret_key_prefix.clone(),
        settings_href: page.href("settings#keys"),
        snippet,
    })
}

pub async fn page(State(state): State<AppState>, page: ProjectPage) -> Response {
    match build(&state, &page).await {
        Ok(home) => {
            let mut res = ok(&home);
            // Sign-in lands on the last project opened.
            let cookie = format!(
                "{LAST_PROJECT}={}; Path=/app; HttpOnly; SameSite=Lax; Max-Age=31536000",
                page.id()
            );
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().append(header::SET_COOKIE, v);
            }
            res
        }
        Err(e) => not_found::server_error(&e.to_string()),
    }
}
