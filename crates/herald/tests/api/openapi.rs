//! `/openapi.json` is the contract, checked with real third-party tools from PyPI (pinned in
//! `openapi/requirements.txt`, installed once into `target/openapi-venv-*` by
//! `scripts/openapi-tools`): it validates as OpenAPI 3.1 (openapi-spec-validator), a client
//! generated from it by openapi-python-client sends a message and lists contacts unedited, and
//! schemathesis runs every operation with generated valid and invalid inputs on both engines,
//! failing on any 5xx, schema violation or undeclared status.
//!
//! Without `python3` (with `venv`) the tool tests are skipped (`both_engines_with_python!`);
//! when Python is there but PyPI is not, they fail in CI and elsewhere pass after a notice.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, wait_status};
use crate::payments::stand_in::StripeStandIn;
use crate::payments::use_stripe;
use crate::{both_engines, both_engines_with_python};

both_engines!(openapi_declares_what_the_handlers_answer);
both_engines_with_python!(
    openapi_document_validates_as_openapi_3_1,
    generated_python_client_sends_and_lists_contacts,
    schemathesis_finds_no_contract_violation,
);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bin directory of the tools' virtualenv, or `None` (after a notice) when the tools
/// cannot be installed outside CI.
fn python_tools() -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/openapi-tools"))
        .output();
    let failure = match out {
        Ok(o) if o.status.success() => {
            let bin = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            return Some(PathBuf::from(bin));
        }
        Ok(o) => format!(
            "scripts/openapi-tools failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => format!("could not run scripts/openapi-tools: {e}"),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI needs the OpenAPI tools: {failure}"
    );
    eprintln!(
        "notice: skipping an OpenAPI contract test, the Python tools are unavailable: {failure}"
    );
    None
}

/// Runs a tool to completion off the async runtime, asserting success; returns stdout.
async fn run(mut cmd: Command, what: &str) -> String {
    let what = what.to_owned();
    tokio::task::spawn_blocking(move || {
        let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    })
    .await
    .expect("tool task")
}

