//! Sensitivity to profile error: N samples of shared multiplicative perturbations of prefill, decode and
//! transfer cost (log-uniform within ±range), applied to baseline and treatment alike. Does the treatment's
//! advantage survive a cost model that is off by that much?

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    About, Chart, ChartSeries, ColumnDef, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, StudyDef,
    StudyReport, column, report_head, table, treated,
};
use crate::scenario::{self, CostScaleSpec, Errors, ScenarioError, Spec};
use crate::spec::Bound;
use crate::study::option::{Bounded, Text, described};
use crate::study::paired::TREATMENT;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SensitivityParams {
    /// The treatment: scenario fields it changes (JSON pointer → value).
    pub treatment: Map<String, Value>,
    /// Perturbation samples N, ≥ 1.
    pub samples: u32,
    /// Each scale is drawn log-uniformly in [1/range, range], range > 1.
    pub range: f64,
}

described!(SensitivityParams {
    treatment: TREATMENT;
    samples: Text {
        label: "Samples",
        unit: "",
        help: "Perturbation samples N",
        bound: Some(Bound::Int(1, 1000)),
    };
    range: Text {
        label: "Range",
        unit: "× (each scale in [1/range, range])",
        help: "How far the profile may be off",
        bound: Some(Bound::OpenLo(1.0, 10.0)),
    };
});

impl Default for SensitivityParams {
    fn default() -> Self {
        SensitivityParams { treatment: Map::new(), samples: 20, range: 1.5 }
    }
}

pub struct SensitivityStudy {
    base: Spec,
    p: SensitivityParams,
    /// (prefill, decode, transfer) per row; row 0 is the nominal model.
    scales: Vec<(f64, f64, f64)>,
    batch: OneBatch,
}

impl StudyDef for SensitivityStudy {
    const ABOUT: About = About {
        name: "sensitivity",
        title: "Sensitivity",
        question: "does a change still win if the cost profile is off?",
        how: "Shared random perturbations of prefill, decode and transfer cost, applied to baseline and treatment alike.",
        group: Group::Prove,
        rank: Rank::Unranked,
        repeats_by: None,
    };
    type Options = SensitivityParams;

    fn new(spec: &Spec, p: &SensitivityParams) -> Result<Self, ScenarioError> {
        scenario::validate(spec)?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        e.finish()?;
        let treated = treated(spec, &p.treatment, SensitivityStudy::ABOUT.name)?;
        // Scales from the study stream: log-uniform, shared by baseline and treatment (common random numbers).
        let mut rng = crate::rng::stream(spec.seed, crate::rng::Stream::Study, 2);
        let ln = libm::log(p.range);
        let mut draw = || libm::exp(ln * (2.0 * rng.uniform() - 1.0));
        let mut scales = vec![(1.0, 1.0, 1.0)];
        for _ in 0..p.samples {
            let s = (draw(), draw(), draw());
            scales.push(s);
        }
        let with = |s: &Spec, (pf, dc, tr): (f64, f64, f64)| Spec {
            cost_scale: Some(CostScaleSpec { prefill: pf, decode: dc, transfer: tr }),
            ..s.clone()
        };
        let jobs = scales
            .iter()
            .enumerate()
            .flat_map(|(i, &sc)| {
                let name = if i == 0 { "nominal".to_string() } else { format!("sample {i}") };
                [
                    Job { label: format!("baseline, {name}"), spec: with(spec, sc) },
                    Job { label: format!("treatment, {name}"), spec: with(&treated, sc) },
                ]
            })
            .collect();
        Ok(SensitivityStudy { base: spec.clone(), p: p.clone(), scales, batch: OneBatch::new(jobs) })
    }
}

/// +1 when the treatment is better (SLO attainment first, then goodput), −1 when worse, 0 on a tie.
fn advantage(b: &RunSummary, t: &RunSummary) -> i32 {
    let ord = t.slo_attainment.total_cmp(&b.slo_attainment).then(t.goodput_rps.total_cmp(&b.goodput_rps));
    ord as i32
}

