//! `herald demo`: a project full of realistic data to look around the dashboard.
//!
//! With the configuration of `serve` (any database, and while a server runs on it), the demo
//! signs up the user if the address is new (a generated password unless one is given; an
//! existing user's password is never changed), then creates a new project `Demo` (`Demo 2`,
//! `Demo 3`... when the user has one) holding 10,000 contacts with custom fields (name, plan,
//! company, signup date, a number, a boolean), two templates, a segment, a SENT campaign with
//! opens and clicks, an enabled workflow and 30 days of events.
//!
//! Every rule is the product's own: the user through the sign-up's checks and the engine,
//! the project through the API's function, the domain, templates, segment, campaign and
//! workflow through the REST API's router called in process with the project's secret key
//! (as `POST /mcp` does), the contacts through the import's batch upsert, the events through
//! `/v1/track`'s engine function. History is back-dated, not simulated live: contacts are
//! upserted with the time of their signup day, events are tracked with the demo's clock set to
//! their day, and the campaign's send is recorded after the fact at a past time by
//! [`herald_engine::Engine::record_campaign_history`] (rendered as the fan-out renders, with
//! no send job), its opens and clicks through the tracking rules with explicit times.
//!
//! Demo mail stays on this machine. The demo itself delivers nothing (it runs no worker), its
//! contacts live under reserved domains (`example.com`, `.org`, `.net`) and its sending domain
//! is a reserved `.example` name, which counts as verified only while the transport is the
//! local outbox: a server configured with a relay refuses to send from it (a campaign send,
//! a test, a workflow's SEND_EMAIL all fail on "domain not verified"), so no demo message can
//! reach a relay. The demo's own process treats the transport as the local outbox whatever
//! the configuration says, so that domain can be added.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use axum::body::Body;
use axum::http::{Method, Request, header};
use herald_api::error::ApiError;
use herald_api::routes::accounts::{CreateProjectRequest, new_project};
use herald_api::routes::signup::{SignupRequest, parse_signup};
use herald_core::clock::{Clock as _, SystemClock, TestClock};
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_engine::accounts::{AddressProof, NewUser};
use herald_engine::track::TrackPlan;
use herald_store::contacts_batch::{BatchRow, upsert_batch};
use herald_store::tracking::{click_in, open_in};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::app::Services;
use crate::config::Config;

/// The user signed up when none is named.
pub const DEFAULT_EMAIL: &str = "demo@example.com";
/// Contacts of a demo project.
pub const CONTACTS: usize = 10_000;
/// Days of history.
pub const DAYS: i64 = 30;
const DAY_MS: Millis = 86_400_000;
/// Tracked events per day of history.
const EVENTS_PER_DAY: usize = 200;
/// The campaign went out this many days ago.
const CAMPAIGN_DAYS_AGO: i64 = 6;

/// What to run the demo for.
#[derive(Clone, Debug, Default)]
pub struct DemoRequest {
    /// The user's address (default [`DEFAULT_EMAIL`]).
    pub email: Option<String>,
    /// The password of a new user (generated when absent); an existing user keeps theirs.
    pub password: Option<String>,
    /// Contacts to create (default [`CONTACTS`]).
    pub contacts: Option<usize>,
}

/// What the demo made.
#[derive(Clone, Debug)]
pub struct DemoOutcome {
    pub email: String,
    /// The new user's password (the one given or the one generated); `None` when the user
    /// existed (their password is unchanged).
    pub password: Option<String>,
    pub project_id: Uuid,
    pub project_name: String,
    /// The project's secret API key (shown once, as when a project is created).
    pub secret_key: String,
    /// The project's home in the dashboard.
    pub url: String,
    pub contacts: usize,
    pub campaign_recipients: usize,
    pub opens: usize,
    pub clicks: usize,
    pub events: usize,
}

