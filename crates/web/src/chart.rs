//! The dashboard's one chart: an SVG drawn on the server (DESIGN.md "Chart"), a line or bar
//! chart of one or more series over the same labels (days, hours), with its y axis, grid,
//! x labels, an accessible title and summary, and each point's value in a `<title>` (the
//! browser's tooltip and what a screen reader reads). No script, no chart library.
//!
//! Build a [`Chart`], call [`Chart::view`] and hand the [`ChartView`] to the template partial:
//!
//! ```text
//! {% import "components/chart.html" as chart %}
//! {% call chart::chart(opens_chart) %}{% endcall %}
//! ```
//!
//! Invariants: the geometry fits the view box whatever the values (negative values count as
//! 0, all-zero series draw on the axis); the y axis runs from 0 to a round maximum (1, 2, 2.5
//! or 5 times a power of ten; for counts at least 4, so grid values are whole); at most [`MAX_X_LABELS`] x labels are printed, evenly spaced;
//! every text is escaped by askama like any other value.

use crate::format::count;

/// The chart's width and height in SVG units (the SVG scales to its box).
pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 240.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;
/// Horizontal grid lines above the axis.
const GRID_LINES: usize = 4;
pub const MAX_X_LABELS: usize = 7;
/// Series drawn in distinct colours (`series-0` … `series-3`); more repeat them.
const PALETTE: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChartKind {
    Line,
    Bar,
}

/// How values are written (axis labels and tooltips).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueFormat {
    /// `12,345`
    Count,
    /// `12.5 %` (values are percentages already)
    Percent,
}

