//! Paired experiment: baseline vs treatment over K repetitions, the same seed for both on each repetition (so
//! they see identical requests); per metric the paired deltas' mean with a seeded 95 % bootstrap CI.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, StudyDef,
    StudyReport, bootstrap_ci, column, report_head, reseeded, table, treated,
};
use crate::scenario::{self, Errors, ScenarioError, Spec};
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PairedParams {
    /// The treatment: scenario fields it changes (JSON pointer → value).
    pub treatment: Map<String, Value>,
    /// Repetitions K (seeds), ≥ 2.
    pub repetitions: u32,
    /// Bootstrap resamples B.
    pub resamples: u32,
}

/// A treatment, as the paired and sensitivity studies describe it.
pub(crate) const TREATMENT: Text = Text {
    label: "Treatment",
    unit: "JSON: {JSON pointer: value}",
    help: "The scenario fields the treatment changes",
    bound: None,
};

described!(PairedParams {
    treatment: TREATMENT;
    repetitions: Text {
        label: "Repetitions",
        unit: "pairs",
        help: "Paired repetitions K (seeds)",
        bound: Some(Bound::Int(2, 1000)),
    };
    resamples: Text {
        label: "Bootstrap resamples",
        unit: "",
        help: "Resamples B of the bootstrap",
        bound: Some(Bound::Int(100, 100_000)),
    };
});

impl Default for PairedParams {
    fn default() -> Self {
        PairedParams { treatment: Map::new(), repetitions: 10, resamples: 2000 }
    }
}

/// The metrics compared: (name, unit, format, higher is better, value).
type Metric = (&'static str, &'static str, Format, bool, fn(&RunSummary) -> f64);
pub(super) const METRICS: [Metric; 7] = [
    ("SLO attainment", "", Format::Percent, true, |r| r.slo_attainment),
    ("Goodput", "req/s", Format::Num, true, |r| r.goodput_rps),
    ("Throughput", "req/s", Format::Num, true, |r| r.throughput_rps),
    ("p95 TTFT", "s", Format::Seconds, false, |r| r.ttft_p95_s),
    ("p95 TPOT", "s", Format::Seconds, false, |r| r.tpot_p95_s),
    ("p95 E2E", "s", Format::Seconds, false, |r| r.e2e_p95_s),
    ("Mean E2E", "s", Format::Seconds, false, |r| r.e2e_mean_s),
];

pub struct PairedStudy {
    base: Spec,
    p: PairedParams,
    batch: OneBatch,
}

impl StudyDef for PairedStudy {
    const ABOUT: About = About {
        name: "paired",
        title: "Paired experiment",
        question: "does a change make a difference beyond run-to-run noise?",
        how: "Baseline against a treatment over K repetitions, both on the same seed each time, with bootstrap confidence intervals of the paired deltas.",
        group: Group::Prove,
        rank: Rank::Unranked,
        repeats_by: Some("repetitions"),
    };
    type Options = PairedParams;

    fn new(spec: &Spec, p: &PairedParams) -> Result<Self, ScenarioError> {
        scenario::validate(spec)?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        e.finish()?;
        let treated = treated(spec, &p.treatment, PairedStudy::ABOUT.name)?;
        let jobs = (0..p.repetitions)
            .flat_map(|k| {
                let seed = spec.seed.wrapping_add(k as u64);
                [
                    Job { label: format!("baseline, repetition {}", k + 1), spec: reseeded(spec, seed) },
                    Job { label: format!("treatment, repetition {}", k + 1), spec: reseeded(&treated, seed) },
                ]
            })
            .collect();
        Ok(PairedStudy { base: spec.clone(), p: p.clone(), batch: OneBatch::new(jobs) })
    }
}

/// (baseline, treatment) values of a metric, per repetition.
pub(super) fn pairs(results: &[RunSummary], f: fn(&RunSummary) -> f64) -> (Vec<f64>, Vec<f64>) {
    results.chunks(2).map(|c| (f(&c[0]), f(&c[1]))).unzip()
}

/// A metric's row: the means, the paired delta with its interval, and how often the treatment won.
struct Row {
    name: &'static str,
    unit: Unit,
    mb: f64,
    mt: f64,
    md: f64,
    lo: f64,
    hi: f64,
    rel: f64,
    wins: f64,
    excludes: bool,
}

/// `v` with `decimals` places, or more when that would show a value that is not zero as zero (two significant
/// digits then): an interval's bound that excludes 0 never reads "+0.000".
fn fixed(v: f64, decimals: usize) -> String {
    let shown_as_zero = v != 0.0 && v.abs() < 0.5 * 10f64.powi(-(decimals as i32));
    let d = if shown_as_zero { (1.0 - libm::floor(libm::log10(v.abs()))) as usize } else { decimals };
    format!("{:.d$}", v + 0.0)
}

/// How a row's figures read: its format, and for a latency the one unit (s or ms, and decimals) its largest
/// figure takes, so a row never mixes "13.6 s" with "9321 ms".
#[derive(Clone, Copy)]
struct Unit {
    format: Format,
    per_s: f64,
    name: &'static str,
    decimals: usize,
}

impl Unit {
    fn of(format: Format, largest: f64) -> Unit {
        let (per_s, name, decimals) = match largest.abs() {
            x if x >= 10.0 => (1.0, "s", 1),
            x if x >= 0.1 => (1e3, "ms", 0),
            x if x >= 0.001 => (1e3, "ms", 1),
            _ => (1e3, "ms", 3),
        };
        Unit { format, per_s, name, decimals }
    }

