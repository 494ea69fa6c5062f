//! Billing rules with no I/O (DECISIONS.md "Billing"): the four categories of mail, monthly
//! caps (`None` = unlimited), and the calendar month in UTC that consumption is counted in.

use chrono::{Datelike, TimeZone, Utc};

use crate::time::Millis;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    Transactional,
    Campaigns,
    Workflows,
    Inbound,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Transactional,
        Category::Campaigns,
        Category::Workflows,
        Category::Inbound,
    ];

    /// The key in the API and in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Transactional => "transactional",
            Category::Campaigns => "campaigns",
            Category::Workflows => "workflows",
            Category::Inbound => "inbound",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// The largest cap accepted (far above any real month).
pub const LIMIT_MAX: i64 = 1_000_000_000_000;

/// Caps per category; `None` is unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub transactional: Option<i64>,
    pub campaigns: Option<i64>,
    pub workflows: Option<i64>,
    pub inbound: Option<i64>,
}

impl Limits {
    pub fn get(&self, c: Category) -> Option<i64> {
        match c {
            Category::Transactional => self.transactional,
            Category::Campaigns => self.campaigns,
            Category::Workflows => self.workflows,
            Category::Inbound => self.inbound,
        }
    }

    pub fn set(&mut self, c: Category, v: Option<i64>) {
        match c {
            Category::Transactional => self.transactional = v,
            Category::Campaigns => self.campaigns = v,
            Category::Workflows => self.workflows = v,
            Category::Inbound => self.inbound = v,
        }
    }

    /// Whether `adding` more messages of `c` on top of `used` stay within the cap.
    pub fn allows(&self, c: Category, used: i64, adding: i64) -> bool {
        self.get(c)
            .is_none_or(|cap| used.saturating_add(adding) <= cap)
    }
}

/// The billing period holding `now`: its key (`YYYY-MM`) and its bounds in ms (start
/// inclusive, end exclusive), the calendar month in UTC.
pub fn period(now: Millis) -> (String, Millis, Millis) {
    let t = crate::time::to_datetime(now);
    let (y, m) = (t.year(), t.month());
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let start = Utc
        .with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .map_or(0, |d| d.timestamp_millis());
    let end = Utc
        .with_ymd_and_hms(ny, nm, 1, 0, 0, 0)
        .single()
        .map_or(Millis::MAX, |d| d.timestamp_millis());
    (format!("{y:04}-{m:02}"), start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_calendar_months_in_utc() {
        let dec = crate::time::parse_iso("2026-12-31T23:59:59Z").expect("time");
        let (key, start, end) = period(dec);
        assert_eq!(key, "2026-12");
        assert_eq!(crate::time::iso(start), "2026-12-01T00:00:00.000Z");
        assert_eq!(crate::time::iso(end), "2027-01-01T00:00:00.000Z");
        let (key, ..) = period(end);
        assert_eq!(key, "2027-01");
    }

    #[test]
    fn caps_allow_up_to_the_limit() {
        let mut l = Limits::default();
        assert!(l.allows(Category::Transactional, 1_000_000, 1));
        l.set(Category::Transactional, Some(10));
        assert!(l.allows(Category::Transactional, 9, 1));
        assert!(!l.allows(Category::Transactional, 9, 2));
        assert!(l.allows(Category::Campaigns, 100, 100));
        assert_eq!(Category::parse("inbound"), Some(Category::Inbound));
    }
}
