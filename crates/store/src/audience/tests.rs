//! Property test: the SQL compilation of a random tree selects exactly the contacts the
//! in-memory evaluator accepts, on random contacts (with static and dynamic segments they
//! may belong to), on SQLite and on PostgreSQL. The PostgreSQL test is skipped (ignored, so
//! listed as skipped) when `HERALD_TEST_POSTGRES_URL` was unset at build time, unless `CI` is
//! set: then a missing database fails it.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};

use herald_core::fields::FieldType;
use herald_core::filter::{ContactView, Filter, evaluate};
use herald_core::ids::{Uuid, new_id};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use sqlx::types::Json;

use super::Audience;
use crate::{Store, StoreOptions};

const NOW: i64 = 1_795_253_400_000;
const HOUR: i64 = 3_600_000;
/// Stand-ins in generated trees for the ids of each seeded project's two segments.
const STATIC_SEGMENT: &str = "00000000-0000-7000-8000-00000000005a";
const DYNAMIC_SEGMENT: &str = "00000000-0000-7000-8000-00000000005b";
/// The dynamic segment's own tree.
fn dynamic_segment_tree() -> Value {
    json!({"operator": "OR", "conditions": [
        {"field": "data.a", "operator": "equals", "value": "pro"},
        {"field": "event.login", "operator": "triggeredWithin", "value": 300, "unit": "hours"}]})
}
/// The inferred field types trees are parsed with (coercion): `b` is a number, so a string
/// value of a `b` leaf is coerced as the API would.
fn field_type(key: &str) -> Option<FieldType> {
    match key {
        "b" => Some(FieldType::Number),
        "addr.city" => Some(FieldType::String),
        _ => None,
    }
}

fn data_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!("pro"))),
        Just(Some(json!("Pro"))),
        Just(Some(json!("prolific"))),
        Just(Some(json!(""))),
        Just(Some(json!("ünï"))),
        Just(Some(json!(0))),
        Just(Some(json!(7))),
        Just(Some(json!(7.5))),
        Just(Some(json!(-3))),
        Just(Some(json!("7"))),
        Just(Some(json!(true))),
        Just(Some(json!(false))),
        Just(Some(json!("2026-11-20"))),
        Just(Some(json!("2026-11-21T08:00:00Z"))),
        Just(Some(json!("2026-10-01T08:00:00.250Z"))),
        Just(Some(json!("2026-11-2x"))),
        Just(Some(json!({"city": "Oslo"}))),
        Just(Some(json!([1, 2]))),
    ]
}