impl DemoOutcome {
    /// What `herald demo` prints.
    pub fn report(&self) -> String {
        let password = match &self.password {
            Some(p) => format!("Password:  {p}"),
            None => "Password:  unchanged (the user already existed)".to_owned(),
        };
        format!(
            "Project {} created: {} contacts, a campaign sent to {} ({} opened, {} clicked), \
             {} events over {DAYS} days.\n\nDashboard: {}\nEmail:     {}\n{password}\n\
             API key:   {} (the project's secret key, shown once)\n",
            self.project_name,
            thousands(self.contacts),
            thousands(self.campaign_recipients),
            thousands(self.opens),
            thousands(self.clicks),
            thousands(self.events),
            self.url,
            self.email,
            self.secret_key,
        )
    }
}

/// Runs the demo against the database of `config`.
pub async fn run(config: &Config, request: DemoRequest) -> anyhow::Result<DemoOutcome> {
    // The demo delivers nothing; as the local outbox its engine may add the reserved sending
    // domain, which a server with a relay never sends from (module docs).
    let mut config = config.clone();
    config.smtp_url = None;
    let clock = TestClock::new();
    let services = Services::open(&config, clock.clone()).await?;
    let outcome = Demo {
        services: &services,
        clock: &clock,
        public_url: config.public_url.trim_end_matches('/').to_owned(),
    }
    .run(request)
    .await;
    services.store.close().await;
    outcome
}

struct Demo<'a> {
    services: &'a Services,
    /// The engine's clock: real time, set back while history is written.
    clock: &'a Arc<TestClock>,
    public_url: String,
}

