//! OAuth sign-in against a loopback stand-in for GitHub and Google (`oauth_provider.rs`): the
//! redirect, the state's checks, the code exchange, and which user signs in (new, linked by
//! email to a verified account, taking over an unverified one, or found by identity).

use std::time::Duration;

use herald_store::accounts::User;
use reqwest::{Client, Response};
use serde_json::{Value, json};

use crate::account_setup::{PASSWORD, login, post_json};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::oauth_provider::{StandIn, form_pairs, github_emails, google_user};

both_engines!(
    oauth_config_lists_no_provider_by_default,
    oauth_config_lists_the_configured_providers,
    github_sign_in_creates_a_user_and_finds_the_identity_again,
    google_sign_in_links_a_verified_account_and_keeps_its_password,
    google_sign_in_takes_over_an_unverified_password_account,
    an_oauth_user_has_no_password_until_a_reset_sets_one,
    a_tampered_expired_or_foreign_state_is_refused,
    provider_failures_answer_clean_errors,
    an_unverified_email_is_refused,
    disabled_signups_refuse_new_users_but_let_existing_ones_in,
    oauth_sign_up_honours_invitations,
    oauth_routes_are_rate_limited_per_client,
);

/// A provider with a client id and no secret stops startup with a message naming the setting.
#[tokio::test]
async fn a_client_id_without_its_secret_stops_startup() {
    let dir = tempfile::tempdir().unwrap();
    let config = herald::Config {
        listen: "127.0.0.1:0".into(),
        data_dir: dir.path().to_path_buf(),
        oauth_google_client_id: Some("only-the-id".into()),
        ..herald::Config::default()
    }
    .resolved();
    let err = match herald::Application::build(config).await {
        Ok(_) => panic!("a half-configured provider must not start"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("oauth_google_client_secret"), "{err}");
}

/// A client that follows no redirect and keeps no cookies (the tests carry them by hand).
fn manual() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn app_with_providers(engine: Engine) -> (TestApp, StandIn) {
    let stand_in = StandIn::start().await;
    let app = engine.app_with(|c| stand_in.configure(c)).await;
    (app, stand_in)
}

/// The value of cookie `name` set by `res`.
fn set_cookie(res: &Response, name: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            let pair = c.split(';').next()?;
            let (n, v) = pair.split_once('=')?;
            (n == name).then(|| v.to_owned())
        })
}

/// A started flow: the authorize URL's parameters and the state cookie.
struct Started {
    location: String,
    params: Vec<(String, String)>,
    nonce: String,
}

impl Started {
    fn param(&self, name: &str) -> String {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {}", self.location))
    }
}

