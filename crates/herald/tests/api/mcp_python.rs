//! A smoke run with the official MCP Python SDK (PyPI `mcp`, pinned in `mcp/requirements.txt`
//! and installed into a virtualenv by `scripts/openapi-tools`): `mcp/smoke.py` lists the tools,
//! creates and lists a contact, sends a wrong type, and sends an email without and with
//! confirmation over Streamable HTTP. Skipped with a notice when python3 or PyPI is
//! unavailable, except in CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::both_engines_with_python;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::outbox_project;

both_engines_with_python!(the_python_sdk_lists_calls_and_confirms);

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/mcp")
}

/// The virtualenv's bin directory, or `None` after a notice when it cannot be installed
/// outside CI.
fn python_sdk() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("scripts/openapi-tools"))
        .arg(tests_dir().join("requirements.txt"))
        .current_dir(&root)
        .output();
    let failure = match out {
        Ok(o) if o.status.success() => {
            return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
        Ok(o) => format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr)),
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI needs the MCP Python SDK: {failure}"
    );
    eprintln!("notice: skipping the MCP Python SDK smoke test, the SDK is unavailable: {failure}");
    None
}

async fn the_python_sdk_lists_calls_and_confirms(engine: Engine) {
    let Some(bin) = python_sdk() else {
        return;
    };
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let url = app.url("/mcp");
    let key = p.secret_key.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin.join("python"))
            .arg(tests_dir().join("smoke.py"))
            .args([&url, &key])
            .output()
    })
    .await
    .unwrap()
    .expect("run smoke.py");
    assert!(
        out.status.success(),
        "smoke.py failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("smoke.py prints JSON");
    assert_eq!(seen["tools"].as_array().unwrap().len(), 35, "{seen}");
    assert_eq!(
        seen["create_contact_required"],
        serde_json::json!(["email"])
    );
    assert_eq!(seen["created"]["email"], "py@example.com");
    assert_eq!(seen["listed"], serde_json::json!(["py@example.com"]));
    assert_eq!(seen["bad_is_error"], true);
    assert_eq!(seen["bad_code"], "VALIDATION_ERROR");
    assert_eq!(seen["unconfirmed_code"], "CONFIRMATION_REQUIRED");
    assert_eq!(seen["confirmed_is_error"], false, "{seen}");

    let id = seen["created"]["id"].as_str().unwrap();
    let rest = expect_json(
        app.get(&format!("/contacts/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(rest["data"]["source"], "python");
    let emails = expect_json(app.get("/emails", &p.secret_key).await, 200).await;
    assert_eq!(emails["data"].as_array().unwrap().len(), 1, "{emails}");
}
