//! Execution learning over multi-agent workflows: `exec-learning` compares role predictors and prefetch plans on
//! the same workflows; `prefetch-threshold` and `transition-decay` sweep the plan's threshold and the model's
//! decay (with the scenario's host tier, else `default_host`).

use super::*;
use crate::metrics::WorkflowSummary;
use crate::scenario::{Bound, PrefetchSpec, RolePredictorSpec, WorkflowSpec, at, field_bound, variant_bound};
use crate::spec::field::Checked;
use crate::study::option::{Text, described};
use crate::study::sweep::{Knob, SweepRow, check_list};
use crate::study::{ColumnDef, column, table};

/// A learning study's options; the forecast's horizon defaults to `H::STEPS`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, bound = "")]
pub struct LearnerParams<H: Steps> {
    /// The threshold plan's least probability of a role being needed.
    pub threshold: f64,
    /// The decayed model's decay.
    pub decay: f64,
    /// The forecast's horizon, steps.
    pub horizon: u32,
    /// The host tier the prefetching policies use when the scenario has none.
    pub host_kv: HostKvSpec,
    #[serde(skip)]
    pub default_horizon: std::marker::PhantomData<H>,
}

impl<H: Steps> Default for LearnerParams<H> {
    fn default() -> Self {
        let (horizon, default_horizon) = (H::STEPS, std::marker::PhantomData);
        LearnerParams { threshold: 0.3, decay: 0.9, horizon, host_kv: default_host(), default_horizon }
    }
}

/// A default horizon (serde derives no const generics).
pub trait Steps: Clone + std::fmt::Debug + PartialEq + 'static {
    const STEPS: u32;
}

#[derive(Clone, Debug, PartialEq)]
pub struct NextStep;
impl Steps for NextStep {
    const STEPS: u32 = 1;
}

/// `exec-learning`'s options: the next step's forecast.
pub type ExecLearningParams = LearnerParams<NextStep>;

described!(ExecLearningParams {
    threshold: THRESHOLD;
    decay: DECAY;
    horizon: HORIZON;
    host_kv: HOST_KV;
});

pub(super) fn wf(r: &RunSummary) -> Option<&WorkflowSummary> {
    sess(r).workflow.as_ref()
}

/// The threshold plan's threshold and the decayed counts' decay (a point of the prefetch-threshold and
/// transition-decay sweeps).
#[derive(Clone, Copy, Debug)]
pub struct Learner {
    pub threshold: f64,
    pub decay: f64,
}

/// A forecasting policy: what the engine learns of the role sequence, and how it plans prefetches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Planner {
    pub predictor: RolePredictorSpec,
    pub prefetch: PrefetchSpec,
}

impl Planner {
    /// The prefix cache alone (the plan is never asked).
    pub const NONE: Planner = Planner { predictor: RolePredictorSpec::None, prefetch: PrefetchSpec::NEXT };

    /// Decayed counts (decay 1: cumulative counts) with the threshold plan over `horizon` steps.
    pub fn threshold(l: Learner, horizon: u32) -> Planner {
        Planner {
            predictor: RolePredictorSpec::Decayed { decay: l.decay },
            prefetch: PrefetchSpec::Threshold { threshold: l.threshold, horizon },
        }
    }

    /// Decayed counts with the utility plan over `horizon` steps.
    pub fn utility(decay: f64, horizon: u32) -> Planner {
        Planner { predictor: RolePredictorSpec::Decayed { decay }, prefetch: PrefetchSpec::Utility { horizon } }
    }

    /// Knows the workflow's next `horizon` roles and fetches them: the bound on what a forecast can know.
    pub fn clairvoyant(horizon: u32) -> Planner {
        let prefetch = PrefetchSpec::Threshold { threshold: 0.5, horizon };
        Planner { predictor: RolePredictorSpec::Clairvoyant, prefetch }
    }

    pub fn horizon(self) -> u32 {
        match self.prefetch {
            PrefetchSpec::Threshold { horizon, .. } | PrefetchSpec::Utility { horizon } => horizon,
        }
    }

