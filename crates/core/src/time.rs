//! Time as the API shows it: epoch milliseconds inside, ISO 8601 UTC with milliseconds outside.

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// `2026-11-21T09:30:00.000Z`
pub fn iso(ms: Millis) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn to_datetime(ms: Millis) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// Parses an RFC 3339 timestamp into epoch milliseconds.
pub fn parse_iso(s: &str) -> Option<Millis> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&Utc).timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_has_milliseconds_and_z() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_253_400_123), "2026-11-21T09:30:00.123Z");
        assert_eq!(
            parse_iso("2026-11-21T09:30:00.123Z"),
            Some(1_795_253_400_123)
        );
    }
}