impl Demo<'_> {
    async fn run(&self, request: DemoRequest) -> anyhow::Result<DemoOutcome> {
        let (user, email, password) = self
            .user(request.email.as_deref(), request.password)
            .await?;
        let name = self.project_name(user).await?;
        let (project, secret) = new_project(
            &self.services.state,
            user,
            CreateProjectRequest {
                name: Some(name.clone()),
            },
        )
        .await
        .map_err(api_error)?;
        let api = Api {
            router: herald_api::router(self.services.state.clone()),
            key: secret.clone(),
        };
        let now = SystemClock.now();
        let from = self.sending_domain(&api, project.id).await?;
        let welcome = templates(&api, &from).await?;
        let n = request.contacts.unwrap_or(CONTACTS);
        self.contacts(project.id, n, now).await?;
        let segment = api
            .call(
                Method::POST,
                "/segments",
                json!({
                    "name": "Pro and enterprise",
                    "description": "Contacts on a paid plan",
                    "filters": {"operator": "OR", "conditions": [
                        {"field": "data.plan", "operator": "equals", "value": "pro"},
                        {"field": "data.plan", "operator": "equals", "value": "enterprise"},
                    ]},
                }),
            )
            .await?;
        let segment_id = id_of(&segment)?;
        let events = self.events(project.id, n, now).await?;
        let (recipients, opens, clicks) = self
            .campaign(&api, project.id, &from, &segment_id, now)
            .await?;
        workflow(&api, &welcome).await?;
        Ok(DemoOutcome {
            email,
            password,
            project_id: project.id,
            url: format!("{}/app/p/{}/", self.public_url, project.id),
            project_name: name,
            secret_key: secret,
            contacts: n,
            campaign_recipients: recipients,
            opens,
            clicks,
            events,
        })
    }

    /// The user of `email`, signed up when new (with the sign-up's address and password
    /// rules); an existing user's password is left alone.
    async fn user(
        &self,
        email: Option<&str>,
        password: Option<String>,
    ) -> anyhow::Result<(Uuid, String, Option<String>)> {
        let raw = email.unwrap_or(DEFAULT_EMAIL);
        let address = EmailAddress::parse(raw).map_err(|e| anyhow!("--email {raw}: {e}"))?;
        if let Some(user) = self.services.store.user_by_email(address.as_str()).await? {
            return Ok((user.id, user.email, None));
        }
        let password = password.unwrap_or_else(generate_password);
        let (address, password, _) = parse_signup(SignupRequest {
            email: Some(address.as_str().to_owned()),
            password: Some(password),
            invitation: None,
        })
        .map_err(api_error)?;
        let password_hash = self
            .services
            .state
            .passwords
            .hash(password.clone())
            .await
            .map_err(api_error)?;
        // The operator vouches for the address: verified at once, as an OAuth provider's is,
        // so no verification mail is sent and sign-in works under
        // HERALD_REQUIRE_EMAIL_VERIFICATION.
        let created = self
            .services
            .engine
            .create_user(NewUser {
                email: &address,
                password_hash,
                proof: AddressProof::Provider,
            })
            .await
            .map_err(|e| anyhow!("creating the user {address}: {e}"))?;
        Ok((created.user.id, created.user.email, Some(password)))
    }

    /// `Demo`, or `Demo N` with the first N from 2 the user has no project of that name.
    async fn project_name(&self, user: Uuid) -> anyhow::Result<String> {
        let taken: HashSet<String> = self
            .services
            .store
            .projects_of_user(user)
            .await?
            .into_iter()
            .map(|m| m.project.name)
            .collect();
        Ok(std::iter::once("Demo".to_owned())
            .chain((2..).map(|n| format!("Demo {n}")))
            .find(|name| !taken.contains(name))
            .unwrap_or_else(|| "Demo".to_owned()))
    }

    /// Adds the project's reserved sending domain (verified at once with the local outbox);
    /// returns the sender address.
    async fn sending_domain(&self, api: &Api, project: Uuid) -> anyhow::Result<String> {
        // Unique per project: a domain verified by one project cannot be added by another.
        let simple = project.simple().to_string();
        let domain = format!("demo-{}.example", &simple[simple.len() - 8..]);
        let added = api
            .call(Method::POST, "/domains", json!({ "domain": domain }))
            .await?;
        if added["verified"] != true && added["data"]["verified"] != true {
            bail!("the demo's sending domain {domain} was not verified: {added}");
        }
        Ok(format!("hello@{domain}"))
    }

    /// `n` contacts, signed up evenly over the last [`DAYS`] days, through the import's batch
    /// upsert with the time of their day.
    async fn contacts(&self, project: Uuid, n: usize, now: Millis) -> anyhow::Result<()> {
        let people: Vec<(String, DataPatch)> = (0..n)
            .map(|i| {
                let p = Person::new(i, n, now);
                let patch = DataPatch::parse(Some(&p.data()))
                    .map_err(|e| anyhow!("demo contact data: {}", e.message))?;
                Ok((p.email, patch))
            })
            .collect::<anyhow::Result<_>>()?;
        let per_day = n.div_ceil(DAYS as usize).max(1);
        for (day, chunk) in people.chunks(per_day).enumerate() {
            let at = day_start(now, DAYS - 1 - day as i64) + 9 * 3_600_000;
            let rows: Vec<BatchRow> = chunk
                .iter()
                .enumerate()
                .map(|(j, (email, patch))| {
                    // One in twelve unsubscribed.
                    let subscribed = !(day * per_day + j).is_multiple_of(12);
                    BatchRow::new(project, email, Some(subscribed), subscribed, patch)
                })
                .collect::<Result<_, _>>()?;
            let mut tx = self.services.store.begin().await?;
            upsert_batch(&mut tx, project, &rows, at)
                .await
                .context("importing the demo contacts")?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// [`EVENTS_PER_DAY`] tracked events on each of the last [`DAYS`] days (page views,
    /// logins, purchases), through `/v1/track`'s engine function under the demo's clock set
    /// to each day; returns how many.
    async fn events(&self, project: Uuid, n: usize, now: Millis) -> anyhow::Result<usize> {
        let mut count = 0;
        let mut rng = Lcg(0x5eed_cafe);
        for days_ago in (0..DAYS).rev() {
            let mut plans = Vec::with_capacity(EVENTS_PER_DAY);
            // Only contacts that had signed up by that day.
            let per_day = n.div_ceil(DAYS as usize).max(1);
            let existing = (((DAYS - days_ago) as usize) * per_day).min(n);
            for _ in 0..EVENTS_PER_DAY {
                let person = Person::new(rng.below(existing), n, now);
                let email = EmailAddress::parse(&person.email)
                    .map_err(|e| anyhow!("demo address {}: {e}", person.email))?;
                let (event, data) = match rng.below(10) {
                    0..=5 => (
                        "page.viewed",
                        json!({"path": {"value": PAGES[rng.below(PAGES.len())], "persistent": false}}),
                    ),
                    6..=8 => ("login", json!({})),
                    _ => (
                        "purchase",
                        json!({"amount": {"value": 9 + rng.below(191), "persistent": false}}),
                    ),
                };
                plans.push(TrackPlan {
                    project_id: project,
                    email,
                    event: event.to_owned(),
                    subscribed: None,
                    data: DataPatch::parse(Some(&data))
                        .map_err(|e| anyhow!("demo event data: {}", e.message))?,
                    idempotency_key: None,
                });
            }
            // Never later than now: today's events are spread over the hours already past.
            let start = day_start(now, days_ago);
            let at = (start + 14 * 3_600_000).min(now - 60_000).max(start);
            self.clock.set(at);
            let answers = self.services.engine.track_batch(plans).await;
            self.clock.set(SystemClock.now());
            for answer in answers {
                answer.map_err(|e| anyhow!("tracking a demo event: {e}"))?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// The newsletter sent [`CAMPAIGN_DAYS_AGO`] days ago to the segment, recorded as history,
    /// with about 45 % opens and 12 % clicks over the two days after; returns the recipients,
    /// opens and clicks.
    async fn campaign(
        &self,
        api: &Api,
        project: Uuid,
        from: &str,
        segment: &str,
        now: Millis,
    ) -> anyhow::Result<(usize, usize, usize)> {
        let created = api
            .call(
                Method::POST,
                "/campaigns",
                json!({
                    "name": "Product update: November",
                    "description": "What shipped this month, for paid plans",
                    "subject": NEWSLETTER_SUBJECT,
                    "body": NEWSLETTER_BODY,
                    "from": from,
                    "fromName": "Herald Demo",
                    "audienceType": "SEGMENT",
                    "segmentId": segment,
                }),
            )
            .await?;
        let campaign: Uuid = id_of(&created)?
            .parse()
            .context("the campaign id is not a UUID")?;
        let sent_at = day_start(now, CAMPAIGN_DAYS_AGO) + 10 * 3_600_000;
        let sent = self
            .services
            .engine
            .record_campaign_history(project, campaign, sent_at, 4 * 60_000)
            .await
            .context("recording the demo campaign as sent")?;
        let mut rng = Lcg(0x0b5e_55ed);
        let (mut opens, mut clicks) = (0, 0);
        let mut tx = self.services.store.begin().await?;
        for m in &sent {
            let roll = rng.below(100);
            // Most opens come in the first hours, the rest over two days.
            let at = sent_at + 60_000 + (rng.below(48 * 60) as i64).pow(2) / (48 * 60) * 60_000;
            if roll < 12 {
                let url = "https://example.com/changelog";
                if click_in(&mut tx, project, m.message_id, url, at)
                    .await?
                    .clicked
                {
                    clicks += 1;
                    opens += 1;
                }
            } else if roll < 45 && open_in(&mut tx, project, m.message_id, at).await? {
                opens += 1;
            }
        }
        tx.commit().await?;
        Ok((sent.len(), opens, clicks))
    }
}

const NEWSLETTER_SUBJECT: &str = "What's new at Acme this month";
const NEWSLETTER_BODY: &str = "<h1>Hi {{firstName ?? \"there\"}},</h1>\
    <p>Here is what shipped for {{company ?? \"your team\"}} this month.</p>\
    <p><a href=\"https://example.com/changelog\">Read the changelog</a></p>";

/// The welcome template (transactional, returned) and the newsletter (marketing).
async fn templates(api: &Api, from: &str) -> anyhow::Result<Value> {
    let welcome = api
        .call(
            Method::POST,
            "/templates",
            json!({
                "name": "Welcome",
                "subject": "Welcome to Acme, {{firstName ?? \"friend\"}}",
                "body": "<h1>Welcome, {{firstName ?? \"friend\"}}!</h1>\
                    <p>Your {{plan ?? \"free\"}} plan is ready. Reply to this mail if you need a hand.</p>",
                "type": "TRANSACTIONAL",
                "from": from,
                "fromName": "Herald Demo",
            }),
        )
        .await?;
    api.call(
        Method::POST,
        "/templates",
        json!({
            "name": "Monthly newsletter",
            "subject": NEWSLETTER_SUBJECT,
            "body": NEWSLETTER_BODY,
            "type": "MARKETING",
            "from": from,
            "fromName": "Herald Demo",
        }),
    )
    .await?;
    Ok(data_of(welcome))
}

/// "Welcome series", enabled: on `signup`, send the welcome template, wait a day.
async fn workflow(api: &Api, welcome: &Value) -> anyhow::Result<()> {
    let created = api
        .call(
            Method::POST,
            "/workflows",
            json!({"name": "Welcome series", "triggerConfig": {"eventName": "signup"}}),
        )
        .await?;
    let wf = data_of(created);
    let id = id_of(&wf)?;
    let trigger = wf["steps"][0]["id"].clone();
    let send = data_of(
        api.call(
            Method::POST,
            &format!("/workflows/{id}/steps"),
            json!({"type": "SEND_EMAIL", "name": "Send welcome", "config": {"templateId": welcome["id"]}}),
        )
        .await?,
    );
    let wait = data_of(
        api.call(
            Method::POST,
            &format!("/workflows/{id}/steps"),
            json!({"type": "DELAY", "name": "Wait a day", "config": {"amount": 1, "unit": "days"}}),
        )
        .await?,
    );
    for (from, to) in [(&trigger, &send["id"]), (&send["id"], &wait["id"])] {
        api.call(
            Method::POST,
            &format!("/workflows/{id}/transitions"),
            json!({"fromStepId": from, "toStepId": to}),
        )
        .await?;
    }
    api.call(
        Method::PATCH,
        &format!("/workflows/{id}"),
        json!({"enabled": true}),
    )
    .await?;
    Ok(())
}

/// The REST API's router, called in process with the project's secret key.
struct Api {
    router: axum::Router,
    key: String,
}

impl Api {
    async fn call(&self, method: Method, path: &str, body: Value) -> anyhow::Result<Value> {
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.key))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&body)?))
            .context("building a request")?;
        let response = match self.router.clone().oneshot(request).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
            .await
            .with_context(|| format!("reading the answer of {method} {path}"))?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{method} {path} answered {status}: {value}");
        }
        Ok(value)
    }
}

