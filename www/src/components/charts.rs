//! Charts drawn with plotters on canvases. One function per chart; each returns the pixel → data mapping so
//! the page can show hover read-outs (as plotters' wasm demo does).

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

pub use crate::components::figure::Mapping;
use crate::components::figure::{self, Figure, Fmt, Kind};

/// Okabe–Ito: a colour-blind-safe palette, one colour per series, kept across charts.
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
];

type Chart<'a> = ChartContext<'a, CanvasBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn frame<'a>(
    root: &'a DrawingArea<CanvasBackend, plotters::coord::Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &str,
    y_desc: &str,
) -> Option<Chart<'a>> {
    root.fill(&WHITE).ok()?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .ok()?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| tick(*x))
        .y_label_formatter(&|y| tick(*y))
        .label_style(("sans-serif", 12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .ok()?;
    Some(chart)
}

/// A linear tick: whole numbers without decimals, others with as few as they need.
fn tick(v: f64) -> String {
    let v = v + 0.0; // −0 reads 0
    if (v - v.round()).abs() < 1e-9 {
        format!("{:.0}", v)
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Line series on one chart: (name, points).
pub fn lines(
    canvas_id: &str,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    y_max: Option<f64>,
) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    let x_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0f64, f64::max).max(1e-9);
    let x_min = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(f64::INFINITY, f64::min).min(x_max).max(0.0);
    // Head room above the data keeps the legend (upper right) off it.
    let data_top = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0f64, f64::max);
    let y_top = y_max.map_or(data_top * 1.4, |m| if series.len() > 1 { m.max(data_top * 1.4) } else { m }).max(1e-9);
    let mut chart = frame(&root, title, x_min..x_max * 1.02, 0.0..y_top, x_desc, y_desc)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .ok()?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    if series.len() > 1 {
        let _ = chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .label_font(("sans-serif", 12))
            .draw();
    }
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// Bars with category names: (name, value in [0, 1]) and a target line. The y axis starts where the values
/// and the target can be told apart (98.0 % vs 98.4 % matters), and says so; the target is named in the title,
/// so no legend covers a bar.
pub fn bars(
    canvas_id: &str,
    title: &str,
    y_desc: &str,
    bars: &[(String, f64)],
    target: Option<f64>,
) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    let n = bars.len().max(1) as f64;
    root.fill(&WHITE).ok()?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let low = bars.iter().map(|b| b.1).chain(target).fold(1.0f64, f64::min);
    let floor = (((low - (1.0 - low).max(0.02)) * 20.0).floor() / 20.0).clamp(0.0, 0.95);
    let from = if floor > 0.0 { format!("; axis from {:.0} %", floor * 100.0) } else { String::new() };
    let caption = match target {
        Some(t) => format!("{title} (target {:.1} %{from})", t * 100.0),
        None => title.to_string(),
    };
    let desc = y_desc.to_string();
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(38)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..n, floor..1.005)
        .ok()?;
    let span = 1.0 - floor;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1) * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.01 { names.get(i).cloned().unwrap_or_default() } else { String::new() }
        })
        .y_desc(desc)
        .y_label_formatter(&|y| crate::components::numbers::pct_label(*y, if span < 0.2 { 1 } else { 0 }))
        .label_style(("sans-serif", 12))
        .draw()
        .ok()?;
    for (i, (_, v)) in bars.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(i as f64 + 0.15, floor), (i as f64 + 0.85, v.max(floor))],
                c.filled(),
            )))
            .ok()?;
    }
    if let Some(t) = target {
        chart.draw_series(LineSeries::new(vec![(0.0, t), (n, t)], BLACK.stroke_width(1))).ok()?;
    }
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// A study chart's value format, from its axis label's words.
fn study_fmt(label: &str) -> Fmt {
    let l = label.to_lowercase();
    if l.contains("relative change") {
        Fmt::SignedPct
    } else if l.contains("fraction") || l.contains("attainment") {
        Fmt::Pct
    } else if l.contains("second") || l.ends_with("(s)") {
        Fmt::Secs
    } else if l == "replicas" {
        Fmt::Num(0)
    } else if l.ends_with("(ms)") {
        Fmt::Num(1)
    } else {
        Fmt::Num(3)
    }
}

