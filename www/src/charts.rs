//! Charts drawn with plotters on canvases. One function per chart; each returns the pixel → data mapping so
//! the page can show hover read-outs (as plotters' wasm demo does).

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

/// Maps a canvas pixel to chart coordinates (None outside the plot area).
pub type Mapping = Box<dyn Fn((i32, i32)) -> Option<(f64, f64)>>;

/// Okabe–Ito: a colour-blind-safe palette, one colour per series, kept across charts.
pub const PALETTE: [RGBColor; 6] =
    [RGBColor(0, 114, 178), RGBColor(230, 159, 0), RGBColor(0, 158, 115), RGBColor(204, 121, 167), RGBColor(86, 180, 233), RGBColor(213, 94, 0)];

type Chart<'a> = ChartContext<'a, CanvasBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn frame<'a>(root: &'a DrawingArea<CanvasBackend, plotters::coord::Shift>, title: &str, x: std::ops::Range<f64>, y: std::ops::Range<f64>, x_desc: &str, y_desc: &str) -> Option<Chart<'a>> {
    root.fill(&WHITE).ok()?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .ok()?;
    chart.configure_mesh().x_desc(x_desc).y_desc(y_desc).label_style(("sans-serif", 12)).light_line_style(RGBColor(235, 235, 235)).draw().ok()?;
    Some(chart)
}

fn legend(chart: &mut Chart<'_>) {
    let _ = chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).border_style(BLACK).background_style(WHITE.mix(0.85)).label_font(("sans-serif", 12)).draw();
}

/// Line series on one chart: (name, points).
pub fn lines(canvas_id: &str, title: &str, x_desc: &str, y_desc: &str, series: &[(&str, Vec<(f64, f64)>)], y_max: Option<f64>) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    let x_max = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0f64, f64::max).max(1e-9);
    let x_min = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(f64::INFINITY, f64::min).min(x_max).max(0.0);
    let y_top = y_max.unwrap_or_else(|| series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0f64, f64::max) * 1.08).max(1e-9);
    let mut chart = frame(&root, title, x_min..x_max * 1.02, 0.0..y_top, x_desc, y_desc)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .ok()?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    legend(&mut chart);
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// Bars with category names: (name, value in [0, 1]) and a target line.
pub fn bars(canvas_id: &str, title: &str, y_desc: &str, bars: &[(String, f64)], target: Option<f64>) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    let n = bars.len().max(1) as f64;
    root.fill(&WHITE).ok()?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..n, 0.0..1.05)
        .ok()?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1) * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.01 { names.get(i).cloned().unwrap_or_default() } else { String::new() }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| format!("{:.0} %", y * 100.0))
        .label_style(("sans-serif", 12))
        .draw()
        .ok()?;
    for (i, (_, v)) in bars.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        chart.draw_series(std::iter::once(Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *v)], c.filled()))).ok()?;
    }
    if let Some(t) = target {
        chart
            .draw_series(LineSeries::new(vec![(0.0, t), (n, t)], BLACK.stroke_width(1)))
            .ok()?
            .label(format!("target {:.0} %", t * 100.0))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
        legend(&mut chart);
    }
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}

/// A study's chart: bars by category, or points and lines (with an optional min–max band and a target).
pub fn study_chart(canvas_id: &str, c: &inferscale::study::Chart) -> Option<Mapping> {
    let backend = CanvasBackend::new(canvas_id)?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let all = || c.series.iter().flat_map(|s| s.points.iter().copied().chain(s.band.iter().map(|b| (f64::NAN, b.1))));
    let y_max = all().map(|p| p.1).chain(c.target).filter(|y| y.is_finite()).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    if c.kind == "bars" {
        let n = c.categories.len().max(1) as f64;
        let names = c.categories.clone();
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(38)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, 0.0..y_max)
            .ok()?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(c.categories.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 { names.get(i).cloned().unwrap_or_default() } else { String::new() }
            })
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .label_style(("sans-serif", 11))
            .draw()
            .ok()?;
        let k = c.series.len().max(1) as f64;
        for (j, s) in c.series.iter().enumerate() {
            let col = PALETTE[j % PALETTE.len()];
            let w = 0.7 / k;
            chart
                .draw_series(s.points.iter().map(|&(x, y)| {
                    let x0 = x + 0.15 + w * j as f64;
                    Rectangle::new([(x0, 0.0), (x0 + w, y)], col.filled())
                }))
                .ok()?
                .label(&s.name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], col.filled()));
        }
        if let Some(t) = c.target {
            chart.draw_series(LineSeries::new(vec![(0.0, t), (n, t)], BLACK.stroke_width(1))).ok()?.label(format!("target {t}")).legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
        }
        legend(&mut chart);
        root.present().ok()?;
        return Some(Box::new(chart.into_coord_trans()));
    }
    let xs = || c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_lo, x_hi) = (xs().fold(f64::INFINITY, f64::min), xs().fold(f64::NEG_INFINITY, f64::max));
    let (x_lo, x_hi) = if x_lo.is_finite() { (x_lo, x_hi) } else { (0.0, 1.0) };
    let pad = ((x_hi - x_lo) * 0.06).max(1e-9);
    let mut chart = frame(&root, &c.title, (x_lo - pad).max(if x_lo >= 0.0 { 0.0 } else { f64::NEG_INFINITY })..x_hi + pad, 0.0..y_max, &c.x_label, &c.y_label)?;
    for (j, s) in c.series.iter().enumerate() {
        let col = PALETTE[j % PALETTE.len()];
        if !s.band.is_empty() {
            // The band: low edge out, high edge back, filled lightly.
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
        if !s.labels.is_empty() {
            chart
                .draw_series(s.points.iter().zip(&s.labels).map(|(&p, l)| Text::new(l.clone(), p, ("sans-serif", 10).into_font().color(&RGBColor(60, 60, 60)))))
                .ok()?;
        }
    }
    if let Some(t) = c.target {
        chart
            .draw_series(LineSeries::new(vec![(x_lo - pad, t), (x_hi + pad, t)], BLACK.stroke_width(1)))
            .ok()?
            .label(format!("target {t}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    }
    legend(&mut chart);
    root.present().ok()?;
    Some(Box::new(chart.into_coord_trans()))
}
