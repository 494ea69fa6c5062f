//! Every node of a database shares one secret: a node started with another one refuses to
//! start and says why; after `herald rotate-secret` only the new secret starts a node.

use herald::Application;
use herald::rotate::rotate_secret;

use crate::both_engines;
use crate::helpers::Engine;

both_engines!(a_node_with_another_secret_refuses_to_start);

async fn a_node_with_another_secret_refuses_to_start(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let mut other = app.config.clone();
    other.secret = Some("another-secret-another-secret-0123456789".into());
    let err = match Application::build_with_clock(other.clone(), app.clock.clone()).await {
        Ok(_) => panic!("a node with another secret started"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("not the one the other nodes"), "{err}");
    assert!(err.contains("HERALD_SECRET"), "{err}");
    // The same secret starts a second node.
    Application::build_with_clock(app.config.clone(), app.clock.clone())
        .await
        .expect("a node with the shared secret");

    // After a rotation, the new secret starts a node and the old one no longer does.
    let new = "the-rotated-secret-the-rotated-secret-01".to_owned();
    rotate_secret(&app.config, Some(new.clone())).await.unwrap();
    let mut rotated = app.config.clone();
    rotated.secret = Some(new);
    Application::build_with_clock(rotated, app.clock.clone())
        .await
        .expect("a node with the rotated secret");
    let err = match Application::build_with_clock(app.config.clone(), app.clock.clone()).await {
        Ok(_) => panic!("a node with the old secret started after the rotation"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("not the one the other nodes"), "{err}");
}