/// A series' colour: "better" green and "worse" vermillion wherever they appear, else by position.
fn series_colour(name: &str, j: usize) -> RGBColor {
    match name {
        "better" => PALETTE[2],
        "worse" => PALETTE[5],
        "within noise" => RGBColor(160, 160, 160),
        _ => PALETTE[j % PALETTE.len()],
    }
}

/// A study's chart, drawn and described: horizontal bars by category (long names read across, values keep
/// their sign, a share's axis starts where its values differ), or points and lines (a min–max band, a
/// target, labels placed only where they do not collide, the legend in the emptiest corner).
pub fn study_figure(id: &str, c: &inferscale::study::Chart) -> Option<Figure> {
    let fmt_y = study_fmt(&c.y_label);
    let series: Vec<figure::Series> = c
        .series
        .iter()
        .map(|s| figure::Series { name: s.name.clone(), points: s.points.clone(), labels: s.labels.clone() })
        .collect();
    let (kind, map, fmt_x) = if c.kind == "bars" {
        (Kind::HBars, hbars(id, c, fmt_y)?, Fmt::Num(0))
    } else {
        (Kind::Scatter, points_chart(id, c, fmt_y)?, study_fmt(&c.x_label))
    };
    let kind = if kind == Kind::Scatter && c.series.iter().all(|s| s.line) { Kind::Lines } else { kind };
    Some(Figure {
        id: id.to_string(),
        kind,
        map,
        summary: format!("{}: {} against {}", c.title, c.y_label, c.x_label),
        x_name: c.x_label.clone(),
        y_name: c.y_label.clone(),
        fmt_x,
        fmt_y,
        categories: c.categories.clone(),
        series,
    })
}

/// `s` shortened by its middle, with an ellipsis, until it measures at most `room` pixels: a bar's name keeps its
/// start and its end, which is where names that share a prefix differ.
fn elide_to(s: &str, room: u32, width_of: &dyn Fn(&str) -> u32) -> String {
    let chars: Vec<char> = s.chars().collect();
    if width_of(s) <= room {
        return s.to_string();
    }
    for cut in 1..chars.len() {
        let keep = chars.len() - cut;
        let (head, tail) = (keep.div_ceil(2).min(12), keep - keep.div_ceil(2).min(12));
        let shown: String =
            chars[..head].iter().chain(['…'].iter()).chain(chars[chars.len() - tail..].iter()).collect();
        if width_of(&shown) <= room {
            return shown;
        }
    }
    "…".to_string()
}

