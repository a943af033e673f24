//! One chart component for every panel: the figure's HTML (canvas, hover read-out, PNG button, data table),
//! the canvas's accessible name, the data table that is its text alternative, and a hover read-out that snaps
//! to the nearest data point and prints that point's values as the table holds them. Drawing is `charts`'.

use crate::components::table::esc;

/// Maps a canvas pixel to chart coordinates (None outside the plot area).
pub type Mapping = Box<dyn Fn((i32, i32)) -> Option<(f64, f64)>>;

/// How a chart's values are printed (in the read-out and the data table alike).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fmt {
    /// Seconds, the reports' rule (ms below 10 s).
    Secs,
    /// A fraction as a percentage with one decimal.
    Pct,
    /// A signed fraction as a percentage with one decimal.
    SignedPct,
    /// A number with this many decimals.
    Num(usize),
}

impl Fmt {
    pub fn show(self, v: f64) -> String {
        match self {
            Fmt::Secs => inferscale::export::secs(v),
            Fmt::Pct => format!("{:.1} %", v * 100.0),
            Fmt::SignedPct => format!("{:+.1} %", v * 100.0),
            Fmt::Num(d) => format!("{v:.d$}"),
        }
    }
}

/// How the read-out finds the nearest point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A CDF on a log x axis: nearest in log x.
    Cdf,
    /// Series over a shared x (time): nearest x, every series' value there.
    Lines,
    /// Categories on x (vertical bars): the bar under the cursor.
    Bars,
    /// Categories on y (horizontal bars).
    HBars,
    /// Points: nearest in both axes, scaled to their ranges.
    Scatter,
}

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point (scatter): its name.
    pub labels: Vec<String>,
}

/// A chart drawn on canvas `id`.
pub struct Figure {
    pub id: String,
    pub kind: Kind,
    pub map: Mapping,
    /// One sentence of what it shows: the canvas's accessible name and the table's caption.
    pub summary: String,
    pub x_name: String,
    pub y_name: String,
    pub fmt_x: Fmt,
    pub fmt_y: Fmt,
    /// Bars: the category of each x (or y) slot.
    pub categories: Vec<String>,
    pub series: Vec<Series>,
}

/// The figure's HTML: the canvas (an image with a name), the read-out, a PNG button and the data table.
pub fn html(id: &str, caption: &str, width: u32, height: u32) -> String {
    format!(
        "<figure><canvas id=\"{id}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{c}\"></canvas><figcaption><span id=\"hover-{id}\" class=\"hover\" aria-live=\"polite\"></span> <button data-png=\"{id}\" type=\"button\">PNG</button></figcaption><details class=\"chart-data\"><summary>Data ({c})</summary><div id=\"data-{id}\"></div></details></figure>",
        c = esc(caption)
    )
}