#[derive(Clone, Debug)]
struct Person {
    subscribed: bool,
    created_hours_ago: i64,
    /// How long after its creation the contact was last updated (never after `NOW`).
    updated_hours_after: i64,
    in_static_segment: bool,
    data: Vec<(&'static str, Option<Value>)>,
    events: Vec<(&'static str, i64)>,
}

fn person() -> impl Strategy<Value = Person> {
    (
        (any::<bool>(), any::<bool>()),
        (0i64..2000, 0i64..2000),
        proptest::collection::vec(data_value(), 3),
        proptest::collection::vec(
            (prop_oneof![Just("login"), Just("email.open")], 0i64..2000),
            0..3,
        ),
    )
        .prop_map(
            |((subscribed, in_static_segment), (created, updated), vals, events)| Person {
                subscribed,
                created_hours_ago: created,
                updated_hours_after: updated.min(created),
                in_static_segment,
                data: ["a", "b", "addr"].into_iter().zip(vals).collect(),
                events,
            },
        )
}

fn leaf() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        Just("data.a"),
        Just("data.b"),
        Just("data.addr.city"),
        Just("email"),
        Just("subscribed"),
        Just("createdAt"),
        Just("updatedAt"),
    ];
    let op = prop_oneof![
        Just("equals"),
        Just("notEquals"),
        Just("contains"),
        Just("notContains"),
        Just("greaterThan"),
        Just("lessThan"),
        Just("greaterThanOrEqual"),
        Just("lessThanOrEqual"),
        Just("exists"),
        Just("notExists"),
        Just("within"),
        Just("olderThan"),
    ];
    let value = prop_oneof![
        Just(json!("pro")),
        Just(json!("p")),
        Just(json!("Oslo")),
        Just(json!("u1@Example.com")),
        Just(json!(7)),
        Just(json!(0)),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!("2026-11-20")),
        Just(json!("2026-11-21T08:00:00Z")),
        Just(json!(30)),
        Just(json!(2)),
        Just(json!("7")),
    ];
    let event = prop_oneof![
        Just("event.login"),
        Just("email.opened"),
        Just("event.none")
    ];
    let event_op = prop_oneof![
        Just("triggered"),
        Just("triggeredWithin"),
        Just("triggeredOlderThan"),
        Just("notTriggered"),
        Just("notTriggeredWithin"),
    ];
    let unit = || prop_oneof![Just("days"), Just("hours"), Just("minutes")];
    let segment = prop_oneof![Just(STATIC_SEGMENT), Just(DYNAMIC_SEGMENT)];
    let segment_op = prop_oneof![Just("memberOfSegment"), Just("notMemberOfSegment")];
    prop_oneof![
        (segment, segment_op)
            .prop_map(|(id, o)| json!({"field": format!("segment.{id}"), "operator": o})),
        (field, op, value, unit())
            .prop_map(|(f, o, v, u)| json!({"field": f, "operator": o, "value": v, "unit": u})),
        (event, event_op, 0u32..100, unit())
            .prop_map(|(f, o, v, u)| json!({"field": f, "operator": o, "value": v, "unit": u})),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 12, 4, |inner| {
        (
            prop_oneof![Just("AND"), Just("OR")],
            proptest::collection::vec(inner, 0..4),
        )
            .prop_map(|(op, conditions)| json!({"operator": op, "conditions": conditions}))
    })
}

async fn sqlite_store(dir: &tempfile::TempDir) -> Store {
    let url = format!("sqlite://{}", dir.path().join("p.db").display());
    let s = Store::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    s.migrate().await.unwrap();
    s
}

async fn pg_store() -> Option<Store> {
    let url = std::env::var("HERALD_TEST_POSTGRES_URL").ok()?;
    let admin = Store::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    let schema = format!("audience_prop_{}", new_id().simple());
    db_write!(admin, |pool| sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE SCHEMA {schema}"
    )))
    .execute(pool)
    .await
    .unwrap()
    .rows_affected());
    let opts = StoreOptions {
        pg_schema: Some(schema),
        ..Default::default()
    };
    let s = Store::connect(&url, &opts).await.unwrap();
    s.migrate().await.unwrap();
    Some(s)
}

/// A seeded project: its id, its two segments' ids, and its people's in-memory views by id.
struct Seeded {
    project: Uuid,
    static_segment: Uuid,
    dynamic_segment: Uuid,
    views: Vec<(Uuid, ContactView)>,
}

async fn insert_segment(store: &Store, project: Uuid, kind: &str, filters: Option<Value>) -> Uuid {
    let id = new_id();
    db_write!(store, |pool| sqlx::query(
        "INSERT INTO segments (id, project_id, name, type, filters, created_at, updated_at) \
         VALUES ($1, $2, $3, $3, $4, 0, 0)"
    )
    .bind(id)
    .bind(project)
    .bind(kind)
    .bind(filters.as_ref().map(Json))
    .execute(pool)
    .await
    .unwrap()
    .rows_affected());
    id
}

