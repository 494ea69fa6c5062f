//! The Analytics page's audience figures: contacts by the UTC day they were added, and
//! subscriptions and unsubscriptions (`contact.subscribed`, `contact.unsubscribed` events)
//! by day. Days are `created_at / 86_400_000` (UTC), counted by the database.
//!
//! Contacts are the ones that exist now (a deleted contact leaves the counts with its row).

use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::{Store, StoreResult};

/// Subscription changes of one UTC day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubscriptionDay {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    pub subscribed: i64,
    pub unsubscribed: i64,
}

impl Store {
    /// How many of the project's contacts were created before `at`.
    pub async fn contacts_created_before(&self, project_id: Uuid, at: Millis) -> StoreResult<i64> {
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM contacts WHERE project_id = $1 AND created_at < $2",
            )
            .bind(project_id)
            .bind(at)
            .fetch_one(pool)
            .await?
        });
        Ok(n)
    }

    /// Contacts created in `[from, to)` per UTC day: `(day since 1970, count)`, by day.
    pub async fn contacts_created_by_day(
        &self,
        project_id: Uuid,
        from: Millis,
        to: Millis,
    ) -> StoreResult<Vec<(i64, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT created_at / 86400000 AS d, count(*) FROM contacts \
                 WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 \
                 GROUP BY d ORDER BY d",
            )
            .bind(project_id)
            .bind(from)
            .bind(to)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Subscriptions and unsubscriptions in `[from, to)` per UTC day, by day (days without
    /// either are left out).
    pub async fn subscription_days(
        &self,
        project_id: Uuid,
        from: Millis,
        to: Millis,
    ) -> StoreResult<Vec<SubscriptionDay>> {
        let rows: Vec<(String, i64, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT name, created_at / 86400000 AS d, count(*) FROM events \
                 WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 \
                 AND name IN ('contact.subscribed', 'contact.unsubscribed') \
                 GROUP BY name, d",
            )
            .bind(project_id)
            .bind(from)
            .bind(to)
            .fetch_all(pool)
            .await?
        });
        let mut days: Vec<SubscriptionDay> = Vec::new();
        for (name, day, n) in rows {
            let i = match days.iter().position(|d| d.day == day) {
                Some(i) => i,
                None => {
                    days.push(SubscriptionDay {
                        day,
                        ..SubscriptionDay::default()
                    });
                    days.len() - 1
                }
            };
            if name == "contact.subscribed" {
                days[i].subscribed += n;
            } else {
                days[i].unsubscribed += n;
            }
        }
        days.sort_by_key(|d| d.day);
        Ok(days)
    }
}
