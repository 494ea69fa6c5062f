//! `GET /contacts?search=` and the dashboard's contact search, whichever plan the term takes
//! (`herald_store::contact_search`): on SQLite a rare term reads the trigram index up to its
//! mark and the contacts past it, a common one reads newest first; PostgreSQL scans. The
//! same contacts and the same exact total come back in every case: half indexed, after a
//! delete, an email change and a reused rowid at or below the mark, with `_` in the term and
//! with a term too short for trigrams. The dashboard says "About" only for an estimate.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::seed;
use crate::dashboard::{get, page, project_in_browser};
use crate::helpers::{Engine, TestApp, expect_json, run_sql};

both_engines!(search_finds_the_same_contacts_whatever_the_plan);

/// Every email `search` finds, over all pages, and the first page's total.
async fn search(app: &TestApp, key: &str, term: &str) -> (BTreeSet<String>, i64) {
    let mut found = BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut total = None;
    loop {
        let mut path = format!("/contacts?limit=100&search={term}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let v = expect_json(app.get(&path, key).await, 200).await;
        total.get_or_insert(v["total"].as_i64().expect("total"));
        for c in v["data"].as_array().expect("data") {
            assert!(
                found.insert(c["email"].as_str().unwrap().to_owned()),
                "listed twice: {c}"
            );
        }
        match v["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    (found, total.unwrap_or(0))
}

fn email_of(i: usize) -> String {
    match i {
        7 => "first_last@bench.example".into(),
        i if i % 200 == 0 => format!("rare{i}@bench.example"),
        i => format!("user{i}@bench.example"),
    }
}

async fn expect_search(app: &TestApp, key: &str, term: &str, want: &BTreeSet<String>) {
    let (found, total) = search(app, key, term).await;
    assert_eq!(&found, want, "search {term:?}");
    assert_eq!(total, want.len() as i64, "total of {term:?}");
}

async fn search_finds_the_same_contacts_whatever_the_plan(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let (p, browser) = project_in_browser(&app).await;
    let sk = &p.secret_key;
    seed(&app, &p.id, 2_400, true, email_of, |_| json!({})).await;
    let mut emails: BTreeSet<String> = (0..2_400).map(email_of).collect();
    let matching = |emails: &BTreeSet<String>, term: &str| -> BTreeSet<String> {
        emails
            .iter()
            .filter(|e| e.contains(term))
            .cloned()
            .collect()
    };
    // Half of the contacts indexed (SQLite); PostgreSQL has no index to fill.
    let indexed = app.store.index_contact_emails(1_200).await.unwrap();
    assert_eq!(indexed, if engine == Engine::Sqlite { 1_200 } else { 0 });
    for term in [
        "rare", "rare1", "first_la", "_", "st_l", "bench", "user1", "zz", "nowhere",
    ] {
        expect_search(&app, sk, term, &matching(&emails, term)).await;
    }
    assert_eq!(matching(&emails, "rare").len(), 12);

    // A delete and an email change of indexed contacts, then everything indexed.
    let rare0: Value = app.contact_by_email(sk, "rare0@bench.example").await;
    let res = app
        .delete(&format!("/contacts/{}", rare0["id"].as_str().unwrap()), sk)
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    emails.remove("rare0@bench.example");
    run_sql(
        &app,
        &["UPDATE contacts SET email = 'renamed200@bench.example' WHERE email = 'rare200@bench.example'"],
    )
    .await;
    emails.remove("rare200@bench.example");
    emails.insert("renamed200@bench.example".into());
    while app.store.index_contact_emails(1_000).await.unwrap() > 0 {}
    assert_eq!(app.store.contact_emails_unindexed().await.unwrap(), 0);
    for term in [
        "rare",
        "renamed",
        "rare200",
        "first_last",
        "bench",
        "user239",
    ] {
        expect_search(&app, sk, term, &matching(&emails, term)).await;
    }

    // The newest contact deleted: the next one takes its rowid, at the mark, and is found.
    let newest = expect_json(app.get("/contacts?limit=1", sk).await, 200).await;
    let newest = newest["data"][0].clone();
    let res = app
        .delete(&format!("/contacts/{}", newest["id"].as_str().unwrap()), sk)
        .await;
    assert!(res.status().is_success());
    emails.remove(newest["email"].as_str().unwrap());
    app.create_contact(sk, json!({"email": "reused@elsewhere.example"}))
        .await;
    emails.insert("reused@elsewhere.example".into());
    for term in ["reused", "elsewhere", "bench", "rare"] {
        expect_search(&app, sk, term, &matching(&emails, term)).await;
    }

    // The dashboard: a common term's number is estimated on SQLite and says so; a rare
    // term's is exact.
    let base = format!("/app/p/{}/contacts", p.id);
    let (status, html) = page(get(&app, &browser, &format!("{base}?search=bench")).await).await;
    assert_eq!(status, 200);
    let common = matching(&emails, "bench").len();
    if engine == Engine::Sqlite {
        assert!(html.contains("About 2,400 contacts"), "{common}: {html}");
    } else {
        let exact = format!("{},{:03} contacts", common / 1000, common % 1000);
        assert!(html.contains(&exact), "{exact}: {html}");
        assert!(!html.contains("About 2,"), "{html}");
    }
    let (_, html) = page(get(&app, &browser, &format!("{base}?search=rare")).await).await;
    let rare = matching(&emails, "rare").len();
    assert!(html.contains(&format!("{rare} contacts")), "{rare}: {html}");
    assert!(!html.contains(&format!("About {rare}")), "{html}");
}
