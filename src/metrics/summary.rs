//! The figures a report is made of — summary, groups, replicas, pools, transfers, the prefix cache, the engine,
//! audits and series — as plain serialisable types (a leaf: the report's builders, the steady window and the
//! diagnosis read them).

use serde::Serialize;

use super::Stats;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub requests: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Of the rejected, those whose prompt + output exceeds the engine's `max_model_len`: absent when none.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub rejected_too_long: u64,
    pub failed: u64,
    pub unfinished: u64,
    /// From the first arrival to the end of the run.
    pub duration_s: f64,
    /// Realised arrival rate: (requests − 1) ÷ (last arrival − first arrival); 0 for a burst.
    pub offered_rate_rps: f64,
    /// Completed ÷ duration (the drain included: see `steady.throughput_rps` for the sustained rate).
    pub throughput_rps: f64,
    pub output_tokens_per_s: f64,
    pub total_tokens_per_s: f64,
    /// Completed requests meeting every SLO of their class, per second.
    pub goodput_rps: f64,
    /// Requests meeting every SLO of their class ÷ all requests (rejected and unfinished count as misses).
    pub slo_attainment: f64,
    pub goodput_per_gpu_rps: f64,
    pub kv_peak_fraction: f64,
    /// Time-weighted mean of KV blocks in use ÷ blocks, over the run.
    pub kv_mean_fraction: f64,
    /// Time-weighted mean sequences per step, over busy time.
    pub mean_batch_size: f64,
    pub preemptions: u64,
    pub little_relative_error: f64,
    pub ttft_s: Stats,
    pub tpot_s: Stats,
    pub itl_s: Stats,
    pub e2e_s: Stats,
    /// Arrival to first admission into a batch.
    pub queue_delay_s: Stats,
    /// E2E ÷ output tokens.
    pub normalized_latency_s_per_token: Stats,
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

