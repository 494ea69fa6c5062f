//! What delivery writes into mail (tracked links, the pixel, the footer, List-Unsubscribe)
//! and what following the pixel and the links records.

use herald_testkit::dkim_check::dkim_passes;
use serde_json::json;

use super::*;
use crate::both_engines;
use crate::helpers::expect_error;

both_engines!(
    tracked_mail_has_rewritten_links_and_a_pixel,
    the_open_pixel_records_the_first_open_once,
    a_click_redirects_and_records_the_click_and_the_open,
    a_tampered_click_token_is_refused_without_a_redirect,
    headless_mail_is_never_tracked,
    marketing_only_mode_tracks_marketing_mail_only,
    marketing_mail_has_list_unsubscribe_under_dkim_and_a_footer,
);

const BODY: &str = concat!(
    "<html><body><p>Hi {{firstName ?? \"there\"}}.</p>",
    r#"<p><a class="cta" href="https://shop.example/sale?utm=mail&amp;id=7">Sale</a> "#,
    "<a href='http://blog.example/post'>Blog</a> ",
    r#"<a href="mailto:help@shop.example">Help</a> "#,
    r#"<a href="{{manageUrl}}">Preferences</a></p></body></html>"#
);

async fn tracked_mail_has_rewritten_links_and_a_pixel(engine: Engine) {
    let w = world(engine).await;
    let (id, _, raw) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "Hi", "body": BODY}),
    )
    .await;
    let mail = parse(&raw);
    let html = mail.body_html(0).unwrap();
    assert!(!html.contains("https://shop.example"), "{html}");
    assert!(!html.contains("http://blog.example"), "{html}");
    assert!(
        html.contains(r#"href="mailto:help@shop.example""#),
        "{html}"
    );
    let clicks = links_to(&html, "/t/click/");
    assert_eq!(clicks.len(), 2, "{html}");
    assert!(
        html.contains(r#"<a class="cta" href="https://links.example/t/click/"#),
        "{html}"
    );
    // The manage link (a template variable) is a list page, never wrapped in a redirect.
    let manage = links_to(&html, "/manage/");
    assert_eq!(manage.len(), 1, "{html}");
    let opens = links_to(&html, "/t/open/");
    assert_eq!(opens.len(), 1);
    assert!(
        html.contains(&format!(
            r#"<img src="{}" width="1" height="1" alt="">"#,
            opens[0]
        )),
        "{html}"
    );
    assert!(html.find("<img").unwrap() < html.find("</body>").unwrap());
    // The text part keeps the original URLs; transactional mail has no footer or header.
    let text = mail.body_text(0).unwrap();
    assert!(
        text.contains("Sale (https://shop.example/sale?utm=mail&id=7)"),
        "{text}"
    );
    assert!(!text.contains("/t/click/"), "{text}");
    assert!(mail.header_raw("List-Unsubscribe").is_none());
    assert!(!html.contains("mailing list"), "{html}");
    // What GET /emails/:id shows is the body as rendered, without the tracking.
    let stored = message(&w, &id).await;
    assert!(
        stored["html"]
            .as_str()
            .unwrap()
            .contains("https://shop.example/sale")
    );
}

async fn the_open_pixel_records_the_first_open_once(engine: Engine) {
    let w = world(engine).await;
    let (id, contact, raw) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "Hi", "body": BODY}),
    )
    .await;
    let html = parse(&raw).body_html(0).unwrap().into_owned();
    let pixel = local(&w.app, &links_to(&html, "/t/open/")[0]);
    for _ in 0..3 {
        let res = w.app.client.get(&pixel).send().await.unwrap();
        assert_eq!(res.status(), 200);
        let h = res.headers();
        assert_eq!(h["content-type"], "image/gif");
        assert!(h["cache-control"].to_str().unwrap().contains("no-store"));
        assert!(h.get("ratelimit-limit").is_none());
        let gif = res.bytes().await.unwrap();
        assert!(gif.starts_with(b"GIF89a") && gif.len() == 43);
    }
    let m = message(&w, &id).await;
    assert_eq!(m["status"], "OPENED", "{m}");
    let opened: Vec<_> = m["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["status"] == "OPENED")
        .collect();
    assert_eq!(opened.len(), 1, "{m}");
    let ev = events(&w, &contact).await;
    let opens: Vec<_> = ev.iter().filter(|e| e["name"] == "email.open").collect();
    assert_eq!(opens.len(), 1, "{ev:?}");
    assert_eq!(opens[0]["data"]["messageId"], id.as_str());
    // Any other token still gets the pixel, and records nothing.
    for bad in [
        "nonsense",
        &format!("{}x", &pixel[pixel.rfind('/').unwrap() + 1..]),
    ] {
        let res = w
            .app
            .client
            .get(w.app.url(&format!("/t/open/{bad}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "image/gif");
    }
    assert_eq!(count(&w, &contact, "email.open").await, 1);
}

async fn a_click_redirects_and_records_the_click_and_the_open(engine: Engine) {
    let w = world(engine).await;
    let (id, contact, raw) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "Hi", "body": BODY}),
    )
    .await;
    let html = parse(&raw).body_html(0).unwrap().into_owned();
    let clicks = links_to(&html, "/t/click/");
    let client = no_redirects();
    for (link, target) in clicks.iter().zip([
        "https://shop.example/sale?utm=mail&id=7",
        "http://blog.example/post",
    ]) {
        for _ in 0..2 {
            let res = client.get(local(&w.app, link)).send().await.unwrap();
            assert_eq!(res.status(), 302);
            assert_eq!(res.headers()["location"], target);
            assert!(res.headers().get("ratelimit-limit").is_none());
        }
    }
    let m = message(&w, &id).await;
    assert_eq!(m["status"], "CLICKED", "{m}");
    let steps: Vec<&str> = m["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["PENDING", "SENDING", "SENT", "OPENED", "CLICKED"]);
    let ev = events(&w, &contact).await;
    let clicks: Vec<_> = ev.iter().filter(|e| e["name"] == "email.click").collect();
    assert_eq!(clicks.len(), 1, "the first click is recorded: {ev:?}");
    assert_eq!(
        clicks[0]["data"]["url"],
        "https://shop.example/sale?utm=mail&id=7"
    );
    assert_eq!(clicks[0]["data"]["messageId"], id.as_str());
    assert_eq!(
        count(&w, &contact, "email.open").await,
        1,
        "a click implies an open"
    );
    // A later pixel load does not record a second open.
    let pixel = local(&w.app, &links_to(&html, "/t/open/")[0]);
    w.app.client.get(&pixel).send().await.unwrap();
    assert_eq!(count(&w, &contact, "email.open").await, 1);
    assert_eq!(message(&w, &id).await["status"], "CLICKED");
}

async fn a_tampered_click_token_is_refused_without_a_redirect(engine: Engine) {
    let w = world(engine).await;
    let (id, contact, raw) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "Hi", "body": BODY}),
    )
    .await;
    let html = parse(&raw).body_html(0).unwrap().into_owned();
    let link = local(&w.app, &links_to(&html, "/t/click/")[0]);
    let at = link.len() - 5;
    let flipped = if &link[at..at + 1] == "A" { "B" } else { "A" };
    let tampered = format!("{}{flipped}{}", &link[..at], &link[at + 1..]);
    let pixel = links_to(&html, "/t/open/")[0].replacen("/t/open/", "/t/click/", 1);
    let client = no_redirects();
    for bad in [
        tampered,
        format!("{}/t/click/AAAA", w.app.base),
        format!("{}/t/click/{}", w.app.base, "x".repeat(20_000)),
        local(&w.app, &pixel), // an open token is not a click token
    ] {
        let res = client.get(&bad).send().await.unwrap();
        assert!(res.headers().get("location").is_none());
        expect_error(res, 400, "BAD_REQUEST").await;
    }
    assert_eq!(message(&w, &id).await["status"], "SENT");
    assert_eq!(count(&w, &contact, "email.click").await, 0);
}

