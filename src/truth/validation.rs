//! The published accuracy table (docs/validation.md): calibration run on public measured series, each a base
//! scenario, a bundle of its measured runs and the cases it trains on; every other case of the series is held
//! out and never seen by the fit. Pure: the front end reads the manifest's files and passes them in.

use super::calibrate::{Calibration, Options, calibrate_with};
use super::{Bundle, Case};
use crate::scenario::Spec;
use serde::Deserialize;
use std::fmt::Write;

/// The manifest: the document's title and preamble, and the series.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub title: String,
    /// Paragraphs before the table: the sources, how to fetch them, the split.
    pub about: Vec<String>,
    /// Knobs fitted besides the prefill and decode multipliers (`calibrate --fit`; `auto`: chosen per series
    /// by leave-one-out on its training cases), the same for every series.
    #[serde(default)]
    pub fit: Vec<String>,
    /// The gate's tolerance in percent (`calibrate --tolerance-pct`; default 20).
    #[serde(default)]
    pub tolerance_pct: Option<f64>,
    pub series: Vec<SeriesSpec>,
}

/// One measured series: where it comes from, its base scenario and bundle (paths relative to the manifest),
/// and the cases the fit may see.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesSpec {
    pub name: String,
    pub source: String,
    pub scenario: String,
    pub bundle: String,
    pub train: Vec<String>,
}

/// The document: a summary row per series, then each series' per-metric held-out errors.
pub fn report(m: &Manifest, series: &[(Spec, Bundle)]) -> Result<String, String> {
    let runs = (0..series.len()).map(|i| calibrate_series(m, series, i)).collect::<Result<Vec<_>, _>>()?;
    Ok(render(m, series, &runs))
}

/// Series `i`'s calibration with the manifest's knobs (independent of the others: a front end may run the
/// series in parallel, then `render`).
pub fn calibrate_series(m: &Manifest, series: &[(Spec, Bundle)], i: usize) -> Result<Calibration, String> {
    let opts = Options::parse(&m.fit, m.tolerance_pct).map_err(|(field, why)| format!("{field}: {why}"))?;
    let (s, (base, bundle)) = (&m.series[i], &series[i]);
    calibrate_with(base, &bundle.cases, &s.train, &opts, &mut |_, _| {}).map_err(|e| format!("{}: {e}", s.name))
}

/// The document from each series' calibration, in the manifest's order.
pub fn render(m: &Manifest, series: &[(Spec, Bundle)], runs: &[Calibration]) -> String {
    let mut out = format!("# {}\n\n", m.title);
    for p in &m.about {
        let _ = write!(out, "{p}\n\n");
    }
    summary(&mut out, m, series, runs);
    for ((s, (_, bundle)), c) in m.series.iter().zip(series).zip(runs) {
        detail(&mut out, s, &bundle.cases, c);
    }
    out
}

fn pct(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{:.1} %", v * 100.0))
}

fn summary(out: &mut String, m: &Manifest, series: &[(Spec, Bundle)], runs: &[Calibration]) {
    out.push_str("| series | runs | training | knobs | held-out figures | uncalibrated | calibrated | leave-one-out | repeat-run spread | use | gate |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for ((s, (_, b)), c) in m.series.iter().zip(series).zip(runs) {
        let loo = format!("{} → {}", pct(c.leave_one_out.baseline), pct(c.leave_one_out.calibrated));
        let noise = pct(c.noise_floor.map(|n| n.spread));
        let knobs = fit_names(&c.fitted);
        let gate = match c.gate.pass {
            Some(p) => format!("{} ({})", if p { "pass" } else { "fail" }, pct(c.gate.error)),
            None => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {knobs} | {} | {} | {} | {loo} | {noise} | {} | {gate} |",
            s.name,
            b.cases.len(),
            s.train.len(),
            c.held_out.figures,
            pct(c.held_out.baseline),
            pct(c.held_out.calibrated),
            c.recommended
        );
    }
    let met = runs.iter().filter(|c| c.held_out.calibrated.is_some_and(|e| e <= 0.10)).count();
    let passed = runs.iter().filter(|c| c.gate.pass == Some(true)).count();
    let better = runs.iter().filter(|c| c.recommended == "calibrated").count();
    // The figures the error is over are the ones the held-out rows compare, named from them: a file that lacks
    // TPOT or ITL has none to count, and the footer once said every metric was.
    let mut counted: Vec<&str> = Vec::new();
    for r in runs.iter().flat_map(|c| &c.rows).filter(|r| !r.training && !r.saturated) {
        if !counted.contains(&r.metric) {
            counted.push(r.metric);
        }
    }
    counted.sort();
    let _ = write!(
        out,
        "\nHeld-out error is the median absolute percentage error over the latency figures the held-out runs have \
         ({}) of the cases the fit did not see, cases past saturation left out. Calibration is better than the \
         uncalibrated model on {better} of {} series; the calibrated held-out error is within 10 % on {met} of {}; \
         the recommended model passes its gate on {passed} of {}.\n\n",
        counted.join(", "),
        runs.len(),
        runs.len(),
        runs.len()
    );
}

/// The knobs fitted besides the two multipliers: "request overhead", or "—".
fn fit_names(m: &super::calibrate::Multipliers) -> String {
    let names: Vec<&str> = [
        (m.step_overhead_ms.is_some(), "step overhead"),
        (m.request_overhead_ms.is_some(), "request overhead"),
        (m.tp_comm.is_some(), "TP all-reduce"),
        (m.frontend_ms.is_some(), "front end"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if names.is_empty() { "—".into() } else { names.join(", ") }
}

fn detail(out: &mut String, s: &SeriesSpec, cases: &[Case], c: &Calibration) {
    let _ = write!(out, "## {}\n\n{}\n\n", s.name, s.source);
    let held: Vec<&str> = cases.iter().map(|k| k.id.as_str()).filter(|id| !s.train.iter().any(|t| t == id)).collect();
    let _ = write!(out, "Trained on: {}. Held out: {}.\n\n", s.train.join(", "), held.join(", "));
    let _ = write!(out, "Fitted: {}. {}\n\n", c.fitted.sentence(), c.verdict);
    out.push_str("| metric | uncalibrated | calibrated |\n|---|---|---|\n");
    for e in c.held_out_mape.iter().filter(|e| e.baseline.is_some() || e.calibrated.is_some()) {
        let _ = writeln!(out, "| {} | {} | {} |", e.metric, pct(e.baseline), pct(e.calibrated));
    }
    out.push('\n');
    for w in c.saturated.iter().map(|x| format!("Past saturation: {} ({}).", x.case, x.why)).chain(c.warnings.clone()) {
        let _ = writeln!(out, "- {w}");
    }
    if !c.saturated.is_empty() || !c.warnings.is_empty() {
        out.push('\n');
    }
}