impl Summary {
    /// The share of requests turned away — refused at admission or failed — of all requests (0 with none):
    /// capacity that sheds load is not capacity. A request longer than `max_model_len` is neither: it is
    /// refused at any load, so it counts on neither side.
    pub fn turned_away_share(&self) -> f64 {
        let servable = self.requests - self.rejected_too_long;
        let turned_away = self.rejected - self.rejected_too_long + self.failed;
        if servable > 0 { turned_away as f64 / servable as f64 } else { 0.0 }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupSummary {
    pub name: String,
    pub requests: u64,
    pub completed: u64,
    pub rejected: u64,
    pub failed: u64,
    pub unfinished: u64,
    pub slo_attainment: f64,
    pub goodput_rps: f64,
    pub ttft_s: Stats,
    pub tpot_s: Stats,
    pub e2e_s: Stats,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplicaSummary {
    pub replica: u32,
    pub steps: u64,
    pub busy_fraction: f64,
    pub kv_peak_fraction: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolSummary {
    pub role: &'static str,
    pub workers: u32,
    pub device: String,
    pub tp: u32,
    pub gpus: u32,
    pub kv_blocks_per_worker: u64,
    pub steps: u64,
    /// Busy time ÷ (workers × duration): the pool's utilisation.
    pub busy_fraction: f64,
    pub kv_peak_fraction: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferSummary {
    /// Transfers that arrived.
    pub transfers: u64,
    pub bytes: u64,
    pub links: u64,
    /// Handoff by prefill to arrival at the decode worker: link queueing + bytes ÷ bandwidth + latency.
    pub latency_s: Stats,
    /// Σ link busy time ÷ (links × duration).
    pub link_busy_fraction: f64,
    /// The busiest link's busy time ÷ duration.
    pub link_busy_max_fraction: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrefixSummary {
    /// Tokens shared per prefix (whole KV blocks).
    pub shared_tokens: u32,
    pub caching: bool,
    /// Requests whose prompt starts with a shared prefix.
    pub requests_with_prefix: u64,
    /// Admissions of such requests that found their prefix cached ÷ all requests.
    pub hit_rate: f64,
    pub lookups: u64,
    pub hits: u64,
    /// Prompt tokens not prefilled thanks to hits (= hits × shared_tokens).
    pub prefill_tokens_saved: u64,
    pub shared_kv_peak_blocks: u64,
    pub evictions: u64,
    /// Where the shared prefixes come from: absent for the scenario's prefix groups, `trace hash_ids` for a
    /// replayed trace's block hashes (then `shared_tokens` is the tokens of one hashed block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// A trace's hashes: prompt tokens not prefilled ÷ prompt tokens of the requests admitted (Mooncake's cache
    /// hit rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_hit_rate: Option<f64>,
}

/// How the engine spent its time: the evidence behind a diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineSummary {
    pub steps: u64,
    pub kv_capacity_tokens: u64,
    pub kv_blocks: u64,
    /// Busy time ÷ (replicas × duration).
    pub busy_fraction: f64,
    pub prefill_tokens: u64,
    pub decode_tokens: u64,
    pub compute_bound_step_fraction: f64,
    /// What stopped admission, as fractions of steps.
    pub limiter: LimiterShares,
    /// Σ of each cost part over all steps, seconds.
    pub cost_breakdown_s: CostBreakdown,
    pub mean_step_ms: f64,
    /// With a front end (`engine.frontend`): the busiest worker's front end's share of the run spent serving
    /// requests (the API server serves one at a time: near 1, it is what limits the rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_busy_max_fraction: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimiterShares {
    pub queue_empty: f64,
    pub max_seqs: f64,
    pub token_budget: f64,
    pub kv_reservation: f64,
    pub kv_free: f64,
    pub preemption: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostBreakdown {
    pub prefill_compute: f64,
    pub decode_compute: f64,
    pub weights: f64,
    pub kv_read: f64,
    pub comm: f64,
    pub overhead: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Audits {
    pub little: LittleAudit,
    pub conservation: Conservation,
    pub kv: KvAudit,
    pub ok: bool,
}

/// L (time-averaged number in system) against λ·W (admitted arrival rate × mean time in system).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LittleAudit {
    pub time_avg_in_system: f64,
    pub arrival_rate_rps: f64,
    pub mean_time_in_system_s: f64,
    pub relative_error: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Conservation {
    pub arrived: u64,
    pub completed: u64,
    pub rejected: u64,
    pub failed: u64,
    pub unfinished: u64,
    pub ok: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvAudit {
    /// Steps after which free + used == total and Σ held blocks == used were checked.
    pub checks: u64,
    pub violations: u64,
    pub ok: bool,
}

/// Windowed time series (means over each window).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub window_s: f64,
    pub t_s: Vec<f64>,
    pub waiting: Vec<f64>,
    pub running: Vec<f64>,
    pub kv_used_fraction: Vec<f64>,
    pub in_system: Vec<f64>,
    pub throughput_rps: Vec<f64>,
    pub output_tokens_per_s: Vec<f64>,
}

/// Tolerance of the Little's-law audit (relative error).
pub const LITTLE_TOLERANCE: f64 = 0.01;

/// Sustained capacity over seeds, in the arrival process's unit (req/s; sessions/s on a session scenario).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capacity {
    pub mean_rps: f64,
    /// The mean's 95 % interval over the seeds (Student t; a point for one seed), cut at 0.
    pub lo_rps: f64,
    pub hi_rps: f64,
    /// Each seed's estimate: the middle of its final bracket (the highest stable rate if none was unstable;
    /// 0 if none was stable).
    pub per_seed_rps: Vec<f64>,
    /// Runs simulated for it.
    pub runs: u32,
    /// Seeds whose search stopped before its bracket closed to the precision (max tries, or a bound reached).
    pub unconverged: u32,
}

impl Capacity {
    /// "22.95 req/s (95 % interval 22.71 – 23.19, 5 seeds)".
    pub fn words(&self, unit: &str) -> String {
        let seeds = self.per_seed_rps.len();
        if seeds < 2 {
            return format!("{:.2} {unit} (1 seed)", self.mean_rps);
        }
        format!("{:.2} {unit} (95 % interval {:.2} – {:.2}, {seeds} seeds)", self.mean_rps, self.lo_rps, self.hi_rps)
    }
}
