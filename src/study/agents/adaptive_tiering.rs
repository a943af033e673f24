//! `adaptive-tiering`: keep, offload or drop each session's KV from an online estimate of the coming tool gap,
//! while a slow tool's latency shifts part-way through — against static policies and the gap oracle.

use super::*;
use crate::scenario::{ToolShiftSpec, at};
use crate::spec::field::Checked;
use crate::spec::{ALPHA, TTL_S};
use crate::study::option::{Text, described};
use crate::study::{ColumnDef, column, table};
use crate::workload::Arrival;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaptiveTieringParams {
    /// The EWMA weight of the policy table's adaptive policies.
    pub alpha: f64,
    /// The weights the second table sweeps, each with one estimate per tool.
    pub alphas: Vec<f64>,
    /// The TTL policy's time to live, s.
    pub ttl_s: f64,
    /// The tool shift; absent: the scenario's own, else the slowest tool 4× slower from the middle of the
    /// sessions' arrivals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shift: Option<ToolShiftSpec>,
    /// The host tier when the scenario has none.
    pub host_kv: HostKvSpec,
}

described!(AdaptiveTieringParams {
    alpha: Text {
        label: "EWMA weight α",
        unit: "0 < α ≤ 1",
        help: "How far each returned tool call moves the adaptive policies' estimate of the gap",
        bound: None,
    };
    alphas: Text {
        label: "α sweep",
        unit: "JSON list",
        help: "The weights the second table tries, with one estimate per tool, e.g. [0.05, 0.2, 1]",
        bound: None,
    };
    ttl_s: Text {
        label: "TTL",
        unit: "s",
        help: "The TTL policy's time to live",
        bound: None,
    };
    shift: Text {
        label: "Tool shift",
        unit: "JSON {tool, at_s, factor}; empty: the scenario's, else the slowest tool 4× from mid-run",
        help: "From at_s on, every call of the tool takes factor × as long",
        bound: None,
    };
    host_kv: HOST_KV;
});

impl Default for AdaptiveTieringParams {
    fn default() -> Self {
        AdaptiveTieringParams {
            alpha: 0.2,
            alphas: vec![0.05, 0.1, 0.2, 0.5, 1.0],
            ttl_s: 10.0,
            shift: None,
            host_kv: default_host(),
        }
    }
}

pub struct AdaptiveTieringStudy {
    base: Spec,
    p: AdaptiveTieringParams,
    shift: ToolShiftSpec,
    /// Rows of the policy table (the rest of the jobs are the α sweep's).
    policies: usize,
    batch: OneBatch,
}

impl StudyDef for AdaptiveTieringStudy {
    const ABOUT: About = About {
        name: "adaptive-tiering",
        title: "Adaptive tiering",
        question: "can a policy that learns the tool gaps online keep, offload or drop each session's KV as well as one that knows them — also when a tool slows down?",
        how: "Stateless, a TTL, host offload, the gap rule on an estimate learned online (over all tools, and per tool) and the gap oracle on the same sessions, a slow tool shifting part-way through; then the estimate's weight α swept.",
        group: Group::Agents,
        rank: Rank::Least("p95 turn TTFT"),
        repeats_by: None,
    };
    type Options = AdaptiveTieringParams;

