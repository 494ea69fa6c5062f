//! Two `Store` handles on one SQLite file (as two processes would be) write concurrently:
//! transactions that read before they write wait for each other instead of failing with
//! `SQLITE_BUSY`, because write transactions begin `IMMEDIATE`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::{Store, StoreOptions};

const PER_HANDLE: usize = 25;

/// One transaction: count the rows, pause while the other handle works, insert one. A
/// deferred transaction cannot upgrade its read lock while the other handle writes.
async fn read_then_write(store: &Store, marker: String) -> crate::StoreResult<()> {
    let mut tx = store.begin().await?;
    let _: (i64,) = db_tx!(&mut tx, |conn| {
        sqlx::query_as("SELECT count(*) FROM busy_probe")
            .fetch_one(&mut *conn)
            .await?
    });
    tokio::time::sleep(Duration::from_millis(3)).await;
    db_tx!(&mut tx, |conn| {
        sqlx::query("INSERT INTO busy_probe (marker) VALUES ($1)")
            .bind(&marker)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    tx.commit().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_on_one_sqlite_file_wait_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let a = Store::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    let b = Store::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    a.migrate().await.unwrap();
    b.migrate().await.unwrap();
    db_write!(a, |pool| sqlx::query(
        "CREATE TABLE busy_probe (marker TEXT NOT NULL)"
    )
    .execute(pool)
    .await
    .unwrap()
    .rows_affected());
    let mut tasks = Vec::new();
    for (name, store) in [("a", a.clone()), ("b", b.clone())] {
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for i in 0..PER_HANDLE {
                if let Err(e) = read_then_write(&store, format!("{name}{i}")).await {
                    failures.push(e.to_string());
                }
            }
            failures
        }));
    }
    for t in tasks {
        let failures = t.await.unwrap();
        assert!(failures.is_empty(), "writes failed: {failures:?}");
    }
    let (n,): (i64,) = db_read!(a, |pool| sqlx::query_as("SELECT count(*) FROM busy_probe")
        .fetch_one(pool)
        .await
        .unwrap());
    assert_eq!(n, 2 * PER_HANDLE as i64);
}

#[test]
fn sequential_placeholders_become_anonymous_on_sqlite_only() {
    use crate::engine::{Dialect, binds_for};
    let sql = "INSERT INTO t VALUES ($1, $2, 'a$b', '$.x'), ($3, $4)";
    assert_eq!(
        binds_for(Dialect::Sqlite, sql),
        "INSERT INTO t VALUES (?, ?, 'a$b', '$.x'), (?, ?)"
    );
    assert_eq!(binds_for(Dialect::Postgres, sql), sql);
    // Repeated or out-of-order placeholders keep their names.
    for kept in [
        "SELECT $1, $1",
        "SELECT $2, $1",
        "SELECT $1, $3",
        "SELECT $10",
    ] {
        assert_eq!(binds_for(Dialect::Sqlite, kept), kept);
    }
    let many: Vec<String> = (1..=12).map(|i| format!("${i}")).collect();
    assert_eq!(
        binds_for(Dialect::Sqlite, &many.join(",")),
        ["?"; 12].join(",")
    );
}

#[test]
fn value_rows_number_placeholders_in_text_order() {
    use crate::engine::{Dialect, binds_for, value_rows};
    assert_eq!(value_rows(2, 2, 3), "($3, $4), ($5, $6)");
    assert_eq!(value_rows(1, 1, 1), "($1)");
    assert_eq!(crate::engine::placeholder_list(3, 2), "$2, $3, $4");
    assert_eq!(crate::engine::placeholder_list(0, 1), "");
    // From $1 they become anonymous on SQLite.
    assert_eq!(
        binds_for(Dialect::Sqlite, &value_rows(2, 3, 1)),
        "(?, ?, ?), (?, ?, ?)"
    );
}