fn hbars(id: &str, c: &inferscale::study::Chart, fmt: Fmt) -> Option<Mapping> {
    let backend = CanvasBackend::new(id)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let n = c.categories.len().max(1);
    let (floor, lo, top) = hbar_axis(c, fmt);
    let complementary =
        (0..n).all(|i| c.series.iter().filter(|s| s.points.get(i).is_some_and(|p| p.1 != 0.0)).count() <= 1);
    // The legend goes in a row of its own under the axis, never over a bar.
    let legend = c.series.len() > 1;
    let decimals = if fmt == Fmt::SignedPct && top - lo < 0.05 { 1 } else { 0 };
    // Names measured by the canvas's own font; one too wide for ~45 % of the chart loses its middle.
    let label_font: TextStyle = ("sans-serif", 11).into_font().into();
    let width_of = |s: &str| root.estimate_text_size(s, &label_font).map_or(s.chars().count() as u32 * 7, |(w, _)| w);
    let room = root.dim_in_pixel().0 * 45 / 100;
    let names: Vec<String> = c.categories.iter().map(|s| elide_to(s, room, &width_of)).collect();
    let label_area = names.iter().map(|s| width_of(s)).max().unwrap_or(24) + 14;
    let caption = match (floor > 0.0, fmt) {
        (true, _) => format!("{} (axis from {})", c.title, fmt.show(floor)),
        _ => c.title.clone(),
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 15))
        .margin(10)
        .margin_right(16)
        // A strip below the axis title for the legend row, so the title never runs into it.
        .margin_bottom(if legend { 30 } else { 10 })
        .x_label_area_size(38)
        .y_label_area_size(label_area.clamp(40, room + 14))
        .build_cartesian_2d(lo..top, 0.0..n as f64)
        .ok()?;
    // Ticks at every half slot; only the slots' centres are named.
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| {
            let i = y.floor().max(0.0) as usize;
            if (y - i as f64 - 0.5).abs() < 0.01 && i < n {
                names.get(n - 1 - i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|x| match fmt {
            Fmt::Pct | Fmt::SignedPct => crate::components::numbers::pct_label(*x, decimals),
            _ => tick(*x),
        })
        .x_labels(6)
        .x_desc(&c.y_label)
        .label_style(("sans-serif", 11))
        .draw()
        .ok()?;
    let k = if complementary { 1 } else { c.series.len().max(1) };
    for (j, s) in c.series.iter().enumerate() {
        let col = series_colour(&s.name, j);
        let h = 0.7 / k as f64;
        let slot = if complementary { 0 } else { j };
        // Bars grow from 0, or from the axis start when a share's axis starts above 0.
        let base = if floor > 0.0 { floor } else { 0.0 };
        chart
            .draw_series(s.points.iter().enumerate().filter(|(_, p)| p.1 != 0.0 || !complementary).map(
                |(i, &(_, v))| {
                    let y0 = (n - 1 - i) as f64 + 0.15 + h * slot as f64;
                    Rectangle::new([(base, y0), (v, y0 + h)], col.filled())
                },
            ))
            .ok()?
            .label(&s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
    }
    if floor < 0.0 || lo < 0.0 {
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(0.0, 0.0), (0.0, n as f64)], BLACK.stroke_width(1))))
            .ok()?;
    }
    if let Some(t) = c.target {
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(t, 0.0), (t, n as f64)], BLACK.stroke_width(1))))
            .ok()?
            .label(format!("target {}", fmt.show(t)))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    }
    if legend {
        legend_row(&root, c, fmt)?;
    } else if c.target.is_some() {
        let _ = chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .label_font(("sans-serif", 11))
            .draw();
    }
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// Where a bar chart's value axis starts: a share whose values all sit high starts where they can be told
/// apart; anything else at 0 or below.
/// A bar chart's value axis: where bars grow from (`hbar_floor`), and the axis's low and high ends.
fn hbar_axis(c: &inferscale::study::Chart, fmt: Fmt) -> (f64, f64, f64) {
    let vals = || c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).chain(c.target);
    let (vmin, vmax) = (vals().fold(0.0f64, f64::min), vals().fold(0.0f64, f64::max));
    let floor = hbar_floor(c, fmt, vmin);
    let top = if fmt == Fmt::Pct && vmax <= 1.0 { 1.0 } else { vmax + (vmax - floor).abs() * 0.08 };
    let lo = if floor < 0.0 { floor - (top - floor) * 0.05 } else { floor };
    // A relative change's axis spans at least 1 % each way it goes: a change of 0.02 % is the sliver it is, not
    // a bar across the chart over ticks that all read "0 %".
    match fmt {
        Fmt::SignedPct => (floor, if vmin < 0.0 { lo.min(-0.01) } else { lo }, top.max(0.01)),
        _ => (floor, lo, top),
    }
}

fn hbar_floor(c: &inferscale::study::Chart, fmt: Fmt, vmin: f64) -> f64 {
    if fmt == Fmt::Pct && vmin >= 0.0 {
        let low =
            c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|v| *v > 0.0).fold(1.0f64, f64::min);
        (((low - (1.0 - low).max(0.02)) * 20.0).floor() / 20.0).clamp(0.0, 0.95)
    } else {
        vmin.min(0.0)
    }
}