    /// A value with its unit: a share in %, a rate in req/s, a latency in the row's unit.
    fn shown(self, v: f64) -> String {
        match self.format {
            Format::Percent => format!("{} %", fixed(v * 100.0, 1)),
            Format::Seconds => format!("{} {}", fixed(v * self.per_s, self.decimals), self.name),
            _ => format!("{} req/s", fixed(v, 3)),
        }
    }

    /// A difference with its sign and unit: percentage points for a share.
    fn delta(self, d: f64) -> String {
        let sign = if d < 0.0 { "−" } else { "+" };
        match self.format {
            Format::Percent => format!("{sign}{} pp", fixed(d.abs() * 100.0, 1)),
            Format::Seconds => format!("{sign}{} {}", fixed(d.abs() * self.per_s, self.decimals), self.name),
            _ => format!("{sign}{} req/s", fixed(d.abs(), 3)),
        }
    }
}

/// The rows' cells carry their units (each row is a different metric, so no column has one unit).
const COLUMNS: [ColumnDef<Row>; 8] = [
    column("Metric", "", Format::Text, |r| r.name.into()),
    column("Baseline mean", "", Format::Text, |r| r.unit.shown(r.mb).into()),
    column("Treatment mean", "", Format::Text, |r| r.unit.shown(r.mt).into()),
    column("Mean delta", "treatment − baseline", Format::Text, |r| r.unit.delta(r.md).into()),
    column("95 % CI", "bootstrap", Format::Text, |r| format!("{} … {}", r.unit.delta(r.lo), r.unit.delta(r.hi)).into()),
    column("Relative change", "", Format::Percent, |r| r.rel.into()),
    column("Treatment win rate", "", Format::Percent, |r| r.wins.into()),
    column("CI excludes zero", "", Format::Bool, |r| r.excludes.into()),
];

impl OneBatchStudy for PairedStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, results: &[RunSummary]) -> StudyReport {
        let change = serde_json::to_string(&self.p.treatment).unwrap_or_default();
        let mut rep = report_head(
            PairedStudy::ABOUT,
            &self.base,
            format!("does the treatment {change} change the outcome, beyond run-to-run noise?"),
        );
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let (mut bars, mut headline, mut rows) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (name, _unit, format, higher, f)) in METRICS.iter().enumerate() {
            let (b, t) = pairs(results, *f);
            let d: Vec<f64> = t.iter().zip(&b).map(|(t, b)| t - b).collect();
            let (lo, hi) = bootstrap_ci(
                &d,
                self.p.resamples as usize,
                0.95,
                self.base.seed.wrapping_mul(1_000_003).wrapping_add(i as u64),
            );
            let (mb, mt, md) = (mean(&b), mean(&t), mean(&d));
            let rel = if mb != 0.0 { md / mb.abs() } else { 0.0 };
            let wins =
                d.iter().filter(|x| if *higher { **x > 0.0 } else { **x < 0.0 }).count() as f64 / d.len().max(1) as f64;
            let excludes = (lo > 0.0 && hi > 0.0) || (lo < 0.0 && hi < 0.0);
            let u = Unit::of(*format, [mb, mt, lo, hi].iter().fold(0.0f64, |m, x| m.max(x.abs())));
            rows.push(Row { name, unit: u, mb, mt, md, lo, hi, rel, wins, excludes });
            // Improvement: the relative change signed so that better is positive (a latency that fell is).
            let signed = if *higher { rel } else { -rel };
            // Its series, so that colour says it too: better or worse where the interval excludes 0, else
            // within noise (a bar of noise is not a finding).
            let kind = match (excludes, signed >= 0.0) {
                (false, _) => "within noise",
                (true, true) => "better",
                (true, false) => "worse",
            };
            bars.push((i as f64, signed, kind));
            if i < 2 || *name == "p95 TTFT" {
                let better = if (md > 0.0) == *higher { "better" } else { "worse" };
                let ci = format!("95 % CI {} … {}", u.delta(lo), u.delta(hi));
                headline.push(if excludes {
                    format!("{name} {better}: {} → {}, {} ({ci})", u.shown(mb), u.shown(mt), u.delta(md))
                } else {
                    format!("{name} not distinguishable from noise ({} → {}, {ci})", u.shown(mb), u.shown(mt))
                });
            }
        }
        (rep.columns, rep.rows) = table(&COLUMNS, &rows);
        rep.answer = format!("Over {} paired repetitions: {}.", self.p.repetitions, headline.join("; "));
        // One series a kind, each metric's bar in its own (0 in the others).
        let series = |name: &str| ChartSeries {
            name: name.into(),
            points: bars.iter().map(|&(x, y, kind)| (x, if kind == name { y } else { 0.0 })).collect(),
            band: vec![],
            labels: vec![],
            line: false,
        };
        rep.charts = vec![Chart {
            kind: "bars".into(),
            title: "Improvement, treatment vs baseline (right of 0 = better)".into(),
            x_label: "metric".into(),
            y_label: "relative change, signed so that better is positive".into(),
            categories: METRICS.iter().map(|m| m.0.to_string()).collect(),
            series: vec![series("better"), series("worse"), series("within noise")],
            target: None,
        }];
        rep.notes = vec![
            format!("Repetition k runs baseline and treatment on seed {} + k: the same requests for both.", self.base.seed),
            format!("CI: percentile bootstrap of the mean paired delta, {} resamples, seeded (reproducible).", self.p.resamples),
            "The chart shows the relative change signed so that better is positive: a latency that fell and a rate that rose extend right of 0 (\"better\"), the opposite left (\"worse\"), each where its 95 % CI excludes 0; a change whose CI includes 0 is grey (\"within noise\"). The table gives the deltas in each metric's unit (a share's in percentage points); every run's figures are in the JSON.".into(),
        ];
        rep.runs = results.to_vec();
        rep
    }
}
