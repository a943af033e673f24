//! The agent-session studies: retention and routing policies on one program trace (every run replays the same
//! sessions, drawn from the scenario's seed). `agent-policies` compares six policies; `ttl-sweep` sweeps the
//! TTL for the latency / memory-residency frontier; `tiered-kv` weighs HBM, host memory and recomputation, also
//! under a shrinking HBM budget; `affinity-slack` sweeps bounded affinity's slack.

use serde::{Deserialize, Serialize};

use super::{
    Cell, Chart, ChartSeries, Format, Job, Kind, OneBatch, OneBatchStudy, RunSummary, SessionRun, Study, StudyReport,
    col, pareto, report_head,
};
use crate::scenario::{self, Errors, HostKvSpec, RetentionSpec, RouterSpec, ScenarioError, Spec};

/// The host tier a study gives the policies that use one when the scenario has none: 256 GB of host memory per
/// worker behind PCIe 5 x16 (~25 GB/s achieved host-to-device, 50 µs per transfer).
pub fn default_host() -> HostKvSpec {
    HostKvSpec { capacity_gb: 256.0, bandwidth_gbps: 25.0, latency_ms: 0.05 }
}

/// One policy of a comparison: its label and what it sets.
#[derive(Clone, Debug)]
struct Policy {
    label: String,
    retention: RetentionSpec,
    router: Option<RouterSpec>,
    host: bool,
}

fn policy(label: &str, retention: RetentionSpec, router: Option<RouterSpec>, host: bool) -> Policy {
    Policy { label: label.into(), retention, router, host }
}

/// `spec` under `p` (and a retention budget), valid.
fn variant(spec: &Spec, p: &Policy, host: &HostKvSpec, budget: Option<u64>) -> Spec {
    let mut s = spec.clone();
    let x = s.workload.sessions.as_mut().expect("checked: the scenario has sessions");
    x.retention = p.retention;
    if let Some(r) = &p.router {
        s.cluster.router = r.clone();
    }
    if p.host && s.engine.host_kv.is_none() {
        s.engine.host_kv = Some(host.clone());
    }
    if !p.host {
        s.engine.host_kv = None;
    }
    s.engine.retention_budget_blocks = budget;
    s
}

/// The scenario must be valid and have sessions (every derived run must be valid too); the validated one.
fn check_base(spec: &Spec, study: Kind) -> Result<crate::Scenario, ScenarioError> {
    let sc = scenario::validate(spec)?;
    if spec.workload.sessions.is_none() {
        return Err(ScenarioError::one(
            format!("study.{}", study.name()),
            "this study compares what sessions do with their KV: the scenario needs workload.sessions (e.g. scenarios/agent-sessions.json)",
        ));
    }
    Ok(sc)
}

fn check_jobs(jobs: &[Job]) -> Result<(), ScenarioError> {
    for j in jobs {
        scenario::validate(&j.spec).map_err(|e| super::prefixed(e, &j.label))?;
    }
    Ok(())
}

fn check_host(e: &mut Errors, study: Kind, h: &HostKvSpec) {
    let p = format!("study.{}.host_kv", study.name());
    e.range_open_lo(&format!("{p}.capacity_gb"), h.capacity_gb, 0.0, 1e5);
    e.range_open_lo(&format!("{p}.bandwidth_gbps"), h.bandwidth_gbps, 0.0, 1e4);
    e.range(&format!("{p}.latency_ms"), h.latency_ms, 0.0, 1e4);
}

fn sess(r: &RunSummary) -> &SessionRun {
    r.sessions.as_ref().expect("session runs carry session figures")
}

/// One sentence for a row: what dominates the run's session latency — recomputation, pressure eviction,
/// restore traffic or a hot replica — with its number, else the run's own diagnosis.
pub fn session_brief(r: &RunSummary) -> String {
    let s = sess(r);
    let recomputed =
        if s.history_tokens == 0 { 0.0 } else { s.recomputed_history_tokens as f64 / s.history_tokens as f64 };
    if s.later_turns > 0 && s.pressure_evictions as f64 > 0.1 * s.later_turns as f64 {
        return format!(
            "pressure eviction: {} histories pushed out of HBM for running turns; {:.0} % of history recomputed",
            s.pressure_evictions,
            recomputed * 100.0
        );
    }
    if s.host_hit_rate >= 0.2 && s.restore_p95_s >= 0.3 * s.turn_ttft_p95_s {
        return format!(
            "restore traffic: p95 restore wait {} of a p95 turn TTFT of {}",
            crate::export::secs(s.restore_p95_s),
            crate::export::secs(s.turn_ttft_p95_s)
        );
    }
    if recomputed > 0.3 {
        return format!("recomputation: {:.0} % of the history re-sent is prefilled again", recomputed * 100.0);
    }
    if r.busy_fraction > 0.0 && s.busy_max_fraction > 1.3 * r.busy_fraction && s.busy_max_fraction > 0.5 {
        return format!(
            "hot replica: the busiest worker is {:.0} % busy against a mean of {:.0} %",
            s.busy_max_fraction * 100.0,
            r.busy_fraction * 100.0
        );
    }
    format!("history reused ({:.1} %); {}", s.reuse * 100.0, super::brief(r))
}

