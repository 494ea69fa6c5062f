//! Accounts over HTTP: sign-up, sign-in, the session cookie, projects and their keys, and how
//! keys and sessions reach the dashboard endpoints.

use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, error_fields, expect_error, expect_json};

both_engines!(
    signup_creates_the_user_and_signs_it_in,
    signup_validates_email_and_password,
    signup_refuses_a_taken_email,
    the_cookie_is_secure_when_the_public_url_is_https,
    signups_can_be_disabled,
    config_needs_no_auth_and_shows_signups_enabled,
    login_failures_look_the_same_for_unknown_email_and_wrong_password,
    login_sets_the_session_cookie,
    logout_clears_the_session_cookie,
    passwords_are_stored_as_argon2id,
    creating_a_project_shows_both_keys_once,
    listing_projects_never_shows_the_secret_key,
    regenerating_keys_revokes_both_old_keys_at_once,
    a_public_key_cannot_call_dashboard_endpoints,
    a_session_with_x_project_id_reaches_contacts,
    a_session_without_x_project_id_is_a_bad_request,
    a_session_cannot_reach_another_users_project,
    projects_can_be_renamed_and_configured,
    another_users_project_is_not_found_on_management,
    deleting_a_project_revokes_its_keys,
    account_endpoints_refuse_api_keys,
    account_routes_ignore_a_stale_x_project_id,
);

const PASSWORD: &str = "correct horse battery";

async fn signup_raw(app: &TestApp, client: &Client, email: &str, password: &str) -> Response {
    app.call_with(
        client,
        Method::POST,
        "/auth/signup",
        None,
        Some(&json!({"email": email, "password": password})),
    )
    .await
}

async fn login_raw(app: &TestApp, client: &Client, email: &str, password: &str) -> Response {
    app.call_with(
        client,
        Method::POST,
        "/auth/login",
        None,
        Some(&json!({"email": email, "password": password})),
    )
    .await
}

fn set_cookie(res: &Response) -> String {
    res.headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a Set-Cookie header")
        .to_owned()
}

/// A request of a signed-in client (no bearer key).
async fn session_call(
    app: &TestApp,
    client: &Client,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    app.call_with(client, method, path, None, body).await
}

/// A request of a signed-in client to a project's dashboard endpoint.
async fn with_project(
    client: &Client,
    app: &TestApp,
    method: Method,
    path: &str,
    project: &str,
) -> Response {
    client
        .request(method, app.url(path))
        .header("x-project-id", project)
        .send()
        .await
        .unwrap()
}

