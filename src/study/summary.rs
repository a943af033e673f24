//! What a study keeps of one run: each figure declared once, beside where it is read off the run's `Report`
//! (`read_off!` makes the struct and its reader from one list), so a figure cannot be declared and left unset,
//! or set from the wrong place out of sight of its declaration. Small enough to send between workers and to
//! store in shard parts; exact (f64 round-trips).

use serde::{Deserialize, Serialize};

use crate::metrics::{PoolSummary, Report, SessionClassSummary, SessionsSummary, TieringSummary};

/// `struct Name(src: &Source) { field: Type = expression over src, … }`: the struct (every field `pub`, in
/// the order listed, which is its serialised order) and `Name::read(src)`, which sets each field to its
/// expression.
macro_rules! read_off {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($src:ident: &$from:ty) {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty = $e:expr, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            fn read($src: &$from) -> Self {
                $name { $( $field: $e, )* }
            }
        }
    };
}

read_off! {
    /// What a study keeps of one run.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct RunSummary(r: &Report) {
        /// The job's label (set by `from_report`).
        label: String = String::new(),
        gpus: u32 = r.gpus,
        requests: u64 = r.summary.requests,
        completed: u64 = r.summary.completed,
        rejected: u64 = r.summary.rejected,
        unfinished: u64 = r.summary.unfinished,
        preemptions: u64 = r.summary.preemptions,
        throughput_rps: f64 = r.summary.throughput_rps,
        goodput_rps: f64 = r.summary.goodput_rps,
        goodput_per_gpu_rps: f64 = r.summary.goodput_per_gpu_rps,
        slo_attainment: f64 = r.summary.slo_attainment,
        ttft_p50_s: f64 = r.summary.ttft_s.p50,
        ttft_p95_s: f64 = r.summary.ttft_s.p95,
        ttft_p99_s: f64 = r.summary.ttft_s.p99,
        tpot_p95_s: f64 = r.summary.tpot_s.p95,
        e2e_p95_s: f64 = r.summary.e2e_s.p95,
        e2e_mean_s: f64 = r.summary.e2e_s.mean,
        queue_delay_mean_s: f64 = r.summary.queue_delay_s.mean,
        kv_peak_fraction: f64 = r.summary.kv_peak_fraction,
        busy_fraction: f64 = r.engine.busy_fraction,
        /// Disaggregated: p95 transfer latency, busiest link's busy fraction, prefill and decode pool use.
        transfer_p95_s: Option<f64> = r.transfer.as_ref().map(|t| t.latency_s.p95),
        link_busy_max_fraction: Option<f64> = r.transfer.as_ref().map(|t| t.link_busy_max_fraction),
        prefill_busy_fraction: Option<f64> = pool(r, "prefill").map(|p| p.busy_fraction),
        decode_busy_fraction: Option<f64> = pool(r, "decode").map(|p| p.busy_fraction),
        decode_kv_peak_fraction: Option<f64> = pool(r, "decode").map(|p| p.kv_peak_fraction),
        /// Shared prefixes: hit rate and prefill tokens saved (and their share of all prompt tokens).
        prefix_hit_rate: Option<f64> = r.prefix.as_ref().map(|p| p.hit_rate),
        prefill_tokens_saved: Option<u64> = r.prefix.as_ref().map(|p| p.prefill_tokens_saved),
        prefill_saved_fraction: Option<f64> = saved_fraction(r),
        /// Completions per second in the steady-state window, whether the waiting queue grew there, and whether
        /// the run was stable (`SteadySummary::stable`: what sustained capacity is searched on).
        steady_throughput_rps: f64 = r.steady.throughput_rps,
        overloaded: bool = r.steady.overloaded,
        stable: bool = r.steady.stable,
        /// Completions meeting every SLO of their class per second in the steady-state window (beside
        /// `steady_throughput_rps`, like with like).
        steady_goodput_rps: f64 = r.steady.goodput_rps,
        /// Every percentile objective of the scenario met (true when it has none).
        percentiles_met: bool = r.objectives.percentiles.iter().all(|p| p.met),
        /// Each percentile objective's measured value, s, in the scenario's order.
        objective_values_s: Vec<f64> = r.objectives.percentiles.iter().map(|p| p.value_s).collect(),
        /// The run's own diagnosis.
        diagnosis_kind: String = r.diagnosis.kind.to_string(),
        diagnosis_verdict: String = r.diagnosis.verdict.clone(),
        /// Sessions: what the agent studies read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sessions: Option<SessionRun> = r.sessions.as_ref().map(|s| SessionRun::read(&(r, s))),
    }
}

impl RunSummary {
    pub fn from_report(label: &str, r: &Report) -> Self {
        RunSummary { label: label.to_string(), ..RunSummary::read(r) }
    }
}

/// A disaggregated run's pool of `role`.
fn pool<'a>(r: &'a Report, role: &str) -> Option<&'a PoolSummary> {
    r.pools.as_ref().and_then(|ps| ps.iter().find(|p| p.role == role))
}

/// The prefill tokens the prefix cache spared, as a share of all prompt tokens (those computed and spared).
fn saved_fraction(r: &Report) -> Option<f64> {
    let saved = r.prefix.as_ref()?.prefill_tokens_saved;
    let prompt_total = r.engine.prefill_tokens + saved;
    Some(if prompt_total > 0 { saved as f64 / prompt_total as f64 } else { 0.0 })
}

