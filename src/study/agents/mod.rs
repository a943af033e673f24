//! The agent-session studies: retention and routing policies on one program trace (every run replays the same
//! sessions, drawn from the scenario's seed). `agent-policies` compares six policies; `ttl-sweep` sweeps the
//! TTL for the latency / memory-residency frontier; `tiered-kv` weighs HBM, host memory and recomputation, also
//! under a shrinking HBM budget; `affinity-slack` sweeps bounded affinity's slack.

use serde::{Deserialize, Serialize};

use super::sweep::Knob;
use super::{
    About, Cell, Chart, ChartSeries, Format, Group, Job, OneBatch, OneBatchStudy, Rank, RunSummary, SessionRun, Set,
    Study, StudyDef, StudyReport, report_head,
};
use crate::scenario::{self, Errors, HostKvSpec, RetentionSpec, RouterSpec, ScenarioError, Spec};
use crate::study::option::Text;

mod adaptive_tiering;
mod affinity_slack;
mod exec_learning;
mod forecast;
mod policies;
mod research;
mod sessions;
mod tiered_kv;
mod ttl_sweep;

pub use adaptive_tiering::*;
pub use affinity_slack::*;
pub use exec_learning::*;
pub use forecast::*;
pub use policies::*;
pub use research::*;
pub use sessions::*;
pub use tiered_kv::*;
pub use ttl_sweep::*;

/// How the agent studies describe the options they share (`option::described!`).
pub(crate) const HOST_KV: Text = Text {
    label: "Host tier",
    unit: "JSON: {capacity_gb, bandwidth_gbps, latency_ms} (used when the scenario has none)",
    help: "Host memory per worker and its link (host offload's tier; the workflows' prefetches)",
    bound: None,
};
pub(crate) const THRESHOLD: Text = Text {
    label: "Threshold",
    unit: "0 … 1",
    help: "The threshold plan fetches every role at least this likely to be needed",
    bound: None,
};
pub(crate) const DECAY: Text = Text {
    label: "Decay",
    unit: "0 < d ≤ 1",
    help: "The decayed model multiplies a role's learned row by d at each transition out of it",
    bound: None,
};
/// The forecast's horizon.
pub(crate) const HORIZON: Text =
    Text { label: "Horizon", unit: "steps, 1 … 16", help: "How many coming steps the forecast covers", bound: None };
/// A multi-step policy's horizon (the one-step row is the horizon of 1).
pub(crate) const MULTI_STEP_HORIZON: Text =
    Text { label: "Horizon", unit: "steps, 1 … 16", help: "How many coming steps the forecast covers", bound: None };

/// The studies that need a workflow (a front end gives a scenario without one the shipped example's).
pub const WORKFLOW_STUDIES: [&str; 7] = [
    ExecLearningStudy::ABOUT.name,
    <Threshold as Knob>::ABOUT.name,
    <Decay as Knob>::ABOUT.name,
    ForecastStudy::ABOUT.name,
    <Horizon as Knob>::ABOUT.name,
    <Budget as Knob>::ABOUT.name,
    ResearchStudy::ABOUT.name,
];
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
fn check_base(spec: &Spec, at: String) -> Result<crate::Scenario, ScenarioError> {
    let sc = scenario::validate(spec)?;
    if spec.workload.sessions.is_none() {
        return Err(ScenarioError::one(
            at,
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
            "pressure eviction: {} histories pushed out of HBM (by running turns, or past the retention budget); {:.0} % of history recomputed",
            s.pressure_evictions,
            recomputed * 100.0
        );
    }
    if s.host_hit_rate >= 0.2 && s.restore_p95_s >= 0.3 * s.turn_ttft_p95_s {
        return format!(
            "restore traffic: p95 restore wait {} of a p95 turn TTFT of {}",
            crate::metrics::secs(s.restore_p95_s),
            crate::metrics::secs(s.turn_ttft_p95_s)
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

/// The best row of `runs` whose last row is a bound (a clairvoyant, an oracle), and that bound: the fastest
/// of the others (the report's best row), the last set apart.
fn fastest_but_the_bound(rep: &mut StudyReport, runs: &[RunSummary]) {
    rep.best_row = fastest(&runs[..runs.len().saturating_sub(1)]);
    rep.bounds = runs.len().checked_sub(1).into_iter().collect();
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
