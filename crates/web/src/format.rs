//! Numbers, rates and times as the pages show them (DESIGN.md "Words").

use herald_core::time::iso;

/// `12345` as `12,345`.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `part / whole` as a percentage with one decimal (`—` when `whole` is 0).
pub fn percent(part: i64, whole: i64) -> String {
    if whole <= 0 {
        return "—".to_owned();
    }
    let p = part as f64 * 100.0 / whole as f64;
    if p > 0.0 && p < 0.1 {
        format!("{p:.2} %")
    } else {
        format!("{p:.1} %")
    }
}

/// The trend of `now` against `before` in words: "up 12 % on the 30 days before".
pub fn trend(now: f64, before: f64) -> (String, &'static str) {
    if before <= 0.0 {
        return if now > 0.0 {
            ("new in the last 30 days".to_owned(), "neutral")
        } else {
            ("no change on the 30 days before".to_owned(), "neutral")
        };
    }
    let change = (now - before) * 100.0 / before;
    if change.abs() < 0.5 {
        ("no change on the 30 days before".to_owned(), "neutral")
    } else if change > 0.0 {
        (format!("↑ up {change:.0} % on the 30 days before"), "up")
    } else {
        (
            format!("↓ down {:.0} % on the 30 days before", -change),
            "down",
        )
    }
}

/// A time relative to `now` ("3 min ago") and its exact ISO form for the `title`.
pub fn ago(at: i64, now: i64) -> (String, String) {
    let secs = (now - at).max(0) / 1000;
    let text = match secs {
        0..=59 => "just now".to_owned(),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    };
    (text, iso(at))
}

/// An estimate kept to its two leading digits (412,345 reads "about 410,000").
pub fn about(n: i64) -> i64 {
    let mut unit: i64 = 1;
    while n / unit >= 100 {
        unit *= 10;
    }
    (n + unit / 2) / unit * unit
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_estimate_keeps_two_digits() {
        assert_eq!(super::about(412_345), 410_000);
        assert_eq!(super::about(415_000), 420_000);
        assert_eq!(super::about(87), 87);
        assert_eq!(super::about(0), 0);
    }
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-12_000), "-12,000");
    }

    #[test]
    fn rates_and_trends_read_as_words() {
        assert_eq!(percent(1, 4), "25.0 %");
        assert_eq!(percent(1, 0), "—");
        assert_eq!(percent(1, 2000), "0.05 %");
        assert_eq!(trend(112.0, 100.0).0, "↑ up 12 % on the 30 days before");
        assert_eq!(trend(50.0, 100.0).1, "down");
        assert_eq!(trend(0.0, 0.0).1, "neutral");
    }
}
