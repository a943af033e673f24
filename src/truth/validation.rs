//! The published accuracy table (docs/validation.md): calibration run on public measured series, each a base
//! scenario, a bundle of its measured runs and the cases it trains on; every other case of the series is held
//! out and never seen by the fit. Pure: the front end reads the manifest's files and passes them in.

use super::calibrate::{self, Calibration, Options, Row, Saturated, heavy_cases};
use super::{Bundle, Case};
use crate::markdown::{md_cell, md_text};
use crate::scenario::Budget;
use crate::scenario::Spec;
use serde::Deserialize;
use std::collections::HashMap;
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
    let budget = &Budget::NATIVE;
    let runs = (0..series.len()).map(|i| calibrate_series(m, series, i, budget, 1)).collect::<Result<Vec<_>, _>>()?;
    Ok(render(m, series, &runs))
}

/// Series `i`'s calibration with the manifest's knobs (independent of the others: a front end may run the
/// series in parallel, then `render`), `runs` series side by side, each case's run within `budget`.
pub fn calibrate_series(
    m: &Manifest,
    series: &[(Spec, Bundle)],
    i: usize,
    budget: &Budget,
    runs: u32,
) -> Result<Calibration, String> {
    prepare_series(m, series, i, budget, runs)?.calibrate()
}

/// Series `i` checked for what its calibration refuses before it simulates anything (cases over the budget, a
/// training case not in the bundle): a front end prepares every series before it runs any.
pub fn prepare_series(
    m: &Manifest,
    series: &[(Spec, Bundle)],
    i: usize,
    budget: &Budget,
    runs: u32,
) -> Result<SeriesRun, String> {
    let opts = options(m, budget, runs)?;
    let (s, (base, bundle)) = (&m.series[i], &series[i]);
    let at = format!("series[{i}] ({})", s.name);
    match calibrate::prepare(base, &bundle.cases, &s.train, &opts) {
        Ok(prepared) => Ok(SeriesRun { at, opts, prepared }),
        Err(e) => Err(format!("{at}: {e}")),
    }
}

/// A series checked and ready to calibrate.
pub struct SeriesRun {
    at: String,
    opts: Options,
    prepared: calibrate::Prepared,
}

impl SeriesRun {
    pub fn calibrate(self) -> Result<Calibration, String> {
        calibrate::calibrate_prepared(self.prepared, &self.opts, &mut |_, _| {})
            .map_err(|e| format!("{}: {e}", self.at))
    }
}

fn options(m: &Manifest, budget: &Budget, runs: u32) -> Result<Options, String> {
    let opts = Options::parse(&m.fit, m.tolerance_pct).map_err(|(field, why)| format!("{field}: {why}"))?;
    Ok(Options { budget: *budget, runs_at_once: runs, ..opts })
}

