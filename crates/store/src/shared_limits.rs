//! Limits counted across the nodes of a cluster on PostgreSQL (migration 0027; docs/deploy.md
//! "Limits across nodes"): the per-key request windows and the per-project send slots. Each is
//! one statement, and the callers (`herald_api::rate_limit`, `herald_engine::throttle`) take
//! ahead in slices, so most requests and sends make no round trip at all. SQLite is one node:
//! every method answers `None` there, and the callers count in memory.

use herald_core::ids::Uuid;

use crate::engine::Db;
use crate::{Store, StoreResult};

/// What one [`Store::take_rate_slice`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSlice {
    /// Requests granted to the caller (0 when the window was used up).
    pub granted: u32,
    /// Requests granted in the window so far, every node together (at most the limit).
    pub used: u32,
}

/// A run of send slots [`Store::reserve_send_slots`] reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendSlots {
    /// The database's clock when they were reserved, in epoch microseconds.
    pub now_us: i64,
    /// The first slot, in epoch microseconds of the same clock (not before `now_us`).
    pub first_us: i64,
}

impl Store {
    /// PostgreSQL: takes up to `want` requests of `key`'s `limit` in the one-minute window
    /// `window`, in one statement; `None` on SQLite. The count grows by `want` whatever is
    /// left, so the grant is what fitted under the limit before this statement's addition.
    pub async fn take_rate_slice(
        &self,
        key: &str,
        window: i64,
        want: u32,
        limit: u32,
    ) -> StoreResult<Option<RateSlice>> {
        let Db::Postgres(pool) = &self.db else {
            return Ok(None);
        };
        let (used,): (i64,) = sqlx::query_as(
            "INSERT INTO rate_windows (key, window_start, used) VALUES ($1, $2, $3) \
             ON CONFLICT (key, window_start) DO UPDATE SET used = rate_windows.used + $3 \
             RETURNING used",
        )
        .bind(key)
        .bind(window)
        .bind(i64::from(want))
        .fetch_one(pool)
        .await?;
        Ok(Some(slice_of(used, want, limit)))
    }

    /// PostgreSQL: reserves `count` send slots of `project`, `interval_us` apart, from its next
    /// free slot or the database's now (whichever is later), in one statement; `None` on
    /// SQLite.
    pub async fn reserve_send_slots(
        &self,
        project: Uuid,
        count: u32,
        interval_us: i64,
    ) -> StoreResult<Option<SendSlots>> {
        let Db::Postgres(pool) = &self.db else {
            return Ok(None);
        };
        let span = interval_us.saturating_mul(i64::from(count));
        let (next, now_us): (i64, i64) = sqlx::query_as(
            "WITH t AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now) \
             INSERT INTO send_throttle (project_id, next_slot) SELECT $1, t.now + $2 FROM t \
             ON CONFLICT (project_id) DO UPDATE \
             SET next_slot = GREATEST(send_throttle.next_slot, excluded.next_slot - $2) + $2 \
             RETURNING next_slot, (SELECT now FROM t)",
        )
        .bind(project)
        .bind(span)
        .fetch_one(pool)
        .await?;
        Ok(Some(SendSlots {
            now_us,
            first_us: next - span,
        }))
    }

    /// PostgreSQL: deletes at most `limit` request windows that started before `before` (a
    /// window number, epoch minutes) and send slots of projects idle since `before_us`;
    /// returns how many rows went. 0 on SQLite (nothing stored).
    pub async fn purge_shared_limits(
        &self,
        before: i64,
        before_us: i64,
        limit: u32,
    ) -> StoreResult<u64> {
        let Db::Postgres(pool) = &self.db else {
            return Ok(0);
        };
        let windows = sqlx::query(
            "DELETE FROM rate_windows WHERE ctid IN \
             (SELECT ctid FROM rate_windows WHERE window_start < $1 LIMIT $2)",
        )
        .bind(before)
        .bind(i64::from(limit))
        .execute(pool)
        .await?
        .rows_affected();
        let slots = sqlx::query(
            "DELETE FROM send_throttle WHERE project_id IN \
             (SELECT project_id FROM send_throttle WHERE next_slot < $1 LIMIT $2)",
        )
        .bind(before_us)
        .bind(i64::from(limit))
        .execute(pool)
        .await?
        .rows_affected();
        Ok(windows + slots)
    }
}

/// The grant of a slice of `want` that brought the window's count to `used`.
fn slice_of(used: i64, want: u32, limit: u32) -> RateSlice {
    let before = used - i64::from(want);
    let fits = (i64::from(limit) - before).clamp(0, i64::from(want));
    RateSlice {
        granted: u32::try_from(fits).unwrap_or(0),
        used: u32::try_from(used.min(i64::from(limit))).unwrap_or(limit),
    }
}

#[cfg(test)]
mod tests {
    use super::slice_of;

    #[test]
    fn a_slice_gets_what_fits_under_the_limit() {
        assert_eq!(slice_of(20, 20, 100).granted, 20);
        assert_eq!(slice_of(110, 20, 100).granted, 10);
        let over = slice_of(140, 20, 100);
        assert_eq!((over.granted, over.used), (0, 100));
    }
}