    /// A row's name: `decayed 0.9, threshold 0.3, 3 steps`.
    pub fn label(self) -> String {
        let model = match self.predictor {
            RolePredictorSpec::None => return "no prefetch (prefix cache)".into(),
            RolePredictorSpec::Clairvoyant if self.horizon() == 1 => return "clairvoyant next role (bound)".into(),
            RolePredictorSpec::Clairvoyant => {
                return format!("clairvoyant future set, {} steps (bound)", self.horizon());
            }
            RolePredictorSpec::Counts => "counts".to_string(),
            RolePredictorSpec::Decayed { decay } => format!("decayed {}", Set(decay)),
        };
        let plan = match self.prefetch {
            PrefetchSpec::Threshold { threshold, .. } => format!("threshold {}", Set(threshold)),
            PrefetchSpec::Utility { .. } => "utility".into(),
        };
        match self.horizon() {
            1 => format!("{model}, {plan}"),
            h => format!("{model}, {plan}, {h} steps"),
        }
    }

    /// `spec` with this policy (and a host tier when it predicts), valid.
    pub(super) fn apply(self, spec: &Spec, host: &HostKvSpec) -> Spec {
        let mut s = spec.clone();
        let w = workflow_mut(&mut s);
        (w.predictor, w.prefetch) = (self.predictor, self.prefetch);
        if !self.predictor.is_none() && s.engine.host_kv.is_none() {
            s.engine.host_kv = Some(host.clone());
        }
        s
    }
}

/// The workflow of a scenario the study checked has one.
pub(super) fn workflow_mut(s: &mut Spec) -> &mut crate::scenario::WorkflowSpec {
    s.workload.sessions.as_mut().and_then(|x| x.workflow.as_mut()).expect("checked: a workflow")
}

/// The scenario's own bounds, which the learners' options hold: the decayed model's decay, the threshold
/// plan's threshold, a forecast's horizon and the prefix budget.
pub(super) struct Bounds {
    pub decay: Bound,
    pub threshold: Bound,
    pub horizon: Bound,
    pub budget: Bound,
}

pub(super) fn bounds() -> Bounds {
    let prefetch = |name| variant_bound::<PrefetchSpec>("Threshold", name).expect("the scenario bounds it");
    Bounds {
        decay: variant_bound::<RolePredictorSpec>("Decayed", "decay").expect("the scenario bounds it"),
        threshold: prefetch("threshold"),
        horizon: prefetch("horizon"),
        budget: field_bound::<WorkflowSpec>("prefix_budget").expect("the scenario bounds it"),
    }
}

/// The scenario must be valid and be a workflow.
pub(super) fn check_workflow(spec: &Spec, at: String) -> Result<crate::Scenario, ScenarioError> {
    let sc = scenario::validate(spec)?;
    if spec.workload.sessions.as_ref().and_then(|s| s.workflow.as_ref()).is_none() {
        return Err(ScenarioError::one(
            at,
            "this study learns a workflow's role sequence: the scenario needs workload.sessions.workflow (e.g. scenarios/agent-workflows.json)",
        ));
    }
    Ok(sc)
}

/// Each option within the scenario field's bound it sets, errors at `at`; and `errors`'s own.
pub(super) fn check_options<H: Steps>(p: &LearnerParams<H>, at: &str, mut e: Errors) -> Result<(), ScenarioError> {
    let b = bounds();
    b.threshold.check(&at!(at, p.threshold), &p.threshold, &mut e);
    b.decay.check(&at!(at, p.decay), &p.decay, &mut e);
    b.horizon.check(&at!(at, p.horizon), &p.horizon, &mut e);
    p.host_kv.check_fields(&at!(at, p.host_kv), &mut e);
    e.finish()
}

pub struct ExecLearningStudy {
    base: Spec,
    batch: OneBatch,
}

impl StudyDef for ExecLearningStudy {
    const ABOUT: About = About {
        name: "exec-learning",
        title: "Execution learning",
        question: "does learning a workflow's role sequence — and prefetching the next role's prompt prefix from host memory — cut time to first token, and how close does it come to knowing the next role?",
        how: "No prefetch (the prefix cache alone), cumulative and decayed transition counts with a threshold plan, decayed counts with the utility plan, and a clairvoyant next-role bound on the same workflows, the role chain shifting part-way.",
        group: Group::Agents,
        rank: Rank::Least("p95 TTFT"),
        repeats_by: None,
    };
    type Options = ExecLearningParams;

