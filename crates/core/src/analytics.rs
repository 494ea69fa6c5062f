//! Time buckets of the analytics time series (DECISIONS.md "Activity and analytics").
//!
//! Invariants: buckets start at interval boundaries in the requested IANA zone (days at local
//! midnight, so a DST day is 23 or 25 hours long), the first holds `from`, and every bucket up
//! to `to` (exclusive) is present. Counts are gathered per [`SLOT_MS`] slot in UTC, and every
//! zone's offset is a multiple of 15 minutes, so each slot falls in exactly one bucket.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

use crate::time::Millis;

/// The granularity of stored counts: 15 minutes.
pub const SLOT_MS: Millis = 15 * 60 * 1000;
/// Most buckets one series may have.
pub const MAX_BUCKETS: usize = 2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    Day,
    Hour,
}

impl Interval {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "day" => Some(Self::Day),
            "hour" => Some(Self::Hour),
            _ => None,
        }
    }
}

/// The default zone.
pub fn utc() -> Tz {
    chrono_tz::UTC
}

/// An IANA zone name (`UTC`, `Europe/Oslo`).
pub fn parse_zone(name: &str) -> Option<Tz> {
    name.parse::<Tz>().ok()
}

fn local_midnight(tz: Tz, date: chrono::NaiveDate) -> DateTime<Utc> {
    let naive = date.and_time(NaiveTime::MIN);
    match tz.from_local_datetime(&naive).earliest() {
        Some(t) => t.with_timezone(&Utc),
        // Midnight skipped by a DST change: the day starts an hour later.
        None => tz
            .from_local_datetime(&(naive + Duration::hours(1)))
            .earliest()
            .map_or_else(|| naive.and_utc(), |t| t.with_timezone(&Utc)),
    }
}

/// Start of every bucket covering `[from, to)`; `None` when there would be more than
/// [`MAX_BUCKETS`].
pub fn bucket_starts(from: Millis, to: Millis, interval: Interval, tz: Tz) -> Option<Vec<Millis>> {
    let from_utc = DateTime::<Utc>::from_timestamp_millis(from)?;
    let local = from_utc.with_timezone(&tz);
    let mut starts = Vec::new();
    match interval {
        Interval::Day => {
            let mut date = local.date_naive();
            loop {
                let start = local_midnight(tz, date).timestamp_millis();
                if start >= to && !starts.is_empty() {
                    break;
                }
                starts.push(start);
                if starts.len() > MAX_BUCKETS {
                    return None;
                }
                date = date.succ_opt()?;
            }
        }
        Interval::Hour => {
            let floor = local
                .with_minute(0)
                .and_then(|t| t.with_second(0))
                .and_then(|t| t.with_nanosecond(0))?;
            let mut start = floor.with_timezone(&Utc).timestamp_millis();
            loop {
                starts.push(start);
                if starts.len() > MAX_BUCKETS {
                    return None;
                }
                start += 3_600_000;
                if start >= to {
                    break;
                }
            }
        }
    }
    Some(starts)
}

/// The bucket holding `at` (the last start at or before it).
pub fn bucket_of(starts: &[Millis], at: Millis) -> Option<usize> {
    starts.partition_point(|s| *s <= at).checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_iso;

    fn ms(s: &str) -> Millis {
        parse_iso(s).expect("iso")
    }

    #[test]
    fn days_start_at_local_midnight() {
        let tz = parse_zone("Europe/Oslo").expect("zone");
        let starts = bucket_starts(
            ms("2026-03-28T12:00:00Z"),
            ms("2026-03-30T00:00:00Z"),
            Interval::Day,
            tz,
        )
        .expect("buckets");
        assert_eq!(
            starts,
            vec![
                ms("2026-03-27T23:00:00Z"),
                ms("2026-03-28T23:00:00Z"),
                ms("2026-03-29T22:00:00Z"),
            ]
        );
        assert_eq!(bucket_of(&starts, ms("2026-03-29T21:59:59Z")), Some(1));
    }

    #[test]
    fn hours_in_utc_cover_the_range() {
        let tz = parse_zone("UTC").expect("zone");
        let starts = bucket_starts(
            ms("2026-01-01T00:30:00Z"),
            ms("2026-01-01T03:00:00Z"),
            Interval::Hour,
            tz,
        )
        .expect("buckets");
        assert_eq!(starts.len(), 3);
        assert_eq!(starts[0], ms("2026-01-01T00:00:00Z"));
        assert!(bucket_starts(0, ms("2026-01-01T00:00:00Z"), Interval::Hour, tz).is_none());
    }
}