/// A resource from an answer (`{data: ...}` or the resource itself).
fn data_of(v: Value) -> Value {
    match v.get("data") {
        Some(d) if d.is_object() => d.clone(),
        _ => v,
    }
}

fn id_of(v: &Value) -> anyhow::Result<String> {
    let v = data_of(v.clone());
    v["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no id in {v}"))
}

fn api_error(e: ApiError) -> anyhow::Error {
    let fields: Vec<String> = e
        .errors
        .iter()
        .map(|f| format!("{}: {}", f.field, f.message))
        .collect();
    if fields.is_empty() {
        anyhow!("{} ({})", e.message, e.code)
    } else {
        anyhow!("{} ({}): {}", e.message, e.code, fields.join("; "))
    }
}

/// `12,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Midnight UTC `days_ago` days before `now`'s day.
fn day_start(now: Millis, days_ago: i64) -> Millis {
    (now.div_euclid(DAY_MS) - days_ago) * DAY_MS
}

fn generate_password() -> String {
    use rand::Rng as _;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    (0..16)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// A small deterministic generator: the same demo data on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

const FIRST: &[&str] = &[
    "Ada",
    "Alan",
    "Grace",
    "Linus",
    "Margaret",
    "Dennis",
    "Barbara",
    "Ken",
    "Frances",
    "Edsger",
    "Radia",
    "Tim",
    "Hedy",
    "John",
    "Katherine",
    "Donald",
    "Sophie",
    "Guido",
    "Anita",
    "Niklaus",
    "Joan",
    "Bjarne",
    "Karen",
    "Leslie",
    "Mary",
    "Vint",
    "Shafi",
    "Ward",
    "Adele",
    "Brian",
];
const LAST: &[&str] = &[
    "Lovelace",
    "Turing",
    "Hopper",
    "Torvalds",
    "Hamilton",
    "Ritchie",
    "Liskov",
    "Thompson",
    "Allen",
    "Dijkstra",
    "Perlman",
    "Berners-Lee",
    "Lamarr",
    "McCarthy",
    "Johnson",
    "Knuth",
    "Wilson",
    "van Rossum",
    "Borg",
    "Wirth",
    "Clarke",
    "Stroustrup",
    "Jones",
    "Lamport",
    "Keller",
    "Cerf",
    "Goldwasser",
    "Cunningham",
    "Goldberg",
    "Kernighan",
];
const COMPANIES: &[&str] = &[
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Stark Industries",
    "Wayne Enterprises",
    "Vandelay",
    "Soylent",
    "Tyrell",
    "Cyberdyne",
    "Wonka",
    "Oscorp",
    "Aperture",
    "Black Mesa",
    "Monsters Inc",
    "Pied Piper",
    "Dunder Mifflin",
    "Gringotts",
    "Nakatomi",
];
const PAGES: &[&str] = &["/", "/pricing", "/docs", "/changelog", "/blog", "/settings"];
const DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];

