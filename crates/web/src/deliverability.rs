//! Bounce and complaint rates against the configured thresholds (DECISIONS.md: bounce warns
//! at 5 % and is critical at 10 %, complaints at 0.075 % and 0.15 %), in colour and words,
//! and the alert a page shows when one is crossed. The home page and Analytics both use it,
//! on `Store::delivery_counts` (the figures the security check weighs), so they agree.

use herald_api::state::SecurityThresholds;
use herald_core::security::{Level, level, rate};
use herald_store::security::DeliveryCounts;

use crate::format::{count, percent};

/// The thresholds of Analytics and the home page (DECISIONS.md "Dashboard": bounce warns at
/// 5 % and is critical at 10 %, complaints at 0.075 % and 0.15 %). The security check that
/// disables a project has thresholds of its own (`HERALD_BOUNCE_RATE_CRITICAL`, …), which the
/// Deliverability tab states beside these.
pub const THRESHOLDS: SecurityThresholds = SecurityThresholds {
    bounce_warning: 0.05,
    bounce_critical: 0.10,
    complaint_warning: 0.00075,
    complaint_critical: 0.0015,
};

/// One rate of a span, with its level.
pub struct Rate {
    pub label: String,
    pub value: String,
    /// "Healthy", "Warning: …", "Critical: …".
    pub words: String,
    /// The stat card's tone: `up` (healthy), `warn`, `down` (critical).
    pub tone: &'static str,
    pub level: Level,
    /// "3 of 60 sent".
    pub detail: String,
}

/// An alert shown at the top of a page while a rate is past its warning threshold.
pub struct Alert {
    /// `warning` or `danger` (the `.alert` class).
    pub tone: &'static str,
    pub message: String,
}

/// A fraction as a percentage without trailing zeros (`0.00075` → `0.075 %`).
pub fn threshold(f: f64) -> String {
    let p = f * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0} %")
    } else {
        let s = format!("{p:.3}");
        format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn one(label: String, part: i64, sent: i64, warning: f64, critical: f64, noun: &str) -> Rate {
    let r = rate(part, sent);
    let lv = level(r, warning, critical);
    let (words, tone) = match lv {
        Level::Ok => (
            format!(
                "Healthy: under the warning threshold of {}",
                threshold(warning)
            ),
            "up",
        ),
        Level::Warning => (
            format!(
                "Warning: at or above the warning threshold of {}",
                threshold(warning)
            ),
            "warn",
        ),
        Level::Critical => (
            format!(
                "Critical: at or above the critical threshold of {}",
                threshold(critical)
            ),
            "down",
        ),
    };
    Rate {
        label,
        value: percent(part, sent),
        words,
        tone,
        level: lv,
        detail: format!("{} {noun} of {} sent", count(part), count(sent)),
    }
}

/// The bounce and complaint rates of `c`, labelled for `span` ("30 days").
pub fn rates(c: &DeliveryCounts, t: &SecurityThresholds, span: &str) -> [Rate; 2] {
    [
        one(
            format!("Bounce rate, {span}"),
            c.bounced,
            c.sent,
            t.bounce_warning,
            t.bounce_critical,
            "bounced",
        ),
        one(
            format!("Complaint rate, {span}"),
            c.complained,
            c.sent,
            t.complaint_warning,
            t.complaint_critical,
            "complained",
        ),
    ]
}

/// The alerts of rates past their warning threshold, critical first.
pub fn alerts(rates: &[Rate]) -> Vec<Alert> {
    let mut out: Vec<Alert> = rates
        .iter()
        .filter(|r| r.level != Level::Ok)
        .map(|r| {
            let critical = r.level == Level::Critical;
            Alert {
                tone: if critical { "danger" } else { "warning" },
                message: format!(
                    "{} is {} ({}), {}. Check the addresses you send to and remove those that bounce or complain.",
                    r.label,
                    r.value,
                    r.detail,
                    r.words.split_once(": ").map_or(r.words.as_str(), |(_, w)| w)
                ),
            }
        })
        .collect();
    out.sort_by_key(|a| a.tone != "danger");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: SecurityThresholds = THRESHOLDS;

    fn counts(sent: i64, bounced: i64, complained: i64) -> DeliveryCounts {
        DeliveryCounts {
            sent,
            bounced,
            complained,
        }
    }

    #[test]
    fn levels_follow_the_thresholds_in_words() {
        let [b, c] = rates(&counts(100, 4, 0), &T, "30 days");
        assert_eq!(b.level, Level::Ok);
        assert!(b.words.starts_with("Healthy"), "{}", b.words);
        assert_eq!(c.level, Level::Ok);
        let [b, _] = rates(&counts(100, 5, 0), &T, "30 days");
        assert_eq!(b.level, Level::Warning);
        assert_eq!(b.words, "Warning: at or above the warning threshold of 5 %");
        let [b, c] = rates(&counts(1000, 100, 2), &T, "30 days");
        assert_eq!(b.level, Level::Critical);
        assert_eq!(c.level, Level::Critical);
        assert_eq!(
            c.words,
            "Critical: at or above the critical threshold of 0.15 %"
        );
        let a = alerts(&rates(&counts(1000, 60, 2), &T, "7 days"));
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].tone, "danger");
        assert!(
            a[0].message.starts_with("Complaint rate, 7 days is 0.2 %"),
            "{}",
            a[0].message
        );
    }

    #[test]
    fn nothing_sent_is_healthy_and_quiet() {
        let r = rates(&counts(0, 0, 0), &T, "30 days");
        assert!(alerts(&r).is_empty());
        assert_eq!(r[0].value, "—");
    }
}