impl Figure {
    /// The data as a table: one row per point (per category for bars), as the read-out prints them.
    pub fn table(&self) -> String {
        let (head, rows): (Vec<String>, Vec<Vec<String>>) = match self.kind {
            Kind::Scatter => {
                let head = vec!["point".into(), "series".into(), self.x_name.clone(), self.y_name.clone()];
                let rows = self
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter().enumerate().map(move |(i, p)| (s, i, p)))
                    .map(|(s, i, p)| {
                        vec![
                            s.labels.get(i).cloned().unwrap_or_else(|| format!("{}", i + 1)),
                            s.name.clone(),
                            self.fmt_x.show(p.0),
                            self.fmt_y.show(p.1),
                        ]
                    })
                    .collect();
                (head, rows)
            }
            Kind::Bars | Kind::HBars => {
                let head =
                    std::iter::once(self.x_name.clone()).chain(self.series.iter().map(|s| s.name.clone())).collect();
                let rows = (0..self.categories.len())
                    .map(|i| {
                        std::iter::once(self.categories[i].clone())
                            .chain(
                                self.series
                                    .iter()
                                    .map(|s| s.points.get(i).map(|p| self.fmt_y.show(p.1)).unwrap_or_default()),
                            )
                            .collect()
                    })
                    .collect();
                (head, rows)
            }
            Kind::Cdf | Kind::Lines => {
                let head =
                    std::iter::once(self.x_name.clone()).chain(self.series.iter().map(|s| s.name.clone())).collect();
                let n = self.series.first().map_or(0, |s| s.points.len());
                let rows = (0..n)
                    .map(|i| {
                        std::iter::once(self.fmt_x.show(self.series[0].points[i].0))
                            .chain(
                                self.series
                                    .iter()
                                    .map(|s| s.points.get(i).map(|p| self.fmt_y.show(p.1)).unwrap_or_default()),
                            )
                            .collect()
                    })
                    .collect();
                (head, rows)
            }
        };
        let th: String = head.iter().map(|h| format!("<th>{}</th>", esc(h))).collect();
        let body: String = rows
            .iter()
            .map(|r| format!("<tr>{}</tr>", r.iter().map(|c| format!("<td>{}</td>", esc(c))).collect::<String>()))
            .collect();
        format!(
            "<table class=\"data\"><caption>{}</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>",
            esc(&self.summary)
        )
    }

    /// The read-out at canvas pixel `(px, py)`: the nearest data point's values, or empty off the plot.
    pub fn read_out(&self, px: i32, py: i32) -> String {
        let Some((x, y)) = (self.map)((px, py)) else { return String::new() };
        match self.kind {
            Kind::Bars | Kind::HBars => {
                // Horizontal bars run top to bottom: category 0 is the top slot.
                let n = self.categories.len();
                let i = if self.kind == Kind::Bars {
                    x.floor().max(0.0) as usize
                } else {
                    n.saturating_sub(1 + y.floor().max(0.0) as usize)
                };
                let Some(cat) = self.categories.get(i) else { return String::new() };
                let vals: Vec<String> = self
                    .series
                    .iter()
                    .filter_map(|s| {
                        s.points
                            .get(i)
                            .filter(|p| p.1 != 0.0 || self.series.len() == 1)
                            .map(|p| format!("{} {}", s.name, self.fmt_y.show(p.1)))
                    })
                    .collect();
                format!("{cat}: {}", vals.join(", "))
            }
            Kind::Scatter => {
                let all = || self.series.iter().flat_map(|s| s.points.iter().enumerate().map(move |(i, p)| (s, i, *p)));
                let span = |f: fn(&(f64, f64)) -> f64| {
                    let (lo, hi) = all()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, _, p)| (lo.min(f(&p)), hi.max(f(&p))));
                    (hi - lo).max(1e-12)
                };
                let (sx, sy) = (span(|p| p.0), span(|p| p.1));
                let d = |p: (f64, f64)| ((p.0 - x) / sx).powi(2) + ((p.1 - y) / sy).powi(2);
                let Some((s, i, p)) = all().min_by(|a, b| d(a.2).total_cmp(&d(b.2))) else { return String::new() };
                let name = s.labels.get(i).cloned().unwrap_or_else(|| format!("{} {}", s.name, i + 1));
                format!("{name}: {} {}, {} {}", self.x_name, self.fmt_x.show(p.0), self.y_name, self.fmt_y.show(p.1))
            }
            Kind::Cdf | Kind::Lines => {
                let Some(first) = self.series.first().filter(|s| !s.points.is_empty()) else { return String::new() };
                let dist = |p: f64| {
                    if self.kind == Kind::Cdf { (p.max(1e-12).ln() - x.max(1e-12).ln()).abs() } else { (p - x).abs() }
                };
                let i = (0..first.points.len())
                    .min_by(|&a, &b| dist(first.points[a].0).total_cmp(&dist(first.points[b].0)))
                    .unwrap_or(0);
                let px = first.points[i].0;
                if self.kind == Kind::Cdf {
                    return format!(
                        "{}: {} of requests ≤ {}",
                        first.name,
                        self.fmt_y.show(first.points[i].1),
                        self.fmt_x.show(px)
                    );
                }
                let vals: Vec<String> = self
                    .series
                    .iter()
                    .filter_map(|s| s.points.get(i).map(|p| format!("{} {}", s.name, self.fmt_y.show(p.1))))
                    .collect();
                format!("{} {}: {}", self.x_name, self.fmt_x.show(px), vals.join(", "))
            }
        }
    }
}

/// A legend's corner of the plot: the corners in the order they are preferred when equally free.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Corner {
    LowerRight,
    UpperLeft,
    UpperRight,
    LowerLeft,
}