async fn save_document(app: &TestApp, dir: &Path) -> PathBuf {
    let doc = expect_json(
        app.client
            .get(app.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let path = dir.join("openapi.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// Runs without Python: the document's promises that the issue found broken.
async fn openapi_declares_what_the_handlers_answer(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let doc = expect_json(
        app.client
            .get(app.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let schemas = &doc["components"]["schemas"];
    // Field values are the stored JSON values (scalars here), not objects.
    app.create_contact(
        &p.secret_key,
        serde_json::json!({"email": "a@example.org", "data": {"plan": "pro"}}),
    )
    .await;
    let values = expect_json(
        app.get("/contacts/fields/plan/values", &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(values["values"], serde_json::json!(["pro"]));
    let item_types = &schemas["FieldValues"]["properties"]["values"]["items"]["type"];
    assert!(
        item_types
            .as_array()
            .is_some_and(|t| t.contains(&Value::from("string"))),
        "{item_types}"
    );
    // Each request body is its own handler's: two Rust types of one name would leave one
    // schema for both (the campaign send's body once documented `/v1/send`).
    let body_of = |path: &str| {
        let r = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["$ref"]
            .as_str()
            .unwrap_or_default()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        schemas[r.as_str()]["properties"].clone()
    };
    for (path, field) in [
        ("/v1/send", "to"),
        ("/auth/reset-password", "token"),
        ("/users/@me/projects/{id}/reset", "confirmation"),
        ("/campaigns/{id}/test", "email"),
    ] {
        assert!(
            body_of(path).get(field).is_some(),
            "{path}: {}",
            body_of(path)
        );
    }
    // Required request fields are never null.
    assert_eq!(
        schemas["TrackRequest"]["properties"]["email"]["type"],
        "string"
    );
    // Parameters with a closed set of values list them.
    let statuses = doc["paths"]["/emails"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "status")
        .unwrap()["schema"]["enum"]
        .clone();
    assert!(
        statuses.as_array().unwrap().contains(&Value::from("SENT")),
        "{statuses}"
    );
    // /contacts/lookup: `emails` required, at most 500 email strings.
    let lookup = &schemas["LookupRequest"];
    assert_eq!(
        lookup["required"],
        serde_json::json!(["emails"]),
        "{lookup}"
    );
    assert_eq!(lookup["properties"]["emails"]["maxItems"], 500, "{lookup}");
    assert_eq!(
        lookup["properties"]["emails"]["items"]["format"], "email",
        "{lookup}"
    );
    // Every response is described; errors carry the envelope; shared statuses are declared.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let has = |s: &str| responses.contains_key(s);
            let public = [
                "/health",
                "/config",
                "/auth/signup",
                "/auth/login",
                "/auth/logout",
                "/auth/verify-email",
                "/auth/request-verification",
                "/auth/request-password-reset",
                "/auth/reset-password",
                "/auth/oauth-config",
                "/auth/oauth/{provider}",
                "/auth/oauth/{provider}/callback",
                "/webhooks/incoming/payments",
            ];
            assert!(has("429"), "{method} {path}");
            assert!(
                public.contains(&path.as_str()) || has("401"),
                "{method} {path}"
            );
            assert!(!path.contains('{') || has("404"), "{method} {path}");
            if op.get("requestBody").is_some() {
                for s in ["400", "413", "415", "422"] {
                    assert!(has(s), "{method} {path} lacks {s}");
                }
            }
            for (status, res) in responses {
                assert!(res["description"].is_string(), "{method} {path} {status}");
                if status.starts_with('4') || status.starts_with('5') {
                    // The envelope, unless the handler declares its own body (/health's 503).
                    let schema = &res["content"]["application/json"]["schema"];
                    assert!(schema["$ref"].is_string(), "{method} {path} {status}");
                }
            }
        }
    }
}

async fn openapi_document_validates_as_openapi_3_1(engine: Engine) {
    let Some(bin) = python_tools() else { return };
    let app = engine.app().await;
    let dir = tempfile::tempdir().unwrap();
    let doc = save_document(&app, dir.path()).await;
    let mut cmd = Command::new(bin.join("openapi-spec-validator"));
    cmd.arg(&doc);
    let out = run(cmd, "openapi-spec-validator").await;
    assert!(out.contains("OK"), "{out}");
}

async fn generated_python_client_sends_and_lists_contacts(engine: Engine) {
    let Some(bin) = python_tools() else { return };
    let w = mail_world(engine, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let doc = save_document(&w.app, dir.path()).await;
    let mut generate = Command::new(bin.join("openapi-python-client"));
    generate
        .args(["generate", "--meta", "none", "--output-path"])
        .arg(dir.path().join("herald_client"))
        .arg("--path")
        .arg(&doc)
        .current_dir(dir.path());
    run(generate, "openapi-python-client generate").await;
    let mut script = Command::new(bin.join("python"));
    script
        .arg(repo_root().join("crates/herald/tests/api/openapi/client_smoke.py"))
        .env("PYTHONPATH", dir.path())
        .env("HERALD_BASE_URL", &w.app.base)
        .env("HERALD_KEY", &w.project.secret_key)
        .env("HERALD_FROM", format!("news@{DOMAIN}"));
    let out = run(script, "the generated client").await;
    let answer: Value = serde_json::from_str(out.trim()).expect("one JSON line");
    let ids = answer["emails"].as_array().expect("emails");
    assert_eq!(ids.len(), 1, "{answer}");
    assert_eq!(answer["contacts"], serde_json::json!(["ada@example.org"]));
    let id = ids[0].as_str().unwrap();
    wait_status(
        &w.app,
        &w.project.secret_key,
        id,
        &["SENT"],
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(w.sink.messages().len(), 1);
}

/// Examples per operation and phase: bounded so a run takes well under a minute per engine.
const EXAMPLES: &str = "15";

/// Operations whose request schema is still looser than the handler, so that a schema-valid
/// request may be refused with 422: `positive_data_acceptance` skips them (every other check
/// runs on them). docs/openapi.md "Known gaps" says why for each; take a name off once its
/// schema says what the handler checks.
const LOOSER_THAN_THE_HANDLER: &[&str] = &[
    // Rules across fields ("subject and body unless template", the shapes of `to`,
    // "segmentId with audienceType SEGMENT") and the two trees (segment filters, step configs)
    // are not described yet.
    "POST /v1/send",
    "POST /campaigns",
    "PUT /campaigns/{id}",
    "POST /segments",
    "PATCH /segments/{id}",
    "POST /workflows/{id}/steps",
    "PATCH /workflows/{id}/steps/{stepId}",
    "POST /workflows/{id}/transitions",
    // What only the server issues (a mailed token, a signed notification), file contents (a
    // CSV, an image) and a rule across two parameters (`from` before `to`, at most 2,000
    // buckets).
    "POST /auth/verify-email",
    "POST /auth/reset-password",
    // `invitation` (optional) is a mailed token too.
    "POST /auth/signup",
    "POST /webhooks/notifications",
    "POST /webhooks/incoming/payments",
    "POST /contacts/import",
    "POST /uploads/image",
    "GET /analytics/timeseries",
    // Reserved test domains (.test, .example, ...) are taken only with the local outbox
    // transport: a rule of the server's configuration, not of the request.
    "POST /domains",
];

/// One schemathesis run over the document saved in `dir` against `base` with `args`; `config`
/// is the text of its configuration file.
async fn schemathesis(
    bin: &Path,
    dir: &Path,
    base: &str,
    config: &str,
    args: &[String],
    what: &str,
) {
    let file = dir.join(format!("{}.toml", what.replace(' ', "-")));
    std::fs::write(&file, config).unwrap();
    let mut cmd = Command::new(bin.join("schemathesis"));
    cmd.arg("--config-file")
        .arg(&file)
        .arg("run")
        .arg(dir.join("openapi.json"))
        .args(["--url", base])
        .args(["--max-examples", EXAMPLES, "--seed", "20261123"])
        .args(["--no-color", "--request-timeout", "10"])
        .args(args)
        .current_dir(dir);
    run(cmd, what).await;
}

async fn schemathesis_finds_no_contract_violation(engine: Engine) {
    let Some(bin) = python_tools() else { return };
    // Payments on, against the Stripe stand-in, so those operations answer as in production.
    let stripe = StripeStandIn::start().await;
    let w = mail_world(engine, |c| {
        c.rate_limit_per_minute = 1_000_000;
        use_stripe(c, &stripe.base);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    save_document(&w.app, dir.path()).await;
    let bearer = format!("Authorization: Bearer {}", w.project.secret_key);
    let owned = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // The account routes take a session only: those runs hand a signed-in cookie to
    // schemathesis as the `session` scheme, so its auth checks can remove it.
    let cookie = session_cookie(&w.app).await;
    let session = format!("\n[auth.openapi.session]\napi_key = \"{cookie}\"\n");
    let accounts = ["--include-path-regex", "^/users/"];

    // Every check but `positive_data_acceptance`, every phase: 5xx, response schemas,
    // undeclared statuses, content types, authentication, invalid input accepted.
    let mut args = owned(&[
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
    ]);
    args.extend(owned(&["-H", &bearer]));
    schemathesis(
        &bin,
        dir.path(),
        &w.app.base,
        "",
        &args,
        "project operations",
    )
    .await;
    let mut args = owned(&[
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
    ]);
    args.extend(owned(&accounts));
    schemathesis(
        &bin,
        dir.path(),
        &w.app.base,
        &session,
        &args,
        "account operations",
    )
    .await;

    // `positive_data_acceptance`: a request that fits the schemas is not refused. Over
    // generated data only (the stateful phase and the response-value pool feed values taken
    // from other operations' answers, which schemathesis counts as valid unchecked), with the
    // settings of positive.toml.
    let positive =
        std::fs::read_to_string(repo_root().join("crates/herald/tests/api/openapi/positive.toml"))
            .unwrap();
    let checks = [
        "--checks",
        "positive_data_acceptance",
        "--phases",
        "coverage,fuzzing",
    ];
    let mut args = owned(&checks);
    args.extend(owned(&["-H", &bearer]));
    for name in LOOSER_THAN_THE_HANDLER {
        args.extend(owned(&["--exclude-name", name]));
    }
    schemathesis(
        &bin,
        dir.path(),
        &w.app.base,
        &positive,
        &args,
        "accepted input",
    )
    .await;
    let mut args = owned(&checks);
    args.extend(owned(&accounts));
    let config = format!("{positive}{session}");
    schemathesis(
        &bin,
        dir.path(),
        &w.app.base,
        &config,
        &args,
        "accepted account input",
    )
    .await;
}

/// Signs up a new user and returns the value of its session cookie.
async fn session_cookie(app: &TestApp) -> String {
    let email = format!("fuzz-{}@example.com", uuid::Uuid::new_v4().simple());
    let res = app
        .client
        .post(app.url("/auth/signup"))
        .json(&serde_json::json!({"email": email, "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let set_cookie = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("Set-Cookie")
        .to_owned();
    let pair = set_cookie.split(';').next().unwrap_or_default();
    pair.split_once('=').expect("name=value").1.to_owned()
}
