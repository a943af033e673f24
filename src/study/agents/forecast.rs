//! Looking further ahead: `forecast` compares one-step and multi-step forecasts, the utility plan and the
//! clairvoyant future set; `forecast-horizon` sweeps how many steps the forecast covers; `prefix-budget` runs
//! three plans under four prefix budgets.

use super::exec_learning::{
    Share, Steps, bounds, check_options, check_workflow, planner_jobs, replay_note, share_bars, share_points, wf,
    workflow_brief, workflow_mut,
};
use super::*;
use crate::scenario::at;
use crate::study::option::{Text, described};
use crate::study::sweep::{Knob, SweepRow, check_list};
use crate::study::{ColumnDef, column, table};

#[derive(Clone, Debug, PartialEq)]
pub struct ThreeSteps;
impl Steps for ThreeSteps {
    const STEPS: u32 = 3;
}

/// `forecast`'s options: the multi-step policies look three steps ahead.
pub type ForecastParams = LearnerParams<ThreeSteps>;

described!(ForecastParams {
    threshold: THRESHOLD;
    decay: DECAY;
    horizon: MULTI_STEP_HORIZON;
    host_kv: HOST_KV;
});

/// The horizon of a multi-step policy: at least two steps, at most the scenario's bound.
pub(super) fn check_multi_step(at: &str, horizon: u32, e: &mut Errors) {
    let most = bounds().horizon.limits().1 as u64;
    e.int(at, horizon as u64, 2, most);
}

pub struct ForecastStudy {
    base: Spec,
    horizon: u32,
    batch: OneBatch,
}

impl StudyDef for ForecastStudy {
    const ABOUT: About = About {
        name: "forecast",
        title: "Forecast",
        question: "does forecasting several steps ahead — or weighing what each prefetch saves against what it costs — bring the prefixes a workflow will need, and how close does it come to knowing its coming roles?",
        how: "The prefix cache alone, then decayed counts with the threshold plan for the next step and for several, and with the utility plan, against a clairvoyant future set (the coming roles known), on the same workflows.",
        group: Group::Agents,
        rank: Rank::Least("p95 TTFT"),
        repeats_by: None,
    };
    type Options = ForecastParams;

    fn new(spec: &Spec, p: &ForecastParams) -> Result<Self, ScenarioError> {
        check_workflow(spec, Self::at())?;
        let mut e = Errors::default();
        check_multi_step(&at!(Self::at(), p.horizon), p.horizon, &mut e);
        check_options(p, &Self::at(), e)?;
        let l = Learner { threshold: p.threshold, decay: p.decay };
        let runs = [
            Planner::NONE,
            Planner::threshold(l, 1),
            Planner::threshold(l, p.horizon),
            Planner::utility(p.decay, p.horizon),
            Planner::clairvoyant(p.horizon),
        ];
        let jobs = planner_jobs(&runs, spec, &p.host_kv);
        check_jobs(&jobs)?;
        Ok(ForecastStudy { base: spec.clone(), horizon: p.horizon, batch: OneBatch::new(jobs) })
    }
}

fn recall_at_k(r: &RunSummary) -> Cell {
    wf(r).and_then(|w| w.recall_at_k).into()
}
fn prefix_hit(r: &RunSummary) -> Cell {
    wf(r).map(|w| w.prefix_hit_rate).into()
}
fn utilization(r: &RunSummary) -> Cell {
    wf(r).and_then(|w| w.utilization).into()
}
fn mean_hbm(r: &RunSummary) -> Cell {
    wf(r).map(|w| w.mean_prefix_hbm_gb).into()
}
fn unused(r: &RunSummary) -> Cell {
    wf(r).map(|w| w.unused).into()
}
fn saved(r: &RunSummary) -> Cell {
    wf(r).map(|w| w.saved_prefill_tokens).into()
}

const RECALL: (&str, &str) = ("Future-role recall@K", "of the next K steps' roles");
const UTILIZATION: (&str, &str) = ("Utilization", "of landed prefetches");