/// The corner where a legend of `size` (width, height as shares of the plot area) covers the fewest of the
/// drawn points `pts` (x, y shares of the plot area, y up). Lines are given as points along them (see
/// `along`), so a legend never sits on a curve when a free corner exists.
pub fn legend_corner(pts: &[(f64, f64)], size: (f64, f64)) -> Corner {
    CORNERS.into_iter().min_by_key(|c| covered(pts, size, *c)).unwrap_or(Corner::LowerRight)
}

const CORNERS: [Corner; 4] = [Corner::LowerRight, Corner::UpperLeft, Corner::UpperRight, Corner::LowerLeft];

/// How many of `pts` a legend of `size` in corner `c` covers (with a margin).
fn covered(pts: &[(f64, f64)], size: (f64, f64), c: Corner) -> usize {
    let (w, h) = (size.0.min(1.0) + 0.03, size.1.min(1.0) + 0.03);
    let (right, top) = match c {
        Corner::LowerRight => (true, false),
        Corner::UpperLeft => (false, true),
        Corner::UpperRight => (true, true),
        Corner::LowerLeft => (false, false),
    };
    let x_in = |x: f64| if right { x >= 1.0 - w } else { x <= w };
    let y_in = |y: f64| if top { y >= 1.0 - h } else { y <= h };
    pts.iter().filter(|p| x_in(p.0) && y_in(p.1)).count()
}

/// By how much to stretch the value axis's span so that a legend of `size` has a free corner: 1 when one
/// already is; otherwise the data are pushed below a band as tall as the legend at the top of the plot, so
/// the legend covers no line (a chart whose data fill every corner, as a time series around a shift does).
pub fn legend_headroom(pts: &[(f64, f64)], size: (f64, f64)) -> f64 {
    if CORNERS.into_iter().any(|c| covered(pts, size, c) == 0) {
        return 1.0;
    }
    1.0 / (1.0 - (size.1.min(0.5) + 0.05))
}

/// Points every `step` (in shares of the plot) along the polyline `pts`, so a long straight piece between two
/// data points still counts where it runs.
pub fn along(pts: &[(f64, f64)], step: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = pts.first().copied().into_iter().collect();
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let n = (((b.0 - a.0).hypot(b.1 - a.1) / step.max(1e-6)).ceil() as usize).clamp(1, 10_000);
        out.extend((1..=n).map(|k| {
            let t = k as f64 / n as f64;
            (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
        }));
    }
    out
}