async fn signup_creates_the_user_and_signs_it_in(engine: Engine) {
    let app = engine.app().await;
    let client = cookie_client();
    let res = signup_raw(&app, &client, " New.User@Example.COM ", PASSWORD).await;
    let cookie = set_cookie(&res);
    let user = expect_json(res, 201).await;
    assert_eq!(user["email"], "new.user@example.com");
    assert!(
        uuid::Uuid::parse_str(user["id"].as_str().unwrap()).is_ok(),
        "{user}"
    );
    assert!(user["createdAt"].as_str().unwrap().ends_with('Z'), "{user}");
    assert!(
        user.get("password").is_none() && user.get("passwordHash").is_none(),
        "{user}"
    );
    assert!(cookie.starts_with("herald_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(
        !cookie.contains("Secure"),
        "not Secure over plain http: {cookie}"
    );

    let me = expect_json(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        200,
    )
    .await;
    assert_eq!(me, user);
    // Without the cookie there is nobody signed in.
    expect_error(
        app.call(Method::GET, "/users/@me", None, None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
}

async fn signup_validates_email_and_password(engine: Engine) {
    let app = engine.app().await;
    let client = cookie_client();
    let err = expect_error(
        signup_raw(&app, &client, "not-an-email", PASSWORD).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["email"]);
    let err = expect_error(
        signup_raw(&app, &client, "ok@example.com", "short").await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["password"]);
    let err = expect_error(
        signup_raw(&app, &client, "bad", "short").await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["email", "password"]);
    let long = "x".repeat(257);
    let err = expect_error(
        signup_raw(&app, &client, "ok@example.com", &long).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["password"]);
    let res = app
        .call_with(
            &client,
            Method::POST,
            "/auth/signup",
            None,
            Some(&json!({})),
        )
        .await;
    let err = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&err), vec!["email", "password"]);
    assert!(
        app.store
            .user_by_email("ok@example.com")
            .await
            .unwrap()
            .is_none(),
        "nothing was stored"
    );
    expect_error(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
}

async fn the_cookie_is_secure_when_the_public_url_is_https(engine: Engine) {
    let app = engine
        .app_with(|c| c.public_url = "https://mail.example.com".into())
        .await;
    let res = signup_raw(&app, &cookie_client(), "secure@example.com", PASSWORD).await;
    let cookie = set_cookie(&res);
    expect_json(res, 201).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let res = login_raw(&app, &cookie_client(), "secure@example.com", PASSWORD).await;
    assert!(set_cookie(&res).contains("; Secure"));
}

async fn signup_refuses_a_taken_email(engine: Engine) {
    let app = engine.app().await;
    app.signup("taken@example.com").await;
    let res = signup_raw(
        &app,
        &cookie_client(),
        "TAKEN@example.com",
        "another password",
    )
    .await;
    expect_error(res, 409, "CONFLICT").await;
    // The first account still signs in with its own password.
    expect_json(
        login_raw(&app, &cookie_client(), "taken@example.com", PASSWORD).await,
        200,
    )
    .await;
}

async fn signups_can_be_disabled(engine: Engine) {
    let app = engine.app_with(|c| c.disable_signups = true).await;
    let res = signup_raw(&app, &cookie_client(), "someone@example.com", PASSWORD).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert!(
        app.store
            .user_by_email("someone@example.com")
            .await
            .unwrap()
            .is_none()
    );
    let config = expect_json(app.call(Method::GET, "/config", None, None).await, 200).await;
    assert_eq!(config["signupsEnabled"], false, "{config}");
}

async fn config_needs_no_auth_and_shows_signups_enabled(engine: Engine) {
    let app = engine.app().await;
    let config = expect_json(app.call(Method::GET, "/config", None, None).await, 200).await;
    assert_eq!(config["signupsEnabled"], true, "{config}");
    // A garbage key does not matter on the one unauthenticated endpoint.
    let config = expect_json(app.get("/config", "garbage").await, 200).await;
    assert_eq!(config["signupsEnabled"], true, "{config}");
}

async fn login_failures_look_the_same_for_unknown_email_and_wrong_password(engine: Engine) {
    let app = engine.app().await;
    app.signup("known@example.com").await;
    let client = cookie_client();
    let wrong = login_raw(&app, &client, "known@example.com", "wrong password").await;
    assert!(wrong.headers().get("set-cookie").is_none());
    let wrong = expect_error(wrong, 401, "INVALID_CREDENTIALS").await;
    let unknown = login_raw(&app, &client, "unknown@example.com", "wrong password").await;
    assert!(unknown.headers().get("set-cookie").is_none());
    let unknown = expect_error(unknown, 401, "INVALID_CREDENTIALS").await;
    assert_eq!(wrong["error"]["message"], unknown["error"]["message"]);
    assert_eq!(
        wrong["error"].get("suggestion"),
        unknown["error"].get("suggestion")
    );
    assert_eq!(wrong["message"], unknown["message"]);
    expect_error(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
}

async fn login_sets_the_session_cookie(engine: Engine) {
    let app = engine.app().await;
    app.signup("login@example.com").await;
    let client = cookie_client();
    let res = login_raw(&app, &client, "Login@Example.com", PASSWORD).await;
    let cookie = set_cookie(&res);
    let user = expect_json(res, 200).await;
    assert_eq!(user["email"], "login@example.com");
    assert!(
        cookie.starts_with("herald_session=")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let me = expect_json(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        200,
    )
    .await;
    assert_eq!(me["id"], user["id"]);
}

async fn logout_clears_the_session_cookie(engine: Engine) {
    let app = engine.app().await;
    let client = app.signup("bye@example.com").await;
    expect_json(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        200,
    )
    .await;
    let res = session_call(&app, &client, Method::GET, "/auth/logout", None).await;
    let cookie = set_cookie(&res);
    assert_eq!(res.status(), 200);
    assert!(cookie.starts_with("herald_session=;"), "{cookie}");
    assert!(cookie.contains("Max-Age=0"), "{cookie}");
    expect_error(
        session_call(&app, &client, Method::GET, "/users/@me", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
}

async fn passwords_are_stored_as_argon2id(engine: Engine) {
    let app = engine.app().await;
    app.signup("hashed@example.com").await;
    let user = app
        .store
        .user_by_email("hashed@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(
        user.password_hash.starts_with("$argon2id$"),
        "{}",
        user.password_hash
    );
    assert!(!user.password_hash.contains(PASSWORD));
    assert!(!user.password_hash.contains("horse"));
}

fn is_key(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 48
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

async fn creating_a_project_shows_both_keys_once(engine: Engine) {
    let app = engine.app().await;
    let client = app.signup("keys@example.com").await;
    let res = session_call(
        &app,
        &client,
        Method::POST,
        "/users/@me/projects",
        Some(&json!({"name": "Shop"})),
    )
    .await;
    let p = expect_json(res, 201).await;
    assert_eq!(p["name"], "Shop");
    let pk = p["publicKey"].as_str().unwrap();
    let sk = p["secretKey"].as_str().unwrap();
    assert!(is_key(pk, "pk_"), "{pk}");
    assert!(is_key(sk, "sk_"), "{sk}");
    assert_eq!(p["secretKeyPrefix"].as_str().unwrap(), &sk[..10]);
    assert!(uuid::Uuid::parse_str(p["id"].as_str().unwrap()).is_ok());
    // The secret key works, and is not stored in the clear.
    expect_json(app.get("/contacts", sk).await, 200).await;
    let other = expect_json(
        session_call(
            &app,
            &client,
            Method::POST,
            "/users/@me/projects",
            Some(&json!({"name": "Other"})),
        )
        .await,
        201,
    )
    .await;
    assert_ne!(other["secretKey"], p["secretKey"]);
    assert_ne!(other["publicKey"], p["publicKey"]);
    let err = expect_error(
        session_call(
            &app,
            &client,
            Method::POST,
            "/users/@me/projects",
            Some(&json!({})),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["name"]);
}

async fn listing_projects_never_shows_the_secret_key(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let list = expect_json(
        session_call(&app, &p.owner, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1);
    let listed = &list[0];
    assert_eq!(listed["id"], p.id.as_str());
    assert_eq!(listed["publicKey"], p.public_key.as_str());
    assert_eq!(listed["secretKeyPrefix"], &p.secret_key[..10]);
    assert!(listed.get("secretKey").is_none(), "{listed}");
    assert!(!listed.to_string().contains(&p.secret_key), "{listed}");
    // Another user's projects are not listed.
    let q = app.project().await;
    let list = expect_json(
        session_call(&app, &q.owner, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![q.id.as_str()]);
}

async fn regenerating_keys_revokes_both_old_keys_at_once(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    app.create_contact(&p.secret_key, json!({"email": "kept@example.com"}))
        .await;
    // Both old keys were just resolved (so the key cache holds them).
    expect_error(
        app.get("/contacts", &p.public_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let path = format!("/users/@me/projects/{}/regenerate-keys", p.id);
    let fresh = expect_json(
        session_call(&app, &p.owner, Method::POST, &path, None).await,
        200,
    )
    .await;
    let pk = fresh["publicKey"].as_str().unwrap();
    let sk = fresh["secretKey"].as_str().unwrap();
    assert!(is_key(pk, "pk_") && is_key(sk, "sk_"), "{fresh}");
    assert_ne!(pk, p.public_key);
    assert_ne!(sk, p.secret_key);
    assert_eq!(fresh["secretKeyPrefix"].as_str().unwrap(), &sk[..10]);
    assert_eq!(fresh["id"], p.id.as_str());

    expect_error(
        app.get("/contacts", &p.secret_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let err = expect_error(
        app.get("/contacts", &p.public_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    assert!(
        !err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("public key"),
        "unknown, not misused: {err}"
    );
    assert!(
        app.store
            .project_by_public_key(&p.public_key)
            .await
            .unwrap()
            .is_none(),
        "the old public key is revoked"
    );
    assert!(app.store.project_by_public_key(pk).await.unwrap().is_some());
    let list = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(list["total"], 1, "the project's data is untouched");
    let projects = expect_json(
        session_call(&app, &p.owner, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    assert_eq!(projects[0]["secretKeyPrefix"], &sk[..10]);
    assert_eq!(projects[0]["publicKey"], pk);
    // The new public key is a valid key (it is refused on /contacts for its kind, not as unknown).
    let err = expect_error(app.get("/contacts", pk).await, 401, "INVALID_API_KEY").await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("public key"),
        "{err}"
    );
}

async fn a_public_key_cannot_call_dashboard_endpoints(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    expect_error(
        app.get("/contacts", &p.public_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let res = app
        .post(
            "/contacts",
            &p.public_key,
            &json!({"email": "x@example.com"}),
        )
        .await;
    expect_error(res, 401, "INVALID_API_KEY").await;
    expect_error(
        app.get("/contacts/fields", &p.public_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 0, "nothing was written");
}

async fn a_session_with_x_project_id_reaches_contacts(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    app.create_contact(&p.secret_key, json!({"email": "seen@example.com"}))
        .await;
    let res = with_project(&p.owner, &app, Method::GET, "/contacts", &p.id).await;
    let list = expect_json(res, 200).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["data"][0]["email"], "seen@example.com");
    let res = p
        .owner
        .post(app.url("/contacts"))
        .header("x-project-id", &p.id)
        .json(&json!({"email": "by-session@example.com"}))
        .send()
        .await
        .unwrap();
    expect_json(res, 201).await;
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 2);
}

async fn a_session_without_x_project_id_is_a_bad_request(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = session_call(&app, &p.owner, Method::GET, "/contacts", None).await;
    let err = expect_error(res, 400, "BAD_REQUEST").await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("X-Project-Id"),
        "{err}"
    );
}

async fn a_session_cannot_reach_another_users_project(engine: Engine) {
    let app = engine.app().await;
    let mine = app.project().await;
    let theirs = app.project().await;
    app.create_contact(&theirs.secret_key, json!({"email": "private@example.com"}))
        .await;
    let res = with_project(&mine.owner, &app, Method::GET, "/contacts", &theirs.id).await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
    let res = with_project(
        &mine.owner,
        &app,
        Method::GET,
        "/contacts",
        "not-a-project-id",
    )
    .await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
    let res = with_project(
        &mine.owner,
        &app,
        Method::GET,
        "/contacts",
        &uuid::Uuid::now_v7().to_string(),
    )
    .await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
}

async fn projects_can_be_renamed_and_configured(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let path = format!("/users/@me/projects/{}", p.id);
    let body = json!({"name": "Renamed", "tracking": "MARKETING_ONLY", "language": "pt-BR"});
    let updated = expect_json(
        session_call(&app, &p.owner, Method::PATCH, &path, Some(&body)).await,
        200,
    )
    .await;
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["tracking"], "MARKETING_ONLY");
    assert_eq!(updated["language"], "pt-BR");
    assert!(updated.get("secretKey").is_none(), "{updated}");
    assert_eq!(
        updated["publicKey"],
        p.public_key.as_str(),
        "keys are unchanged"
    );

    for (body, field) in [
        (json!({"name": "  "}), "name"),
        (json!({"name": "a\nb"}), "name"),
        (json!({"language": "not a language"}), "language"),
    ] {
        let err = expect_error(
            session_call(&app, &p.owner, Method::PATCH, &path, Some(&body)).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&err), vec![field], "{body}");
    }
    let body = json!({"tracking": "SOMETIMES"});
    let err = expect_error(
        session_call(&app, &p.owner, Method::PATCH, &path, Some(&body)).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), vec!["tracking"]);

    let list = expect_json(
        session_call(&app, &p.owner, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    assert_eq!(list[0]["name"], "Renamed");
    assert_eq!(
        list[0]["tracking"], "MARKETING_ONLY",
        "the refused change left it as it was"
    );
    // The secret key still works after the update.
    expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
}

async fn another_users_project_is_not_found_on_management(engine: Engine) {
    let app = engine.app().await;
    let mine = app.project().await;
    let theirs = app.project().await;
    let path = format!("/users/@me/projects/{}", theirs.id);
    let body = json!({"name": "Hijacked"});
    expect_error(
        session_call(&app, &mine.owner, Method::PATCH, &path, Some(&body)).await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        session_call(&app, &mine.owner, Method::DELETE, &path, None).await,
        404,
        "NOT_FOUND",
    )
    .await;
    let regen = format!("{path}/regenerate-keys");
    expect_error(
        session_call(&app, &mine.owner, Method::POST, &regen, None).await,
        404,
        "NOT_FOUND",
    )
    .await;
    let bad = "/users/@me/projects/not-a-uuid";
    expect_error(
        session_call(&app, &mine.owner, Method::PATCH, bad, Some(&body)).await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        session_call(&app, &mine.owner, Method::DELETE, bad, None).await,
        404,
        "NOT_FOUND",
    )
    .await;
    // Untouched: the owner's keys and name are as before.
    expect_json(app.get("/contacts", &theirs.secret_key).await, 200).await;
    let list = expect_json(
        session_call(
            &app,
            &theirs.owner,
            Method::GET,
            "/users/@me/projects",
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(list[0]["name"], "Test project");
}

async fn deleting_a_project_revokes_its_keys(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    app.create_contact(&p.secret_key, json!({"email": "gone@example.com"}))
        .await;
    let path = format!("/users/@me/projects/{}", p.id);
    let res = session_call(&app, &p.owner, Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    expect_error(
        app.get("/contacts", &p.secret_key).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let list = expect_json(
        session_call(&app, &p.owner, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    assert_eq!(list, json!([]));
    expect_error(
        session_call(&app, &p.owner, Method::DELETE, &path, None).await,
        404,
        "NOT_FOUND",
    )
    .await;
}

async fn account_endpoints_refuse_api_keys(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = p.secret_key.as_str();
    expect_error(app.get("/users/@me", sk).await, 401, "INVALID_API_KEY").await;
    expect_error(
        app.get("/users/@me/projects", sk).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let res = app
        .post("/users/@me/projects", sk, &json!({"name": "Via key"}))
        .await;
    expect_error(res, 401, "INVALID_API_KEY").await;
    let path = format!("/users/@me/projects/{}", p.id);
    expect_error(
        app.patch(&path, sk, &json!({"name": "Via key"})).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    expect_error(app.delete(&path, sk).await, 401, "INVALID_API_KEY").await;
    let res = app
        .post(&format!("{path}/regenerate-keys"), sk, &json!({}))
        .await;
    expect_error(res, 401, "INVALID_API_KEY").await;
    // The key still works where it belongs.
    expect_json(app.get("/contacts", sk).await, 200).await;
}

/// `X-Project-Id` naming a deleted project, another user's project or no project at all does
/// not stop account routes; project routes still refuse it.
async fn account_routes_ignore_a_stale_x_project_id(engine: Engine) {
    let app = engine.app().await;
    let mine = app.project().await;
    let theirs = app.project().await;
    let gone = expect_json(
        session_call(
            &app,
            &mine.owner,
            Method::POST,
            "/users/@me/projects",
            Some(&json!({"name": "Soon gone"})),
        )
        .await,
        201,
    )
    .await;
    let gone_id = gone["id"].as_str().unwrap().to_owned();
    let path = format!("/users/@me/projects/{gone_id}");
    let res = session_call(&app, &mine.owner, Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    for stale in [gone_id.as_str(), theirs.id.as_str(), "not-a-project-id"] {
        let me = expect_json(
            with_project(&mine.owner, &app, Method::GET, "/users/@me", stale).await,
            200,
        )
        .await;
        assert!(me["email"].as_str().is_some(), "{me}");
        let list = expect_json(
            with_project(&mine.owner, &app, Method::GET, "/users/@me/projects", stale).await,
            200,
        )
        .await;
        let ids: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["id"].as_str())
            .collect();
        assert_eq!(ids, vec![mine.id.as_str()], "{list}");
        let res = with_project(&mine.owner, &app, Method::GET, "/contacts", stale).await;
        expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
    }
}