async fn start(app: &TestApp, provider: &str) -> Started {
    let res = manual()
        .get(app.url(&format!("/auth/oauth/{provider}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        302,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("herald_oauth_state="))
        .expect("the state cookie");
    for attr in [
        "HttpOnly",
        "SameSite=Lax",
        "Path=/auth/oauth",
        "Max-Age=600",
    ] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    let nonce = set_cookie(&res, "herald_oauth_state").unwrap();
    let query = location.split_once('?').unwrap().1.to_owned();
    Started {
        params: form_pairs(&query),
        location,
        nonce,
    }
}

/// Calls the callback as the browser would, with `cookie` as the state cookie.
async fn callback(app: &TestApp, provider: &str, query: &str, nonce: Option<&str>) -> Response {
    let mut req = manual().get(app.url(&format!("/auth/oauth/{provider}/callback?{query}")));
    if let Some(n) = nonce {
        req = req.header("cookie", format!("herald_oauth_state={n}"));
    }
    req.send().await.unwrap()
}

fn query(state: &str, code: &str) -> String {
    format!("code={code}&state={}", state.replace('=', "%3D"))
}

/// A started flow's callback with `code`, from the browser that started it.
async fn finish(app: &TestApp, provider: &str, s: &Started, code: &str) -> Response {
    callback(
        app,
        provider,
        &query(&s.param("state"), code),
        Some(&s.nonce),
    )
    .await
}

/// No user has `email`.
async fn no_user(app: &TestApp, email: &str) {
    let found = app.store.user_by_email(email).await.unwrap();
    assert!(found.is_none(), "{email}");
}

/// The whole flow; returns the session cookie.
async fn sign_in(app: &TestApp, provider: &str) -> String {
    let s = start(app, provider).await;
    let res = finish(app, provider, &s, "the-code").await;
    assert_eq!(
        res.status(),
        302,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert_eq!(
        res.headers()["location"],
        format!("{}/", app.config.public_url).as_str()
    );
    set_cookie(&res, "herald_session").expect("the session cookie")
}

async fn me(app: &TestApp, session: &str) -> Value {
    let res = manual()
        .get(app.url("/users/@me"))
        .header("cookie", format!("herald_session={session}"))
        .send()
        .await
        .unwrap();
    expect_json(res, 200).await
}

async fn oauth_config_lists_no_provider_by_default(engine: Engine) {
    let app = engine.app().await;
    let body = expect_json(
        app.client
            .get(app.url("/auth/oauth-config"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(body, json!({"providers": []}));
    let config = expect_json(
        app.client.get(app.url("/config")).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(config["oauthProviders"], json!([]));
    let res = manual()
        .get(app.url("/auth/oauth/github"))
        .send()
        .await
        .unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
}

async fn oauth_config_lists_the_configured_providers(engine: Engine) {
    let (app, _p) = app_with_providers(engine).await;
    let body = expect_json(
        app.client
            .get(app.url("/auth/oauth-config"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        body,
        json!({"providers": [
            {"id": "github", "name": "GitHub", "authorizeUrl": "/auth/oauth/github"},
            {"id": "google", "name": "Google", "authorizeUrl": "/auth/oauth/google"},
        ]})
    );
    let config = expect_json(
        app.client.get(app.url("/config")).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(config["oauthProviders"], json!(["github", "google"]));
    // Only GitHub configured: Google is not found.
    let stand_in = StandIn::start().await;
    let only_github = engine
        .app_with(|c| {
            stand_in.configure(c);
            c.oauth_google_client_id = None;
            c.oauth_google_client_secret = None;
        })
        .await;
    let body = expect_json(
        only_github
            .client
            .get(only_github.url("/auth/oauth-config"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(body["providers"].as_array().unwrap().len(), 1, "{body}");
    let res = manual()
        .get(only_github.url("/auth/oauth/google"))
        .send()
        .await
        .unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
    let res = manual()
        .get(only_github.url("/auth/oauth/gitlab"))
        .send()
        .await
        .unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
}

async fn github_sign_in_creates_a_user_and_finds_the_identity_again(engine: Engine) {
    let (app, p) = app_with_providers(engine).await;
    let s = start(&app, "github").await;
    assert!(
        s.location
            .starts_with(&format!("{}/github/authorize?", p.base)),
        "{}",
        s.location
    );
    assert_eq!(s.param("client_id"), "gh-client");
    assert_eq!(s.param("response_type"), "code");
    assert_eq!(s.param("scope"), "read:user user:email");
    let redirect_uri = format!("{}/auth/oauth/github/callback", app.config.public_url);
    assert_eq!(s.param("redirect_uri"), redirect_uri);
    assert!(
        s.param("state").contains(&s.nonce),
        "the state carries the cookie's nonce"
    );

    // A stale session cookie in the browser does not get in the way.
    let res = manual()
        .get(app.url(&format!(
            "/auth/oauth/github/callback?{}",
            query(&s.param("state"), "code-1")
        )))
        .header(
            "cookie",
            format!("herald_session=stale; herald_oauth_state={}", s.nonce),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let session = set_cookie(&res, "herald_session").expect("session");
    assert_eq!(
        set_cookie(&res, "herald_oauth_state").as_deref(),
        Some(""),
        "state cookie cleared"
    );
    let user = me(&app, &session).await;
    assert_eq!(user["email"], "octo@example.com");

    // What the provider received: the code exchange, then the user and the emails.
    let token = &p.received("/github/token")[0];
    assert_eq!(token.form("code").as_deref(), Some("code-1"));
    assert_eq!(token.form("client_id").as_deref(), Some("gh-client"));
    assert_eq!(token.form("client_secret").as_deref(), Some("gh-secret"));
    assert_eq!(token.form("redirect_uri"), Some(redirect_uri));
    assert_eq!(
        token.form("grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(token.accept.as_deref(), Some("application/json"));
    for path in ["/github/api/user", "/github/api/user/emails"] {
        let r = &p.received(path)[0];
        assert_eq!(r.authorization.as_deref(), Some("Bearer at-123"), "{path}");
    }
    let stored = app
        .store
        .user_by_email("octo@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(
        stored.email_verified_at.is_some(),
        "the provider verified the address"
    );
    assert!(!stored.has_password());

    // The same GitHub account with another primary address: the identity, not the email, decides.
    p.set(|a| a.github_emails = github_emails("renamed@example.com", true));
    let again = sign_in(&app, "github").await;
    assert_ne!(again, session);
    assert_eq!(me(&app, &again).await["id"], user["id"]);
    no_user(&app, "renamed@example.com").await;
}

/// A verified account is its address's owner: the identity links to it, its password and
/// sessions stay.
async fn google_sign_in_links_a_verified_account_and_keeps_its_password(engine: Engine) {
    let (app, p) = app_with_providers(engine).await;
    let c = app.signup("gina@example.com").await;
    let before = expect_json(
        app.call_with(&c, reqwest::Method::GET, "/users/@me", None, None)
            .await,
        200,
    )
    .await;
    let token = crate::account_setup::wait_mails(&app, "gina@example.com", "Verify", 1).await[0]
        .token("verify-email?token");
    expect_json(
        post_json(&app, &c, "/auth/verify-email", json!({"token": token})).await,
        200,
    )
    .await;

    let s = start(&app, "google").await;
    assert!(s.location.starts_with(&format!("{}/google/auth?", p.base)));
    assert_eq!(s.param("scope"), "openid email");
    assert_eq!(s.param("client_id"), "google-client");
    let res = finish(&app, "google", &s, "g-code").await;
    assert_eq!(res.status(), 302);
    let session = set_cookie(&res, "herald_session").unwrap();
    assert_eq!(
        me(&app, &session).await["id"],
        before["id"],
        "linked, not a new user"
    );
    let token = &p.received("/google/token")[0];
    assert_eq!(
        token.form("client_secret").as_deref(),
        Some("google-secret")
    );
    assert_eq!(
        p.received("/google/userinfo")[0].authorization.as_deref(),
        Some("Bearer at-123")
    );
    // The password and the earlier session still work, and the identity now finds the user
    // even with a new address.
    let (_, res) = login(&app, "gina@example.com", PASSWORD).await;
    assert_eq!(res.status(), 200);
    assert_eq!(crate::account_setup::me_status(&app, &c).await, 200);
    p.set(|a| a.google_user = google_user("g-sub-1", "gina.new@example.com", true));
    assert_eq!(
        me(&app, &sign_in(&app, "google").await).await["id"],
        before["id"]
    );
}

/// Anybody can sign up with an address they do not own. When the address's owner signs in
/// with a provider that verified it, the account becomes theirs alone: the password that was
/// set without proof no longer signs in, the sessions opened with it end, and invitations to
/// the address (which the unproven sign-up did not join) are joined.
async fn google_sign_in_takes_over_an_unverified_password_account(engine: Engine) {
    let (app, _p) = app_with_providers(engine).await;
    let project = app.project().await;
    expect_json(
        app.call_with(
            &project.owner,
            reqwest::Method::POST,
            &format!("/projects/{}/members", project.id),
            None,
            Some(&json!({"email": "gina@example.com", "role": "ADMIN"})),
        )
        .await,
        202,
    )
    .await;
    let squatter = app.signup("gina@example.com").await;
    let squatted = expect_json(
        app.call_with(
            &squatter,
            reqwest::Method::GET,
            "/users/@me/projects",
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(squatted, json!([]), "an unproven sign-up joins nothing");
    let before = app
        .store
        .user_by_email("gina@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(before.email_verified_at.is_none());

    let session = sign_in(&app, "google").await;
    let user = me(&app, &session).await;
    assert_eq!(user["id"], before.id.to_string(), "the same account");
    let (_, res) = login(&app, "gina@example.com", PASSWORD).await;
    expect_error(res, 401, "INVALID_CREDENTIALS").await;
    assert_eq!(
        crate::account_setup::me_status(&app, &squatter).await,
        401,
        "the squatter's session ended"
    );
    let after = app
        .store
        .user_by_email("gina@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(!after.has_password());
    assert!(after.email_verified_at.is_some());
    let res = manual()
        .get(app.url("/users/@me/projects"))
        .header("cookie", format!("herald_session={session}"))
        .send()
        .await
        .unwrap();
    let projects = expect_json(res, 200).await;
    assert_eq!(projects[0]["id"], project.id.as_str(), "{projects}");
    assert_eq!(projects[0]["role"], "ADMIN");
}

async fn an_oauth_user_has_no_password_until_a_reset_sets_one(engine: Engine) {
    let (app, _p) = app_with_providers(engine).await;
    sign_in(&app, "github").await;
    let (_, res) = login(&app, "octo@example.com", "").await;
    expect_error(res, 401, "INVALID_CREDENTIALS").await;
    let (_, res) = login(&app, "octo@example.com", "any password at all").await;
    expect_error(res, 401, "INVALID_CREDENTIALS").await;
    let c = manual();
    expect_json(
        post_json(
            &app,
            &c,
            "/auth/request-password-reset",
            json!({"email": "octo@example.com"}),
        )
        .await,
        200,
    )
    .await;
    let token = crate::account_setup::wait_mails(&app, "octo@example.com", "Reset", 1).await[0]
        .token("reset-password?token");
    expect_json(
        post_json(
            &app,
            &c,
            "/auth/reset-password",
            json!({"token": token, "password": PASSWORD}),
        )
        .await,
        200,
    )
    .await;
    let (_, res) = login(&app, "octo@example.com", PASSWORD).await;
    assert_eq!(res.status(), 200);
}

async fn a_tampered_expired_or_foreign_state_is_refused(engine: Engine) {
    let (app, p) = app_with_providers(engine).await;
    let s = start(&app, "github").await;
    let state = s.param("state");
    // Another browser: no state cookie, or another one's.
    let res = callback(&app, "github", &query(&state, "c"), None).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    let other = start(&app, "github").await;
    let res = callback(&app, "github", &query(&state, "c"), Some(&other.nonce)).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    // Tampered: a longer life, the signature unchanged.
    let mut parts: Vec<&str> = state.split('.').collect();
    let later = format!("{}9", parts[2]);
    parts[2] = &later;
    let res = callback(
        &app,
        "github",
        &query(&parts.join("."), "c"),
        Some(&s.nonce),
    )
    .await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    // GitHub's state on Google's callback; no state at all.
    let res = callback(&app, "google", &query(&state, "c"), Some(&s.nonce)).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    let res = callback(&app, "github", "code=c", Some(&s.nonce)).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    // Expired after 10 minutes.
    app.clock.advance(Duration::from_secs(601));
    let res = callback(&app, "github", &query(&state, "c"), Some(&s.nonce)).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
    assert!(
        p.received("/github/token").is_empty(),
        "no refused state reached the provider"
    );
    // A fresh start still works.
    sign_in(&app, "github").await;
}

async fn provider_failures_answer_clean_errors(engine: Engine) {
    let (app, p) = app_with_providers(engine).await;
    // The user declined at the provider.
    let s = start(&app, "github").await;
    let q = format!("error=access_denied&state={}", s.param("state"));
    let res = callback(&app, "github", &q, Some(&s.nonce)).await;
    expect_error(res, 400, "OAUTH_ACCESS_DENIED").await;
    // The token endpoint fails.
    p.set(|a| a.token_status = 500);
    let s = start(&app, "google").await;
    let res = finish(&app, "google", &s, "c").await;
    let body = expect_error(res, 502, "OAUTH_PROVIDER_ERROR").await;
    assert!(
        !body.to_string().contains("stand-in"),
        "the provider's body is not echoed: {body}"
    );
    // A state without a code.
    p.set(|a| a.token_status = 200);
    let s = start(&app, "github").await;
    let q = format!("state={}", s.param("state"));
    let res = callback(&app, "github", &q, Some(&s.nonce)).await;
    expect_error(res, 400, "BAD_REQUEST").await;
    // An unreachable provider: a clean error, not a 500.
    let stand_in = StandIn::start().await;
    let dead = engine
        .app_with(|c| {
            stand_in.configure(c);
            c.oauth_github_token_url = "http://127.0.0.1:9/token".into();
        })
        .await;
    let s = start(&dead, "github").await;
    let res = callback(
        &dead,
        "github",
        &query(&s.param("state"), "c"),
        Some(&s.nonce),
    )
    .await;
    expect_error(res, 502, "OAUTH_PROVIDER_ERROR").await;
}

async fn an_unverified_email_is_refused(engine: Engine) {
    let (app, p) = app_with_providers(engine).await;
    p.set(|a| {
        a.github_emails = github_emails("unverified@example.com", false);
        a.google_user = google_user("g-2", "unverified@example.com", false);
    });
    for provider in ["github", "google"] {
        let s = start(&app, provider).await;
        let res = finish(&app, provider, &s, "c").await;
        expect_error(res, 403, "OAUTH_EMAIL_NOT_VERIFIED").await;
    }
    no_user(&app, "unverified@example.com").await;
}

async fn disabled_signups_refuse_new_users_but_let_existing_ones_in(engine: Engine) {
    let stand_in = StandIn::start().await;
    let app = engine
        .app_with(|c| {
            stand_in.configure(c);
            c.disable_signups = true;
        })
        .await;
    let s = start(&app, "github").await;
    let res = finish(&app, "github", &s, "c").await;
    expect_error(res, 403, "FORBIDDEN").await;
    no_user(&app, "octo@example.com").await;
    let existing = User {
        id: herald_core::ids::new_id(),
        email: "octo@example.com".into(),
        password_hash: User::NO_PASSWORD.into(),
        created_at: 1,
        email_verified_at: None,
    };
    app.store.create_user(&existing).await.unwrap();
    let session = sign_in(&app, "github").await;
    assert_eq!(me(&app, &session).await["id"], existing.id.to_string());
}

async fn oauth_sign_up_honours_invitations(engine: Engine) {
    let (app, _p) = app_with_providers(engine).await;
    let project = app.project().await;
    expect_json(
        app.call_with(
            &project.owner,
            reqwest::Method::POST,
            &format!("/projects/{}/members", project.id),
            None,
            Some(&json!({"email": "octo@example.com", "role": "MEMBER"})),
        )
        .await,
        202,
    )
    .await;
    let session = sign_in(&app, "github").await;
    let res = manual()
        .get(app.url("/users/@me/projects"))
        .header("cookie", format!("herald_session={session}"))
        .send()
        .await
        .unwrap();
    let projects = expect_json(res, 200).await;
    assert_eq!(projects[0]["id"], project.id.as_str(), "{projects}");
    assert_eq!(projects[0]["role"], "MEMBER");
}

async fn oauth_routes_are_rate_limited_per_client(engine: Engine) {
    let stand_in = StandIn::start().await;
    let app = engine
        .app_with(|c| {
            stand_in.configure(c);
            c.auth_rate_limit_per_minute = 2;
        })
        .await;
    for _ in 0..2 {
        start(&app, "github").await;
    }
    let res = manual()
        .get(app.url("/auth/oauth/github"))
        .send()
        .await
        .unwrap();
    expect_error(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // The callback has its own count.
    let res = callback(&app, "github", "code=c&state=x", None).await;
    expect_error(res, 400, "OAUTH_STATE_INVALID").await;
}
