//! Searching contacts by a substring of their email at a million contacts (SQLite; migration
//! 0034 and docs/architecture.md "Contact search").
//!
//! A substring cannot use an ordinary index: `email LIKE '%term%'` reads every contact of the
//! project, about as slow for a term in one address as for a term in all of them. Which plan
//! is fast depends on how often the term occurs, so a search first looks at the project's
//! newest [`SAMPLE`] contacts:
//! - a **common** term (at least [`COMMON_HITS`] matches there) is found quickly by reading
//!   the contacts newest first, as without a search; its exact number of matches needs every
//!   contact read, so where the caller accepts it the number is estimated from the sample;
//! - a **rare** term takes the trigram index (`contacts_trigrams`), which finds the rows that
//!   hold each of its trigrams, plus the contacts past the index's mark, read directly. Both
//!   the page and the exact count read only those rows.
//!
//! Terms under three characters have no trigram and projects of at most [`SAMPLE`] contacts
//! are read whole: both scan. PostgreSQL always scans.

use herald_core::ids::Uuid;

use crate::engine::Dialect;
use crate::{Store, StoreResult};

/// The newest contacts a search looks at to judge how common its term is.
pub const SAMPLE: i64 = 2_000;
/// Matches among the [`SAMPLE`] that make a term common (1 %: about 10,000 matches in a
/// million contacts, where reading newest first finds a page in a few thousand rows and the
/// trigram index would read more than it skips).
pub const COMMON_HITS: i64 = 20;
/// Contacts the background task indexes per transaction: 1 to 3 ms of the writer, so a
/// request write that arrives meanwhile waits at most that long. With 20,000 a batch held
/// the writer for about 60 ms, and `/v1/track`'s p99 (each request a new contact) went from
/// 9-10 ms to 33-44 ms.
pub const INDEX_BATCH: i64 = 500;
/// Pages of segment merging done after each batch (FTS5's `('merge', N)`; its automatic
/// merges are off, migration 0036): small steps keep the segments few (a search reads each)
/// without one batch paying for a whole level's merge (40-70 ms at times).
pub const MERGE_PAGES: i64 = 10;

/// How a search reads its matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SearchPlan {
    /// Every contact of the project, newest first.
    Scan,
    /// The term is common: `hits` of the newest [`SAMPLE`] of `contacts` matched.
    Common { hits: i64, contacts: i64 },
    /// The trigram index up to its mark, and the contacts past it.
    Trigrams { mark: i64 },
}

/// A number of contacts, exact or estimated from a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactCount {
    pub count: i64,
    pub exact: bool,
}

/// The source of the rowids a [`SearchPlan::Trigrams`] statement reads: the index's matches
/// for `$t` (the term as a LIKE pattern whose wildcards match more, never less, than the
/// escaped pattern the statement checks) and every contact past the mark `$m`.
pub(crate) fn trigram_rows(t: usize, m: usize) -> String {
    format!(
        "WITH hits(r) AS MATERIALIZED (SELECT rowid FROM contacts_trigrams WHERE email LIKE ${t} \
         UNION ALL SELECT rowid FROM contacts WHERE rowid > ${m}) "
    )
}

/// The pattern the trigram index is asked for: the lower-cased term between `%`, its own
/// `%`, `_` and `\` left as they are (a superset of the escaped pattern's matches).
pub(crate) fn trigram_pattern(term: &str) -> String {
    format!("%{}%", term.to_lowercase())
}

impl Store {
    /// How a search for `term` among the project's contacts (of `subscribed`, when given)
    /// reads its matches.
    pub(crate) async fn search_plan(
        &self,
        project_id: Uuid,
        term: &str,
        pattern: &str,
        subscribed: Option<bool>,
    ) -> StoreResult<SearchPlan> {
        if self.dialect() != Dialect::Sqlite || term.chars().count() < 3 {
            return Ok(SearchPlan::Scan);
        }
        let contacts = self.counted_contacts(project_id, None).await?;
        if contacts <= SAMPLE {
            return Ok(SearchPlan::Scan);
        }
        let filter = if subscribed.is_some() {
            " AND subscribed = $4"
        } else {
            ""
        };
        let q = format!(
            "SELECT count(*) FROM (SELECT email, subscribed FROM contacts WHERE project_id = $1 \
             ORDER BY id DESC LIMIT $2) WHERE email LIKE $3 ESCAPE '\\'{filter}"
        );
        let (hits,): (i64,) = db_read!(self, |pool| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(SAMPLE)
                .bind(pattern);
            if let Some(s) = subscribed {
                query = query.bind(s);
            }
            query.fetch_one(pool).await?
        });
        if hits >= COMMON_HITS {
            return Ok(SearchPlan::Common { hits, contacts });
        }
        let (mark,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as("SELECT upto FROM contacts_trigrams_mark")
                .fetch_one(pool)
                .await?
        });
        Ok(SearchPlan::Trigrams { mark })
    }

    /// Indexes the next contacts past the trigram index's mark, at most `batch`, in one
    /// transaction, and moves the mark past them; returns how many (0: caught up, or
    /// PostgreSQL, which has no such index).
    pub async fn index_contact_emails(&self, batch: i64) -> StoreResult<u64> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let n = db_tx!(tx, |conn| {
            let (mark,): (i64,) = sqlx::query_as("SELECT upto FROM contacts_trigrams_mark")
                .fetch_one(&mut *conn)
                .await?;
            let (upto,): (Option<i64>,) = sqlx::query_as(
                "SELECT max(rowid) FROM (SELECT rowid FROM contacts WHERE rowid > $1 \
                 ORDER BY rowid LIMIT $2)",
            )
            .bind(mark)
            .bind(batch.max(1))
            .fetch_one(&mut *conn)
            .await?;
            match upto {
                None => 0,
                Some(upto) => {
                    let n = sqlx::query(
                        "INSERT INTO contacts_trigrams (rowid, email) \
                         SELECT rowid, email FROM contacts WHERE rowid > $1 AND rowid <= $2",
                    )
                    .bind(mark)
                    .bind(upto)
                    .execute(&mut *conn)
                    .await?
                    .rows_affected();
                    sqlx::query(
                        "INSERT INTO contacts_trigrams (contacts_trigrams, rank) \
                         VALUES ('merge', $1)",
                    )
                    .bind(MERGE_PAGES)
                    .execute(&mut *conn)
                    .await?;
                    sqlx::query("UPDATE contacts_trigrams_mark SET upto = $1")
                        .bind(upto)
                        .execute(&mut *conn)
                        .await?;
                    n
                }
            }
        });
        tx.commit().await?;
        Ok(n)
    }

    /// Contacts not yet in the trigram index (0 on PostgreSQL).
    pub async fn contact_emails_unindexed(&self) -> StoreResult<i64> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(0);
        }
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM contacts \
                 WHERE rowid > (SELECT upto FROM contacts_trigrams_mark)",
            )
            .fetch_one(pool)
            .await?
        });
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_pattern_matches_at_least_what_the_escaped_one_does() {
        assert_eq!(trigram_pattern("A_b%"), "%a_b%%");
        assert_eq!(
            trigram_rows(4, 5),
            "WITH hits(r) AS MATERIALIZED (SELECT rowid FROM contacts_trigrams WHERE email \
             LIKE $4 UNION ALL SELECT rowid FROM contacts WHERE rowid > $5) "
        );
    }
}
