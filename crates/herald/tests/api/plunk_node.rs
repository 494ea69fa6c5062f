//! The npm client `@plunk/node` 3.x, unchanged, with `baseUrl` pointed at Herald: `track` (with
//! the public key) and `emails.send` (with the secret key) succeed, and an error answer reaches
//! the caller as the client's own error message (the envelope's top-level `message`).
//!
//! The package is installed once with npm into `target/tmp/plunk-node-3`. Without node or
//! npm (or the registry), the test fails when `CI` is set and elsewhere prints a notice.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::both_engines;
use crate::helpers::Engine;
use crate::mail_setup::{DOMAIN, mail_world};

both_engines!(plunk_node_client_tracks_and_sends_unchanged);

/// The installed package's directory, or why it is unavailable.
fn install_plunk() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plunk-node-3");
    let module = root.join("node_modules/@plunk/node");
    if module.join("package.json").exists() {
        return Ok(module);
    }
    for tool in ["node", "npm"] {
        let ok = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            return Err(format!("{tool} is not installed"));
        }
    }
    // Install beside, then rename into place: concurrent test processes never see half a tree.
    let staging = root.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| e.to_string())?;
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&staging)
        .arg("@plunk/node@3")
        .output()
        .map_err(|e| format!("npm: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm install @plunk/node@3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if std::fs::rename(&staging, &root).is_err() {
        // Another process won the race; its tree is complete.
        let _ = std::fs::remove_dir_all(&staging);
    }
    if module.join("package.json").exists() {
        Ok(module)
    } else {
        Err("npm installed no @plunk/node".into())
    }
}

const SCRIPT: &str = r#"
const Plunk = require(process.env.PLUNK_MODULE).default;
const opts = { baseUrl: process.env.HERALD_BASE + "/v1/" };
const browser = new Plunk(process.env.PUBLIC_KEY, opts);
const server = new Plunk(process.env.SECRET_KEY, opts);
(async () => {
  const tracked = await browser.events.track({
    event: "signed-up",
    email: "node@example.com",
    data: { plan: "pro", code: { value: "X1", persistent: false } },
  });
  const sent = await server.emails.send({
    to: "node@example.com",
    subject: "Welcome",
    body: "<p>Hello from @plunk/node</p>",
    from: process.env.FROM,
  });
  let refused = null;
  try {
    await browser.events.track({ event: "email.sent", email: "node@example.com" });
  } catch (e) {
    refused = e.message;
  }
  let badKey = null;
  try {
    await browser.emails.send({ to: "node@example.com", subject: "x", body: "x", from: process.env.FROM });
  } catch (e) {
    badKey = e.constructor.name;
  }
  console.log(JSON.stringify({ tracked, sent, refused, badKey }));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
"#;

async fn plunk_node_client_tracks_and_sends_unchanged(engine: Engine) {
    let module = match tokio::task::spawn_blocking(install_plunk).await.unwrap() {
        Ok(m) => m,
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs node and npm for the @plunk/node test: {why}"
            );
            eprintln!("notice: skipping the @plunk/node test: {why}");
            return;
        }
    };
    let w = mail_world(engine, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plunk.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script)
        .env("PLUNK_MODULE", &module)
        .env("HERALD_BASE", &w.app.base)
        .env("PUBLIC_KEY", &w.project.public_key)
        .env("SECRET_KEY", &w.project.secret_key)
        .env("FROM", format!("hello@{DOMAIN}"));
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON line");

    assert_eq!(got["tracked"]["success"], true, "{got}");
    let contact = got["tracked"]["data"]["contact"].as_str().unwrap();
    assert!(got["tracked"]["data"]["event"].is_string(), "{got}");
    assert_eq!(got["sent"]["success"], true, "{got}");
    assert_eq!(got["sent"]["data"]["emails"][0]["contact"]["id"], contact);
    let refused = got["refused"].as_str().unwrap_or("");
    assert!(refused.contains("system event"), "{got}");
    assert_eq!(
        got["badKey"], "TokenError",
        "a public key on send is a 401: {got}"
    );

    // The event and the message are real.
    let events = crate::helpers::expect_json(
        w.app
            .get(&format!("/events/contact/{contact}"), &w.project.secret_key)
            .await,
        200,
    )
    .await;
    let signed_up = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["tracked"] == true)
        .cloned()
        .unwrap_or_default();
    assert_eq!(signed_up["name"], "signed-up", "{events}");
    assert_eq!(
        signed_up["data"],
        serde_json::json!({"plan": "pro", "code": "X1"})
    );
    let mail = w.sink.wait_for(1, Duration::from_secs(30)).await;
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].rcpt_to, ["node@example.com"]);
}