/// The document from each series' calibration, in the manifest's order.
pub fn render(m: &Manifest, series: &[(Spec, Bundle)], runs: &[Calibration]) -> String {
    // The manifest's title and series names are the user's text: no raw HTML, no line break, no table cell
    // broken by a `|` (its `about` paragraphs and sources are Markdown by design).
    let mut out = format!("# {}\n\n", md_text(&m.title));
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
    out.push_str("| series | runs | training | knobs | held-out figures | uncalibrated | calibrated | heavy load | leave-one-out | repeat-run spread | use | gate |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let heavy: Vec<Option<f64>> = runs.iter().map(|c| c.heavy_load.calibrated).collect();
    for ((s, (_, b)), c) in m.series.iter().zip(series).zip(runs) {
        let loo = format!("{} → {}", pct(c.leave_one_out.baseline), pct(c.leave_one_out.calibrated));
        let h = &c.heavy_load;
        let heavy_cell =
            if h.figures == 0 { "—".into() } else { format!("{} → {}", pct(h.baseline), pct(h.calibrated)) };
        let noise = pct(c.noise_floor.map(|n| n.spread));
        let knobs = fit_names(&c.fitted);
        let gate = match c.gate.pass {
            Some(p) => format!("{} ({})", if p { "pass" } else { "fail" }, pct(c.gate.error)),
            None => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {knobs} | {} | {} | {} | {heavy_cell} | {loo} | {noise} | {} | {gate} |",
            md_cell(&s.name),
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
    let with_heavy = heavy.iter().flatten().count();
    let heavy_met = heavy.iter().flatten().filter(|&&e| e <= 0.10).count();
    let recommended_heavy = (runs.iter())
        .filter_map(|c| if c.recommended == "calibrated" { c.heavy_load.calibrated } else { c.heavy_load.baseline })
        .filter(|&e| e <= 0.10)
        .count();
    let capacity: Vec<(f64, f64)> =
        runs.iter().zip(series).filter_map(|(c, (_, b))| capacity_error(c, &b.cases)).collect();
    let capacity_met = capacity.iter().filter(|e| e.1 <= 0.10).count();
    let capacity_met_before = capacity.iter().filter(|e| e.0 <= 0.10).count();
    let overloaded = runs.iter().filter(|c| c.saturated.iter().any(|x| !x.training)).count();
    let _ = write!(
        out,
        "\nHeld-out error is the median absolute percentage error over the latency figures the held-out runs have \
         ({}) of the cases the fit did not see, cases past saturation left out. Heavy load is the held-out cases \
         whose load (rate, or clients of a closed loop) is above every training case's: its error is the median \
         over their TTFT, TPOT, ITL and E2E medians. The calibrated model is recommended on {better} of {} \
         series (better left out one at a time, and no worse held out, overall and at heavy load); the calibrated \
         held-out error is within 10 % on {met} of {}, and at heavy load on {heavy_met} of the {with_heavy} series \
         that have heavy points (the recommended model's on {recommended_heavy}); the recommended model passes its \
         gate on {passed} of {}. {}\n\n",
        counted.join(", "),
        runs.len(),
        runs.len(),
        runs.len(),
        capacity_sentence(overloaded, capacity.len(), capacity_met, capacity_met_before)
    );
}

/// The footer's sentence on sustainable capacity, in the grammar of its counts: `overloaded` series have
/// held-out runs past saturation, `measured` of them gave a capacity (at most 1 % failed), and the model's served
/// rate is within 10 % on `met` calibrated and `met_before` uncalibrated.
fn capacity_sentence(overloaded: usize, measured: usize, met: usize, met_before: usize) -> String {
    if overloaded == 0 {
        return "Sustainable capacity: no series has held-out runs past saturation, so none gives a measured \
                capacity."
            .into();
    }
    let has = if overloaded == 1 { "1 series has".to_string() } else { format!("{overloaded} series have") };
    let mut s = format!("Sustainable capacity: {has} held-out runs past saturation; ");
    s += &match (measured, overloaded) {
        (0, 1) => "it failed many of its requests, so it gives no capacity".to_string(),
        (0, _) => "each failed many of its requests, so none gives a capacity".to_string(),
        (m, o) => {
            let which = match (o, m) {
                (1, _) => "it".to_string(),
                (_, 1) => "1 of them".to_string(),
                _ => format!("{m} of them"),
            };
            let they = if m == 1 { "it" } else { "they" };
            let rest = match o - m {
                0 => String::new(),
                1 => "; the other failed many of its requests, so it gives no capacity".into(),
                _ => "; the others failed many of their requests, so they give no capacity".into(),
            };
            format!(
                "{which} served every request but a few (at most 1 % failed), so what {they} served is the rate \
                 the server sustained, and the model's served rate under the same overload is within 10 % of it on \
                 {met} of {m} calibrated ({met_before} uncalibrated){rest}"
            )
        }
    };
    s + " (each case is in its series' notes)."
}

/// The knobs fitted besides the two multipliers: "request overhead", or "—".
fn fit_names(m: &super::calibrate::Multipliers) -> String {
    let names: Vec<&str> = m.extras().into_iter().map(|x| x.words()).collect();
    if names.is_empty() { "—".into() } else { names.join(", ") }
}

/// A series' heading: its name as the user wrote it, one line, no HTML.
fn series_heading(name: &str) -> String {
    format!("## {}\n\n", md_text(name))
}

fn detail(out: &mut String, s: &SeriesSpec, cases: &[Case], c: &Calibration) {
    let _ = write!(out, "{}{}\n\n", series_heading(&s.name), s.source);
    let held: Vec<&str> = cases.iter().map(|k| k.id.as_str()).filter(|id| !s.train.iter().any(|t| t == id)).collect();
    let _ = write!(out, "Trained on: {}. Held out: {}.\n\n", md_text(&s.train.join(", ")), md_text(&held.join(", ")));
    let _ = write!(out, "Fitted: {}. {}\n\n", c.fitted.sentence(), c.verdict);
    out.push_str("| metric | uncalibrated | calibrated |\n|---|---|---|\n");
    for e in c.held_out_mape.iter().filter(|e| e.baseline.is_some() || e.calibrated.is_some()) {
        let _ = writeln!(out, "| {} | {} | {} |", e.metric, pct(e.baseline), pct(e.calibrated));
    }
    out.push('\n');
    trials(out, c);
    regimes(out, s, cases, c);
    for w in c.saturated.iter().map(|x| saturated_line(x, case_of(cases, &x.case))).chain(c.warnings.clone()) {
        let _ = writeln!(out, "- {w}");
    }
    if !c.saturated.is_empty() || !c.warnings.is_empty() {
        out.push('\n');
    }
}

/// A case past saturation, and — when its run served (nearly) every request it was sent — the rate the model
/// serves under the same overload against what it served: past saturation a server that drops nothing serves at
/// the rate it sustains, so this is predicted against measured capacity. A run that failed many requests
/// served fewer than the server worked on, and gives no capacity: said, and not compared.
fn saturated_line(x: &Saturated, case: Option<&Case>) -> String {
    let head = format!("Past saturation: {} ({}).", x.case, x.why);
    match (capacity_measured(x, case), case.and_then(|c| Some((c.measured.failed?, c.measured.completed?)))) {
        (Some(measured), _) => {
            let err = |p: f64| format!("{:+.1} %", (p / measured - 1.0) * 100.0);
            format!(
                "{head} It served every request but a few, so what it served is the capacity it sustained: {} req/s measured; the model serves {} uncalibrated ({}), {} calibrated ({}).",
                rps(measured),
                rps(x.baseline_rps),
                err(x.baseline_rps),
                rps(x.calibrated_rps),
                err(x.calibrated_rps)
            )
        }
        (None, Some((failed, completed))) if failed > 0 => format!(
            "{head} {failed} of its {} requests failed (the file does not say why), so what it served is not the server's capacity — it worked on requests that never completed: not compared (the model serves {} req/s uncalibrated, {} calibrated).",
            failed + completed,
            rps(x.baseline_rps),
            rps(x.calibrated_rps)
        ),
        _ => head,
    }
}

/// The measured capacity a case past saturation gives: its served rate, when its run says it and failed at most
/// 1 % of its requests.
fn capacity_measured(x: &Saturated, case: Option<&Case>) -> Option<f64> {
    let m = &case?.measured;
    let (failed, completed) = (m.failed.unwrap_or(0), m.completed?);
    let clean = failed * 100 <= failed + completed;
    x.measured_rps.filter(|r| *r > 0.0 && clean)
}

fn rps(x: f64) -> String {
    if x >= 10.0 { format!("{x:.1}") } else { format!("{x:.2}") }
}

/// Per series with a held-out case past saturation that gives a measured capacity ([`capacity_measured`]): the
/// median over those cases of |served predicted / measured − 1|, uncalibrated and calibrated.
fn capacity_error(c: &Calibration, cases: &[Case]) -> Option<(f64, f64)> {
    let of = |pick: fn(&Saturated) -> f64| {
        let mut e: Vec<f64> = (c.saturated.iter())
            .filter(|x| !x.training)
            .filter_map(|x| Some(libm::fabs(pick(x) / capacity_measured(x, case_of(cases, &x.case))? - 1.0)))
            .collect();
        e.sort_by(f64::total_cmp);
        (!e.is_empty()).then(|| crate::metrics::percentile(&e, 50.0))
    };
    Some((of(|x| x.baseline_rps)?, of(|x| x.calibrated_rps)?))
}

fn case_of<'a>(cases: &'a [Case], id: &str) -> Option<&'a Case> {
    cases.iter().find(|c| c.id == id)
}

/// The figures each regime's table shows: the medians the fit saw, then the tails it never fits.
const REGIME_FIGURES: [&str; 7] =
    ["TTFT median", "TPOT median", "ITL median", "E2E median", "TTFT p99", "TPOT p99", "E2E p99"];
/// The knob sets `--fit auto` tried, each fit's leave-one-out error (which chose) beside its held-out errors
/// (shown after the choice, never consulted): whether a knob more pays off on runs no fit saw.
fn trials(out: &mut String, c: &Calibration) {
    if c.knob_choice.len() < 2 {
        return;
    }
    out.push_str(
        "| knobs tried | leave-one-out (chooses) | held out | held out, heavy load | chosen |\n|---|---|---|---|---|\n",
    );
    for t in &c.knob_choice {
        let chosen = t.chosen_word();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {chosen} |",
            t.knobs,
            pct(t.leave_one_out),
            pct(t.held_out),
            pct(t.heavy)
        );
    }
    out.push('\n');
}