fn forecast_columns() -> [ColumnDef<RunSummary>; 11] {
    [
        column("Policy", "", Format::Text, |x| x.label.as_str().into()),
        column("p95 TTFT", "s", Format::Seconds, |x| sess(x).turn_ttft_p95_s.into()),
        column(RECALL.0, RECALL.1, Format::Percent, recall_at_k),
        column("Prefix hit", "of steps", Format::Percent, prefix_hit),
        column(UTILIZATION.0, UTILIZATION.1, Format::Percent, utilization),
        column("Next-step precision", "", Format::Percent, |x| wf(x).and_then(|w| w.precision).into()),
        column("Mean HBM", "GB, prefixes", Format::Num, mean_hbm),
        column("Unused prefetch", "transfers", Format::Int, unused),
        column("Saved prefill", "tokens", Format::Int, saved),
        column("ECE", "", Format::Num, |x| wf(x).and_then(|w| w.ece).into()),
        column("Diagnosis", "", Format::Text, |x| workflow_brief(x).into()),
    ]
}

impl OneBatchStudy for ForecastStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Self::ABOUT, &self.base, Self::ABOUT.question.into());
        (rep.columns, rep.rows) = table(&forecast_columns(), r);
        // The best deployable policy: the clairvoyant (the last row) knows the coming roles.
        fastest_but_the_bound(&mut rep, r);
        if let (Some(b), 5) = (rep.best_row, r.len()) {
            rep.answer = forecast_answer(r, b, self.horizon);
            rep.charts = vec![forecast_chart(r)];
        }
        rep.notes = forecast_notes(&self.base, self.horizon);
        rep.runs = r.to_vec();
        rep
    }
}

/// A share of a run's workflow figures, as the answer writes it ("–": nothing to share).
fn share(r: &RunSummary, f: fn(&crate::metrics::WorkflowSummary) -> Option<f64>) -> String {
    wf(r).and_then(f).map_or("–".into(), crate::metrics::pct)
}

fn forecast_answer(r: &[RunSummary], b: usize, h: u32) -> String {
    let k = wf(&r[0]).map_or(0, |w| w.recall_k);
    let recall = |i: usize| share(&r[i], |w| w.recall_at_k);
    let used = |i: usize| share(&r[i], |w| w.utilization);
    format!(
        "{} has the lowest p95 TTFT, {} ({} with the prefix cache alone). Forecasting {h} steps ahead, the threshold plan wants {} of the next {k} steps' roles in HBM, against {} for the next step alone ({} knowing the coming roles); the utility plan uses {} of the prefetches it lands, the threshold plan over {h} steps {}.",
        r[b].label,
        crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s),
        crate::metrics::secs(sess(&r[0]).turn_ttft_p95_s),
        recall(2),
        recall(1),
        recall(4),
        used(3),
        used(2),
    )
}

/// Each policy's recall@K, utilization and prefix hit.
fn forecast_chart(r: &[RunSummary]) -> Chart {
    let series: [Share; 3] = [
        ("recall@K", |w| w.recall_at_k),
        ("utilization", |w| w.utilization),
        ("prefix hit", |w| Some(w.prefix_hit_rate)),
    ];
    share_bars("Future-role recall, prefetch utilization and prefix hit by policy", r, &series)
}

fn forecast_notes(base: &Spec, h: u32) -> Vec<String> {
    let k = base.workload.sessions.as_ref().and_then(|s| s.workflow.as_ref()).map_or(0, |w| w.recall_k);
    vec![
        replay_note(base),
        format!(
            "A multi-step forecast rolls the learned transitions forward {h} steps: a role's probability of being needed within them. The threshold plan fetches every role at least that likely; the utility plan fetches a role when its probability × its prefix's prefill time passes the transfer's time and, with the budget full, the forecast-weighted prefill of the prefix it evicts."
        ),
        format!(
            "Future-role recall@K (K = {k}, the scenario's recall_k): of the distinct roles of a workflow's next K steps, the share a step's end wanted in HBM. Next-step precision: of the roles wanted, the share that came next — a multi-step plan wants more than the next role, so it is lower by design. Utilization: of the prefetches that landed, the share a step then used; unused ones were evicted first. ECE: the expected calibration error of the next-role probabilities (ten bins; 0 is calibrated)."
        ),
        "The clairvoyant future set knows each workflow's coming roles and fetches them: a bound on recall and precision, not on latency (the budget and other workflows still evict).".into(),
    ]
}