/// A bar chart's legend, in a row of its own under the axis (never over a bar).
fn legend_row(
    root: &DrawingArea<CanvasBackend, plotters::coord::Shift>,
    c: &inferscale::study::Chart,
    fmt: Fmt,
) -> Option<()> {
    let (_, h) = root.dim_in_pixel();
    let mut x = 14i32;
    let y = h as i32 - 14;
    for (j, sr) in c.series.iter().enumerate() {
        let col = series_colour(&sr.name, j);
        root.draw(&Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled())).ok()?;
        root.draw(&Text::new(sr.name.clone(), (x + 16, y - 6), ("sans-serif", 11).into_font())).ok()?;
        x += 16 + sr.name.chars().count() as i32 * 6 + 18;
    }
    if let Some(t) = c.target {
        root.draw(&PathElement::new(vec![(x, y), (x + 16, y)], BLACK)).ok()?;
        root.draw(&Text::new(format!("target {}", fmt.show(t)), (x + 20, y - 6), ("sans-serif", 11).into_font()))
            .ok()?;
    }
    Some(())
}

/// The corner of `chart`'s plot where a legend of `labels` covers the fewest of the `drawn` points (shares of
/// the plot, y up).
fn legend_corner<DB: DrawingBackend, CT: CoordTranslate>(
    chart: &ChartContext<DB, CT>,
    drawn: &[(f64, f64)],
    labels: &[String],
) -> SeriesLabelPosition {
    let (w, h) = chart.plotting_area().dim_in_pixel();
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let (lw, lh) = figure::legend_px(labels.len(), chars);
    match figure::legend_corner(drawn, (lw / w.max(1) as f64, lh / h.max(1) as f64)) {
        figure::Corner::LowerRight => SeriesLabelPosition::LowerRight,
        figure::Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        figure::Corner::UpperRight => SeriesLabelPosition::UpperRight,
        figure::Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
    }
}

/// Where a legend of `labels` in `corner` covers the plot, in pixels (left, top, right, bottom), with the
/// margin plotters leaves around it.
fn legend_box<DB: DrawingBackend, CT: CoordTranslate>(
    chart: &ChartContext<DB, CT>,
    corner: &SeriesLabelPosition,
    labels: &[String],
) -> (i32, i32, i32, i32) {
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let (w, h) = figure::legend_px(labels.len(), chars);
    let (w, h) = (w as i32 + 12, h as i32 + 12);
    let (left, top) = match corner {
        SeriesLabelPosition::UpperLeft => (xr.start, yr.start),
        SeriesLabelPosition::LowerLeft => (xr.start, yr.end - h),
        SeriesLabelPosition::LowerRight => (xr.end - w, yr.end - h),
        _ => (xr.end - w, yr.start),
    };
    (left, top, left + w, top + h)
}

/// The legend of `chart`'s labelled series, boxed, in `corner` (chosen by [`legend_corner`]).
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    corner: SeriesLabelPosition,
) {
    let _ = chart
        .configure_series_labels()
        .position(corner)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .label_font(("sans-serif", 11))
        .draw();
}

/// Objectives on a percentile are drawn in this colour (class SLOs in black), in every chart that has both.
const OBJECTIVE: RGBColor = RGBColor(190, 30, 90);

/// A vertical dashed line at `x` from `y0` to `y1`, in `n` pieces, every other one drawn.
fn dashes(x: f64, y0: f64, y1: f64, n: usize, style: ShapeStyle) -> Vec<PathElement<(f64, f64)>> {
    let at = |k: usize| y0 + (y1 - y0) * k as f64 / n as f64;
    (0..n).step_by(2).map(|k| PathElement::new(vec![(x, at(k)), (x, at(k + 1))], style)).collect()
}

