//! Who reaches which domain: tenant isolation, sessions, ownership between projects, deletion.

use super::*;

both_engines!(
    projects_see_only_their_own_domains,
    sessions_name_the_project_in_the_body_or_path,
    the_first_project_to_verify_owns_the_domain,
    delete_removes_the_domain_a_template_alone_does_not_hold_it,
);

async fn projects_see_only_their_own_domains(engine: Engine) {
    let app = engine.app().await;
    let (a, b) = (app.project().await, app.project().await);
    let da = add(&app, &a, "a.example.com").await;
    add(&app, &b, "b.example.com").await;
    let names: Vec<Value> = list(&app, &a)
        .await
        .iter()
        .map(|d| d["domain"].clone())
        .collect();
    assert_eq!(names, [json!("a.example.com")]);

    expect_error(
        app.get(&format!("/domains/project/{}", a.id), &b.secret_key)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.get("/domains/project/not-a-uuid", &b.secret_key).await,
        404,
        "NOT_FOUND",
    )
    .await;
    let id = da["id"].as_str().unwrap();
    expect_error(
        app.get(&format!("/domains/{id}/verify"), &b.secret_key)
            .await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&format!("/domains/{id}"), &b.secret_key).await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get("/domains/nope/verify", &b.secret_key).await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    let res = app
        .call_with(
            &b.owner,
            Method::DELETE,
            &format!("/domains/{id}"),
            None,
            None,
        )
        .await;
    expect_error(res, 404, "DOMAIN_NOT_FOUND").await;
    assert_eq!(list(&app, &a).await.len(), 1, "nothing of A changed");
    expect_error(
        app.call(
            Method::GET,
            &format!("/domains/project/{}", a.id),
            None,
            None,
        )
        .await,
        401,
        "MISSING_AUTH",
    )
    .await;
}

async fn sessions_name_the_project_in_the_body_or_path(engine: Engine) {
    let app = engine.app().await;
    let (a, b) = (app.project().await, app.project().await);
    let body = json!({"domain": "session.example.com", "projectId": a.id});
    let res = app
        .call_with(&a.owner, Method::POST, "/domains", None, Some(&body))
        .await;
    let d = expect_json(res, 201).await;
    assert_eq!(d["projectId"], a.id.as_str());
    // Not a member of A: refused; no project named: a validation error.
    let res = app
        .call_with(&b.owner, Method::POST, "/domains", None, Some(&body))
        .await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
    let res = app
        .call_with(
            &a.owner,
            Method::POST,
            "/domains",
            None,
            Some(&json!({"domain": "x.example.com"})),
        )
        .await;
    assert_eq!(
        error_fields(&expect_error(res, 422, "VALIDATION_ERROR").await),
        ["projectId"]
    );
    // A secret key cannot name another project.
    let res = app.post("/domains", &b.secret_key, &body).await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;

    let path = format!("/domains/project/{}", a.id);
    let listed = expect_json(
        app.call_with(&a.owner, Method::GET, &path, None, None)
            .await,
        200,
    )
    .await;
    assert_eq!(listed[0]["id"], d["id"]);
    expect_error(
        app.call_with(&b.owner, Method::GET, &path, None, None)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    let id = d["id"].as_str().unwrap();
    let res = app
        .call_with(
            &a.owner,
            Method::DELETE,
            &format!("/domains/{id}"),
            None,
            None,
        )
        .await;
    assert_eq!(res.status(), 204);
}

async fn the_first_project_to_verify_owns_the_domain(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let app = dns_app(engine, &dns, |_| {}).await;
    let (a, b, c) = (
        app.project().await,
        app.project().await,
        app.project().await,
    );
    // Both may claim it while it is pending; each gets its own key and selector.
    let da = add(&app, &a, "shared.example.com").await;
    let db = add(&app, &b, "shared.example.com").await;
    assert_ne!(da["selector"], db["selector"]);
    publish(&dns, &da);
    let dkim_b = record(&db, "dkim");
    dns.set_txt(
        dkim_b["name"].as_str().unwrap(),
        vec![dkim_b["value"].as_str().unwrap().to_owned()],
    );

    assert_eq!(verify(&app, &a, &da).await["status"], "VERIFIED");
    // B's records are all published, yet A owns the domain now.
    let vb = verify(&app, &b, &db).await;
    assert_eq!(vb["status"], "PENDING", "{vb}");
    assert_eq!(record(&vb, "dkim")["state"], "found");
    assert!(
        vb["lastError"]
            .as_str()
            .unwrap()
            .contains("another project"),
        "{vb}"
    );
    // The database itself refuses a second verified row, whatever the code above it does.
    let forced = raw_execute(
        &app,
        "UPDATE domains SET verified = TRUE WHERE id = $1",
        &[uuid_of(&db["id"])],
        &[],
    )
    .await;
    let refused = forced
        .expect_err("the partial unique index refuses it")
        .to_string();
    assert!(refused.to_lowercase().contains("unique"), "{refused}");
    let err = expect_error(
        app.post(
            "/domains",
            &c.secret_key,
            &json!({"domain": "shared.example.com"}),
        )
        .await,
        409,
        "CONFLICT",
    )
    .await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another project"),
        "{err}"
    );

    // Once A lets it go, B can verify it.
    let res = app
        .delete(
            &format!("/domains/{}", da["id"].as_str().unwrap()),
            &a.secret_key,
        )
        .await;
    assert_eq!(res.status(), 204);
    assert_eq!(verify(&app, &b, &db).await["status"], "VERIFIED");
}

/// What holds a domain (active campaigns, enabled workflows) is `in_use.rs`; a template alone
/// does not: a send naming it is refused while its sender is not on a verified domain.
async fn delete_removes_the_domain_a_template_alone_does_not_hold_it(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let templated = add(&app, &p, "templated.test").await;
    let unused = add(&app, &p, "unused.test").await;
    add(&app, &p, "kept.test").await;
    insert_template(&app, &p.id, "templated.test").await;
    let path = format!("/domains/{}", templated["id"].as_str().unwrap());
    assert_eq!(app.delete(&path, &p.secret_key).await.status(), 204);

    let path = format!("/domains/{}", unused["id"].as_str().unwrap());
    assert_eq!(app.delete(&path, &p.secret_key).await.status(), 204);
    expect_error(
        app.delete(&path, &p.secret_key).await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get(&format!("{path}/verify"), &p.secret_key).await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    let left: Vec<Value> = list(&app, &p)
        .await
        .iter()
        .map(|d| d["domain"].clone())
        .collect();
    assert_eq!(left, [json!("kept.test")]);
}

/// Inserts a template row of `project` sending from `domain` (the templates API is not needed
/// to test the deletion rule).
async fn insert_template(app: &TestApp, project: &str, domain: &str) {
    let q = "INSERT INTO templates (id, project_id, name, subject, body, type, from_email, from_domain, \
             created_at, updated_at) VALUES ($1, $2, 'T', 'S', 'B', 'TRANSACTIONAL', $3, $4, 0, 0)";
    let ids = [
        uuid::Uuid::now_v7(),
        uuid::Uuid::parse_str(project).unwrap(),
    ];
    raw_execute(app, q, &ids, &[&format!("hello@{domain}"), domain])
        .await
        .unwrap();
}