// ---------------------------------------------------------------------------------------------------------
// forecast-horizon

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HorizonSweepParams {
    /// The horizons to try, steps.
    pub horizons: Vec<u32>,
    /// The decayed model's decay.
    pub decay: f64,
    /// The threshold plan's least probability of a role being needed within the horizon.
    pub threshold: f64,
}

described!(HorizonSweepParams {
    horizons: Text {
        label: "Horizons",
        unit: "JSON list, steps 1 … 16",
        help: "The horizons to try, e.g. [1, 2, 4, 8]",
        bound: None,
    };
    decay: DECAY;
    threshold: THRESHOLD;
});

impl Default for HorizonSweepParams {
    fn default() -> Self {
        HorizonSweepParams { horizons: vec![1, 2, 3, 4, 6, 8], decay: 0.9, threshold: 0.3 }
    }
}

/// The forecast's horizon: `forecast-horizon`.
pub struct Horizon;

impl Knob for Horizon {
    const ABOUT: About = About {
        name: "forecast-horizon",
        title: "Forecast horizon",
        question: "how many steps ahead should a workflow's forecast look before it fetches a prefix?",
        how: "Decayed counts with the threshold plan, the learned chain rolled forward over each horizon: what it recalls of the coming roles against what it fetches in vain and holds.",
        group: Group::Agents,
        rank: Rank::Least("p95 TTFT"),
        repeats_by: None,
    };
    type Options = HorizonSweepParams;
    type Value = Planner;

    fn values(spec: &Spec, p: &HorizonSweepParams, at: &str) -> Result<Vec<Planner>, ScenarioError> {
        check_workflow(spec, at.to_string())?;
        let (b, mut e) = (bounds(), Errors::default());
        b.decay.check(&at!(at, p.decay), &p.decay, &mut e);
        b.threshold.check(&at!(at, p.threshold), &p.threshold, &mut e);
        e.finish()?;
        check_list(&at!(at, p.horizons), &p.horizons, 16, |at, h, e| {
            b.horizon.check(at, h, e);
        })?;
        let l = Learner { threshold: p.threshold, decay: p.decay };
        Ok(p.horizons.iter().map(|&h| Planner::threshold(l, h)).collect())
    }

    fn label(v: Planner) -> String {
        format!("horizon {}", v.horizon())
    }

    fn apply(spec: &Spec, v: Planner) -> Spec {
        v.apply(spec, &default_host())
    }