/// Each held-out case's regime: heavy (true) when its load (rate, or clients of a closed loop) is above every
/// training case's ([`heavy_cases`]), light otherwise. Training cases are absent.
fn heaviness<'a>(s: &SeriesSpec, cases: &'a [Case]) -> HashMap<&'a str, bool> {
    let (all, is_train) = split(s, cases);
    let heavy = heavy_cases(&all, &is_train);
    (cases.iter().zip(is_train).zip(heavy)).filter(|((_, t), _)| !*t).map(|((c, _), h)| (c.id.as_str(), h)).collect()
}

/// The series' cases and which of them train.
fn split<'a>(s: &SeriesSpec, cases: &'a [Case]) -> (Vec<&'a Case>, Vec<bool>) {
    (cases.iter().collect(), cases.iter().map(|c| s.train.contains(&c.id)).collect())
}

/// The held-out rows (medians and tails, past saturation left out) of one regime.
fn regime_rows<'a>(heavy: &HashMap<&str, bool>, c: &'a Calibration, is_heavy: bool) -> Vec<&'a Row> {
    (c.rows.iter().chain(&c.tail_rows))
        .filter(|r| !r.training && !r.saturated && heavy.get(r.case.as_str()) == Some(&is_heavy))
        .collect()
}

/// Per regime (held-out cases at a load within the training cases' range, and above it), each figure's mean
/// APE uncalibrated → calibrated: medians and p99s side by side, never one median across unlike metrics.
fn regimes(out: &mut String, s: &SeriesSpec, cases: &[Case], c: &Calibration) {
    out.push_str("| held-out regime | cases |");
    for f in REGIME_FIGURES {
        let _ = write!(out, " {f} |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(REGIME_FIGURES.len()));
    out.push('\n');
    let heavy = heaviness(s, cases);
    for (is_heavy, name) in [(false, "light (load within training)"), (true, "heavy (load above training)")] {
        let rows = regime_rows(&heavy, c, is_heavy);
        let mut ids: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let _ = write!(out, "| {name} | {} |", ids.len());
        for f in REGIME_FIGURES {
            let of: Vec<&&Row> = rows.iter().filter(|r| r.metric == f).collect();
            let mean = |g: fn(&Row) -> f64| of.iter().map(|r| g(r)).sum::<f64>() / of.len() as f64;
            if of.is_empty() {
                out.push_str(" — |");
            } else {
                let _ = write!(
                    out,
                    " {} → {} |",
                    pct(Some(mean(|r| r.baseline_ape))),
                    pct(Some(mean(|r| r.calibrated_ape)))
                );
            }
        }
        out.push('\n');
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::{Manifest, capacity_sentence, render, series_heading};

    /// A manifest's title and a series' name reach the Markdown as text: raw HTML shown, not rendered; a line
    /// break kept out of the heading.
    #[test]
    fn titles_and_names_are_text_in_the_markdown() {
        let m = Manifest {
            title: "<script>x</script> & co\n# not a heading".into(),
            about: vec!["[a link](https://example.com)".into()],
            fit: Vec::new(),
            tolerance_pct: None,
            series: Vec::new(),
        };
        let doc = render(&m, &[], &[]);
        assert!(doc.starts_with("# &lt;script&gt;x&lt;/script&gt; &amp; co # not a heading\n\n"), "{doc}");
        assert!(doc.contains("\n[a link](https://example.com)\n"), "the about paragraphs are Markdown: {doc}");
        assert_eq!(series_heading("a <b>\n## c"), "## a &lt;b&gt; ## c\n\n");
    }

    /// One series or many, a capacity or none: the footer's sentence agrees with its counts.
    #[test]
    fn the_capacity_sentence_agrees_with_its_counts() {
        assert!(capacity_sentence(0, 0, 0, 0).starts_with("Sustainable capacity: no series has"));
        let one = capacity_sentence(1, 1, 0, 1);
        assert!(one.contains("1 series has held-out runs") && one.contains("; it served every request"), "{one}");
        assert!(one.contains("on 0 of 1 calibrated (1 uncalibrated) (each"), "{one}");
        let none = capacity_sentence(1, 0, 0, 0);
        assert!(none.contains("; it failed many of its requests, so it gives no capacity (each"), "{none}");
        let many = capacity_sentence(4, 1, 0, 1);
        assert!(many.contains("4 series have") && many.contains("; 1 of them served"), "{many}");
        assert!(many.contains("; the others failed many of their requests, so they give no capacity"), "{many}");
        let two = capacity_sentence(2, 1, 1, 1);
        assert!(two.contains("; the other failed many of its requests, so it gives no capacity"), "{two}");
        let all = capacity_sentence(3, 3, 2, 1);
        assert!(all.contains("3 of them served") && all.contains("on 2 of 3 calibrated (1 uncalibrated) (each"));
        assert!(!all.contains("other"), "{all}");
    }
}