fn points_chart(id: &str, c: &inferscale::study::Chart, fmt_y: Fmt) -> Option<Mapping> {
    let backend = CanvasBackend::new(id)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let all: Vec<(f64, f64)> = c.series.iter().flat_map(|s| s.points.iter().copied()).collect();
    let xs = || all.iter().map(|p| p.0);
    let (x_lo, x_hi) = (xs().fold(f64::INFINITY, f64::min), xs().fold(f64::NEG_INFINITY, f64::max));
    let (x_lo, x_hi) = if x_lo.is_finite() { (x_lo, x_hi) } else { (0.0, 1.0) };
    let pad = ((x_hi - x_lo) * 0.08).max(1e-9);
    let x_range = ((x_lo - pad).max(if x_lo >= 0.0 { 0.0 } else { f64::NEG_INFINITY }), x_hi + pad);
    let (y_lo, y_max) = y_axis(c, &all, fmt_y);
    // Room for the legend at the top when the data leave no corner free (the plot's size as laid out below).
    let (w, h) = root.dim_in_pixel();
    let (drawn, labels) = drawn_shares(c, x_range, (y_lo, y_max), fmt_y);
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let (lw, lh) = figure::legend_px(labels.len(), chars);
    let size = (lw / w.saturating_sub(86).max(1) as f64, lh / h.saturating_sub(80).max(1) as f64);
    let y_max = y_lo + (y_max - y_lo) * figure::legend_headroom(&drawn, size);
    let caption = if y_lo > 0.0 { format!("{} (axis from {:.0} %)", c.title, y_lo * 100.0) } else { c.title.clone() };
    let counts = study_fmt(&c.x_label) == Fmt::Num(0);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 15))
        .margin(10)
        .margin_right(16)
        .x_label_area_size(38)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.0..x_range.1, y_lo..y_max)
        .ok()?;
    chart
        .configure_mesh()
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        // A count (replicas) is ticked at whole numbers only.
        .x_label_formatter(&|x| if counts && x.fract().abs() > 1e-9 { String::new() } else { tick(*x) })
        .y_label_formatter(&|y| {
            if fmt_y == Fmt::Pct {
                crate::components::numbers::pct_label(*y, if y_max - y_lo < 0.2 { 1 } else { 0 })
            } else {
                tick(*y)
            }
        })
        .label_style(("sans-serif", 11))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .ok()?;
    // Labels go where they collide with no other label (and stay readable); the rest are in the data table.
    let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
    for (j, s) in c.series.iter().enumerate() {
        let col = series_colour(&s.name, j);
        if !s.band.is_empty() {
            let mut poly: Vec<(f64, f64)> = s.points.iter().zip(&s.band).map(|(p, b)| (p.0, b.0)).collect();
            poly.extend(s.points.iter().zip(&s.band).rev().map(|(p, b)| (p.0, b.1)));
            chart.draw_series(std::iter::once(Polygon::new(poly, col.mix(0.2).filled()))).ok()?;
        }
        if s.line {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), col.stroke_width(2)))
                .ok()?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, col.filled()))).ok()?;
        } else {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 5, col.filled())))
                .ok()?
                .label(&s.name)
                .legend(move |(x, y)| Circle::new((x + 6, y), 5, col.filled()));
        }
        place_labels(&root, &chart, s, &mut placed)?;
    }
    if let Some(t) = c.target {
        chart
            .draw_series(LineSeries::new(vec![(x_range.0, t), (x_range.1, t)], BLACK.stroke_width(1)))
            .ok()?
            .label(format!("target {}", fmt_y.show(t)))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    }
    // The legend goes where the fewest lines, points and target run.
    let (drawn, labels) = drawn_shares(c, x_range, (y_lo, y_max), fmt_y);
    let corner = legend_corner(&chart, &drawn, &labels);
    draw_legend(&mut chart, corner);
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// Where a points chart's lines, points and target run (shares of the plot on these ranges), and its legend's
/// labels.
fn drawn_shares(
    c: &inferscale::study::Chart,
    x_range: (f64, f64),
    (y_lo, y_max): (f64, f64),
    fmt_y: Fmt,
) -> (Vec<(f64, f64)>, Vec<String>) {
    let share = |p: &(f64, f64)| ((p.0 - x_range.0) / (x_range.1 - x_range.0), (p.1 - y_lo) / (y_max - y_lo));
    let mut drawn: Vec<(f64, f64)> = Vec::new();
    for s in &c.series {
        let pts: Vec<(f64, f64)> = s.points.iter().map(share).collect();
        drawn.extend(if s.line { figure::along(&pts, 0.01) } else { pts });
    }
    let mut labels: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
    if let Some(t) = c.target {
        drawn.extend(figure::along(&[share(&(x_range.0, t)), share(&(x_range.1, t))], 0.01));
        labels.push(format!("target {}", fmt_y.show(t)));
    }
    (drawn, labels)
}