impl ValueFormat {
    fn write(self, v: f64) -> String {
        match self {
            ValueFormat::Count if v.fract() == 0.0 => count(v as i64),
            ValueFormat::Count => format!("{v:.1}"),
            ValueFormat::Percent => format!("{v:.1} %"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

/// A chart to draw: a kind, an accessible title, the x labels and the series over them.
#[derive(Clone, Debug)]
pub struct Chart {
    /// A unique id on the page (the `<title>` and `<desc>` ids derive from it).
    pub id: String,
    pub kind: ChartKind,
    pub title: String,
    pub labels: Vec<String>,
    pub series: Vec<Series>,
    pub format: ValueFormat,
}

impl Chart {
    pub fn new(id: &str, kind: ChartKind, title: &str) -> Self {
        Chart {
            id: id.to_owned(),
            kind,
            title: title.to_owned(),
            labels: Vec::new(),
            series: Vec::new(),
            format: ValueFormat::Count,
        }
    }

    /// The x labels (one per point, in order).
    pub fn labels(mut self, labels: impl IntoIterator<Item = String>) -> Self {
        self.labels = labels.into_iter().collect();
        self
    }

    /// A series; its values are matched to the labels by position (missing ones are 0).
    pub fn series(mut self, name: &str, values: impl IntoIterator<Item = f64>) -> Self {
        self.series.push(Series {
            name: name.to_owned(),
            values: values.into_iter().collect(),
        });
        self
    }

    pub fn format(mut self, format: ValueFormat) -> Self {
        self.format = format;
        self
    }

    /// The geometry and texts the partial draws.
    pub fn view(&self) -> ChartView {
        let n = self.labels.len();
        let value = |s: &Series, i: usize| s.values.get(i).copied().unwrap_or(0.0).max(0.0);
        let peak = self
            .series
            .iter()
            .flat_map(|s| (0..n).map(move |i| value(s, i)))
            .fold(0.0_f64, f64::max);
        // Counts are whole: a small peak still gets whole grid values (0, 1, 2, 3, 4).
        let top = match self.format {
            ValueFormat::Count => nice_max(peak).max(GRID_LINES as f64),
            ValueFormat::Percent => nice_max(peak),
        };
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let y_of = |v: f64| TOP + plot_h * (1.0 - v / top);
        let grid = (0..=GRID_LINES)
            .map(|k| {
                let v = top * k as f64 / GRID_LINES as f64;
                GridLine {
                    y: fixed(y_of(v)),
                    label: self.format.write(v),
                }
            })
            .collect();
        // Line points sit on slot edges (first at the left, last at the right); bars fill slots.
        let slot = if n == 0 { plot_w } else { plot_w / n as f64 };
        let x_of = |i: usize| match self.kind {
            ChartKind::Line if n > 1 => LEFT + plot_w * i as f64 / (n - 1) as f64,
            _ => LEFT + slot * (i as f64 + 0.5),
        };
        let every = n.div_ceil(MAX_X_LABELS).max(1);
        let x_labels = (0..n)
            .filter(|i| i % every == 0)
            .map(|i| XLabel {
                x: fixed(x_of(i)),
                label: self.labels[i].clone(),
            })
            .collect();
        let groups = self.series.len().max(1) as f64;
        let bar_w = slot * 0.7 / groups;
        let series = self
            .series
            .iter()
            .enumerate()
            .map(|(si, s)| {
                let points: Vec<Point> = (0..n)
                    .map(|i| {
                        let v = value(s, i);
                        let x = match self.kind {
                            ChartKind::Line => x_of(i),
                            ChartKind::Bar => {
                                LEFT + slot * i as f64 + slot * 0.15 + bar_w * si as f64
                            }
                        };
                        let y = y_of(v);
                        Point {
                            x: fixed(x),
                            y: fixed(y),
                            height: fixed(TOP + plot_h - y),
                            tip: format!(
                                "{}, {}: {}",
                                self.labels[i],
                                s.name,
                                self.format.write(v)
                            ),
                        }
                    })
                    .collect();
                let line = (0..n)
                    .map(|i| format!("{},{}", fixed(x_of(i)), fixed(y_of(value(s, i)))))
                    .collect::<Vec<_>>()
                    .join(" ");
                SeriesView {
                    name: s.name.clone(),
                    class: format!("series-{}", si % PALETTE),
                    line,
                    points,
                }
            })
            .collect();
        ChartView {
            id: self.id.clone(),
            bar: self.kind == ChartKind::Bar,
            title: self.title.clone(),
            summary: self.summary(),
            view_box: format!("0 0 {WIDTH} {HEIGHT}"),
            left: fixed(LEFT),
            right: fixed(WIDTH - RIGHT),
            label_x: fixed(LEFT - 8.0),
            label_y: fixed(HEIGHT - 8.0),
            bar_width: fixed(bar_w),
            grid,
            x_labels,
            series,
        }
    }

    /// One sentence per series for screen readers: its total and its peak.
    fn summary(&self) -> String {
        if self.labels.is_empty() {
            return "No data yet.".to_owned();
        }
        let first = &self.labels[0];
        let last = &self.labels[self.labels.len() - 1];
        let mut parts = vec![format!("From {first} to {last}.")];
        for s in &self.series {
            let values: Vec<f64> = (0..self.labels.len())
                .map(|i| s.values.get(i).copied().unwrap_or(0.0).max(0.0))
                .collect();
            let (peak_i, peak) =
                values
                    .iter()
                    .copied()
                    .enumerate()
                    .fold(
                        (0, 0.0_f64),
                        |best, (i, v)| if v > best.1 { (i, v) } else { best },
                    );
            let part = match self.format {
                ValueFormat::Count => format!(
                    "{}: {} in all, at most {} ({}).",
                    s.name,
                    self.format.write(values.iter().sum()),
                    self.format.write(peak),
                    self.labels[peak_i]
                ),
                ValueFormat::Percent => format!(
                    "{}: at most {} ({}).",
                    s.name,
                    self.format.write(peak),
                    self.labels[peak_i]
                ),
            };
            parts.push(part);
        }
        parts.join(" ")
    }
}

/// The smallest round number (1, 2, 2.5, 5 × 10^k) at or above `peak`; 1 for an empty chart.
fn nice_max(peak: f64) -> f64 {
    if !peak.is_finite() || peak <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(peak.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|v| *v >= peak)
        .unwrap_or(10.0 * magnitude)
}

/// A coordinate with one decimal (short SVG, stable output).
fn fixed(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

pub struct GridLine {
    pub y: String,
    pub label: String,
}

pub struct XLabel {
    pub x: String,
    pub label: String,
}

pub struct Point {
    pub x: String,
    pub y: String,
    /// A bar's height (from `y` down to the axis).
    pub height: String,
    /// "label, series: value": the point's `<title>`.
    pub tip: String,
}

pub struct SeriesView {
    pub name: String,
    pub class: String,
    /// A line chart's `points`.
    pub line: String,
    pub points: Vec<Point>,
}

/// What `components/chart.html` draws.
pub struct ChartView {
    pub id: String,
    pub bar: bool,
    pub title: String,
    pub summary: String,
    pub view_box: String,
    pub left: String,
    pub right: String,
    pub label_x: String,
    pub label_y: String,
    pub bar_width: String,
    pub grid: Vec<GridLine>,
    pub x_labels: Vec<XLabel>,
    pub series: Vec<SeriesView>,
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::*;

    #[derive(Template)]
    #[template(
        source = r#"{% import "components/chart.html" as chart %}{% call chart::chart(view) %}{% endcall %}"#,
        ext = "html"
    )]
    struct Page {
        view: ChartView,
    }

    fn svg(chart: &Chart) -> String {
        Page { view: chart.view() }.render().expect("renders")
    }

    fn days(n: usize) -> Vec<String> {
        (1..=n).map(|d| format!("Nov {d}")).collect()
    }

    #[test]
    fn round_maxima() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(10.0), 10.0);
        assert_eq!(nice_max(11.0), 20.0);
        assert_eq!(nice_max(240.0), 250.0);
        assert_eq!(nice_max(0.3), 0.5);
        assert_eq!(nice_max(f64::NAN), 1.0);
    }

    #[test]
    fn a_line_chart_draws_axes_points_and_accessible_text() {
        let chart = Chart::new("opens", ChartKind::Line, "Opens & clicks <per day>")
            .labels(days(3))
            .series("Opens", [10.0, 40.0, 20.0])
            .series("Clicks", [1.0, 5.0]);
        let out = svg(&chart);
        assert!(out.contains(r#"role="img""#), "{out}");
        assert!(
            out.contains(r#"aria-labelledby="opens-title opens-desc""#),
            "{out}"
        );
        assert!(
            out.contains(r#"<title id="opens-title">Opens &#38; clicks &#60;per day&#62;</title>"#)
                || out.contains(
                    r#"<title id="opens-title">Opens &amp; clicks &lt;per day&gt;</title>"#
                ),
            "the title is escaped: {out}"
        );
        assert!(
            out.contains("Opens: 70 in all, at most 40 (Nov 2)."),
            "{out}"
        );
        assert!(
            out.contains("Clicks: 6 in all, at most 5 (Nov 2)."),
            "{out}"
        );
        // Axis 0 to 50 in 4 steps; the first point at the left edge, the last at the right.
        for label in ["0", "12.5", "25", "37.5", "50"] {
            assert!(
                out.contains(&format!(">{label}</text>")),
                "y label {label}: {out}"
            );
        }
        assert!(out.contains(r#"points="56,172 342,52 628,132""#), "{out}");
        assert!(
            out.contains("<title>Nov 3, Clicks: 0</title>"),
            "a missing value is 0: {out}"
        );
        assert_eq!(out.matches("<circle").count(), 6);
        assert_eq!(out.matches("<polyline").count(), 2);
        assert!(out.contains(">Nov 1</text>") && out.contains(">Nov 3</text>"));
        assert!(
            out.contains(r#"class="swatch series-1""#),
            "a legend for two series"
        );
    }

    #[test]
    fn a_bar_chart_fills_slots_and_thins_its_labels() {
        let values: Vec<f64> = (0..30).map(f64::from).collect();
        let chart = Chart::new("sent", ChartKind::Bar, "Emails sent")
            .labels(days(30))
            .series("Sent", values);
        let out = svg(&chart);
        assert_eq!(out.matches("<rect class=\"bar").count(), 30);
        let labels = out.matches("class=\"axis-label x\"").count();
        assert!((5..=MAX_X_LABELS).contains(&labels), "{labels} x labels");
        assert!(!out.contains("chart-legend"), "one series needs no legend");
        // The tallest bar reaches the top of the plot (29 of a 50 axis: 58 %).
        let plot_h = HEIGHT - TOP - BOTTOM;
        let expected = fixed(plot_h * 29.0 / 50.0);
        assert!(out.contains(&format!(r#"height="{expected}""#)), "{out}");
    }

    #[test]
    fn an_empty_or_negative_chart_stays_in_its_box() {
        let out = svg(&Chart::new("e", ChartKind::Line, "Nothing"));
        assert!(out.contains("No data yet."));
        let out = svg(&Chart::new("n", ChartKind::Line, "Negative")
            .labels(days(1))
            .series("x", [-5.0])
            .format(ValueFormat::Percent));
        assert!(
            out.contains(r#"cx="342" cy="212""#),
            "one point, centred, on the axis: {out}"
        );
        assert!(out.contains(">1.0 %</text>"), "{out}");
    }
}