    fn frontier(r: &RunSummary) -> Option<(f64, f64)> {
        Some((sess(r).turn_ttft_p95_s, wf(r)?.mean_prefix_hbm_gb))
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, Planner>>> {
        vec![
            column("Horizon", "steps", Format::Int, |x| x.value.horizon().into()),
            column("p95 TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column(RECALL.0, RECALL.1, Format::Percent, |x| recall_at_k(x.run)),
            column("Prefix hit", "of steps", Format::Percent, |x| prefix_hit(x.run)),
            column(UTILIZATION.0, UTILIZATION.1, Format::Percent, |x| utilization(x.run)),
            column("Unused prefetch", "transfers", Format::Int, |x| unused(x.run)),
            column("Mean HBM", "GB, prefixes", Format::Num, |x| mean_hbm(x.run)),
            column("Saved prefill", "tokens", Format::Int, |x| saved(x.run)),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, Planner>], r: &[RunSummary], rep: &mut StudyReport) {
        rep.best_row = fastest(r);
        if let Some(b) = rep.best_row {
            rep.answer = format!(
                "Horizon {} has the lowest p95 TTFT, {}: {} of the next {} steps' roles wanted, {} of its landed prefetches used, {} evicted unused.",
                rows[b].value.horizon(),
                crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s),
                share(&r[b], |w| w.recall_at_k),
                wf(&r[b]).map_or(0, |w| w.recall_k),
                share(&r[b], |w| w.utilization),
                wf(&r[b]).map_or(0, |w| w.unused),
            );
        }
        let xs: Vec<f64> = rows.iter().map(|x| x.value.horizon() as f64).collect();
        let pts = |f| share_points(&xs, r, f);
        rep.charts = vec![lines(
            "Recall of the coming roles against prefetch utilization, by horizon",
            "horizon, steps",
            "share",
            vec![
                line("recall@K", pts(|w| w.recall_at_k)),
                line("utilization", pts(|w| w.utilization)),
                line("prefix hit", pts(|w| Some(w.prefix_hit_rate))),
            ],
        )];
        let first = rows.first().map(|x| x.value);
        rep.notes = vec![
            replay_note(base),
            format!(
                "Decayed counts (decay {}); at each step's end the plan fetches every role whose probability of being needed within the horizon is at least {}. A longer horizon wants more roles: recall rises, and so do the transfers evicted before any step used them.",
                Set(first.map_or(0.0, |p| match p.predictor {
                    crate::scenario::RolePredictorSpec::Decayed { decay } => decay,
                    _ => 1.0,
                })),
                Set(first.map_or(0.0, |p| match p.prefetch {
                    crate::scenario::PrefetchSpec::Threshold { threshold, .. } => threshold,
                    _ => 0.0,
                })),
            ),
        ];
    }
}

// ---------------------------------------------------------------------------------------------------------
// prefix-budget

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSweepParams {
    /// Prefix budgets to try, × all roles' prefixes (the workflow's prefix working set).
    pub budgets: Vec<f64>,
    /// The decayed model's decay.
    pub decay: f64,
    /// The threshold plans' least probability of a role being needed.
    pub threshold: f64,
    /// The multi-step plans' horizon, steps.
    pub horizon: u32,
}

described!(BudgetSweepParams {
    budgets: Text {
        label: "Budgets",
        unit: "JSON list, × all roles' prefixes, 0 … 1000",
        help: "The prefix budgets to try, e.g. [0.25, 0.5, 1]",
        bound: None,
    };
    decay: DECAY;
    threshold: THRESHOLD;
    horizon: MULTI_STEP_HORIZON;
});

impl Default for BudgetSweepParams {
    fn default() -> Self {
        let horizon = ThreeSteps::STEPS;
        BudgetSweepParams { budgets: vec![0.25, 0.5, 0.75, 1.0], decay: 0.9, threshold: 0.3, horizon }
    }
}

/// Three plans under each prefix budget: `prefix-budget`.
pub struct Budget;

impl Knob for Budget {
    const ABOUT: About = About {
        name: "prefix-budget",
        title: "Prefix budget",
        question: "how much HBM should a worker give the role prefixes, and which plan makes the best of a small budget?",
        how: "The one-step and multi-step threshold plans and the utility plan (decayed counts) under each prefix budget, a share of all roles' prefixes.",
        group: Group::Agents,
        rank: Rank::Least("p95 TTFT"),
        repeats_by: None,
    };
    type Options = BudgetSweepParams;
    type Value = (f64, Planner);

    fn values(spec: &Spec, p: &BudgetSweepParams, at: &str) -> Result<Vec<(f64, Planner)>, ScenarioError> {
        check_workflow(spec, at.to_string())?;
        let (b, mut e) = (bounds(), Errors::default());
        b.decay.check(&at!(at, p.decay), &p.decay, &mut e);
        b.threshold.check(&at!(at, p.threshold), &p.threshold, &mut e);
        check_multi_step(&at!(at, p.horizon), p.horizon, &mut e);
        e.finish()?;
        check_list(&at!(at, p.budgets), &p.budgets, 16, |at, x, e| {
            b.budget.check(at, x, e);
        })?;
        let l = Learner { threshold: p.threshold, decay: p.decay };
        let plans = [Planner::threshold(l, 1), Planner::threshold(l, p.horizon), Planner::utility(p.decay, p.horizon)];
        Ok(p.budgets.iter().flat_map(|&x| plans.map(|plan| (x, plan))).collect())
    }