/// Inserts a project with the people and its two segments (a static one whose members are
/// the people marked so, and a dynamic one with [`dynamic_segment_tree`]).
async fn seed(store: &Store, people: &[Person]) -> Seeded {
    let project = new_id();
    db_write!(store, |pool| sqlx::query(
        "INSERT INTO projects (id, name, public_key, secret_key_hash, secret_key_prefix, \
         created_at, updated_at) VALUES ($1, 'p', $2, $3, 'x', 0, 0)"
    )
    .bind(project)
    .bind(project.to_string())
    .bind(format!("h{project}"))
    .execute(pool)
    .await
    .unwrap()
    .rows_affected());
    let static_segment = insert_segment(store, project, "STATIC", None).await;
    let dynamic_segment =
        insert_segment(store, project, "DYNAMIC", Some(dynamic_segment_tree())).await;
    let dynamic_tree = Filter::parse(&dynamic_segment_tree()).unwrap();
    let mut views = Vec::new();
    for (i, p) in people.iter().enumerate() {
        let id = new_id();
        let mut data = Map::new();
        for (k, v) in &p.data {
            if let Some(v) = v {
                data.insert((*k).to_owned(), v.clone());
            }
        }
        let created = NOW - p.created_hours_ago * HOUR;
        let updated = created + p.updated_hours_after * HOUR;
        let email = format!("u{i}@Example.com");
        db_write!(store, |pool| {
            sqlx::query(
            "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)"
        )
        .bind(id)
        .bind(project)
        .bind(&email)
        .bind(p.subscribed)
        .bind(Json(&data))
        .bind(created)
        .bind(updated)
        .execute(pool)
        .await
        .unwrap()
        .rows_affected()
        });
        if p.in_static_segment {
            db_write!(store, |pool| sqlx::query(
                "INSERT INTO segment_members (segment_id, contact_id, project_id, created_at) \
                 VALUES ($1, $2, $3, 0)"
            )
            .bind(static_segment)
            .bind(id)
            .bind(project)
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
        }
        let mut events: HashMap<String, Vec<i64>> = HashMap::new();
        for (name, hours_ago) in &p.events {
            let at = NOW - hours_ago * HOUR;
            db_write!(store, |pool| sqlx::query(
                "INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
                 VALUES ($1, $2, $3, $4, '{}', $5)"
            )
            .bind(new_id())
            .bind(project)
            .bind(id)
            .bind(*name)
            .bind(at)
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
            events.entry((*name).to_owned()).or_default().push(at);
        }
        let mut view = ContactView {
            email,
            subscribed: p.subscribed,
            created_at: created,
            updated_at: updated,
            data,
            events,
            segments: Default::default(),
        };
        if p.in_static_segment {
            view.segments.insert(static_segment);
        }
        if evaluate(&dynamic_tree, &view, NOW) {
            view.segments.insert(dynamic_segment);
        }
        views.push((id, view));
    }
    Seeded {
        project,
        static_segment,
        dynamic_segment,
        views,
    }
}

async fn check(store: &Store, people: &[Person], trees: &[Value]) -> Result<(), String> {
    let Seeded {
        project,
        static_segment,
        dynamic_segment,
        views,
    } = seed(store, people).await;
    for raw in trees {
        let raw: Value = serde_json::from_str(
            &raw.to_string()
                .replace(STATIC_SEGMENT, &static_segment.to_string())
                .replace(DYNAMIC_SEGMENT, &dynamic_segment.to_string()),
        )
        .unwrap();
        // With the inferred types (coercion) where the tree allows it, as the API parses.
        let Ok(filter) =
            Filter::parse_with_types(&raw, &field_type).or_else(|_| Filter::parse(&raw))
        else {
            continue;
        };
        for subscribed_only in [false, true] {
            let want: BTreeSet<Uuid> = views
                .iter()
                .filter(|(_, v)| (!subscribed_only || v.subscribed) && evaluate(&filter, v, NOW))
                .map(|(id, _)| *id)
                .collect();
            let audience = Audience::new(Some(&filter), subscribed_only);
            let got: BTreeSet<Uuid> = store
                .matching_ids_page(project, audience, None, 10_000, NOW)
                .await
                .map_err(|e| format!("{e} for {raw}"))?
                .into_iter()
                .collect();
            if std::env::var("AUDIENCE_DEBUG").is_ok() {
                eprintln!("{} {} {}", store.engine_name(), got.len(), views.len());
            }
            if got != want {
                return Err(format!(
                    "{}: SQL {} vs memory {} for {raw}",
                    store.engine_name(),
                    got.len(),
                    want.len()
                ));
            }
            let n = store.count_matching(project, audience, NOW).await.unwrap();
            if n != want.len() as u64 {
                return Err(format!("count {n} != {} for {raw}", want.len()));
            }
        }
    }
    Ok(())
}

/// Runs the property on `stores` (96 cases of up to 16 people and 8 trees).
fn sql_equals_memory_on(rt: &tokio::runtime::Runtime, stores: &[Store]) {
    let config = ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    };
    proptest!(config, |(people in proptest::collection::vec(person(), 1..16),
                        trees in proptest::collection::vec(tree(), 1..8))| {
        for store in stores {
            let r = rt.block_on(check(store, &people, &trees));
            prop_assert!(r.is_ok(), "{}", r.unwrap_err());
        }
    });
}

#[test]
fn sql_equals_memory_on_random_contacts_and_trees() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let indexed_dir = tempfile::tempdir().unwrap();
    let indexed = rt.block_on(sqlite_store(&indexed_dir));
    // The hot-field indexes change plans, never results.
    let keys = ["a", "b", "addr.city"].map(str::to_owned);
    rt.block_on(indexed.ensure_field_indexes(&keys)).unwrap();
    let stores = [rt.block_on(sqlite_store(&dir)), indexed];
    sql_equals_memory_on(&rt, &stores);
}

