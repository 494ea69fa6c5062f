//! Calendar days typed in the pages' date fields (`YYYY-MM-DD`, `<input type="date">`), read
//! as UTC days: a day's start in milliseconds, and back.

use chrono::{NaiveDate, NaiveTime};
use herald_core::time::to_datetime;

pub const DAY_MS: i64 = 86_400_000;

/// What a bad date field says beside it.
pub const BAD_DAY: &str = "Enter a date as YYYY-MM-DD, for example 2026-11-03.";

/// The start (00:00 UTC) of the day `raw` names, or None when it is not a date.
pub fn parse_day(raw: &str) -> Option<i64> {
    let date = NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d").ok()?;
    // Years far outside what a send can carry are refused like any bad value.
    if !(1970..=9999).contains(&chrono::Datelike::year(&date)) {
        return None;
    }
    Some(date.and_time(NaiveTime::MIN).and_utc().timestamp_millis())
}

/// `ms` as the UTC day `YYYY-MM-DD`.
pub fn day(ms: i64) -> String {
    to_datetime(ms).format("%Y-%m-%d").to_string()
}

/// `ms` as a short day label (`Nov 3`).
pub fn short_day(ms: i64) -> String {
    to_datetime(ms).format("%b %-d").to_string()
}

/// The start of the UTC day holding `ms`.
pub fn day_start(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_read_and_print_in_utc() {
        let ms = parse_day("2026-11-03").expect("a day");
        assert_eq!(day(ms), "2026-11-03");
        assert_eq!(short_day(ms), "Nov 3");
        assert_eq!(day_start(ms + 5_000), ms);
        assert_eq!(parse_day("2026-13-01"), None);
        assert_eq!(parse_day("yesterday"), None);
        assert_eq!(parse_day("0000-01-01"), None);
        assert_eq!(
            parse_day(" 2026-02-28 "),
            Some(parse_day("2026-02-28").unwrap_or(0))
        );
    }
}
