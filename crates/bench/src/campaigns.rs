//! `campaign`: the fan-out of one campaign with audience ALL to `count` contacts (default
//! 1,000,000; 6 in 7 subscribed) on SQLite: recipients queued per second (messages and send
//! jobs written, in keyset pages of `campaign_page_size` with a checkpoint each), and the
//! peak RSS of the process meanwhile (the audience is streamed a page at a time). Delivery is
//! not part of it (`send` measures delivery).

use std::time::Instant;

use herald_core::campaign::AudienceType;
use herald_engine::{Engine, EngineSettings};
use herald_store::campaigns::CampaignContent;

use crate::memory::Peak;
use crate::send::verdict;

/// Target of issue 10.
const TARGET_PER_SEC: f64 = 20_000.0;
const TARGET_RSS_MB: u64 = 120;

pub async fn run(count: usize, database_url: Option<&str>) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let seeded = crate::segments::seed(dir.path(), count).await?;
    drop(seeded.conn);
    fan_out(
        dir.path(),
        &seeded.store,
        seeded.project,
        seeded.now,
        "SQLite",
    )
    .await?;
    seeded.store.close().await;
    match database_url {
        Some(url) => {
            let pg = crate::pg_seed::seed(url, count).await?;
            fan_out(dir.path(), &pg.store, pg.project, pg.now, "PostgreSQL").await?;
            pg.drop_schema().await?;
        }
        None => println!("  PostgreSQL: give --database-url postgres://... to measure it too"),
    }
    Ok(())
}

/// Sends one campaign to every contact of `project` and times its fan-out.
async fn fan_out(
    dir: &std::path::Path,
    store: &herald_store::Store,
    project: uuid::Uuid,
    now: i64,
    engine_name: &str,
) -> anyhow::Result<()> {
    let settings = EngineSettings::for_data_dir(dir, "http://localhost:3000");
    let engine = Engine::new(
        store.clone(),
        settings,
        b"bench-secret-bench-secret-0123456789",
    )?;
    let content = CampaignContent {
        name: "bench".into(),
        description: None,
        subject: "Hello {{plan}}".into(),
        body: "<p>Hi {{email}}, you are on {{plan ?? \"no plan\"}}.</p>".into(),
        from_email: "news@bench.example".into(),
        from_name: Some("Bench".into()),
        reply_to: None,
        audience_type: AudienceType::All,
        segment_id: None,
        audience_filter: None,
    };
    let campaign = store.create_campaign(project, &content, now).await?;
    store
        .send_campaign(project, campaign.id, now, now, 8)
        .await?;
    let peak = Peak::start();
    let started = Instant::now();
    while engine.fan_out_due().await? {}
    let secs = started.elapsed().as_secs_f64();
    let done = store
        .campaign(project, campaign.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the campaign is gone"))?;
    let rate = done.total_recipients as f64 / secs;
    let top = peak.get();
    println!(
        "campaign fan-out ({engine_name}): {} recipients queued in {secs:.1} s = {rate:.0}/s (target >= {TARGET_PER_SEC:.0}/s) {}",
        done.total_recipients,
        verdict(rate >= TARGET_PER_SEC)
    );
    println!(
        "  peak RSS during the fan-out: {top} MB (target < {TARGET_RSS_MB} MB) {}",
        verdict(top < TARGET_RSS_MB)
    );
    Ok(())
}