/// A points chart's value axis: from 0 to above the largest value, band and target; a share whose values all
/// sit high starts where they can be told apart (and the caption says so).
fn y_axis(c: &inferscale::study::Chart, all: &[(f64, f64)], fmt_y: Fmt) -> (f64, f64) {
    let band_hi = c.series.iter().flat_map(|s| s.band.iter().map(|b| b.1));
    let y_max = all
        .iter()
        .map(|p| p.1)
        .chain(band_hi)
        .chain(c.target)
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let ys = || {
        all.iter()
            .map(|p| p.1)
            .chain(c.series.iter().flat_map(|s| s.band.iter().flat_map(|b| [b.0, b.1])))
            .chain(c.target)
    };
    let low = ys().fold(f64::INFINITY, f64::min);
    let y_lo = if fmt_y == Fmt::Pct && low.is_finite() && low >= 0.5 {
        (((low - (1.0 - low).max(0.02)) * 20.0).floor() / 20.0).clamp(0.0, 0.95)
    } else {
        0.0
    };
    let y_max = if fmt_y == Fmt::Pct && y_lo > 0.0 { 1.0 + (1.0 - y_lo) * 0.04 } else { y_max };
    (y_lo, y_max)
}

/// Labels a series' points where they collide with no label already placed and stay inside the plot; the rest
/// are in the data table.
fn place_labels<CT: CoordTranslate<From = (f64, f64)>>(
    root: &DrawingArea<CanvasBackend, plotters::coord::Shift>,
    chart: &ChartContext<CanvasBackend, CT>,
    s: &inferscale::study::ChartSeries,
    placed: &mut Vec<(i32, i32, i32, i32)>,
) -> Option<()> {
    for (p, l) in s.points.iter().zip(&s.labels) {
        let (px, py) = chart.plotting_area().map_coordinate(p);
        let w = l.chars().count() as i32 * 6 + 2;
        let spots = [(px + 8, py - 6), (px - 8 - w, py - 6), (px - w / 2, py - 20), (px - w / 2, py + 8)];
        let area = chart.plotting_area().get_pixel_range();
        let free = spots.into_iter().find(|&(x, y)| {
            let b = (x, y, x + w, y + 12);
            area.0.start <= b.0
                && b.2 <= area.0.end
                && area.1.start <= b.1
                && b.3 <= area.1.end
                && placed.iter().all(|q| b.2 <= q.0 || q.2 <= b.0 || b.3 <= q.1 || q.3 <= b.1)
        });
        if let Some((x, y)) = free {
            placed.push((x, y, x + w, y + 12));
            root.draw(&Text::new(l.clone(), (x, y), ("sans-serif", 10).into_font().color(&RGBColor(60, 60, 60))))
                .ok()?;
        }
    }
    Some(())
}

/// Seconds as a tick or read-out shows them: the reports' rule (`inferscale::export::secs`).
pub fn secs(x: f64) -> String {
    inferscale::export::secs(x)
}