async fn headless_mail_is_never_tracked(engine: Engine) {
    let w = world(engine).await;
    let t = template(&w, "HEADLESS", BODY).await;
    w.app
        .create_contact(
            &w.project.secret_key,
            json!({"email": "ada@example.org", "subscribed": true}),
        )
        .await;
    let (_, _, raw) = deliver(&w, &json!({"to": "ada@example.org", "template": t})).await;
    let mail = parse(&raw);
    let html = mail.body_html(0).unwrap();
    assert!(
        html.contains(r#"href="https://shop.example/sale?utm=mail&amp;id=7""#),
        "{html}"
    );
    assert!(!html.contains("/t/"), "{html}");
    assert!(!html.contains("mailing list"), "{html}");
    assert!(mail.header_raw("List-Unsubscribe").is_none());
    assert!(mail.header_raw("List-Unsubscribe-Post").is_none());
}

async fn marketing_only_mode_tracks_marketing_mail_only(engine: Engine) {
    let w = world(engine).await;
    set_project(&w, json!({"tracking": "MARKETING_ONLY"})).await;
    let t = template(&w, "MARKETING", BODY).await;
    w.app
        .create_contact(
            &w.project.secret_key,
            json!({"email": "ada@example.org", "subscribed": true}),
        )
        .await;
    let (_, _, plain) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "Hi", "body": BODY}),
    )
    .await;
    let html = parse(&plain).body_html(0).unwrap().into_owned();
    assert!(links_to(&html, "/t/").is_empty(), "{html}");
    assert!(html.contains("https://shop.example/sale"));
    let (_, _, marketing) = deliver(&w, &json!({"to": "ada@example.org", "template": t})).await;
    let html = parse(&marketing).body_html(0).unwrap().into_owned();
    assert_eq!(links_to(&html, "/t/click/").len(), 2, "{html}");
    assert_eq!(links_to(&html, "/t/open/").len(), 1, "{html}");
    // DISABLED: the footer and header stay (they are not tracking), the links do not change.
    set_project(&w, json!({"tracking": "DISABLED"})).await;
    let (_, _, off) = deliver(&w, &json!({"to": "ada@example.org", "template": t})).await;
    let mail = parse(&off);
    let html = mail.body_html(0).unwrap();
    assert!(links_to(&html, "/t/").is_empty(), "{html}");
    assert!(mail.header_raw("List-Unsubscribe").is_some());
}