    fn new(spec: &Spec, p: &ExecLearningParams) -> Result<Self, ScenarioError> {
        check_workflow(spec, Self::at())?;
        check_options(p, &Self::at(), Errors::default())?;
        let l = Learner { threshold: p.threshold, decay: p.decay };
        let counts = Planner { predictor: RolePredictorSpec::Counts, ..Planner::threshold(l, p.horizon) };
        let runs = [
            Planner::NONE,
            counts,
            Planner::threshold(l, p.horizon),
            Planner::utility(p.decay, p.horizon),
            Planner::clairvoyant(1),
        ];
        let jobs = planner_jobs(&runs, spec, &p.host_kv);
        check_jobs(&jobs)?;
        Ok(ExecLearningStudy { base: spec.clone(), batch: OneBatch::new(jobs) })
    }
}

fn exec_columns() -> [ColumnDef<RunSummary>; 11] {
    [
        column("Policy", "", Format::Text, |x| x.label.as_str().into()),
        column("p95 TTFT", "s", Format::Seconds, |x| sess(x).turn_ttft_p95_s.into()),
        column("p95 workflow E2E", "s", Format::Seconds, |x| sess(x).session_e2e_p95_s.into()),
        column("Post-shift top-1", "", Format::Percent, |x| wf(x).and_then(|w| w.post_shift_top1).into()),
        column("Prefix hit", "of steps", Format::Percent, |x| wf(x).map(|w| w.prefix_hit_rate).into()),
        column("Prefetch precision", "", Format::Percent, |x| wf(x).and_then(|w| w.precision).into()),
        column("Coverage", "of steps", Format::Percent, |x| wf(x).and_then(|w| w.coverage).into()),
        column("Mean HBM", "GB, prefixes", Format::Num, |x| wf(x).map(|w| w.mean_prefix_hbm_gb).into()),
        column("Wrong prefetch", "transfers", Format::Int, |x| wf(x).map(|w| w.wrong).into()),
        column("Saved prefill", "tokens", Format::Int, |x| wf(x).map(|w| w.saved_prefill_tokens).into()),
        column("Diagnosis", "", Format::Text, |x| workflow_brief(x).into()),
    ]
}

/// One sentence for a row: what its prefetches did.
pub(super) fn workflow_brief(r: &RunSummary) -> String {
    let Some(w) = wf(r) else { return session_brief(r) };
    if w.prefetches == 0 {
        return format!(
            "prefix cache alone: {:.0} % of steps find their role's prefix ({} budget evictions)",
            w.prefix_hit_rate * 100.0,
            w.budget_evictions
        );
    }
    format!(
        "{} prefetches, {:.0} % used before eviction; {} evicted unused, {} for a role that did not come",
        w.prefetches,
        w.utilization.unwrap_or(0.0) * 100.0,
        w.unused,
        w.wrong
    )
}

impl OneBatchStudy for ExecLearningStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Self::ABOUT, &self.base, Self::ABOUT.question.into());
        (rep.columns, rep.rows) = table(&exec_columns(), r);
        // The best deployable policy: the clairvoyant (the last row) knows the next role.
        fastest_but_the_bound(&mut rep, r);
        if let (Some(b), 5) = (rep.best_row, r.len()) {
            rep.answer = exec_answer(r, b);
            rep.charts = vec![hit_chart(r)];
        }
        rep.notes = exec_notes(&self.base);
        rep.runs = r.to_vec();
        rep
    }
}

fn exec_answer(r: &[RunSummary], b: usize) -> String {
    let hit = |i: usize| wf(&r[i]).map_or(0.0, |w| w.prefix_hit_rate) * 100.0;
    let top1 =
        |i: usize| wf(&r[i]).and_then(|w| w.post_shift_top1).map_or("–".into(), |t| format!("{:.0} %", t * 100.0));
    format!(
        "{} has the lowest p95 TTFT, {} against {} with the prefix cache alone; its steps find their role's prefix {:.0} % of the time ({:.0} % without prefetch, {:.0} % knowing the next role). After the shift, decayed counts name the next role {} of the time, cumulative counts {}.",
        r[b].label,
        crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s),
        crate::metrics::secs(sess(&r[0]).turn_ttft_p95_s),
        hit(b),
        hit(0),
        hit(4),
        top1(2),
        top1(1),
    )
}