/// A legend's size in pixels for `entries` labels, the longest `chars` long, in the 11 px sans-serif it uses,
/// with its margin from the plot's edge (generous: a legend that would touch a point goes elsewhere).
pub fn legend_px(entries: usize, chars: usize) -> (f64, f64) {
    (50.0 + 7.0 * chars as f64, 20.0 + 18.0 * entries as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 100 × 100 pixel plot of [0, 10] × [0, 1] (y up).
    fn linear() -> Mapping {
        Box::new(|(x, y)| {
            ((0..=100).contains(&x) && (0..=100).contains(&y)).then(|| (x as f64 / 10.0, (100 - y) as f64 / 100.0))
        })
    }

    fn fig(kind: Kind, series: Vec<Series>, categories: Vec<String>) -> Figure {
        Figure {
            id: "c".into(),
            kind,
            map: linear(),
            summary: "s".into(),
            x_name: "time (s)".into(),
            y_name: "share".into(),
            fmt_x: Fmt::Num(1),
            fmt_y: Fmt::Pct,
            categories,
            series,
        }
    }

    fn s(name: &str, points: &[(f64, f64)], labels: &[&str]) -> Series {
        Series { name: name.into(), points: points.to_vec(), labels: labels.iter().map(|l| l.to_string()).collect() }
    }

    #[test]
    fn the_read_out_is_the_nearest_point_not_the_cursor() {
        let f = fig(
            Kind::Lines,
            vec![
                s("a", &[(1.0, 0.25), (4.0, 0.5), (9.0, 0.75)], &[]),
                s("b", &[(1.0, 0.1), (4.0, 0.2), (9.0, 0.3)], &[]),
            ],
            vec![],
        );
        // The cursor at x = 3.3 snaps to the point at x = 4, whatever its height.
        assert_eq!(f.read_out(33, 90), "time (s) 4.0: a 50.0 %, b 20.0 %");
        assert_eq!(f.read_out(200, 50), "", "off the plot");
        // Every read-out is a row of the table.
        let table = f.table();
        assert!(table.contains("<tr><td>4.0</td><td>50.0 %</td><td>20.0 %</td></tr>"), "{table}");
        let sc =
            fig(Kind::Scatter, vec![s("candidates", &[(2.0, 0.9), (8.0, 0.1)], &["TP ×2", "replicas +1"])], vec![]);
        assert_eq!(sc.read_out(75, 80), "replicas +1: time (s) 8.0, share 10.0 %");
        assert!(sc.table().contains("<td>replicas +1</td><td>candidates</td><td>8.0</td><td>10.0 %</td>"));
        let bars = fig(
            Kind::Bars,
            vec![s("attainment", &[(0.0, 0.97), (1.0, 0.99)], &[])],
            vec!["chat".into(), "batch".into()],
        );
        assert_eq!(bars.read_out(15, 50), "batch: attainment 99.0 %", "x 1.5 is the second bar");
        // Horizontal bars: category 0 is the top slot.
        let h = fig(
            Kind::HBars,
            vec![s("better", &[(0.0, 0.1), (1.0, 0.0)], &[]), s("worse", &[(0.0, 0.0), (1.0, -0.2)], &[])],
            vec!["TTFT".into(), "TPOT".into()],
        );
        let h = Figure {
            map: Box::new(|(x, y)| Some((x as f64 / 100.0, (100 - y) as f64 / 50.0))),
            fmt_y: Fmt::SignedPct,
            ..h
        };
        assert_eq!(h.read_out(10, 10), "TTFT: better +10.0 %");
        assert_eq!(h.read_out(10, 90), "TPOT: worse -20.0 %");
        let cdf = Figure {
            fmt_x: Fmt::Secs,
            ..fig(Kind::Cdf, vec![s("TTFT", &[(0.01, 0.1), (0.1, 0.5), (1.0, 0.99)], &[])], vec![])
        };
        let cdf = Figure { map: Box::new(|(x, _)| Some((10f64.powf(-2.0 + x as f64 / 50.0), 0.5))), ..cdf };
        assert_eq!(
            cdf.read_out(40, 0),
            "TTFT: 50.0 % of requests ≤ 100 ms",
            "nearest in log x: 10^-1.2 is nearest 10^-1"
        );
    }

    #[test]
    fn a_legend_goes_where_no_curve_runs() {
        // A CDF rising from the lower left to the upper right leaves the lower right and upper left free; with
        // a vertical objective in the lower right, the upper left.
        let cdf = along(&[(0.0, 0.0), (0.3, 0.1), (0.6, 0.9), (1.0, 1.0)], 0.01);
        assert_eq!(legend_corner(&cdf, (0.3, 0.3)), Corner::LowerRight);
        let mut with_line = cdf.clone();
        with_line.extend(along(&[(0.9, 0.0), (0.9, 1.0)], 0.01));
        assert_eq!(legend_corner(&with_line, (0.3, 0.3)), Corner::UpperLeft);
        // Two points far apart still make a line through the corner between them.
        assert!(along(&[(0.0, 0.0), (1.0, 0.0)], 0.1).len() >= 11);
        assert_eq!(legend_px(2, 10), (120.0, 56.0));
    }

    #[test]
    fn a_chart_whose_lines_fill_every_corner_gets_headroom_for_its_legend() {
        // A series zig-zagging across the whole plot covers every corner; stretched by the headroom, its points
        // (y shares divided by the factor) leave the upper corners free.
        let zig = along(&[(0.0, 0.0), (0.2, 1.0), (0.5, 0.0), (0.8, 1.0), (1.0, 0.0)], 0.01);
        let size = (0.3, 0.2);
        let k = legend_headroom(&zig, size);
        assert!(k > 1.2, "{k}");
        let squeezed: Vec<(f64, f64)> = zig.iter().map(|p| (p.0, p.1 / k)).collect();
        assert_eq!(legend_headroom(&squeezed, size), 1.0);
        assert!(matches!(legend_corner(&squeezed, size), Corner::UpperLeft | Corner::UpperRight));
        // A free corner needs none.
        assert_eq!(legend_headroom(&along(&[(0.0, 0.0), (1.0, 0.5)], 0.01), size), 1.0);
    }
}