#[test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
fn sql_equals_memory_on_random_contacts_and_trees_on_postgres() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pg = rt
        .block_on(pg_store())
        .expect("HERALD_TEST_POSTGRES_URL names the PostgreSQL to test on");
    sql_equals_memory_on(&rt, &[pg]);
}

/// Hot-field indexes: created once (a second call changes nothing), the count stays exact
/// with them, keys a filter cannot name are refused. (Whether the planner reads the index is
/// a matter of the table's statistics; `herald-bench segments` shows it at 1,000,000
/// contacts.)
#[test]
fn hot_field_indexes_are_created_once_and_keep_counts_exact() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let store = sqlite_store(&dir).await;
        let filter = Filter::parse(&json!({"operator": "AND", "conditions": [
            {"field": "data.plan", "operator": "equals", "value": "pro"},
            {"field": "event.login", "operator": "triggeredWithin", "value": 30, "unit": "days"}]}))
        .unwrap();
        let audience = Audience::new(Some(&filter), false);
        let people: Vec<Person> = (0..200)
            .map(|i| Person {
                subscribed: true,
                created_hours_ago: i,
                updated_hours_after: 0,
                in_static_segment: false,
                data: vec![("plan", Some(json!(if i % 4 == 0 { "pro" } else { "free" })))],
                events: if i % 10 == 0 {
                    vec![("login", i)]
                } else {
                    vec![]
                },
            })
            .collect();
        let project = seed(&store, &people).await.project;
        let indexes = |store: Store| async move {
            let names: Vec<(String,)> = db_read!(store, |pool| {
                sqlx::query_as(
                    "SELECT name FROM sqlite_master WHERE type = 'index' \
                     AND name LIKE 'contacts_field_%' ORDER BY name",
                )
                .fetch_all(pool)
                .await
                .unwrap()
            });
            names.into_iter().map(|n| n.0).collect::<Vec<_>>()
        };
        let before = store.count_matching(project, audience, NOW).await.unwrap();
        assert_eq!(before, 10, "i % 20 == 0 among 200");
        assert!(indexes(store.clone()).await.is_empty());
        let keys = ["plan".to_owned(), "addr.city".to_owned()];
        store.ensure_field_indexes(&keys).await.unwrap();
        store.ensure_field_indexes(&keys).await.unwrap();
        assert_eq!(
            indexes(store.clone()).await,
            [
                "contacts_field_616464722e63697479",
                "contacts_field_706c616e"
            ]
        );
        assert_eq!(
            store.count_matching(project, audience, NOW).await.unwrap(),
            before
        );
        let bad = store
            .ensure_field_indexes(&["no \"such\" key".to_owned()])
            .await;
        assert!(bad.is_err());
    });
}