/// Each policy's prefix hit rate and, for the learners, their post-shift top-1.
fn hit_chart(r: &[RunSummary]) -> Chart {
    let series: [Share; 2] = [("prefix hit", |w| Some(w.prefix_hit_rate)), ("post-shift top-1", |w| w.post_shift_top1)];
    share_bars("Prefix hit and post-shift top-1 by policy", r, &series)
}

/// A named share of a run's workflow figures (none: nothing to share).
pub(super) type Share = (&'static str, fn(&WorkflowSummary) -> Option<f64>);

/// Bars of workflow shares, a group per run (a share a run lacks: 0).
pub(super) fn share_bars(title: &str, r: &[RunSummary], shares: &[Share]) -> Chart {
    let series = |&(name, f): &Share| ChartSeries {
        name: name.into(),
        points: r.iter().enumerate().map(|(i, x)| (i as f64, wf(x).and_then(f).unwrap_or(0.0))).collect(),
        band: vec![],
        labels: vec![],
        line: false,
    };
    Chart {
        kind: "bars".into(),
        title: title.into(),
        x_label: "policy".into(),
        y_label: "share".into(),
        categories: r.iter().map(|x| x.label.clone()).collect(),
        series: shares.iter().map(series).collect(),
        target: None,
    }
}

/// A job per policy on `spec`, named by it.
pub(super) fn planner_jobs(plans: &[Planner], spec: &Spec, host: &HostKvSpec) -> Vec<Job> {
    plans.iter().map(|x| Job { label: x.label(), spec: x.apply(spec, host) }).collect()
}

/// Every workflow study's first note.
pub(super) fn replay_note(base: &Spec) -> String {
    format!(
        "Every run replays the same workflows (roles, lengths and tool calls drawn from seed {}), so the rows differ only by what is learned and fetched.",
        base.seed
    )
}

fn exec_notes(base: &Spec) -> Vec<String> {
    vec![
        replay_note(base),
        "A step's end forecasts the workflow's coming roles from the transitions seen so far (a step's role is seen when it arrives) and fetches the prefixes its plan wants from host memory into the worker's prefix cache; the forecast's demand decides which idle prefix the budget evicts (least recently used without a forecast). A step computes its prefix when it is not in HBM at admission.".into(),
        "Top-1: the share of transitions whose most probable forecast role came (no forecast yet: a miss). Precision: of the roles a step's end wanted in HBM, the share that was the next role. Coverage: of the transitions, the share whose role was wanted. Wrong prefetch: transfers of a role that did not come next.".into(),
        "The clairvoyant row knows each workflow's next role: a bound on top-1, precision and coverage, not on latency (the budget and other workflows still evict).".into(),
    ]
}

// ---------------------------------------------------------------------------------------------------------
// prefetch-threshold, transition-decay

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThresholdSweepParams {
    pub thresholds: Vec<f64>,
    /// The decayed model's decay.
    pub decay: f64,
}

described!(ThresholdSweepParams {
    thresholds: Text {
        label: "Thresholds",
        unit: "JSON list, 0 … 1",
        help: "The thresholds to try, e.g. [0.1, 0.3, 0.5]",
        bound: None,
    };
    decay: DECAY;
});

impl Default for ThresholdSweepParams {
    fn default() -> Self {
        ThresholdSweepParams { thresholds: vec![0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9], decay: 0.9 }
    }
}

/// The prefetch plan's threshold: `prefetch-threshold`.
pub struct Threshold;

impl Knob for Threshold {
    const ABOUT: About = About {
        name: "prefetch-threshold",
        title: "Prefetch threshold",
        question: "how likely must a role be before its prefix is worth prefetching?",
        how: "Decayed transition counts; each threshold's prefetches against what they hit, waste and hold.",
        group: Group::Agents,
        rank: Rank::Least("p95 TTFT"),
        repeats_by: None,
    };
    type Options = ThresholdSweepParams;
    type Value = Learner;

    fn values(spec: &Spec, p: &ThresholdSweepParams, at: &str) -> Result<Vec<Learner>, ScenarioError> {
        check_workflow(spec, at.to_string())?;
        let (b, mut e) = (bounds(), Errors::default());
        b.decay.check(&at!(at, p.decay), &p.decay, &mut e);
        e.finish()?;
        check_list(&at!(at, p.thresholds), &p.thresholds, 32, |at, t, e| {
            b.threshold.check(at, t, e);
        })?;
        Ok(p.thresholds.iter().map(|&threshold| Learner { threshold, decay: p.decay }).collect())
    }

    fn label(l: Learner) -> String {
        format!("threshold {}", Set(l.threshold))
    }

    fn apply(spec: &Spec, l: Learner) -> Spec {
        Planner::threshold(l, 1).apply(spec, &default_host())
    }

    fn frontier(r: &RunSummary) -> Option<(f64, f64)> {
        Some((sess(r).turn_ttft_p95_s, wf(r)?.mean_prefix_hbm_gb))
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, Learner>>> {
        vec![
            column("Threshold", "", Format::Setting, |x| x.value.threshold.into()),
            column("p95 TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column("Post-shift top-1", "", Format::Percent, |x| wf(x.run).and_then(|w| w.post_shift_top1).into()),
            column("Precision", "", Format::Percent, |x| wf(x.run).and_then(|w| w.precision).into()),
            column("Coverage", "of steps", Format::Percent, |x| wf(x.run).and_then(|w| w.coverage).into()),
            column("Prefix hit", "of steps", Format::Percent, |x| wf(x.run).map(|w| w.prefix_hit_rate).into()),
            column("Wrong prefetch", "transfers", Format::Int, |x| wf(x.run).map(|w| w.wrong).into()),
            column("Mean HBM", "GB, prefixes", Format::Num, |x| wf(x.run).map(|w| w.mean_prefix_hbm_gb).into()),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, Learner>], r: &[RunSummary], rep: &mut StudyReport) {
        rep.best_row = fastest(r);
        if let Some(b) = rep.best_row {
            let w = wf(&r[b]);
            rep.answer = format!(
                "Threshold {} has the lowest p95 TTFT, {}: {:.0} % of steps find their prefix, {} wrong prefetches.",
                Set(rows[b].value.threshold),
                crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s),
                w.map_or(0.0, |w| w.prefix_hit_rate) * 100.0,
                w.map_or(0, |w| w.wrong)
            );
        }
        rep.charts = vec![sweep_chart(
            "Precision and coverage against the threshold",
            "threshold",
            rows.iter().map(|x| x.value.threshold).collect(),
            r,
        )];
        rep.notes = vec![
            replay_note(base),
            format!(
                "Decayed counts (decay {}); the plan fetches, for the next step only, every role at least as likely as the threshold that its worker lacks.",
                Set(rows.first().map_or(0.0, |x| x.value.decay))
            ),
        ];
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecaySweepParams {
    /// Decays to try (1: cumulative counts).
    pub decays: Vec<f64>,
    pub threshold: f64,
}

described!(DecaySweepParams {
    decays: Text {
        label: "Decays",
        unit: "JSON list, 0 < d ≤ 1 (1: counts)",
        help: "The decays to try, e.g. [1, 0.95, 0.8]",
        bound: None,
    };
    threshold: THRESHOLD;
});

impl Default for DecaySweepParams {
    fn default() -> Self {
        DecaySweepParams { decays: vec![1.0, 0.99, 0.95, 0.9, 0.8, 0.5], threshold: 0.3 }
    }
}

/// The transition model's decay: `transition-decay`.
pub struct Decay;

impl Knob for Decay {
    const ABOUT: About = About {
        name: "transition-decay",
        title: "Transition decay",
        question: "how fast should the learned role transitions forget, when the workflow changes part-way?",
        how: "Each decay's next-role accuracy before and after the shift, and what its prefetches hit.",
        group: Group::Agents,
        rank: Rank::Most("Post-shift top-1"),
        repeats_by: None,
    };
    type Options = DecaySweepParams;
    type Value = Learner;

    fn values(spec: &Spec, p: &DecaySweepParams, at: &str) -> Result<Vec<Learner>, ScenarioError> {
        check_workflow(spec, at.to_string())?;
        let (b, mut e) = (bounds(), Errors::default());
        b.threshold.check(&at!(at, p.threshold), &p.threshold, &mut e);
        e.finish()?;
        check_list(&at!(at, p.decays), &p.decays, 32, |at, d, e| {
            b.decay.check(at, d, e);
        })?;
        Ok(p.decays.iter().map(|&decay| Learner { threshold: p.threshold, decay }).collect())
    }

    fn label(l: Learner) -> String {
        if l.decay == 1.0 { "decay 1 (counts)".into() } else { format!("decay {}", Set(l.decay)) }
    }

    fn apply(spec: &Spec, l: Learner) -> Spec {
        Planner::threshold(l, 1).apply(spec, &default_host())
    }

    fn columns<'a>() -> Vec<ColumnDef<SweepRow<'a, Learner>>> {
        vec![
            column("Decay", "", Format::Setting, |x| x.value.decay.into()),
            column("Pre-shift top-1", "", Format::Percent, |x| wf(x.run).and_then(|w| w.pre_shift_top1).into()),
            column("Post-shift top-1", "", Format::Percent, |x| wf(x.run).and_then(|w| w.post_shift_top1).into()),
            column("p95 TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
            column("Prefix hit", "of steps", Format::Percent, |x| wf(x.run).map(|w| w.prefix_hit_rate).into()),
            column("Precision", "", Format::Percent, |x| wf(x.run).and_then(|w| w.precision).into()),
            column("Coverage", "of steps", Format::Percent, |x| wf(x.run).and_then(|w| w.coverage).into()),
            column("Wrong prefetch", "transfers", Format::Int, |x| wf(x.run).map(|w| w.wrong).into()),
        ]
    }

    fn conclude(base: &Spec, rows: &[SweepRow<'_, Learner>], r: &[RunSummary], rep: &mut StudyReport) {
        let post = |i: usize| wf(&r[i]).and_then(|w| w.post_shift_top1).unwrap_or(0.0);
        rep.best_row = (0..r.len()).reduce(|a, b| if post(b) > post(a) { b } else { a });
        if let Some(b) = rep.best_row {
            rep.answer = format!(
                "Decay {} names the next role best after the shift: {:.0} % (cumulative counts: {}); p95 TTFT {}.",
                Set(rows[b].value.decay),
                post(b) * 100.0,
                rows.iter()
                    .position(|x| x.value.decay == 1.0)
                    .map_or("not run".into(), |i| format!("{:.0} %", post(i) * 100.0)),
                crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s)
            );
        }
        let decays: Vec<f64> = rows.iter().map(|x| x.value.decay).collect();
        let top1 = |f| share_points(&decays, r, f);
        rep.charts = vec![lines(
            "Next-role accuracy before and after the shift, by decay",
            "decay",
            "top-1",
            vec![
                line("pre-shift top-1", top1(|w| w.pre_shift_top1)),
                line("post-shift top-1", top1(|w| w.post_shift_top1)),
            ],
        )];
        rep.notes = vec![
            replay_note(base),
            "Decay d multiplies a role's learned row by d at each transition out of it before counting the new one: 1 counts every transition alike, lower forgets the old chain faster (and is noisier).".into(),
        ];
    }
}

/// A share of each run against its swept value `xs` (a run without the share: no point).
pub(super) fn share_points(xs: &[f64], r: &[RunSummary], f: fn(&WorkflowSummary) -> Option<f64>) -> Vec<(f64, f64)> {
    xs.iter().zip(r).filter_map(|(&x, run)| Some((x, wf(run).and_then(f)?))).collect()
}

/// Precision and coverage against a swept value.
fn sweep_chart(title: &str, x_label: &str, xs: Vec<f64>, r: &[RunSummary]) -> Chart {
    let pts = |f| share_points(&xs, r, f);
    lines(
        title,
        x_label,
        "share",
        vec![
            line("precision", pts(|w| w.precision)),
            line("coverage", pts(|w| w.coverage)),
            line("prefix hit", pts(|w| Some(w.prefix_hit_rate))),
        ],
    )
}
