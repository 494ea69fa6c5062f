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

/// The 7-day rates at which a bounce or complaint disables its project, once it sent at
/// least `min_messages` in those 7 days.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CriticalRates {
    pub bounce: f64,
    pub complaint: f64,
    pub min_messages: i64,
}

impl Default for CriticalRates {
    fn default() -> Self {
        Self {
            bounce: 0.05,
            complaint: 0.003,
            min_messages: 100,
        }
    }
}

/// Why a project with these 7-day counts must be disabled, if it must.
pub fn disable_reason(
    sent: i64,
    bounced: i64,
    complained: i64,
    limits: &CriticalRates,
) -> Option<String> {
    if sent < limits.min_messages.max(1) {
        return None;
    }
    let (b, c) = (rate(bounced, sent), rate(complained, sent));
    if b >= limits.bounce {
        Some(format!(
            "Bounce rate {:.1}% over the last 7 days reached the critical {:.1}%.",
            b * 100.0,
            limits.bounce * 100.0
        ))
    } else if c >= limits.complaint {
        Some(format!(
            "Complaint rate {:.2}% over the last 7 days reached the critical {:.2}%.",
            c * 100.0,
            limits.complaint * 100.0
        ))
    } else {
        None
    }
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