/// A sample's row: its cost scales (prefill, decode, transfer), both runs, and whether the advantage holds.
struct Row<'a> {
    i: usize,
    scales: (f64, f64, f64),
    b: &'a RunSummary,
    t: &'a RunSummary,
    holds: bool,
}

fn columns<'a>() -> [ColumnDef<Row<'a>>; 10] {
    [
        column("Sample", "", Format::Text, |r| if r.i == 0 { "nominal".into() } else { r.i.to_string().into() }),
        column("Prefill ×", "", Format::Num, |r| r.scales.0.into()),
        column("Decode ×", "", Format::Num, |r| r.scales.1.into()),
        column("Transfer ×", "", Format::Num, |r| r.scales.2.into()),
        column("Baseline SLO", "", Format::Percent, |r| r.b.slo_attainment.into()),
        column("Treatment SLO", "", Format::Percent, |r| r.t.slo_attainment.into()),
        column("Goodput delta", "req/s", Format::Num, |r| (r.t.goodput_rps - r.b.goodput_rps).into()),
        column("p95 TTFT delta", "s", Format::Seconds, |r| (r.t.ttft_p95_s - r.b.ttft_p95_s).into()),
        column("p95 E2E delta", "s", Format::Seconds, |r| (r.t.e2e_p95_s - r.b.e2e_p95_s).into()),
        column("Advantage holds", "", Format::Bool, |r| r.holds.into()),
    ]
}

impl OneBatchStudy for SensitivityStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, results: &[RunSummary]) -> StudyReport {
        let change = serde_json::to_string(&self.p.treatment).unwrap_or_default();
        let mut rep = report_head(
            SensitivityStudy::ABOUT,
            &self.base,
            format!("does the treatment {change} still win if the cost profile is off by up to ×{}?", self.p.range),
        );
        let r = results;
        let nominal = r.get(0..2).map(|c| advantage(&c[0], &c[1])).unwrap_or(0);
        let mut holds_n = 0;
        let (mut pts_b, mut pts_t, mut rows) = (Vec::new(), Vec::new(), Vec::new());
        for (i, c) in r.chunks(2).enumerate() {
            let (b, t) = (&c[0], &c[1]);
            let holds = nominal != 0 && advantage(b, t) == nominal;
            if i > 0 {
                holds_n += holds as u32;
                pts_b.push((i as f64, b.slo_attainment));
                pts_t.push((i as f64, t.slo_attainment));
            }
            rows.push(Row { i, scales: self.scales[i], b, t, holds });
        }
        (rep.columns, rep.rows) = table(&columns(), &rows);
        let n = self.p.samples;
        rep.best_row = Some(0);
        rep.answer = match nominal {
            0 => format!(
                "At the nominal profile the treatment ties the baseline (same SLO attainment and goodput); {n} perturbed samples are listed."
            ),
            s => format!(
                "At the nominal profile the treatment is {}; that holds in {holds_n} of {n} perturbed samples ({:.0} %) with prefill, decode and transfer cost each off by up to ×{}.",
                if s > 0 { "better" } else { "worse" },
                holds_n as f64 / n as f64 * 100.0,
                self.p.range
            ),
        };
        rep.charts = vec![Chart {
            kind: "scatter".into(),
            title: "SLO attainment under perturbed cost profiles".into(),
            x_label: "sample".into(),
            y_label: "SLO attainment".into(),
            categories: vec![],
            series: vec![
                ChartSeries { name: "baseline".into(), points: pts_b, band: vec![], labels: vec![], line: false },
                ChartSeries { name: "treatment".into(), points: pts_t, band: vec![], labels: vec![], line: false },
            ],
            target: None,
        }];
        rep.notes = vec![
            "Advantage: SLO attainment first, then goodput; it holds in a sample when the treatment is better (or worse) there as it is at the nominal profile.".into(),
            "Both scenarios of a sample share its scales and its seed (common random numbers); scales are drawn from the study's seeded stream.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}