fn cache_hit(s: &SessionRun) -> f64 {
    s.hbm_hit_rate + s.host_hit_rate
}

/// The row with the least p95 turn TTFT (ties: the least HBM held).
fn fastest(results: &[RunSummary]) -> Option<usize> {
    (0..results.len()).reduce(|a, b| {
        let (x, y) = (sess(&results[a]), sess(&results[b]));
        if (y.turn_ttft_p95_s, y.hbm_gb_s) < (x.turn_ttft_p95_s, x.hbm_gb_s) { b } else { a }
    })
}

fn bars(title: &str, y_label: &str, results: &[RunSummary], y: fn(&SessionRun) -> f64) -> Chart {
    Chart {
        kind: "bars".into(),
        title: title.into(),
        x_label: "policy".into(),
        y_label: y_label.into(),
        categories: results.iter().map(|r| r.label.clone()).collect(),
        series: vec![ChartSeries {
            name: y_label.into(),
            points: results.iter().enumerate().map(|(i, r)| (i as f64, y(sess(r)))).collect(),
            band: vec![],
            labels: vec![],
            line: false,
        }],
        target: None,
    }
}

fn lines(title: &str, x_label: &str, y_label: &str, series: Vec<ChartSeries>) -> Chart {
    Chart {
        kind: "lines".into(),
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        categories: vec![],
        series,
        target: None,
    }
}

fn line(name: &str, points: Vec<(f64, f64)>) -> ChartSeries {
    ChartSeries { name: name.into(), points, band: vec![], labels: vec![], line: true }
}

fn program_note(spec: &Spec) -> String {
    format!(
        "Every run replays the same sessions (programs drawn from seed {}: turns, lengths, tools and gaps), so the rows differ only by policy.",
        spec.seed
    )
}

// ---------------------------------------------------------------------------------------------------------
// agent-policies

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentPoliciesParams {
    /// The TTL policy's time to live, s.
    pub ttl_s: f64,
    /// Bounded affinity's slack, ms.
    pub slack_ms: f64,
    /// The host tier of the host-offload policy when the scenario has none.
    pub host_kv: HostKvSpec,
}

impl Default for AgentPoliciesParams {
    fn default() -> Self {
        AgentPoliciesParams { ttl_s: 10.0, slack_ms: 50.0, host_kv: default_host() }
    }
}

pub struct AgentPoliciesStudy {
    base: Spec,
    batch: OneBatch,
}

impl AgentPoliciesStudy {
    pub fn new(spec: &Spec, p: &AgentPoliciesParams) -> Result<Self, ScenarioError> {
        check_base(spec, Kind::AgentPolicies)?;
        let mut e = Errors::default();
        e.range("study.agent-policies.ttl_s", p.ttl_s, 0.0, 1e7);
        e.range("study.agent-policies.slack_ms", p.slack_ms, 0.0, 1e9);
        check_host(&mut e, Kind::AgentPolicies, &p.host_kv);
        e.finish()?;
        let lb = Some(RouterSpec::LeastOutstanding);
        let sticky = Some(RouterSpec::Sticky);
        let policies = [
            policy("stateless + load balancing", RetentionSpec::Stateless, lb.clone(), false),
            policy("retain, no affinity", RetentionSpec::Retain, lb, false),
            policy(
                &format!("TTL {} + sticky", crate::export::secs(p.ttl_s)),
                RetentionSpec::Ttl { ttl_s: Some(p.ttl_s) },
                sticky.clone(),
                false,
            ),
            policy("retain + sticky", RetentionSpec::Retain, sticky.clone(), false),
            policy("host offload + sticky", RetentionSpec::HostOffload, sticky, true),
            policy(
                &format!("bounded affinity ({} slack)", crate::export::secs(p.slack_ms / 1e3)),
                RetentionSpec::Retain,
                Some(RouterSpec::BoundedAffinity { slack_ms: p.slack_ms }),
                false,
            ),
        ];
        let jobs: Vec<Job> =
            policies.iter().map(|x| Job { label: x.label.clone(), spec: variant(spec, x, &p.host_kv, None) }).collect();
        check_jobs(&jobs)?;
        Ok(AgentPoliciesStudy { base: spec.clone(), batch: OneBatch::new(jobs) })
    }
}