    fn new(spec: &Spec, p: &AdaptiveTieringParams) -> Result<Self, ScenarioError> {
        let sc = check_base(spec, Self::at())?;
        check_options(p, &Self::at())?;
        let shift = shift_of(spec, &sc, p, &Self::at())?;
        let mut base = spec.clone();
        base.workload.sessions.as_mut().expect("checked").shift = Some(shift.clone());
        let sticky = Some(RouterSpec::Sticky);
        let adaptive = |per_tool: bool, a: f64| {
            let (label, r) = match per_tool {
                true => (format!("adaptive per tool (α {})", Set(a)), RetentionSpec::AdaptivePerTool { alpha: a }),
                false => (format!("adaptive, all tools (α {})", Set(a)), RetentionSpec::Adaptive { alpha: a }),
            };
            policy(&label, r, sticky.clone(), true)
        };
        let mut policies = vec![
            policy("stateless", RetentionSpec::Stateless, sticky.clone(), false),
            policy(
                &format!("TTL {} then offload", crate::metrics::secs(p.ttl_s)),
                RetentionSpec::Ttl { ttl_s: Some(p.ttl_s) },
                sticky.clone(),
                true,
            ),
            policy("host offload", RetentionSpec::HostOffload, sticky.clone(), true),
            adaptive(false, p.alpha),
            adaptive(true, p.alpha),
            policy("gap oracle (bound on gap cost)", RetentionSpec::GapOracle, sticky.clone(), true),
        ];
        let n = policies.len();
        policies.extend(p.alphas.iter().map(|&a| adaptive(true, a)));
        let jobs: Vec<Job> = (policies.iter().enumerate())
            .map(|(i, x)| Job {
                label: if i < n { x.label.clone() } else { format!("α sweep: {}", x.label) },
                spec: variant(&base, x, &p.host_kv, spec.engine.retention_budget_blocks),
            })
            .collect();
        check_jobs(&jobs)?;
        Ok(AdaptiveTieringStudy { base, p: p.clone(), shift, policies: n, batch: OneBatch::new(jobs) })
    }
}

fn check_options(p: &AdaptiveTieringParams, at: &str) -> Result<(), ScenarioError> {
    let mut e = Errors::default();
    ALPHA.check(&at!(at, p.alpha), &p.alpha, &mut e);
    e.int(&at!(at, p.alphas), p.alphas.len() as u64, 0, 16);
    for (i, a) in p.alphas.iter().enumerate() {
        ALPHA.check(&format!("{}[{i}]", at!(at, p.alphas)), a, &mut e);
    }
    TTL_S.check(&at!(at, p.ttl_s), &p.ttl_s, &mut e);
    p.host_kv.check_fields(&at!(at, p.host_kv), &mut e);
    if let Some(s) = &p.shift {
        s.check_fields(&at!(at, p.shift), &mut e);
    }
    e.finish()
}

/// The shift the runs share: the options', else the scenario's, else the slowest tool 4× slower from the
/// middle of the sessions' arrivals; its tool must be one of the sessions'.
fn shift_of(
    spec: &Spec,
    sc: &crate::Scenario,
    p: &AdaptiveTieringParams,
    at: &str,
) -> Result<ToolShiftSpec, ScenarioError> {
    let tools = &sc.workload.sessions.as_ref().expect("checked").tools;
    let own = spec.workload.sessions.as_ref().and_then(|s| s.shift.clone());
    let path = at!(at, p.shift);
    let shift = match p.shift.clone().or(own) {
        Some(s) => s,
        None => {
            let slowest = tools.iter().max_by(|a, b| a.mean_ns.total_cmp(&b.mean_ns));
            let Some(slowest) = slowest else {
                return Err(ScenarioError::one(path, "the sessions call no tool: there is no gap to learn"));
            };
            let Some(mid_s) = middle_of_arrivals_s(&sc.workload) else {
                return Err(ScenarioError::one(
                    format!("{path}.at_s"),
                    "the scenario's arrivals have no mean rate to place the shift by: give shift {tool, at_s, factor}",
                ));
            };
            ToolShiftSpec { tool: slowest.name.clone(), at_s: mid_s, factor: 4.0 }
        }
    };
    if !tools.iter().any(|t| t.name == shift.tool) {
        let why = crate::workload::no_tool_named(tools, &shift.tool);
        return Err(ScenarioError::one(format!("{path}.tool"), &why));
    }
    Ok(shift)
}

