//! `tiered-kv`: HBM, host memory or recomputation for a session's KV, also under a shrinking HBM budget.

use super::*;
use crate::scenario::at;
use crate::spec::Bound;
use crate::spec::TTL_S;
use crate::spec::field::Checked;
use crate::study::option::{Bounded, Text, described};
use crate::study::{ColumnDef, column, table};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TieredKvParams {
    /// The TTL policy's time to live, s.
    pub ttl_s: f64,
    /// Bounded affinity's slack, ms.
    pub slack_ms: f64,
    /// The host tier when the scenario has none.
    pub host_kv: HostKvSpec,
    /// Per-replica HBM budgets for retention, × the reference working set (the most idle history a worker
    /// holds under full retention with no budget).
    pub budgets: Vec<f64>,
}

described!(TieredKvParams {
    ttl_s: Text {
        label: "TTL",
        unit: "s",
        help: "The TTL policy's time to live",
        bound: Some(TTL_S),
    };
    slack_ms: Text {
        label: "Affinity slack",
        unit: "ms",
        help: "Bounded affinity's slack",
        bound: Some(Bound::Range(0.0, 1e9)),
    };
    host_kv: HOST_KV;
    budgets: Text {
        label: "HBM budgets",
        unit: "JSON list, × the reference working set",
        help: "Per-replica retention budgets as multiples of the most idle history a worker holds under full retention",
        bound: None,
    };
});

impl Default for TieredKvParams {
    fn default() -> Self {
        TieredKvParams { ttl_s: 10.0, slack_ms: 50.0, host_kv: default_host(), budgets: vec![1.0, 0.5, 0.25, 0.1] }
    }
}

pub struct TieredKvStudy {
    base: Spec,
    p: TieredKvParams,
    policies: Vec<Policy>,
    /// GB of one KV block: to read the reference run's GB as blocks.
    block_gb: f64,
    /// The reference run (full retention, sticky, no budget) first, then each policy without a budget; then
    /// each budget × policy.
    results: Vec<RunSummary>,
    handed: usize,
}

impl StudyDef for TieredKvStudy {
    const ABOUT: About = About {
        name: "tiered-kv",
        title: "Tiered KV",
        question: "HBM, host memory or recomputation for a session's KV, and under a shrinking HBM budget?",
        how: "Stateless, TTL, bounded affinity, host offload and the gap oracle (the cheapest tier for each realised gap) on the same sessions, then the same policies as the HBM budget for retention shrinks.",
        group: Group::Agents,
        rank: Rank::Least("p95 turn TTFT"),
        repeats_by: None,
    };
    type Options = TieredKvParams;

    fn new(spec: &Spec, p: &TieredKvParams) -> Result<Self, ScenarioError> {
        let sc = check_base(spec, Self::at())?;
        let mut e = Errors::default();
        p.check_bounds(&Self::at(), &mut e);
        p.host_kv.check_fields(&at!(Self::at(), p.host_kv), &mut e);
        e.int(&at!(Self::at(), p.budgets), p.budgets.len() as u64, 0, 16);
        for (i, b) in p.budgets.iter().enumerate() {
            e.range_open_lo(&format!("{}[{i}]", at!(Self::at(), p.budgets)), *b, 0.0, 100.0);
        }
        e.finish()?;
        let sticky = Some(RouterSpec::Sticky);
        let policies = vec![
            policy("stateless", RetentionSpec::Stateless, Some(RouterSpec::LeastOutstanding), false),
            policy(
                &format!("TTL {} then offload", crate::metrics::secs(p.ttl_s)),
                RetentionSpec::Ttl { ttl_s: Some(p.ttl_s) },
                sticky.clone(),
                true,
            ),
            policy(
                &format!("bounded affinity ({})", crate::metrics::secs(p.slack_ms / 1e3)),
                RetentionSpec::Retain,
                Some(RouterSpec::BoundedAffinity { slack_ms: p.slack_ms }),
                true,
            ),
            policy("host offload", RetentionSpec::HostOffload, sticky.clone(), true),
            policy("gap oracle (bound on gap cost)", RetentionSpec::GapOracle, sticky, true),
        ];
        let block_gb = sc.kv_block_bytes() / 1e9;
        let s = TieredKvStudy { base: spec.clone(), p: p.clone(), policies, block_gb, results: Vec::new(), handed: 0 };
        check_jobs(&s.first_jobs())?;
        Ok(s)
    }
}

impl TieredKvStudy {
    fn first_jobs(&self) -> Vec<Job> {
        let reference =
            policy("reference: retain + sticky, no budget", RetentionSpec::Retain, Some(RouterSpec::Sticky), false);
        std::iter::once(&reference)
            .chain(&self.policies)
            .map(|x| Job { label: x.label.clone(), spec: variant(&self.base, x, &self.p.host_kv, None) })
            .collect()
    }