/// The `i`th of `n` demo contacts: always the same for the same `i`.
struct Person {
    email: String,
    first: &'static str,
    last: &'static str,
    company: &'static str,
    plan: &'static str,
    signed_up: String,
    logins: usize,
    beta: bool,
}

impl Person {
    fn new(i: usize, n: usize, now: Millis) -> Person {
        let mut rng = Lcg(i as u64 ^ 0x9e37_79b9_7f4a_7c15);
        let first = FIRST[rng.below(FIRST.len())];
        let last = LAST[rng.below(LAST.len())];
        let local = format!("{first}.{last}").to_lowercase().replace(' ', "");
        let plan = match rng.below(100) {
            0..=59 => "free",
            60..=89 => "pro",
            _ => "enterprise",
        };
        // The day of the batch that creates it (contacts are created oldest first).
        let per_day = n.div_ceil(DAYS as usize).max(1);
        let days_ago = DAYS - 1 - (i / per_day) as i64;
        let signed_up = chrono::DateTime::from_timestamp_millis(day_start(now, days_ago))
            .map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_default();
        Person {
            email: format!("{local}.{i}@{}", DOMAINS[i % DOMAINS.len()]),
            first,
            last,
            company: COMPANIES[rng.below(COMPANIES.len())],
            plan,
            signed_up,
            logins: rng.below(120),
            beta: rng.below(5) == 0,
        }
    }

    fn data(&self) -> Value {
        json!({
            "firstName": self.first,
            "lastName": self.last,
            "company": self.company,
            "plan": self.plan,
            "signedUpAt": self.signed_up,
            "logins": self.logins,
            "betaTester": self.beta,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_print_with_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn a_person_is_the_same_on_every_run_and_signed_up_on_its_batch_day() {
        let now = 1_790_000_000_000;
        let (a, b) = (Person::new(7, 300, now), Person::new(7, 300, now));
        assert_eq!(a.email, b.email);
        assert_eq!(a.data(), b.data());
        assert!(herald_core::fields::is_date(&a.signed_up));
        // The first batch signed up DAYS - 1 days ago, the last one today.
        let first = Person::new(0, 300, now).signed_up;
        let last = Person::new(299, 300, now).signed_up;
        assert!(first < last, "{first} {last}");
    }
}
