//! Dates as filters compare them: the two forms of SPEC.md normalised to the 24-character form
//! `YYYY-MM-DDTHH:MM:SS.sssZ`, whose byte order is chronological order. The SQL compiler applies
//! the same shape test and the same normalisation, so both agree on every stored string.

use crate::time::Millis;

/// The normalised form of a stored date string, or `None` when it does not have one of the two
/// shapes (digits in place; the calendar is not checked, exactly like the SQL side).
pub fn normalize_date(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let date_ok = || {
        b.len() >= 10
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
    };
    let time_ok = || {
        b.len() >= 20
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19)
    };
    match b.len() {
        10 if date_ok() => Some(format!("{s}T00:00:00.000Z")),
        20 if date_ok() && time_ok() && b[19] == b'Z' => Some(format!("{}.000Z", &s[..19])),
        24 if date_ok() && time_ok() && b[19] == b'.' && digits(20..23) && b[23] == b'Z' => {
            Some(s.to_owned())
        }
        _ => None,
    }
}

/// Milliseconds in one `unit` (`days`, `hours`, `minutes`; singular accepted).
pub fn unit_millis(unit: &str) -> Option<Millis> {
    match unit {
        "days" | "day" => Some(86_400_000),
        "hours" | "hour" => Some(3_600_000),
        "minutes" | "minute" => Some(60_000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_normalise_and_order() {
        assert_eq!(
            normalize_date("2026-01-31").as_deref(),
            Some("2026-01-31T00:00:00.000Z")
        );
        assert_eq!(
            normalize_date("2026-01-31T10:00:00Z").as_deref(),
            Some("2026-01-31T10:00:00.000Z")
        );
        assert_eq!(
            normalize_date("2026-01-31T10:00:00.123Z").as_deref(),
            Some("2026-01-31T10:00:00.123Z")
        );
        for bad in [
            "2026-1-31",
            "2026-01-31 10:00",
            "x",
            "2026-01-31T10:00:00+01:00",
            "",
        ] {
            assert_eq!(normalize_date(bad), None, "{bad}");
        }
    }
}