    /// The reference working set per worker, blocks: the most idle history one worker held in the reference
    /// run — the budget at which its retention never yields.
    fn reference_blocks(&self) -> f64 {
        sess(&self.results[0]).hbm_worker_peak_gb / self.block_gb
    }

    fn budget_jobs(&self) -> Vec<Job> {
        let reference = self.reference_blocks();
        (self.p.budgets.iter())
            .flat_map(|&f| self.policies.iter().map(move |x| (f, x)))
            .map(|(f, x)| Job {
                label: format!("{} at {f} ×", x.label),
                spec: variant(&self.base, x, &self.p.host_kv, Some((f * reference).round().max(1.0) as u64)),
            })
            .collect()
    }
}

impl Study for TieredKvStudy {
    fn next(&mut self) -> Vec<Job> {
        self.handed += 1;
        match self.handed {
            1 => self.first_jobs(),
            2 if !self.p.budgets.is_empty() => self.budget_jobs(),
            _ => Vec::new(),
        }
    }
    fn feed(&mut self, results: Vec<RunSummary>) {
        self.results.extend(results);
    }
    fn progress(&self) -> (usize, usize) {
        (self.results.len(), (1 + self.policies.len() * (1 + self.p.budgets.len())).max(self.results.len()))
    }
    fn report(&self) -> StudyReport {
        tiered_report(self)
    }
    /// One lane: the budgets' runs are sized from the first batch's reference run.
    fn lanes(&self, jobs: &[Job]) -> Vec<u64> {
        vec![0; jobs.len()]
    }
}

fn tiered_report(st: &TieredKvStudy) -> StudyReport {
    let mut rep = report_head(TieredKvStudy::ABOUT, &st.base, TieredKvStudy::ABOUT.question.into());
    let n = st.policies.len();
    let rest = st.results.get(1..).unwrap_or_default();
    let (free, budgeted) = rest.split_at(n.min(rest.len()));
    let rows: Vec<Row> = (free.iter().enumerate())
        .map(|(k, run)| Row { policy: &st.policies[k].label, run, fraction: 1.0, reference: 0.0 })
        .collect();
    (rep.columns, rep.rows) = table(&free_columns(), &rows);
    if st.results.is_empty() {
        return rep;
    }
    let reference = st.reference_blocks();
    rep.tables = vec![budget_table(st, budgeted, reference)];
    // The best deployable policy without a budget (the oracle sees each gap before it ends).
    fastest_but_the_bound(&mut rep, free);
    if let Some(b) = rep.best_row {
        let s = sess(&rest[b]);
        let oracle = rest.get(n - 1).map(sess);
        rep.answer = format!(
            "{} has the lowest p95 turn TTFT without a budget, {} (reuse {:.1} %, {:.2} GB HBM and {:.2} GB host on average){}.",
            st.policies[b].label,
            crate::metrics::secs(s.turn_ttft_p95_s),
            s.reuse * 100.0,
            s.hbm_mean_gb,
            s.host_mean_gb,
            oracle.map_or(String::new(), |o| format!(
                "; the gap oracle — the cheapest tier for each realised gap, a bound on that price, not on latency — has {}",
                crate::metrics::secs(o.turn_ttft_p95_s)
            ))
        );
    }
    rep.charts = vec![budget_chart(st, rest)];
    rep.notes = tiered_notes(st, reference);
    rep.runs = st.results.clone();
    rep
}

/// Session SLO (or reuse) of each policy against the HBM budget, no budget drawn to the right of the largest.
fn budget_chart(st: &TieredKvStudy, rest: &[RunSummary]) -> Chart {
    let n = st.policies.len();
    let y = |s: &SessionRun| s.slo_attainment.unwrap_or(s.reuse);
    let y_label = if rest.first().is_some_and(|x| sess(x).slo_attainment.is_some()) {
        "session SLO attainment"
    } else {
        "reuse (no session SLO set)"
    };
    // No budget is drawn to the right of the largest budget.
    let unbounded = st.p.budgets.iter().fold(1.0, |a: f64, b| a.max(*b)) * 1.5;
    let series = (0..n).map(|i| {
        line(
            &st.policies[i].label,
            (0..=st.p.budgets.len())
                .filter_map(|j| {
                    rest.get(j * n + i).map(|x| (if j == 0 { unbounded } else { st.p.budgets[j - 1] }, y(sess(x))))
                })
                .collect(),
        )
    });
    let title = if y_label.starts_with("session") { "Session SLO vs HBM budget" } else { "Reuse vs HBM budget" };
    lines(
        title,
        &format!("HBM budget per replica, × reference working set ({unbounded} = no budget)"),
        y_label,
        series.collect(),
    )
}

