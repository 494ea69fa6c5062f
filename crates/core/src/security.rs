//! The sender-reputation rule: a bounce or complaint rate against warning and critical
//! thresholds (fractions, e.g. 0.05 for 5 %).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Level {
    Ok,
    Warning,
    Critical,
}

/// `part / total`, 0 when nothing was sent.
pub fn rate(part: i64, total: i64) -> f64 {
    if total <= 0 {
        0.0
    } else {
        part as f64 / total as f64
    }
}

/// The level of `rate`: at or over `critical` is critical, at or over `warning` a warning.
pub fn level(rate: f64, warning: f64, critical: f64) -> Level {
    if rate >= critical {
        Level::Critical
    } else if rate >= warning {
        Level::Warning
    } else {
        Level::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_rates() {
        assert_eq!(rate(1, 0), 0.0);
        assert_eq!(rate(1, 4), 0.25);
        assert_eq!(level(0.01, 0.02, 0.05), Level::Ok);
        assert_eq!(level(0.02, 0.02, 0.05), Level::Warning);
        assert_eq!(level(0.05, 0.02, 0.05), Level::Critical);
    }
}