/// The middle of the first turns' arrivals, s (None for arrivals without a mean rate).
fn middle_of_arrivals_s(w: &crate::workload::Workload) -> Option<f64> {
    let gap_ns = match w.arrival {
        Arrival::Poisson { mean_gap_ns } => mean_gap_ns,
        Arrival::Constant { gap_ns } => gap_ns,
        Arrival::Gamma { shape, scale_ns } => shape * scale_ns,
        _ => return None,
    };
    let window_ns = (w.max_requests as f64 * gap_ns).min(w.end_ns as f64);
    (window_ns.is_finite() && window_ns > 0.0).then(|| (window_ns / 2e9 * 10.0).round() / 10.0)
}

fn tier(r: &RunSummary) -> Option<&crate::study::TieringRun> {
    sess(r).tiering.as_ref()
}

/// The policy table.
fn policy_columns() -> [ColumnDef<RunSummary>; 13] {
    [
        column("Policy", "", Format::Text, |x| x.label.as_str().into()),
        column("p95 turn TTFT", "s", Format::Seconds, |x| sess(x).turn_ttft_p95_s.into()),
        column("p95 session E2E", "s", Format::Seconds, |x| sess(x).session_e2e_p95_s.into()),
        column("Session SLO", "", Format::Percent, |x| sess(x).slo_attainment.into()),
        column("Reuse", "of history", Format::Percent, |x| sess(x).reuse.into()),
        column("Mean HBM", "GB", Format::Num, |x| sess(x).hbm_mean_gb.into()),
        column("Mean host", "GB", Format::Num, |x| sess(x).host_mean_gb.into()),
        column("Prediction MAE", "s", Format::Seconds, |x| tier(x).and_then(|t| t.mae_s).into()),
        column("Oracle agreement", "of calls", Format::Percent, |x| tier(x).map(|t| t.oracle_agreement).into()),
        column("Post-shift MAE", "s", Format::Seconds, |x| tier(x).and_then(|t| t.post_shift_mae_s).into()),
        column("Gap cost", "worker-s", Format::Num, |x| tier(x).map(|t| t.gap_cost_s).into()),
        column("Recomputed", "tokens", Format::Int, |x| sess(x).recomputed_history_tokens.into()),
        column("Diagnosis", "", Format::Text, |x| session_brief(x).into()),
    ]
}

/// A row of the α sweep.
struct AlphaRow<'a> {
    alpha: f64,
    run: &'a RunSummary,
}

/// The α sweep's table.
fn alpha_columns<'a>() -> [ColumnDef<AlphaRow<'a>>; 9] {
    [
        column("Alpha", "", Format::Setting, |x| x.alpha.into()),
        column("Pre-shift MAE", "s", Format::Seconds, |x| tier(x.run).and_then(|t| t.pre_shift_mae_s).into()),
        column("Post-shift MAE", "s", Format::Seconds, |x| tier(x.run).and_then(|t| t.post_shift_mae_s).into()),
        column("Oracle agreement", "of calls", Format::Percent, |x| tier(x.run).map(|t| t.oracle_agreement).into()),
        column("p95 TTFT", "s", Format::Seconds, |x| sess(x.run).turn_ttft_p95_s.into()),
        column("p95 session E2E", "s", Format::Seconds, |x| sess(x.run).session_e2e_p95_s.into()),
        column("Session SLO", "", Format::Percent, |x| sess(x.run).slo_attainment.into()),
        column("Mean HBM", "GB", Format::Num, |x| sess(x.run).hbm_mean_gb.into()),
        column("Mean host", "GB", Format::Num, |x| sess(x.run).host_mean_gb.into()),
    ]
}

impl OneBatchStudy for AdaptiveTieringStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Self::ABOUT, &self.base, Self::ABOUT.question.into());
        let n = self.policies.min(r.len());
        let (policies, sweep) = r.split_at(n);
        (rep.columns, rep.rows) = table(&policy_columns(), policies);
        let rows: Vec<AlphaRow> =
            (sweep.iter().zip(&self.p.alphas)).map(|(run, &alpha)| AlphaRow { alpha, run }).collect();
        let (columns, rows) = table(&alpha_columns(), &rows);
        rep.tables = vec![crate::study::Table {
            title: "The estimate's weight α (one estimate per tool)".into(),
            columns,
            rows,
        }];
        // The best deployable policy: the oracle (the last row) sees each gap before it ends.
        fastest_but_the_bound(&mut rep, policies);
        if n == self.policies {
            rep.answer = answer(policies, rep.best_row);
            rep.charts = vec![gap_chart(&self.shift, policies)];
        }
        rep.notes = notes(&self.base, &self.shift);
        rep.runs = r.to_vec();
        rep
    }
}