    fn label((budget, plan): (f64, Planner)) -> String {
        format!("{}, budget {}", plan.label(), Set(budget))
    }

    fn apply(spec: &Spec, (budget, plan): (f64, Planner)) -> Spec {
        let mut s = plan.apply(spec, &default_host());
        workflow_mut(&mut s).prefix_budget = budget;
        s
    }

    fn frontier(r: &RunSummary) -> Option<(f64, f64)> {
        Some((sess(r).turn_ttft_p95_s, wf(r)?.mean_prefix_hbm_gb))
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, (f64, Planner)>>> {
        vec![
            column("Budget", "× all roles' prefixes", Format::Setting, |x| x.value.0.into()),
            column("Policy", "", Format::Text, |x| x.value.1.label().into()),
            column("p95 TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column(RECALL.0, RECALL.1, Format::Percent, |x| recall_at_k(x.run)),
            column("Prefix hit", "of steps", Format::Percent, |x| prefix_hit(x.run)),
            column(UTILIZATION.0, UTILIZATION.1, Format::Percent, |x| utilization(x.run)),
            column("Mean HBM", "GB, prefixes", Format::Num, |x| mean_hbm(x.run)),
            column("Unused prefetch", "transfers", Format::Int, |x| unused(x.run)),
            column("Pressure evictions", "idle prefixes", Format::Int, |x| {
                wf(x.run).map(|w| w.budget_evictions + w.pressure_evictions).into()
            }),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, (f64, Planner)>], r: &[RunSummary], rep: &mut StudyReport) {
        rep.best_row = fastest(r);
        rep.answer = budget_answer(rows, r);
        rep.charts = vec![budget_chart(rows, r)];
        rep.notes = vec![
            replay_note(base),
            "A budget is the HBM a worker's idle role prefixes may hold, as a share of all roles' prefixes (1: every role fits; the prefixes steps are using are never evicted). Pressure evictions: idle prefixes evicted to keep the budget or to make room for a running step's KV.".into(),
        ];
    }
}

/// The distinct values of `xs`, in the order first seen.
fn distinct<T: PartialEq>(xs: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in xs {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// For each budget, its fastest plan; the fastest run overall.
fn budget_answer(rows: &[SweepRow<'_, (f64, Planner)>], r: &[RunSummary]) -> String {
    let Some(best) = fastest(r) else { return String::new() };
    let ttft = |x: &SweepRow<'_, (f64, Planner)>| sess(x.run).turn_ttft_p95_s;
    let each: Vec<String> = (distinct(rows.iter().map(|x| x.value.0)).into_iter())
        .filter_map(|b| {
            let runs: Vec<_> = rows.iter().filter(|x| x.value.0 == b).collect();
            let f = runs.iter().copied().reduce(|a, x| if ttft(x) < ttft(a) { x } else { a })?;
            // Plans that tie to the nanosecond are one answer, not a choice.
            let plan = if runs.len() > 1 && runs.iter().all(|x| ttft(x) == ttft(f)) {
                "every plan alike".to_string()
            } else {
                f.value.1.label()
            };
            Some(format!("{} × — {plan} ({})", Set(b), crate::metrics::secs(ttft(f))))
        })
        .collect();
    format!(
        "The fastest plan at each budget: {}. The lowest p95 TTFT overall, {}, is at budget {}.",
        each.join("; "),
        crate::metrics::secs(ttft(&rows[best])),
        Set(rows[best].value.0)
    )
}

/// p95 TTFT against the budget, a line per plan.
fn budget_chart(rows: &[SweepRow<'_, (f64, Planner)>], r: &[RunSummary]) -> Chart {
    let plans = distinct(rows.iter().map(|x| x.value.1));
    let series = plans.iter().map(|p| {
        let pts = (rows.iter().zip(r)).filter(|(x, _)| x.value.1 == *p);
        line(&p.label(), pts.map(|(x, run)| (x.value.0, sess(run).turn_ttft_p95_s)).collect())
    });
    lines(
        "p95 TTFT against the prefix budget, by plan",
        "budget, × all roles' prefixes",
        "p95 TTFT, s",
        series.collect(),
    )
}