impl OneBatchStudy for AgentPoliciesStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(
            Kind::AgentPolicies,
            &self.base,
            "which retention and routing policy serves these agent sessions best, and what does it hold in memory?"
                .into(),
        );
        rep.columns = vec![
            col("Policy", "", Format::Text),
            col("p95 turn TTFT", "s", Format::Seconds),
            col("p95 session E2E", "s", Format::Seconds),
            col("Cache hit", "of later turns", Format::Percent),
            col("Route locality", "", Format::Percent),
            col("Recomputed history", "tokens", Format::Int),
            col("Mean KV", "GB, HBM", Format::Num),
            col("Peak KV", "GB, HBM", Format::Num),
            col("HBM GB·s", "GB·s", Format::Num),
            col("Evictions", "TTL + pressure", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        rep.rows = r
            .iter()
            .map(|x| {
                let s = sess(x);
                vec![
                    Cell::from(x.label.as_str()),
                    s.turn_ttft_p95_s.into(),
                    s.session_e2e_p95_s.into(),
                    cache_hit(s).into(),
                    s.route_locality.into(),
                    s.recomputed_history_tokens.into(),
                    s.hbm_mean_gb.into(),
                    s.hbm_peak_gb.into(),
                    s.hbm_gb_s.into(),
                    (s.ttl_evictions + s.pressure_evictions).into(),
                    session_brief(x).into(),
                ]
            })
            .collect();
        rep.best_row = fastest(r);
        if let (Some(b), Some(base)) = (rep.best_row, r.first()) {
            let (x, s0) = (sess(&r[b]), sess(base));
            rep.answer = format!(
                "{} has the lowest p95 turn TTFT, {} against {} stateless, with {:.1} % of later turns hitting their cache and {:.2} GB of HBM held on average ({:.0} GB·s).",
                r[b].label,
                crate::export::secs(x.turn_ttft_p95_s),
                crate::export::secs(s0.turn_ttft_p95_s),
                cache_hit(x) * 100.0,
                x.hbm_mean_gb,
                x.hbm_gb_s
            );
        }
        rep.charts = vec![
            bars("p95 turn TTFT by policy", "p95 turn TTFT (s)", r, |s| s.turn_ttft_p95_s),
            bars("Mean HBM held by retention", "mean retained KV (GB)", r, |s| s.hbm_mean_gb),
        ];
        rep.notes = vec![
            program_note(&self.base),
            "Cache hit: later turns that found their history in HBM or restored it from host memory. Route locality: later turns served by their previous turn's worker. Mean / Peak KV and GB·s: idle session history in HBM (what retention holds between turns), all workers.".into(),
            "Load balancing is least outstanding; with one replica every router is the same.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// ttl-sweep

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtlSweepParams {
    /// TTLs to try, s; null: no expiry (∞).
    pub ttl_s: Vec<Option<f64>>,
}

impl Default for TtlSweepParams {
    fn default() -> Self {
        TtlSweepParams {
            ttl_s: vec![
                Some(0.0),
                Some(0.5),
                Some(1.0),
                Some(2.0),
                Some(5.0),
                Some(10.0),
                Some(30.0),
                Some(60.0),
                None,
            ],
        }
    }
}

fn ttl_label(t: Option<f64>) -> String {
    match t {
        None => "∞ (no expiry)".into(),
        Some(0.0) => "0 (at once)".into(),
        Some(t) => crate::export::secs(t),
    }
}

pub struct TtlSweepStudy {
    base: Spec,
    ttls: Vec<Option<f64>>,
    batch: OneBatch,
}

impl TtlSweepStudy {
    pub fn new(spec: &Spec, p: &TtlSweepParams) -> Result<Self, ScenarioError> {
        check_base(spec, Kind::TtlSweep)?;
        let mut e = Errors::default();
        e.int("study.ttl-sweep.ttl_s", p.ttl_s.len() as u64, 1, 64);
        for (i, t) in p.ttl_s.iter().enumerate() {
            if let Some(t) = t {
                e.range(&format!("study.ttl-sweep.ttl_s[{i}]"), *t, 0.0, 1e7);
            }
        }
        e.finish()?;
        let host = spec.engine.host_kv.is_some();
        let jobs: Vec<Job> = (p.ttl_s.iter())
            .map(|&t| Job {
                label: format!("TTL {}", ttl_label(t)),
                spec: variant(
                    spec,
                    &policy("", RetentionSpec::Ttl { ttl_s: t }, None, host),
                    &default_host(),
                    spec.engine.retention_budget_blocks,
                ),
            })
            .collect();
        check_jobs(&jobs)?;
        Ok(TtlSweepStudy { base: spec.clone(), ttls: p.ttl_s.clone(), batch: OneBatch::new(jobs) })
    }
}

impl OneBatchStudy for TtlSweepStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(Kind::TtlSweep, &self.base, "how long should a session's KV stay in HBM after a turn: what does each TTL buy in latency, and cost in memory?".into());
        rep.columns = vec![
            col("TTL", "", Format::Text),
            col("Pareto", "", Format::Bool),
            col("p95 turn TTFT", "s", Format::Seconds),
            col("p95 session E2E", "s", Format::Seconds),
            col("Cache hit", "of later turns", Format::Percent),
            col("Recomputed history", "tokens", Format::Int),
            col("Mean KV", "GB, HBM", Format::Num),
            col("HBM GB·s", "GB·s", Format::Num),
            col("TTL evictions", "", Format::Int),
            col("Pressure evictions", "", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        let front = pareto(&r.iter().map(|x| (-sess(x).turn_ttft_p95_s, sess(x).hbm_mean_gb)).collect::<Vec<_>>());
        rep.rows = (r.iter().zip(&self.ttls).enumerate())
            .map(|(i, (x, &t))| {
                let s = sess(x);
                vec![
                    Cell::from(ttl_label(t)),
                    front[i].into(),
                    s.turn_ttft_p95_s.into(),
                    s.session_e2e_p95_s.into(),
                    cache_hit(s).into(),
                    s.recomputed_history_tokens.into(),
                    s.hbm_mean_gb.into(),
                    s.hbm_gb_s.into(),
                    s.ttl_evictions.into(),
                    s.pressure_evictions.into(),
                    session_brief(x).into(),
                ]
            })
            .collect();
        // The knee: the least HBM whose p95 turn TTFT is within 10 % of the best.
        let best_ttft = r.iter().map(|x| sess(x).turn_ttft_p95_s).fold(f64::INFINITY, f64::min);
        rep.best_row = (0..r.len())
            .filter(|&i| front[i] && sess(&r[i]).turn_ttft_p95_s <= best_ttft * 1.1)
            .reduce(|a, b| if sess(&r[b]).hbm_mean_gb < sess(&r[a]).hbm_mean_gb { b } else { a });
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "TTL {} is the knee: p95 turn TTFT {} (within 10 % of the best, {}) holding {:.2} GB of HBM on average; {} of {} TTLs are on the latency / memory frontier.",
                ttl_label(self.ttls[b]),
                crate::export::secs(s.turn_ttft_p95_s),
                crate::export::secs(best_ttft),
                s.hbm_mean_gb,
                front.iter().filter(|f| **f).count(),
                r.len()
            );
        }
        let mut f: Vec<(f64, f64)> = (0..r.len())
            .filter(|&i| front[i])
            .map(|i| (sess(&r[i]).hbm_mean_gb, sess(&r[i]).turn_ttft_p95_s))
            .collect();
        f.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        rep.charts = vec![Chart {
            kind: "scatter".into(),
            title: "p95 turn TTFT vs mean HBM held, per TTL".into(),
            x_label: "mean retained KV in HBM (GB)".into(),
            y_label: "p95 turn TTFT (s)".into(),
            categories: vec![],
            series: vec![
                ChartSeries {
                    name: "TTLs".into(),
                    points: r.iter().map(|x| (sess(x).hbm_mean_gb, sess(x).turn_ttft_p95_s)).collect(),
                    band: vec![],
                    labels: self.ttls.iter().map(|&t| ttl_label(t)).collect(),
                    line: false,
                },
                line("frontier", f),
            ],
            target: None,
        }];
        rep.notes = vec![
            program_note(&self.base),
            format!(
                "The scenario's router and host tier are kept{}; TTL 0 frees (or offloads) at once, ∞ keeps until the session ends or pressure evicts.",
                if self.base.engine.host_kv.is_some() {
                    " (an expired history moves to host memory)"
                } else {
                    " (no host tier: an expired history is freed)"
                }
            ),
            "Pareto: no other TTL has at most the p95 turn TTFT and at most the mean HBM held, better on one.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// affinity-slack

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffinitySlackParams {
    /// Slacks to try, ms.
    pub slack_ms: Vec<f64>,
}

impl Default for AffinitySlackParams {
    fn default() -> Self {
        AffinitySlackParams { slack_ms: vec![0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0, 10_000.0] }
    }
}

pub struct AffinitySlackStudy {
    base: Spec,
    slacks: Vec<f64>,
    batch: OneBatch,
}

impl AffinitySlackStudy {
    pub fn new(spec: &Spec, p: &AffinitySlackParams) -> Result<Self, ScenarioError> {
        check_base(spec, Kind::AffinitySlack)?;
        let mut e = Errors::default();
        e.int("study.affinity-slack.slack_ms", p.slack_ms.len() as u64, 1, 64);
        for (i, s) in p.slack_ms.iter().enumerate() {
            e.range(&format!("study.affinity-slack.slack_ms[{i}]"), *s, 0.0, 1e9);
        }
        e.finish()?;
        // A stateless scenario keeps nothing to be affine to: sweep it with retention.
        let retention = match spec.workload.sessions.as_ref().map(|s| s.retention) {
            Some(RetentionSpec::Stateless) | None => RetentionSpec::Retain,
            Some(r) => r,
        };
        let host = spec.engine.host_kv.is_some();
        let jobs: Vec<Job> = (p.slack_ms.iter())
            .map(|&s| Job {
                label: format!("slack {}", crate::export::secs(s / 1e3)),
                spec: variant(
                    spec,
                    &policy("", retention, Some(RouterSpec::BoundedAffinity { slack_ms: s }), host),
                    &default_host(),
                    spec.engine.retention_budget_blocks,
                ),
            })
            .collect();
        check_jobs(&jobs)?;
        Ok(AffinitySlackStudy { base: spec.clone(), slacks: p.slack_ms.clone(), batch: OneBatch::new(jobs) })
    }
}

impl OneBatchStudy for AffinitySlackStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(
            Kind::AffinitySlack,
            &self.base,
            "how much load imbalance should a session's turn accept to stay where its KV is?".into(),
        );
        rep.columns = vec![
            col("Affinity slack", "s", Format::Seconds),
            col("p95 turn TTFT", "s", Format::Seconds),
            col("p95 session E2E", "s", Format::Seconds),
            col("Route locality", "", Format::Percent),
            col("Cache hit", "of later turns", Format::Percent),
            col("Recomputed", "tokens", Format::Int),
            col("Session SLO", "", Format::Percent),
            col("Pressure evictions", "", Format::Int),
            col("Diagnosis", "", Format::Text),
        ];
        rep.rows = (r.iter().zip(&self.slacks))
            .map(|(x, &slack)| {
                let s = sess(x);
                vec![
                    Cell::from(slack / 1e3),
                    s.turn_ttft_p95_s.into(),
                    s.session_e2e_p95_s.into(),
                    s.route_locality.into(),
                    cache_hit(s).into(),
                    s.recomputed_history_tokens.into(),
                    s.slo_attainment.into(),
                    s.pressure_evictions.into(),
                    session_brief(x).into(),
                ]
            })
            .collect();
        rep.best_row = fastest(r);
        if let Some(b) = rep.best_row {
            let s = sess(&r[b]);
            rep.answer = format!(
                "A slack of {} gives the lowest p95 turn TTFT, {}, with {:.1} % of later turns staying on their worker and {:.1} % hitting their cache.",
                crate::export::secs(self.slacks[b] / 1e3),
                crate::export::secs(s.turn_ttft_p95_s),
                s.route_locality * 100.0,
                cache_hit(s) * 100.0
            );
        }
        // Slacks span decades: one bar slot each, named by its slack, reads better than a linear axis.
        let bar_series = |name: &str, f: fn(&SessionRun) -> f64| ChartSeries {
            name: name.into(),
            points: r.iter().enumerate().map(|(i, x)| (i as f64, f(sess(x)))).collect(),
            band: vec![],
            labels: vec![],
            line: false,
        };
        let chart = |title: &str, y_label: &str, series: Vec<ChartSeries>| Chart {
            kind: "bars".into(),
            title: title.into(),
            x_label: "affinity slack".into(),
            y_label: y_label.into(),
            categories: self
                .slacks
                .iter()
                .map(|&s| {
                    if s == 0.0 {
                        "slack 0 (balance)".into()
                    } else {
                        format!("slack {}", crate::export::secs(s / 1e3))
                    }
                })
                .collect(),
            series,
            target: None,
        };
        rep.charts = vec![
            chart(
                "p95 turn TTFT by affinity slack",
                "p95 turn TTFT (s)",
                vec![bar_series("p95 turn TTFT", |s| s.turn_ttft_p95_s)],
            ),
            chart(
                "Route locality and cache hit by affinity slack",
                "share of later turns",
                vec![bar_series("route locality", |s| s.route_locality), bar_series("cache hit", cache_hit)],
            ),
        ];
        rep.notes = vec![
            program_note(&self.base),
            "Bounded affinity: a later turn stays on its previous worker unless that worker's outstanding requests × the mean prompt's prefill time exceed the least-loaded worker's by more than the slack. 0 is load balancing (ties stay); a large slack is sticky.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}

// ---------------------------------------------------------------------------------------------------------
// tiered-kv

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

impl Default for TieredKvParams {
    fn default() -> Self {
        TieredKvParams { ttl_s: 10.0, slack_ms: 50.0, host_kv: default_host(), budgets: vec![1.0, 0.5, 0.25, 0.1] }
    }
}

pub struct TieredKvStudy {
    base: Spec,
    p: TieredKvParams,
    policies: Vec<Policy>,
    /// GB of one KV block, and the workers: to read the reference run's GB as blocks per worker.
    block_gb: f64,
    workers: f64,
    /// The reference run (full retention, sticky, no budget) first, then each policy without a budget; then
    /// each budget × policy.
    results: Vec<RunSummary>,
    handed: usize,
}

impl TieredKvStudy {
    pub fn new(spec: &Spec, p: &TieredKvParams) -> Result<Self, ScenarioError> {
        let sc = check_base(spec, Kind::TieredKv)?;
        let mut e = Errors::default();
        e.range("study.tiered-kv.ttl_s", p.ttl_s, 0.0, 1e7);
        e.range("study.tiered-kv.slack_ms", p.slack_ms, 0.0, 1e9);
        check_host(&mut e, Kind::TieredKv, &p.host_kv);
        e.int("study.tiered-kv.budgets", p.budgets.len() as u64, 0, 16);
        for (i, b) in p.budgets.iter().enumerate() {
            e.range_open_lo(&format!("study.tiered-kv.budgets[{i}]"), *b, 0.0, 100.0);
        }
        e.finish()?;
        let sticky = Some(RouterSpec::Sticky);
        let policies = vec![
            policy("stateless", RetentionSpec::Stateless, Some(RouterSpec::LeastOutstanding), false),
            policy(
                &format!("TTL {}", crate::export::secs(p.ttl_s)),
                RetentionSpec::Ttl { ttl_s: Some(p.ttl_s) },
                sticky.clone(),
                true,
            ),
            policy(
                &format!("bounded affinity ({})", crate::export::secs(p.slack_ms / 1e3)),
                RetentionSpec::Retain,
                Some(RouterSpec::BoundedAffinity { slack_ms: p.slack_ms }),
                true,
            ),
            policy("host offload", RetentionSpec::HostOffload, sticky.clone(), true),
            policy("gap oracle (bound)", RetentionSpec::GapOracle, sticky, true),
        ];
        let (block_gb, workers) = (sc.kv_block_bytes() / 1e9, sc.front_pool().replicas as f64);
        let s = TieredKvStudy {
            base: spec.clone(),
            p: p.clone(),
            policies,
            block_gb,
            workers,
            results: Vec::new(),
            handed: 0,
        };
        check_jobs(&s.first_jobs())?;
        Ok(s)
    }

    fn first_jobs(&self) -> Vec<Job> {
        let reference =
            policy("reference: retain + sticky, no budget", RetentionSpec::Retain, Some(RouterSpec::Sticky), false);
        std::iter::once(&reference)
            .chain(&self.policies)
            .map(|x| Job { label: x.label.clone(), spec: variant(&self.base, x, &self.p.host_kv, None) })
            .collect()
    }

    /// The reference working set per worker, blocks: the reference run's peak idle history ÷ workers.
    fn reference_blocks(&self) -> f64 {
        sess(&self.results[0]).hbm_peak_gb / self.block_gb / self.workers
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
}

fn tiered_report(st: &TieredKvStudy) -> StudyReport {
    let mut rep = report_head(
        Kind::TieredKv,
        &st.base,
        "where should a session's KV wait for its next turn — HBM, host memory, or nowhere — and what if HBM shrinks?"
            .into(),
    );
    rep.columns = vec![
        col("Policy", "", Format::Text),
        col("p95 turn TTFT", "s", Format::Seconds),
        col("p95 session E2E", "s", Format::Seconds),
        col("Session SLO", "", Format::Percent),
        col("Reuse", "of history", Format::Percent),
        col("HBM hit", "of later turns", Format::Percent),
        col("Host hit", "of later turns", Format::Percent),
        col("Mean HBM", "GB", Format::Num),
        col("Mean host", "GB", Format::Num),
        col("Transfer p95", "s", Format::Seconds),
        col("Recomputed", "tokens", Format::Int),
        col("Diagnosis", "", Format::Text),
    ];
    let n = st.policies.len();
    let Some(rest) = st.results.get(1..) else { return rep };
    let reference = if st.results.is_empty() { 0.0 } else { st.reference_blocks() };
    let (free, budgeted) = rest.split_at(n.min(rest.len()));
    rep.rows = (free.iter().enumerate())
        .map(|(k, x)| {
            let s = sess(x);
            vec![
                Cell::from(st.policies[k].label.as_str()),
                s.turn_ttft_p95_s.into(),
                s.session_e2e_p95_s.into(),
                s.slo_attainment.into(),
                s.reuse.into(),
                s.hbm_hit_rate.into(),
                s.host_hit_rate.into(),
                s.hbm_mean_gb.into(),
                s.host_mean_gb.into(),
                (s.host_hit_rate > 0.0).then_some(s.restore_p95_s).into(),
                s.recomputed_history_tokens.into(),
                session_brief(x).into(),
            ]
        })
        .collect();
    rep.tables = vec![budget_table(st, budgeted, reference)];
    // The best real policy without a budget (the oracle is a bound, not a choice).
    rep.best_row = fastest(&rest[..n.min(rest.len()) - 1]);
    if let Some(b) = rep.best_row {
        let s = sess(&rest[b]);
        let oracle = rest.get(n - 1).map(sess);
        rep.answer = format!(
            "{} has the lowest p95 turn TTFT without a budget, {} (reuse {:.1} %, {:.2} GB HBM and {:.2} GB host on average){}.",
            st.policies[b].label,
            crate::export::secs(s.turn_ttft_p95_s),
            s.reuse * 100.0,
            s.hbm_mean_gb,
            s.host_mean_gb,
            oracle.map_or(String::new(), |o| format!(
                "; the gap oracle's bound is {}",
                crate::export::secs(o.turn_ttft_p95_s)
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
            "Every policy but stateless has a host tier ({}); the gap oracle sees each realised tool gap, so it is a bound, not a choice (it is never the best row).",
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
    let columns = vec![
        col("Policy", "", Format::Text),
        col("Budget / replica", "blocks", Format::Int),
        col("Reference ×", "", Format::Num),
        col("p95 turn TTFT", "s", Format::Seconds),
        col("Session SLO", "", Format::Percent),
        col("Reuse", "of history", Format::Percent),
        col("Mean HBM", "GB", Format::Num),
        col("Mean host", "GB", Format::Num),
        col("Pressure evictions", "", Format::Int),
        col("Failed turns", "", Format::Int),
        col("Diagnosis", "", Format::Text),
    ];
    let rows = (budgeted.iter().enumerate())
        .map(|(k, x)| {
            let s = sess(x);
            let f = st.p.budgets[k / n];
            vec![
                Cell::from(st.policies[k % n].label.as_str()),
                (f * reference).round().max(1.0).into(),
                f.into(),
                s.turn_ttft_p95_s.into(),
                s.slo_attainment.into(),
                s.reuse.into(),
                s.hbm_mean_gb.into(),
                s.host_mean_gb.into(),
                s.pressure_evictions.into(),
                s.failed_turns.into(),
                session_brief(x).into(),
            ]
        })
        .collect();
    crate::study::Table { title: "Under a shrinking HBM budget per replica".into(), columns, rows }
}

// ---------------------------------------------------------------------------------------------------------
// agent-sessions: one run of the scenario, read as a session workload

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsParams {
    /// Turn indices the TTFT-by-turn chart shows (1 … 64).
    pub turns_shown: u32,
}

impl Default for SessionsParams {
    fn default() -> Self {
        SessionsParams { turns_shown: 32 }
    }
}

pub struct SessionsStudy {
    base: Spec,
    turns_shown: u32,
    batch: OneBatch,
}

impl SessionsStudy {
    pub fn new(spec: &Spec, p: &SessionsParams) -> Result<Self, ScenarioError> {
        check_base(spec, Kind::AgentSessions)?;
        let mut e = Errors::default();
        e.int("study.agent-sessions.turns_shown", p.turns_shown as u64, 1, 64);
        e.finish()?;
        let jobs = vec![Job { label: spec.name.clone(), spec: spec.clone() }];
        Ok(SessionsStudy { base: spec.clone(), turns_shown: p.turns_shown, batch: OneBatch::new(jobs) })
    }
}

/// The figures of one session run: (name, shown, value in its unit, unit).
fn session_figures(s: &SessionRun) -> Vec<(&'static str, String, f64, &'static str)> {
    let secs = crate::export::secs;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    let gb = |x: f64| format!("{x:.2} GB");
    let count = |x: u64| (format!("{x}"), x as f64);
    let c = |name, (shown, v): (String, f64), unit| (name, shown, v, unit);
    // The three shares sum to one; rounding must not show a negative miss rate.
    let miss = (1.0 - s.hbm_hit_rate - s.host_hit_rate).max(0.0);
    vec![
        c("Sessions", count(s.sessions), ""),
        c("Turns", count(s.turns), ""),
        ("p50 turn TTFT", secs(s.turn_ttft_p50_s), s.turn_ttft_p50_s, "s"),
        ("p95 turn TTFT", secs(s.turn_ttft_p95_s), s.turn_ttft_p95_s, "s"),
        ("p95 session E2E", secs(s.session_e2e_p95_s), s.session_e2e_p95_s, "s"),
        (
            "Session SLO attainment",
            s.slo_attainment.map_or("– (no session objective)".into(), pct),
            s.slo_attainment.unwrap_or(f64::NAN),
            "fraction",
        ),
        ("History reused", pct(s.reuse), s.reuse, "fraction"),
        ("HBM hits", pct(s.hbm_hit_rate), s.hbm_hit_rate, "of later turns"),
        ("Host hits", pct(s.host_hit_rate), s.host_hit_rate, "of later turns"),
        ("Misses (recomputed)", pct(miss), miss, "of later turns"),
        ("Route locality", pct(s.route_locality), s.route_locality, "of later turns"),
        c("Recomputed history", count(s.recomputed_history_tokens), "tokens"),
        ("Mean retained HBM", gb(s.hbm_mean_gb), s.hbm_mean_gb, "GB"),
        ("Peak retained HBM", gb(s.hbm_peak_gb), s.hbm_peak_gb, "GB"),
        ("HBM held by retention", format!("{:.0} GB·s", s.hbm_gb_s), s.hbm_gb_s, "GB·s"),
        ("Mean host KV", gb(s.host_mean_gb), s.host_mean_gb, "GB"),
        ("Peak host KV", gb(s.host_peak_gb), s.host_peak_gb, "GB"),
        c("TTL evictions", count(s.ttl_evictions), ""),
        c("Pressure evictions", count(s.pressure_evictions), ""),
        c("Host evictions", count(s.host_evictions), ""),
        ("p95 restore wait", secs(s.restore_p95_s), s.restore_p95_s, "s"),
        c("Failed turns", count(s.failed_turns), ""),
        c("Sessions ended by the context", count(s.ended_by_context), ""),
    ]
}

/// A session class's rows: (name, shown, value in its unit, unit).
fn class_figures(c: &crate::study::SessionClassRun) -> Vec<(&'static str, String, f64, &'static str)> {
    let secs = crate::export::secs;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    vec![
        ("sessions", c.sessions.to_string(), c.sessions as f64, ""),
        ("p95 turn TTFT", secs(c.turn_ttft_p95_s), c.turn_ttft_p95_s, "s"),
        ("p95 session E2E", secs(c.session_e2e_p95_s), c.session_e2e_p95_s, "s"),
        ("history reused", pct(c.reuse), c.reuse, "fraction"),
        (
            "session SLO attainment",
            c.slo_attainment.map_or("– (no session objective)".into(), pct),
            c.slo_attainment.unwrap_or(f64::NAN),
            "fraction",
        ),
    ]
}

/// p95 turn TTFT of each session class, a bar each.
fn class_bars(classes: &[crate::study::SessionClassRun]) -> Chart {
    let points = classes.iter().enumerate().map(|(i, c)| (i as f64, c.turn_ttft_p95_s)).collect();
    Chart {
        kind: "bars".into(),
        title: "p95 turn TTFT by session class".into(),
        x_label: "session class".into(),
        y_label: "p95 turn TTFT (s)".into(),
        categories: classes.iter().map(|c| c.name.clone()).collect(),
        series: vec![ChartSeries { name: "p95 turn TTFT".into(), points, band: vec![], labels: vec![], line: false }],
        target: None,
    }
}

impl OneBatchStudy for SessionsStudy {
    fn batch(&self) -> &OneBatch {
        &self.batch
    }
    fn batch_mut(&mut self) -> &mut OneBatch {
        &mut self.batch
    }
    fn build_report(&self, r: &[RunSummary]) -> StudyReport {
        let mut rep = report_head(
            Kind::AgentSessions,
            &self.base,
            "what do these agent sessions see, turn by turn, and what holds them back?".into(),
        );
        rep.columns = vec![
            col("Figure", "", Format::Text),
            col("Shown", "", Format::Text),
            col("Value", "in its unit", Format::Figure),
            col("Unit", "", Format::Text),
        ];
        let Some(run) = r.first() else { return rep };
        let s = sess(run);
        let row = |n: String, shown: String, v: f64, u: &str| {
            vec![Cell::from(n), shown.into(), if v.is_nan() { Cell::Empty } else { v.into() }, u.into()]
        };
        rep.rows = session_figures(s).into_iter().map(|(n, shown, v, u)| row(n.into(), shown, v, u)).collect();
        for c in &s.classes {
            for (n, shown, v, u) in class_figures(c) {
                rep.rows.push(row(format!("{}: {n}", c.name), shown, v, u));
            }
        }
        rep.answer = format!(
            "p95 turn TTFT {} over {} turns of {} sessions; {}.",
            crate::export::secs(s.turn_ttft_p95_s),
            s.turns,
            s.sessions,
            session_brief(run)
        );
        let shown: Vec<&(u32, f64, f64)> = s.ttft_by_turn.iter().filter(|t| t.0 <= self.turns_shown).collect();
        let by_turn = |f: fn(&(u32, f64, f64)) -> f64| shown.iter().map(|t| (t.0 as f64, f(t))).collect::<Vec<_>>();
        rep.charts = vec![
            lines(
                "TTFT by turn index",
                "turn index",
                "TTFT (s)",
                vec![line("p50", by_turn(|t| t.1)), line("p95", by_turn(|t| t.2))],
            ),
            lines(
                "Retained KV over time",
                "time (s)",
                "retained KV (GB)",
                vec![
                    line("HBM (idle history)", s.kv_series.iter().map(|p| (p.0, p.1)).collect()),
                    line("host memory", s.kv_series.iter().map(|p| (p.0, p.2)).collect()),
                ],
            ),
        ];
        if !s.classes.is_empty() {
            rep.charts.push(class_bars(&s.classes));
        }
        rep.notes = vec![
            "One run of the scenario as it stands (its retention, host tier and router); the Agents studies compare policies on the same sessions.".into(),
            "Hits, misses and locality are of turns after a session's first, at their first admission. Retained HBM is idle session history (what retention holds between turns); host KV is history in host memory.".into(),
        ];
        rep.runs = r.to_vec();
        rep
    }
}