/// Ticks of a log axis: 1-2-5 in each decade over a short range, 1-3 over a middling one, decades beyond,
/// so that at most about 8 labels share the axis.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10();
    let steps: &[f64] = if decades <= 1.6 {
        &[1.0, 2.0, 5.0]
    } else if decades <= 3.2 {
        &[1.0, 3.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut d = 10f64.powf(lo.log10().floor());
    while d <= hi {
        for m in steps {
            let t = d * m;
            if t >= lo && t <= hi {
                out.push(t);
            }
        }
        d *= 10.0;
    }
    out
}

/// A latency CDF on a log time axis: the curve, dashed vertical lines at the objectives `(label, seconds)`,
/// and markers at the percentiles `(label, seconds, fraction)` (their values in the legend, never over the
/// curve).
pub fn cdf(
    canvas_id: &str,
    title: &str,
    pts: &[(f64, f64)],
    colour: usize,
    objectives: &[(String, f64, Option<f64>)],
    marks: &[(String, f64, f64)],
) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let xs = pts.iter().map(|p| p.0).chain(objectives.iter().map(|o| o.1)).filter(|x| *x > 0.0);
    let lo = xs.clone().fold(f64::INFINITY, f64::min);
    let hi = xs.fold(0.0f64, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > 0.0 { (lo / 1.25, (hi * 1.25).max(lo * 2.0)) } else { (1e-3, 1.0) };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale().with_key_points(log_ticks(lo, hi)), 0.0..1.02)
        .ok()?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| crate::components::numbers::secs_on_axis(*x, hi))
        .y_label_formatter(&|y| crate::components::numbers::pct_label(*y, 0))
        .x_desc("latency (log scale)")
        .y_desc("requests at or below")
        .label_style(("sans-serif", 12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .ok()?;
    let c = PALETTE[colour % PALETTE.len()];
    let positive: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 > 0.0).collect();
    let name = title.split(' ').next().unwrap_or(title);
    chart
        .draw_series(LineSeries::new(positive.clone(), c.stroke_width(2)))
        .ok()?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    // Where things are drawn, as shares of the plot (log x), for the legend's corner.
    let share = |x: f64, y: f64| ((x.ln() - lo.ln()) / (hi.ln() - lo.ln()), y / 1.02);
    let mut drawn = figure::along(&positive.iter().map(|p| share(p.0, p.1)).collect::<Vec<_>>(), 0.01);
    let grey = RGBColor(60, 60, 60);
    for (label, x, pct) in objectives.iter().filter(|o| o.1 > 0.0) {
        let top = pct.unwrap_or(1.0);
        drawn.extend(figure::along(&[share(*x, 0.0), share(*x, top)], 0.01));
        match pct {
            // A class's per-request SLO: a dashed line the whole height (every request is held to it).
            None => {
                chart
                    .draw_series(dashes(*x, 0.0, 1.0, 16, BLACK.stroke_width(1)))
                    .ok()?
                    .label(label.clone())
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 6, y), (x + 9, y), (x + 15, y)], BLACK));
            }
            // An objective on a percentile: dotted up to its percentile, a cross where the curve must pass left.
            Some(p) => {
                chart.draw_series(dashes(*x, 0.0, *p, 24, OBJECTIVE.stroke_width(2))).ok()?;
                chart
                    .draw_series(std::iter::once(Cross::new((*x, *p), 5, OBJECTIVE.stroke_width(2))))
                    .ok()?
                    .label(label.clone())
                    .legend(|(x, y)| Cross::new((x + 8, y), 5, OBJECTIVE.stroke_width(2)));
            }
        }
    }
    for (k, (label, x, f)) in marks.iter().enumerate().filter(|m| m.1.1 > 0.0) {
        drawn.push(share(*x, *f));
        chart
            .draw_series(std::iter::once(Circle::new((*x, *f), 3 + k as i32, grey.stroke_width(2))))
            .ok()?
            .label(label.clone())
            .legend(move |(x, y)| Circle::new((x + 8, y), 3 + k as i32, grey.stroke_width(2)));
    }
    let labels = std::iter::once(name.to_string()).chain(objectives.iter().map(|o| o.0.clone()));
    let labels: Vec<String> = labels.chain(marks.iter().map(|m| m.0.clone())).collect();
    let corner = legend_corner(&chart, &drawn, &labels);
    draw_legend(&mut chart, corner);
    root.present().ok()?;
    Some(log_x_mapping(chart.plotting_area().get_pixel_range(), (lo, hi), |fy| fy * 1.02))
}

/// The pixel → data mapping of a plot whose x axis is logarithmic over `x` (plotters has no reverse
/// translation for a log axis: it is inverted from the plot area's pixel range); `y` turns a share of the
/// plot's height into a value.
fn log_x_mapping(
    (px, py): (std::ops::Range<i32>, std::ops::Range<i32>),
    (lo, hi): (f64, f64),
    y: impl Fn(f64) -> f64 + 'static,
) -> Mapping {
    let (l0, l1) = (lo.ln(), hi.ln());
    Box::new(move |(x, py_at): (i32, i32)| {
        if !px.contains(&x) || !py.contains(&py_at) {
            return None;
        }
        let fx = (x - px.start) as f64 / (px.end - px.start).max(1) as f64;
        let fy = (py.end - py_at) as f64 / (py.end - py.start).max(1) as f64;
        Some(((l0 + fx * (l1 - l0)).exp(), y(fy)))
    })
}