async fn marketing_mail_has_list_unsubscribe_under_dkim_and_a_footer(engine: Engine) {
    let w = world(engine).await;
    let t = template(&w, "MARKETING", BODY).await;
    w.app
        .create_contact(
            &w.project.secret_key,
            json!({"email": "ada@example.org", "subscribed": true}),
        )
        .await;
    let (_, _, raw) = deliver(&w, &json!({"to": "ada@example.org", "template": t})).await;
    let mail = parse(&raw);
    let header = mail
        .header_raw("List-Unsubscribe")
        .unwrap()
        .trim()
        .to_owned();
    let url = header.trim_start_matches('<').trim_end_matches('>');
    assert!(
        url.starts_with(&format!("{PUBLIC}/unsubscribe/")),
        "{header}"
    );
    assert_eq!(links_to(url, "/unsubscribe/"), [url]);
    assert_eq!(
        mail.header_raw("List-Unsubscribe-Post").map(str::trim),
        Some("List-Unsubscribe=One-Click")
    );
    assert!(dkim_passes(&raw, DOMAIN, &w.selector, &w.dkim_txt).await);
    let sig = mail.header_raw("DKIM-Signature").unwrap();
    let h: String = sig
        .split(';')
        .find_map(|t| t.trim().strip_prefix("h="))
        .unwrap()
        .split_whitespace()
        .collect();
    let signed: Vec<String> = h.split(':').map(str::to_ascii_lowercase).collect();
    for name in ["list-unsubscribe", "list-unsubscribe-post"] {
        assert!(signed.iter().any(|s| s == name), "{name} not in h={h}");
    }
    // The footer, with the same unsubscribe link, in both parts.
    let html = mail.body_html(0).unwrap();
    assert!(
        html.contains("You are receiving this email because"),
        "{html}"
    );
    assert!(html.contains(&format!(r#"<a href="{url}""#)), "{html}");
    assert!(html.find("mailing list").unwrap() < html.find("/t/open/").unwrap());
    let text = mail.body_text(0).unwrap();
    assert!(
        text.contains("You are receiving this email because"),
        "{text}"
    );
    assert!(text.contains(&format!("Unsubscribe: {url}")), "{text}");
    // Tampering with the header breaks the signature.
    let raw_text = String::from_utf8_lossy(&raw).into_owned();
    let forged = raw_text.replacen(
        "<https://links.example/unsubscribe/",
        "<https://evil.example/unsubscribe/",
        1,
    );
    assert_ne!(forged, raw_text);
    assert!(!dkim_passes(forged.as_bytes(), DOMAIN, &w.selector, &w.dkim_txt).await);
}