read_off! {
    /// A session run's figures (from the report's `sessions` section, and the replicas' busy shares).
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct SessionRun(rs: &(&Report, &SessionsSummary)) {
        turn_ttft_p95_s: f64 = rs.1.turn_ttft_s.p95,
        session_e2e_p95_s: f64 = rs.1.session_e2e_s.p95,
        slo_attainment: Option<f64> = rs.1.slo_attainment,
        reuse: f64 = rs.1.reuse,
        hbm_hit_rate: f64 = rs.1.kv.hbm_hit_rate,
        host_hit_rate: f64 = rs.1.kv.host_hit_rate,
        route_locality: f64 = rs.1.kv.route_locality,
        history_tokens: u64 = rs.1.history_tokens,
        recomputed_history_tokens: u64 = rs.1.recomputed_history_tokens,
        hbm_mean_gb: f64 = rs.1.kv.hbm_mean_gb,
        hbm_peak_gb: f64 = rs.1.kv.hbm_peak_gb,
        /// The most idle history one worker held at once, GB.
        hbm_worker_peak_gb: f64 = rs.1.kv.hbm_worker_peak_gb,
        hbm_gb_s: f64 = rs.1.kv.hbm_gb_s,
        host_mean_gb: f64 = rs.1.kv.host_mean_gb,
        ttl_evictions: u64 = rs.1.kv.ttl_evictions,
        pressure_evictions: u64 = rs.1.kv.pressure_evictions,
        restore_p95_s: f64 = rs.1.kv.restore_s.p95,
        failed_turns: u64 = rs.1.failed_turns,
        later_turns: u64 = rs.1.kv.later_turns,
        /// The busiest worker's busy fraction (a hot replica when far above the mean).
        busy_max_fraction: f64 = rs.0.replicas.iter().map(|x| x.busy_fraction).fold(0.0, f64::max),
        sessions: u64 = rs.1.sessions,
        turns: u64 = rs.1.turns,
        turn_ttft_p50_s: f64 = rs.1.turn_ttft_s.p50,
        host_peak_gb: f64 = rs.1.kv.host_peak_gb,
        host_evictions: u64 = rs.1.kv.host_evictions,
        ended_by_context: u64 = rs.1.ended_by_context,
        /// TTFT by turn index: (turn, p50, p95), turns 1 … 64.
        ttft_by_turn: Vec<(u32, f64, f64)> =
            rs.1.ttft_by_turn.iter().map(|t| (t.turn, t.ttft_p50_s, t.ttft_p95_s)).collect(),
        /// Retained KV over time: (t, HBM GB, host GB), at most 100 points (pairs of windows merged).
        kv_series: Vec<(f64, f64, f64)> =
            thin(rs.1.kv.series.iter().map(|p| (p.t_s, p.hbm_gb, p.host_gb)).collect(), 100),
        /// By session class, when the scenario names them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        classes: Vec<SessionClassRun> = rs.1.classes.iter().map(SessionClassRun::read).collect(),
        /// The tool gaps and the tiers chosen for them, when the scenario prices them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tiering: Option<TieringRun> = rs.1.tiering.as_ref().map(TieringRun::read),
        /// A workflow's forecasts and prefetches.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workflow: Option<crate::metrics::WorkflowSummary> = rs.1.workflow.clone(),
    }
}

read_off! {
    /// A run's tool gaps (from the report's `sessions.tiering`).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub struct TieringRun(t: &TieringSummary) {
        calls: u64 = t.calls,
        oracle_agreement: f64 = t.oracle_agreement,
        gap_cost_s: f64 = t.gap_cost_s,
        oracle_gap_cost_s: f64 = t.oracle_gap_cost_s,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mae_s: Option<f64> = t.mae_s,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pre_shift_mae_s: Option<f64> = t.pre_shift_mae_s,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        post_shift_mae_s: Option<f64> = t.post_shift_mae_s,
        /// The shifted tool's calls by start window: (t, mean gap) and, where calls had one, (t, mean estimate), s.
        gap_series: Vec<(f64, f64)> = t.series.iter().map(|p| (p.t_s, p.gap_s)).collect(),
        estimate_series: Vec<(f64, f64)> = t.series.iter().filter_map(|p| p.estimate_s.map(|e| (p.t_s, e))).collect(),
    }
}

read_off! {
    /// A session class's figures in a run (from the report's `sessions.classes`).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub struct SessionClassRun(c: &SessionClassSummary) {
        name: String = c.name.clone(),
        sessions: u64 = c.sessions,
        turn_ttft_p95_s: f64 = c.turn_ttft_s.p95,
        session_e2e_p95_s: f64 = c.session_e2e_s.p95,
        reuse: f64 = c.reuse,
        slo_attainment: Option<f64> = c.slo_attainment,
    }
}

/// At most `n` points: neighbours averaged in pairs (the first of each keeps its time) until they fit.
fn thin(mut v: Vec<(f64, f64, f64)>, n: usize) -> Vec<(f64, f64, f64)> {
    while v.len() > n {
        v = v
            .chunks(2)
            .map(|c| if let [a, b] = c { (a.0, (a.1 + b.1) / 2.0, (a.2 + b.2) / 2.0) } else { c[0] })
            .collect();
    }
    v
}