fn tiered_notes(st: &TieredKvStudy, reference: f64) -> Vec<String> {
    vec![
        program_note(&st.base),
        format!(
            "Reference working set: {reference:.0} blocks per replica — the most idle session history a worker held under full retention, sticky routing and no budget. Rows with a budget cap what retention may hold in HBM per worker; past it the least recently used history moves to host memory (or is freed when the policy has no host tier)."
        ),
        format!(
            "Every policy but stateless has a host tier ({}). The gap oracle sees each realised tool gap and takes the tier cheapest for it by the gap price (the history's share of the worker's KV × the gap, the restore's time, or the prefill recomputing adds): no policy pays less by that price (adaptive-tiering reports it as gap cost), but it is no bound on latency — keeping more HBM than the price advises can be faster — and, since no engine can run it, it is never the best row.",
            st.base.engine.host_kv.as_ref().map_or(
                format!(
                    "{} GB at {} GB/s per worker, the study's",
                    st.p.host_kv.capacity_gb, st.p.host_kv.bandwidth_gbps
                ),
                |h| format!("the scenario's, {} GB at {} GB/s", h.capacity_gb, h.bandwidth_gbps)
            )
        ),
    ]
}

/// The tiered-kv study's second table: the same policies under each per-replica HBM budget.
fn budget_table(st: &TieredKvStudy, budgeted: &[RunSummary], reference: f64) -> crate::study::Table {
    let n = st.policies.len();
    let rows: Vec<Row> = (budgeted.iter().enumerate())
        .map(|(k, run)| Row { policy: &st.policies[k % n].label, run, fraction: st.p.budgets[k / n], reference })
        .collect();
    let (columns, rows) = table(&budget_columns(), &rows);
    crate::study::Table { title: "Under a shrinking HBM budget per replica".into(), columns, rows }
}

/// A policy's run; under a budget, the budget as a fraction of the reference (blocks per replica).
struct Row<'a> {
    policy: &'a str,
    run: &'a RunSummary,
    fraction: f64,
    reference: f64,
}

/// Without a budget.
fn free_columns<'a>() -> [ColumnDef<Row<'a>>; 12] {
    [
        column("Policy", "", Format::Text, |r| r.policy.into()),
        column("p95 turn TTFT", "s", Format::Seconds, |r| sess(r.run).turn_ttft_p95_s.into()),
        column("p95 session E2E", "s", Format::Seconds, |r| sess(r.run).session_e2e_p95_s.into()),
        column("Session SLO", "", Format::Percent, |r| sess(r.run).slo_attainment.into()),
        column("Reuse", "of history", Format::Percent, |r| sess(r.run).reuse.into()),
        column("HBM hit", "of later turns", Format::Percent, |r| sess(r.run).hbm_hit_rate.into()),
        column("Host hit", "of later turns", Format::Percent, |r| sess(r.run).host_hit_rate.into()),
        column("Mean HBM", "GB", Format::Num, |r| sess(r.run).hbm_mean_gb.into()),
        column("Mean host", "GB", Format::Num, |r| sess(r.run).host_mean_gb.into()),
        column("Transfer p95", "s", Format::Seconds, |r| {
            let s = sess(r.run);
            (s.host_hit_rate > 0.0).then_some(s.restore_p95_s).into()
        }),
        column("Recomputed", "tokens", Format::Int, |r| sess(r.run).recomputed_history_tokens.into()),
        column("Diagnosis", "", Format::Text, |r| session_brief(r.run).into()),
    ]
}

/// Under a shrinking budget.
fn budget_columns<'a>() -> [ColumnDef<Row<'a>>; 11] {
    [
        column("Policy", "", Format::Text, |r| r.policy.into()),
        column("Budget / replica", "blocks", Format::Int, |r| (r.fraction * r.reference).round().max(1.0).into()),
        column("Reference ×", "", Format::Setting, |r| r.fraction.into()),
        column("p95 turn TTFT", "s", Format::Seconds, |r| sess(r.run).turn_ttft_p95_s.into()),
        column("Session SLO", "", Format::Percent, |r| sess(r.run).slo_attainment.into()),
        column("Reuse", "of history", Format::Percent, |r| sess(r.run).reuse.into()),
        column("Mean HBM", "GB", Format::Num, |r| sess(r.run).hbm_mean_gb.into()),
        column("Mean host", "GB", Format::Num, |r| sess(r.run).host_mean_gb.into()),
        column("Pressure evictions", "", Format::Int, |r| sess(r.run).pressure_evictions.into()),
        column("Failed turns", "", Format::Int, |r| sess(r.run).failed_turns.into()),
        column("Diagnosis", "", Format::Text, |r| session_brief(r.run).into()),
    ]
}

// ---------------------------------------------------------------------------------------------------------
// agent-sessions: one run of the scenario, read as a session workload