/// The answer: the best deployable policy, and how the learned estimates fared against the oracle.
fn answer(r: &[RunSummary], best: Option<usize>) -> String {
    let Some(b) = best else { return String::new() };
    let (global, per_tool, oracle) = (tier(&r[3]), tier(&r[4]), tier(&r[5]));
    let mae = |t: Option<&crate::study::TieringRun>| {
        t.and_then(|t| t.post_shift_mae_s).map_or("–".into(), crate::metrics::secs)
    };
    let cost = |t: Option<&crate::study::TieringRun>| t.map_or(f64::NAN, |t| t.gap_cost_s);
    format!(
        "{} has the lowest p95 turn TTFT, {}. Learned per tool, the gap estimate agrees with the oracle's choice on {:.0} % of calls (over all tools {:.0} %), with a post-shift error of {} against {}; its gap cost is {:.1} worker-s against the oracle's bound of {:.1} (all tools: {:.1}).",
        r[b].label,
        crate::metrics::secs(sess(&r[b]).turn_ttft_p95_s),
        per_tool.map_or(0.0, |t| t.oracle_agreement) * 100.0,
        global.map_or(0.0, |t| t.oracle_agreement) * 100.0,
        mae(per_tool),
        mae(global),
        cost(per_tool),
        cost(oracle),
        cost(global),
    )
}

/// The shifted tool's gaps over time and the two estimates of them, with the shift marked.
fn gap_chart(shift: &ToolShiftSpec, r: &[RunSummary]) -> Chart {
    let estimates = |run: &RunSummary| tier(run).map_or(Vec::new(), |t| t.estimate_series.clone());
    let realised = tier(&r[4]).map_or(Vec::new(), |t| t.gap_series.clone());
    let top = realised.iter().map(|p| p.1).fold(0.0, f64::max);
    lines(
        &format!("{}: realised gap and its estimates around the shift", shift.tool),
        "time the call started (s)",
        "mean gap in the window (s)",
        vec![
            line("realised gap", realised),
            line(&r[4].label, estimates(&r[4])),
            line(&r[3].label, estimates(&r[3])),
            line(&format!("shift ×{}", shift.factor), vec![(shift.at_s, 0.0), (shift.at_s, top)]),
        ],
    )
}

fn notes(base: &Spec, shift: &ToolShiftSpec) -> Vec<String> {
    vec![
        program_note(base),
        format!(
            "From {} on, every call of {} takes {} × its drawn latency (a call is after the shift when the turn that makes it ends then or later); the MAEs split at that time.",
            crate::metrics::secs(shift.at_s),
            shift.tool,
            shift.factor
        ),
        "The adaptive policies take the cheapest tier for their estimate of the coming gap — an exponentially weighted mean of the calls that have returned, over all tools or per tool — by the gap price: the history's share of the worker's KV × the gap (held in HBM), the restore's time (host memory) or the prefill it adds to the next turn (recomputed). Before the first call returns they keep in HBM.".into(),
        "The gap oracle takes the cheapest tier for the realised gap: no policy pays a lower gap cost (Σ of that price over the calls, in seconds of a whole worker), so its row is a bound on that cost — not on latency, where keeping more HBM than the price advises can be faster. Oracle agreement: the calls whose tier (a TTL's as it played out) is the oracle's.".into(),
        "Every policy but stateless has a host tier; every run routes sticky, so a later turn goes where its history is.".into(),
    ]
}