/// Predicted against measured on log axes (predictions off by orders of magnitude stay on the chart): the
/// uncalibrated points hollow, the calibrated filled and labelled where labels fit, the y = x line and a
/// shaded ±10 % about it. Both axes span the same range, so y = x is the diagonal.
pub fn measured_vs_predicted(id: &str, c: &inferscale::study::Chart) -> Option<Figure> {
    let backend = CanvasBackend::new(id)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let (points, exact) = (&c.series[..c.series.len().min(2)], c.series.get(2));
    let vals = || points.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.0, p.1])).filter(|v| *v > 0.0);
    let (lo, hi) = (vals().fold(f64::INFINITY, f64::min), vals().fold(0.0f64, f64::max));
    let (lo, hi) = if lo.is_finite() { (lo / 1.5, (hi * 1.5).max(lo * 10.0)) } else { (1.0, 10.0) };
    let axis = || (lo..hi).log_scale().with_key_points(log_ticks(lo, hi));
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 15))
        .margin(10)
        .margin_right(16)
        .x_label_area_size(38)
        .y_label_area_size(60)
        .build_cartesian_2d(axis(), axis())
        .ok()?;
    chart
        .configure_mesh()
        .x_desc(format!("{} (log scale)", c.x_label))
        .y_desc(format!("{} (log scale)", c.y_label))
        .x_label_formatter(&|x| tick(*x))
        .y_label_formatter(&|y| tick(*y))
        .label_style(("sans-serif", 11))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .ok()?;
    let grey = RGBColor(150, 150, 150);
    let band = vec![(lo, lo * 0.9), (hi, hi * 0.9), (hi, hi * 1.1), (lo, lo * 1.1)];
    chart
        .draw_series(std::iter::once(Polygon::new(band, grey.mix(0.4).filled())))
        .ok()?
        .label("±10 %")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], grey.mix(0.4).filled()));
    if let Some(e) = exact {
        chart
            .draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.stroke_width(1)))
            .ok()?
            .label(&e.name)
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    }
    let share = |p: &(f64, f64)| {
        let f = |v: f64| (v.ln() - lo.ln()) / (hi.ln() - lo.ln());
        (f(p.0), f(p.1))
    };
    let mut drawn: Vec<(f64, f64)> = points.iter().flat_map(|s| s.points.iter().map(share)).collect();
    drawn.extend(figure::along(&[(0.0, 0.0), (1.0, 1.0)], 0.01));
    let labels: Vec<String> = ["±10 %".to_string()]
        .into_iter()
        .chain(exact.map(|e| e.name.clone()))
        .chain(points.iter().map(|s| s.name.clone()))
        .collect();
    // The legend's corner is chosen first, and the points' labels keep off it.
    let corner = legend_corner(&chart, &drawn, &labels);
    let mut placed = vec![legend_box(&chart, &corner, &labels)];
    for (j, s) in points.iter().enumerate() {
        let col = PALETTE[j % PALETTE.len()];
        let shown: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.0 > 0.0 && p.1 > 0.0).collect();
        let style = if j == 0 { col.stroke_width(2) } else { col.filled() };
        chart
            .draw_series(shown.iter().map(|&p| Circle::new(p, 5, style)))
            .ok()?
            .label(&s.name)
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, style));
        place_labels(&root, &chart, s, &mut placed)?;
    }
    draw_legend(&mut chart, corner);
    root.present().ok()?;
    let (l0, l1) = (lo.ln(), hi.ln());
    let map = log_x_mapping(chart.plotting_area().get_pixel_range(), (lo, hi), move |fy| (l0 + fy * (l1 - l0)).exp());
    let series = c.series.iter().map(|s| figure::Series {
        name: s.name.clone(),
        points: s.points.clone(),
        labels: s.labels.clone(),
    });
    Some(Figure {
        id: id.to_string(),
        kind: Kind::Scatter,
        map,
        summary: format!("{}: {} against {}, log axes", c.title, c.y_label, c.x_label),
        x_name: c.x_label.clone(),
        y_name: c.y_label.clone(),
        fmt_x: Fmt::Num(1),
        fmt_y: Fmt::Num(1),
        categories: Vec::new(),
        series: series.collect(),
    })
}
