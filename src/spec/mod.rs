//! The user-facing scenario format (JSON). These types are *raw*: they mirror the file, carry defaults, and
//! reject unknown fields. Each domain builds its validated type from its part of a `Spec` with
//! [`Errors`] (`cost::Model::build`, `workload::Workload::build`, …), and [`crate::scenario::validate`]
//! assembles them into a `Scenario` or a list of errors naming each bad field. This module depends on no
//! other of the core's, so every domain may read it without a cycle.

mod error;
pub(crate) mod field;
mod strict;

pub(crate) use error::{Errors, suggest};
pub use error::{FieldError, ScenarioError};
pub use field::{
    AsNumber, Block, Bound, Declared, Field, Variants, bound_at, field_bound, plain, snake, variant_bound,
};
pub(crate) use field::{at, bounds, path_of, variant_bounds};
pub use strict::{json_kind, names_in_refusal, strict_json};

use serde::{Deserialize, Serialize};

/// A list of at most `N` entries, refused as it is read: a file listing five million classes used to be read
/// whole (gigabytes) before validation said at most 64 are allowed.
pub(crate) fn at_most<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    struct Bounded<T, const N: usize>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Bounded<T, N> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of at most {N} entries")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(N));
            while let Some(x) = seq.next_element()? {
                if v.len() == N {
                    return Err(serde::de::Error::custom(format!(
                        "at most {N} entries are allowed; the list has more"
                    )));
                }
                v.push(x);
            }
            Ok(v)
        }
    }
    d.deserialize_seq(Bounded::<T, N>(std::marker::PhantomData))
}

/// `at_most` for an optional list (absent and null are None).
fn at_most_opt<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
    d: D,
) -> Result<Option<Vec<T>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(bound = "T: Deserialize<'de>")]
    struct Wrap<T, const N: usize>(#[serde(deserialize_with = "at_most::<_, _, N>")] Vec<T>);
    Ok(Option::<Wrap<T, N>>::deserialize(d)?.map(|w| w.0))
}

/// Nanoseconds per second.
pub const NS_PER_S: f64 = 1e9;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: f64 = 1e6;

/// Seconds as integer nanoseconds (rounded).
pub(crate) fn s_to_ns(s: f64) -> u64 {
    (s * NS_PER_S).round() as u64
}

/// Milliseconds as integer nanoseconds (rounded).
pub(crate) fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS).round() as u64
}

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Free-text name, copied into reports.
    #[serde(default = "default_name")]
    pub name: String,
    /// Free-text description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Master seed; every random stream derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub model: ModelSpec,
    #[serde(default)]
    pub hardware: HardwareSpec,
    #[serde(default)]
    pub cost: CostSpec,
    #[serde(default)]
    pub engine: EngineSpec,
    #[serde(default)]
    pub estimator: EstimatorSpec,
    #[serde(default)]
    pub scheduler: SchedulerSpec,
    #[serde(default)]
    pub admission: AdmissionSpec,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub metrics: MetricsSpec,
    /// Shared prefixes and their reuse (prefix caching). Absent: no request shares a prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PrefixSpec>,
    /// Multiply the cost model's prefill, decode and KV-transfer times (sensitivity to profile error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_scale: Option<CostScaleSpec>,
    /// The attainment target and objectives on percentiles ("p95 TTFT ≤ 1 s"). Absent: a 99 % target and
    /// only the classes' per-request SLOs.
    #[serde(default, skip_serializing_if = "ObjectivesSpec::is_default")]
    pub objectives: ObjectivesSpec,
}

/// What "meeting the objectives" means for a run: a share of requests meeting their class's per-request SLOs
/// (`attainment_target`), and objectives on latency percentiles, as users write them.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectivesSpec {
    /// Share of requests that must meet every per-request SLO of their class, in (0, 1].
    pub attainment_target: f64,
    /// Objectives on percentiles, e.g. `{"metric": "ttft", "percentile": 95, "max_ms": 1000}`.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "at_most::<_, _, 64>")]
    pub percentiles: Vec<PercentileObjectiveSpec>,
}

impl Default for ObjectivesSpec {
    fn default() -> Self {
        ObjectivesSpec { attainment_target: 0.99, percentiles: vec![] }
    }
}

bounds!(ObjectivesSpec { attainment_target: Bound::OpenLo(0.0, 1.0) });

impl ObjectivesSpec {
    pub fn is_default(&self) -> bool {
        *self == ObjectivesSpec::default()
    }
}

/// "p`percentile` of `metric` ≤ `max_ms`", over every completed request or one class's.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PercentileObjectiveSpec {
    pub metric: LatencyMetric,
    /// In (0, 100]: 50 is the median, 100 the maximum.
    pub percentile: f64,
    pub max_ms: f64,
    /// A class name; absent: all completed requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

/// The per-request latencies an objective can bound.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first: (E2E − TTFT) ÷ (output tokens − 1).
    Tpot,
    /// End to end.
    E2e,
    /// Time from arrival to the first admission into a batch.
    QueueDelay,
}

impl LatencyMetric {
    /// How reports and the lab name it.
    pub fn label(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "TTFT",
            LatencyMetric::Tpot => "TPOT",
            LatencyMetric::E2e => "E2E",
            LatencyMetric::QueueDelay => "queue delay",
        }
    }
}

/// Multiplicative errors of the step-time profile: 1 is the model as fitted.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CostScaleSpec {
    /// Prefill compute.
    pub prefill: f64,
    /// Decode: its compute, weight reads and KV reads (the memory-bound part of a step).
    pub decode: f64,
    /// KV transfer time on the P/D link.
    pub transfer: f64,
}

impl Default for CostScaleSpec {
    fn default() -> Self {
        CostScaleSpec { prefill: 1.0, decode: 1.0, transfer: 1.0 }
    }
}

bounds!(CostScaleSpec {
    prefill: Bound::OpenLo(0.0, 100.0),
    decode: Bound::OpenLo(0.0, 100.0),
    transfer: Bound::OpenLo(0.0, 100.0),
});

/// Requests that start with one of K shared prefixes (a system prompt, a few-shot block, an agent's tools),
/// and whether the engine reuses their KV.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrefixSpec {
    /// Length of each shared prefix. Only whole KV blocks are shared, so it is rounded down to the block
    /// size; a request whose prompt is not longer than the shared part does not carry it.
    pub prefix_tokens: u32,
    /// Fraction of requests whose prompt starts with a shared prefix, [0, 1].
    pub reuse_fraction: f64,
    /// Number of distinct prefixes.
    #[serde(default = "one_u32")]
    pub groups: u32,
    /// Zipf exponent of prefix popularity (group k has weight 1 / k^s; 0 = uniform).
    #[serde(default = "one")]
    pub zipf_s: f64,
    /// Reuse cached prefix KV. False keeps the same requests but recomputes every prefix.
    #[serde(default = "yes")]
    pub caching: bool,
}

/// A shared prefix's length and the share of requests that carry one: the scenario's (`prefix`) and the P/D
/// study's options that stand in for it, written once.
pub const PREFIX_TOKENS: Bound = Bound::Int(0, MAX_TOKENS as u64);
pub const REUSE_FRACTION: Bound = Bound::Range(0.0, 1.0);

// `prefix_tokens` must also be below the longest prompt; validation checks that.
bounds!(PrefixSpec {
    prefix_tokens: PREFIX_TOKENS,
    reuse_fraction: REUSE_FRACTION,
    groups: Bound::Int(1, 1_000_000),
    zipf_s: Bound::Range(0.0, 10.0),
});

/// The longest request length (prompt or output tokens) a distribution may draw.
pub const MAX_TOKENS: u32 = 10_000_000;

fn default_name() -> String {
    "unnamed".into()
}
fn default_seed() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub arrival: ArrivalSpec,
    /// Number of requests to create (synthetic arrivals; for a trace, a cap on rows replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Stop creating requests after this many seconds of simulated time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Request classes with mix weights, length distributions and SLOs. Default: one class.
    #[serde(default = "default_classes", deserialize_with = "at_most::<_, _, 64>")]
    pub classes: Vec<ClassSpec>,
    /// Tenants with mix weights. Default: one tenant.
    #[serde(default = "default_tenants", deserialize_with = "at_most::<_, _, 1024>")]
    pub tenants: Vec<TenantSpec>,
    /// Multi-turn sessions: each arrival starts one (then `requests` counts sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsSpec>,
}

bounds!(WorkloadSpec { requests: Bound::Int(1, MAX_REQUESTS), duration_s: Bound::OpenLo(0.0, 1e8) });

/// The most requests a workload may create.
pub const MAX_REQUESTS: u64 = 50_000_000;

/// Multi-turn agent sessions: each open-loop arrival starts a session of `turns` turns. Turn k's prompt is the
/// session's whole history (every earlier turn's input and output) plus its new input; after a turn completes
/// a tool, drawn from `tools`, runs for its latency before the next turn arrives. Everything a session will do
/// is drawn when it starts, from its own stream.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionsSpec {
    /// Turns per session: a length distribution whose `tokens` are turns (not with a `trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<LengthSpec>,
    /// The first turn's prompt (system prompt and task), tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tokens: Option<LengthSpec>,
    /// Each later turn's new input (the tool's result and what follows), tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tokens: Option<LengthSpec>,
    /// Each turn's output, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<LengthSpec>,
    /// The tools a turn's end calls, picked by weight; none: the next turn follows at once.
    #[serde(default, deserialize_with = "at_most::<_, _, 64>", skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Recorded sessions to replay instead of drawing programs from the distributions above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<SessionTraceSpec>,
    /// What happens to a session's KV when a turn completes.
    #[serde(default, skip_serializing_if = "RetentionSpec::is_stateless")]
    pub retention: RetentionSpec,
    /// A tool whose latency changes part-way through the run (a non-stationary workload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<ToolShiftSpec>,
    /// A session meets its objective when every turn's TTFT and the whole session's time meet these.
    #[serde(default, skip_serializing_if = "SessionSloSpec::is_empty")]
    pub slo: SessionSloSpec,
    /// Session classes, picked by weight when a session starts: each may give its own turns, lengths, tools
    /// and objectives (what it leaves out it takes from the fields above) and the request class its turns
    /// are scheduled as. None: every session is of one class, the fields above.
    #[serde(default, deserialize_with = "at_most::<_, _, 64>", skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<SessionClassSpec>,
    /// Each session is a multi-agent workflow: its turns are steps of roles, each starting with its role's
    /// prompt prefix, the roles following a Markov chain; prefixes may be prefetched from host memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowSpec>,
}

/// A multi-agent workflow (planner, coder, tester, reviewer …): each step runs one role, whose static prompt
/// prefix (system prompt, tool schemas) every step of that role starts with; the next step's role follows a
/// first-order Markov chain, which may shift part-way through the run.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// The roles' names (at most 64).
    #[serde(deserialize_with = "at_most::<_, _, 64>")]
    pub roles: Vec<String>,
    /// Each role's prompt prefix, tokens (the same length for every role).
    pub prefix_tokens: u32,
    /// The first step's role; absent: the first of `roles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    /// For each role, the weights of the role that follows it (normalised; a role it does not name: 0).
    pub transitions: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
    /// From a time on, workflows that start follow other transitions (the rows given replace the old ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<WorkflowShiftSpec>,
    /// The HBM a worker's role prefixes may hold, as a share of all roles' prefixes (1: every role fits).
    #[serde(default = "one")]
    pub prefix_budget: f64,
    /// What the engine learns of the role sequence.
    #[serde(default, skip_serializing_if = "RolePredictorSpec::is_none")]
    pub predictor: RolePredictorSpec,
    /// How the forecast chooses the prefixes fetched from host memory ahead of the steps that need them.
    #[serde(default)]
    pub prefetch: PrefetchSpec,
    /// The K of the report's future-role recall@K (the distinct roles of a workflow's next K steps).
    #[serde(default = "three_u32")]
    pub recall_k: u32,
}

bounds!(WorkflowSpec {
    prefix_tokens: Bound::Int(1, 1_000_000),
    prefix_budget: Bound::Range(0.0, 1000.0),
    recall_k: Bound::Int(1, 64),
});

fn three_u32() -> u32 {
    3
}

/// From `at_s` on, workflows that start follow these transitions (a role not given keeps its row).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkflowShiftSpec {
    pub at_s: f64,
    pub transitions: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
}

bounds!(WorkflowShiftSpec { at_s: Bound::Range(0.0, 1e7) });

/// The model of the role sequence the engine learns, only from transitions it has seen (a step's role is
/// seen when the step arrives).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RolePredictorSpec {
    /// No model: nothing is prefetched (prefixes are cached as any shared prefix).
    #[default]
    None,
    /// Cumulative transition counts.
    Counts,
    /// Transition counts decayed by `decay` at each transition out of the same role (1: `counts`).
    Decayed { decay: f64 },
    /// Knows each workflow's coming roles: the bound on what a forecast can know.
    Clairvoyant,
}

variant_bounds!(RolePredictorSpec { Decayed { decay: Bound::OpenLo(0.0, 1.0) } });

impl RolePredictorSpec {
    pub fn is_none(&self) -> bool {
        *self == RolePredictorSpec::None
    }
}

/// Which prefixes a step's end fetches for its workflow's coming steps.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PrefetchSpec {
    /// Every role whose forecast probability of being needed within `horizon` steps is at least `threshold`.
    Threshold { threshold: f64, horizon: u32 },
    /// Every role whose expected prefill saved (its probability within `horizon` steps × the prefix's prefill
    /// time) passes the transfer's time and the forecast-weighted prefill of the prefix it evicts.
    Utility { horizon: u32 },
}

impl PrefetchSpec {
    /// The next step's roles at least as likely as not: the default.
    pub const NEXT: PrefetchSpec = PrefetchSpec::Threshold { threshold: 0.5, horizon: 1 };
}

impl Default for PrefetchSpec {
    fn default() -> Self {
        PrefetchSpec::NEXT
    }
}

variant_bounds!(PrefetchSpec {
    Threshold { threshold: Bound::Range(0.0, 1.0), horizon: Bound::Int(1, 16) },
    Utility { horizon: Bound::Int(1, 16) },
});

/// A kind of session (a quick fix, a refactor, a chat): its share of sessions and what sets it apart.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionClassSpec {
    pub name: String,
    /// Relative share of sessions (weights are normalised).
    #[serde(default = "one")]
    pub weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<LengthSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tokens: Option<LengthSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tokens: Option<LengthSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<LengthSpec>,
    /// The class's own tools (an empty list: none, the next turn follows at once); absent: the sessions'.
    #[serde(default, deserialize_with = "at_most_opt::<_, _, 64>", skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSpec>>,
    /// Each field it gives replaces the sessions' one.
    #[serde(default, skip_serializing_if = "SessionSloSpec::is_empty")]
    pub slo: SessionSloSpec,
    /// The request class (a `workload.classes` name) its turns are scheduled and reported as; absent: each
    /// session's is drawn from the class mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_class: Option<String>,
}

bounds!(SessionClassSpec { weight: Bound::Range(0.0, 1e9) });

/// A session trace (JSONL, one session a line; docs/scenario.md, "Session traces").
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionTraceSpec {
    /// Where the file is; front ends read it and put its text in `data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The trace's text. Shared, not copied, by the specs a study derives from this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<std::sync::Arc<str>>,
    #[serde(default)]
    pub format: SessionTraceFormat,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SessionTraceFormat {
    /// Detect from the first session: `turns` (InferScale's) or `steps` (inference-lab's).
    #[default]
    Auto,
    Inferscale,
    InferenceLab,
}

/// A session's objectives: each turn's time to first token, and the session's time from its first arrival to
/// its last token.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionSloSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_s: Option<f64>,
}

bounds!(SessionSloSpec { turn_ttft_ms: Bound::OpenLo(0.0, 1e9), session_s: Bound::OpenLo(0.0, 1e8) });

impl SessionSloSpec {
    pub fn is_empty(&self) -> bool {
        self.turn_ttft_ms.is_none() && self.session_s.is_none()
    }
}

/// A session's KV between its turns.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RetentionSpec {
    /// Freed: every turn recomputes its whole history.
    #[default]
    Stateless,
    /// Kept in HBM, on the worker that served the turn, until the session ends — an idle cache entry that
    /// pressure may evict (least recently used first) to make room for running requests: to the host tier
    /// (`engine.host_kv`) when there is one, else dropped.
    Retain,
    /// Kept in HBM for `ttl_s` seconds after each turn, then moved to the host tier (when there is one) or
    /// freed. Absent `ttl_s`: no expiry (`retain`); 0: at once (`stateless`, or `host_offload` with a host tier).
    Ttl {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_s: Option<f64>,
    },
    /// Moved to the host tier (`engine.host_kv`) as soon as the turn ends; the next turn restores it over the
    /// host link before its prefill.
    HostOffload,
    /// Sees the future: keeps the history in HBM exactly when its share of the worker's KV times the realised
    /// tool gap costs less than the cheaper of restoring it from the host tier and recomputing it; else takes
    /// that cheaper way. It pays the least gap price (docs/model.md) of any policy — a bound on that price,
    /// not on latency, and not a policy an engine can run.
    GapOracle,
    /// The gap oracle's rule on an estimate of the coming gap instead of the realised one: an exponentially
    /// weighted mean (weight `alpha`) of every tool call that has returned.
    Adaptive { alpha: f64 },
    /// As `adaptive`, with one estimate per tool (a tool not seen yet borrows the estimate over all tools).
    AdaptivePerTool { alpha: f64 },
}

/// A retention TTL, seconds: the scenario's (`ttl`'s `ttl_s`) and every study option that sets one, written once.
pub const TTL_S: Bound = Bound::Range(0.0, 1e7);
/// An estimate's smoothing weight (`adaptive`'s `alpha`): the scenario's and the studies' that sweep it.
pub const ALPHA: Bound = Bound::OpenLo(0.0, 1.0);

variant_bounds!(RetentionSpec {
    Ttl { ttl_s: TTL_S },
    Adaptive { alpha: ALPHA },
    AdaptivePerTool { alpha: ALPHA },
});

impl RetentionSpec {
    pub fn is_stateless(&self) -> bool {
        *self == RetentionSpec::Stateless
    }
}

/// From `at_s` on, every call of tool `tool` (a name of `tools`, or of the session trace's) takes `factor` times
/// as long as drawn; a call is after the shift when the turn that makes it ends at or after `at_s`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolShiftSpec {
    pub tool: String,
    pub at_s: f64,
    pub factor: f64,
}

bounds!(ToolShiftSpec { at_s: Bound::Range(0.0, 1e7), factor: Bound::OpenLo(0.0, 1000.0) });

/// A tool: its latency is lognormal with this mean and coefficient of variation (0: always the mean).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default = "one")]
    pub weight: f64,
    pub mean_s: f64,
    #[serde(default)]
    pub cv: f64,
}

bounds!(ToolSpec { weight: Bound::Range(0.0, 1e9), mean_s: Bound::Range(0.0, 1e6), cv: Bound::Range(0.0, 20.0) });

fn default_classes() -> Vec<ClassSpec> {
    vec![ClassSpec::default()]
}
fn default_tenants() -> Vec<TenantSpec> {
    vec![TenantSpec::default()]
}

/// How requests arrive: open loop (arrivals never wait for the system), or closed loop (each client waits for
/// its previous request).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ArrivalSpec {
    /// Poisson process: exponential gaps.
    Poisson { rate_rps: f64 },
    /// Evenly spaced arrivals.
    Constant { rate_rps: f64 },
    /// Gamma-distributed gaps with the given coefficient of variation (cv > 1 is burstier than Poisson).
    Gamma { rate_rps: f64, cv: f64 },
    /// On/off modulated Poisson: exponential on and off periods, a Poisson rate in each.
    OnOff {
        rate_on_rps: f64,
        #[serde(default)]
        rate_off_rps: f64,
        mean_on_s: f64,
        mean_off_s: f64,
    },
    /// Closed loop: `clients` clients each send a request at t = 0 and the next one `think_s` (mean of an
    /// exponential; 0: at once) after their previous one ends — vLLM's `--max-concurrency` with
    /// `--request-rate inf` is `think_s: 0`. Needs `workload.requests` (or a duration).
    ClosedLoop {
        clients: u32,
        #[serde(default)]
        think_s: f64,
    },
    /// Every request at t = 0 (a benchmark at `request_rate inf` without a concurrency cap).
    Burst {},
    /// Replay of a trace: original arrival times and token lengths.
    Trace {
        /// Where the trace file is; front ends read it and put its text in `data`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// The trace's text (CSV or JSONL). Shared, not copied, by the specs a study derives from this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<std::sync::Arc<str>>,
        #[serde(default)]
        format: TraceFormat,
        /// Multiply every gap by this (0.5 replays twice as fast).
        #[serde(default = "one")]
        time_scale: f64,
        /// Replay the trace's block hashes (Mooncake's `hash_ids`) into each worker's prefix cache: a request
        /// reuses the longest leading run of its blocks already cached. Ignored by traces without them.
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        reuse_hash_ids: bool,
        /// Tokens per hashed block (Mooncake's: 512).
        #[serde(default = "default_hash_block", skip_serializing_if = "is_default_hash_block")]
        hash_block_tokens: u32,
    },
}

/// The most requests (or sessions) per second an open-loop arrival process may offer.
pub const MAX_RATE_RPS: f64 = 1e7;

const PERIOD: &str = "a mean period; the generator walks the periods one by one";

variant_bounds!(ArrivalSpec {
    Poisson { rate_rps: Bound::OpenLo(0.0, MAX_RATE_RPS) },
    Constant { rate_rps: Bound::OpenLo(0.0, MAX_RATE_RPS) },
    Gamma { rate_rps: Bound::OpenLo(0.0, MAX_RATE_RPS), cv: Bound::Range(0.05, 20.0) },
    OnOff {
        rate_on_rps: Bound::Within(1e-6, MAX_RATE_RPS, "the arrival rate while on"),
        rate_off_rps: Bound::Range(0.0, MAX_RATE_RPS),
        mean_on_s: Bound::Within(1e-3, 1e6, PERIOD),
        mean_off_s: Bound::Within(1e-3, 1e6, PERIOD),
    },
    ClosedLoop {
        clients: Bound::Int(1, 1_000_000),
        think_s: Bound::Within(0.0, 1e6, "a client's mean pause between its requests"),
    },
    Trace { time_scale: Bound::OpenLo(0.0, 1e6), hash_block_tokens: Bound::Int(1, 1 << 20) },
});

fn is_true(x: &bool) -> bool {
    *x
}

fn default_hash_block() -> u32 {
    512
}

fn is_default_hash_block(x: &u32) -> bool {
    *x == 512
}

fn one() -> f64 {
    1.0
}

/// The column shapes of the public traces (see docs/scenario.md).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Detect from the header.
    #[default]
    Auto,
    /// `arrived_at` (s), `num_prefill_tokens`, `num_decode_tokens`.
    Vidur,
    /// `TIMESTAMP` (date time), `ContextTokens`, `GeneratedTokens`.
    Azure,
    /// `Timestamp` (s), `Request tokens`, `Response tokens` (response 0 = failed request, skipped).
    Burstgpt,
    /// JSONL: `timestamp` (ms), `input_length`, `output_length`.
    Mooncake,
}

/// A token-length distribution. Every sample is clamped to [1, max].
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LengthSpec {
    Fixed {
        tokens: u32,
    },
    Uniform {
        min: u32,
        max: u32,
    },
    /// Lognormal by its mean and coefficient of variation.
    Lognormal {
        mean: f64,
        cv: f64,
        #[serde(default = "default_len_max")]
        max: u32,
    },
    /// Geometric on {1, 2, …} by its mean (memoryless: the discrete exponential).
    Geometric {
        mean: f64,
        #[serde(default = "default_len_max")]
        max: u32,
    },
    /// Draw uniformly from these values (e.g. lengths taken from a trace).
    Empirical {
        values: Vec<u32>,
    },
    /// Replay these values in order: request i takes `values[i mod n]`. A class's prompt and output
    /// sequences of one length replay measured (input, output) pairs exactly (calibration's burst cases).
    /// Not for sessions, which draw their programs.
    Sequence {
        values: Vec<u32>,
    },
}

fn default_len_max() -> u32 {
    16_384
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    #[serde(default = "default_class_name")]
    pub name: String,
    /// Relative share of requests (weights are normalised).
    #[serde(default = "one")]
    pub weight: f64,
    /// 0 is the most urgent; used by the priority scheduler and the lowest-priority preemption victim.
    #[serde(default)]
    pub priority: u32,
    #[serde(default = "default_prompt")]
    pub prompt_tokens: LengthSpec,
    #[serde(default = "default_output")]
    pub output_tokens: LengthSpec,
    #[serde(default)]
    pub slo: SloSpec,
}

bounds!(ClassSpec { weight: Bound::Range(0.0, 1e9), priority: Bound::Int(0, 1000) });

fn default_class_name() -> String {
    "default".into()
}
fn default_prompt() -> LengthSpec {
    LengthSpec::Lognormal { mean: 1024.0, cv: 1.0, max: 8192 }
}
fn default_output() -> LengthSpec {
    LengthSpec::Lognormal { mean: 256.0, cv: 1.0, max: 4096 }
}

impl Default for ClassSpec {
    fn default() -> Self {
        ClassSpec {
            name: default_class_name(),
            weight: 1.0,
            priority: 0,
            prompt_tokens: default_prompt(),
            output_tokens: default_output(),
            slo: SloSpec::default(),
        }
    }
}

/// Latency objectives of a class. An absent field is not checked.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SloSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// End-to-end deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
}

bounds!(SloSpec {
    ttft_ms: Bound::OpenLo(0.0, 1e9),
    tpot_ms: Bound::OpenLo(0.0, 1e9),
    e2e_ms: Bound::OpenLo(0.0, 1e9)
});

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    #[serde(default = "default_tenant_name")]
    pub name: String,
    #[serde(default = "one")]
    pub weight: f64,
    /// Token-bucket admission: refill rate for this tenant (overrides the admission block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_tokens_per_s: Option<f64>,
    /// Token-bucket admission: bucket size for this tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_tokens: Option<f64>,
}

bounds!(TenantSpec {
    weight: Bound::Range(0.0, 1e9),
    rate_tokens_per_s: Bound::OpenLo(0.0, 1e12),
    burst_tokens: Bound::Range(1.0, 1e12),
});

fn default_tenant_name() -> String {
    "default".into()
}

impl Default for TenantSpec {
    fn default() -> Self {
        TenantSpec { name: default_tenant_name(), weight: 1.0, rate_tokens_per_s: None, burst_tokens: None }
    }
}

/// The model: a preset, optionally with fields overridden, or every field given.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Parameters, billions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_b: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u32>,
    /// Bytes per weight (2 for BF16, 1 for FP8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_param: Option<f64>,
    /// Bytes per KV-cache element (2 for BF16, 1 for FP8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_bytes_per_elem: Option<f64>,
    /// Mixture of experts (absent: dense, or the preset's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<MoeSpec>,
    /// The longest sequence the model takes, tokens (its `max_position_embeddings`; a preset's by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u32>,
}

bounds!(ModelSpec {
    params_b: Bound::OpenLo(0.0, 10_000.0),
    layers: Bound::Int(1, 1000),
    hidden: Bound::Int(1, 1 << 20),
    heads: Bound::Int(1, 1024),
    kv_heads: Bound::Int(1, 1024),
    head_dim: Bound::Int(1, 4096),
    bytes_per_param: Bound::Range(0.25, 8.0),
    kv_bytes_per_elem: Bound::Range(0.25, 8.0),
    context_tokens: Bound::Int(1, MOST_CONTEXT_TOKENS as u64),
});

/// The longest context a model may declare, tokens: also `engine.max_model_len`'s limit for a model without one.
pub const MOST_CONTEXT_TOKENS: u32 = 100_000_000;

/// A mixture-of-experts model: `experts` expert FFNs per layer holding `expert_params_b` of the parameters
/// between them, `experts_per_token` of them run for each token.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MoeSpec {
    pub experts: u32,
    pub experts_per_token: u32,
    /// Parameters in all experts together, billions (the rest — attention, embeddings, router — is dense).
    pub expert_params_b: f64,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            preset: Some("llama-3-8b".into()),
            params_b: None,
            layers: None,
            hidden: None,
            heads: None,
            kv_heads: None,
            head_dim: None,
            bytes_per_param: None,
            kv_bytes_per_elem: None,
            moe: None,
            context_tokens: None,
        }
    }
}

/// The device and its efficiency: a preset, optionally with fields overridden.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Tensor-parallel degree: GPUs per replica.
    #[serde(default = "one_u32")]
    pub tp: u32,
    /// Dense BF16 peak per GPU, TFLOP/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_tflops: Option<f64>,
    /// HBM bandwidth per GPU, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_bandwidth_gbps: Option<f64>,
    /// HBM capacity per GPU, GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hbm_gb: Option<f64>,
    /// GPU-to-GPU bandwidth used by tensor-parallel all-reduce, GB/s per GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interconnect_gbps: Option<f64>,
    /// Model-FLOPs utilisation reached by real kernels (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    /// Fraction of peak bandwidth reached reading weights (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_bw_efficiency: Option<f64>,
    /// Fraction of peak bandwidth reached reading the KV cache in attention (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_bw_efficiency: Option<f64>,
    /// How much of the smaller of compute and memory time fails to overlap with the larger, [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_penalty: Option<f64>,
    /// Fixed time added to every step (scheduling, kernel launch), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_overhead_ms: Option<f64>,
    /// Latency of one all-reduce, µs (tensor parallelism only); default 2.6 + 1.1 · log2(tp), fitted to a
    /// published H100 measurement (docs/model.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allreduce_latency_us: Option<f64>,
    /// The share of `interconnect_gbps` an all-reduce of a step's activations reaches (tensor parallelism
    /// only); default fitted to the same measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allreduce_bw_efficiency: Option<f64>,
    /// Large messages (NCCL's ring or NVLink SHARP): latency of one all-reduce, µs; default 29, fitted to
    /// published H100 NCCL times of 2–64 MiB messages (docs/model.md). An all-reduce takes the faster of the
    /// small-message and the large-message line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allreduce_large_latency_us: Option<f64>,
    /// Large messages: the share of `interconnect_gbps` reached as bus bandwidth; default 0.79 (fitted to the
    /// same measurement: 355 GB/s of NVLink's 450).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allreduce_large_bw_efficiency: Option<f64>,
}

fn one_u32() -> u32 {
    1
}

// Physical bounds: below them a single step would outlast the 584-year nanosecond clock, or the figure
// describes no device; above them, none that exists. Validation checks the figures as they will run (a preset's
// where not given).
bounds!(HardwareSpec {
    tp: Bound::Int(1, 64),
    peak_tflops: Bound::Within(0.01, 1e5, "dense TFLOPS per GPU; a step's compute time is its FLOPs divided by this"),
    hbm_bandwidth_gbps: Bound::Within(
        1.0,
        1e5,
        "memory bandwidth per GPU; every decode step reads the weights through it"
    ),
    hbm_gb: Bound::Within(0.1, 1e4, "memory per GPU for weights and KV"),
    interconnect_gbps: Bound::Within(0.01, 1e5, "tensor-parallel all-reduce bandwidth per GPU"),
    mfu: Bound::Within(0.01, 1.0, SHARE),
    weight_bw_efficiency: Bound::Within(0.01, 1.0, SHARE),
    kv_bw_efficiency: Bound::Within(0.01, 1.0, SHARE),
    overlap_penalty: Bound::Range(0.0, 1.0),
    step_overhead_ms: Bound::Range(0.0, 10_000.0),
    allreduce_latency_us: Bound::Range(0.0, 1e6),
    allreduce_bw_efficiency: Bound::Within(0.001, 1.0, "a share of hardware.interconnect_gbps"),
    allreduce_large_latency_us: Bound::Range(0.0, 1e6),
    allreduce_large_bw_efficiency: Bound::Within(0.001, 1.0, "a share of hardware.interconnect_gbps"),
});

const SHARE: &str = "a share of the datasheet figure; below 1 % the roofline describes no real engine";

impl Default for HardwareSpec {
    fn default() -> Self {
        HardwareSpec {
            device: Some("a100-80g".into()),
            tp: 1,
            peak_tflops: None,
            hbm_bandwidth_gbps: None,
            hbm_gb: None,
            interconnect_gbps: None,
            mfu: None,
            weight_bw_efficiency: None,
            kv_bw_efficiency: None,
            overlap_penalty: None,
            step_overhead_ms: None,
            allreduce_latency_us: None,
            allreduce_bw_efficiency: None,
            allreduce_large_latency_us: None,
            allreduce_large_bw_efficiency: None,
        }
    }
}

/// Which step-time model to use.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CostSpec {
    /// From model and hardware figures (compute vs memory time per step).
    #[default]
    Roofline,
    /// step = base + per_seq × batch + per_prefill_token × prefill tokens + per_kv_token × context tokens.
    Linear {
        #[serde(default)]
        base_ms: f64,
        #[serde(default)]
        per_seq_ms: f64,
        #[serde(default)]
        per_prefill_token_ms: f64,
        #[serde(default)]
        per_kv_token_ms: f64,
    },
}

/// The engine's limits. Defaults: `impl Default` below (the one place they are written); bounds: `bounds!`
/// after it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSpec {
    /// Most sequences in one batch.
    pub max_num_seqs: u32,
    /// Token budget per step (decode tokens + prefill chunk tokens).
    pub max_num_batched_tokens: u32,
    /// Split long prompts across steps and mix them with decodes.
    pub chunked_prefill: bool,
    /// Largest prefill chunk of one request in one step; default the token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_chunk_tokens: Option<u32>,
    /// Tokens per KV block.
    pub block_size_tokens: u32,
    /// Fraction of device memory the engine may use (weights + KV).
    pub gpu_memory_utilization: f64,
    /// KV capacity per replica, tokens; overrides the memory-derived figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_capacity_tokens: Option<u64>,
    /// Admission lets Σ reservations (prompt + predicted output) reach this multiple of KV capacity.
    pub kv_oversubscription: f64,
    pub preemption: PreemptionSpec,
    /// Time from a request's arrival until it reaches the scheduler's queue, ms: the serving stack's own work
    /// per request (HTTP, tokenising), counted in TTFT and E2E.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub request_overhead_ms: f64,
    /// The serving front end: one process per replica that parses and tokenises requests one at a time
    /// before the scheduler sees them (vLLM 0.5.x's API server). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontend: Option<FrontendSpec>,
    /// The host (CPU) work of a step besides the GPU's: scheduling, preparing the inputs, sampling and
    /// detokenising, which grow with the batch's sequences; hidden behind the GPU step when the engine overlaps
    /// them (vLLM V1's async scheduling, SGLang's overlap scheduler). Absent: none. Roofline cost only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_cpu: Option<StepCpuSpec>,
    /// Longest request served (prompt + output tokens); longer ones are refused at arrival, as vLLM refuses a
    /// request past its `max_model_len`. Absent: the model's context (`model.context_tokens`, vLLM's default), or no
    /// limit for a model without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u32>,
    /// A host-memory tier for sessions' KV (vLLM's `--kv-offloading-size`, SGLang's HiCache), per worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_kv: Option<HostKvSpec>,
    /// Most KV blocks per worker that sessions' retained history — idle in HBM between turns — may hold; past
    /// it the least recently used idle history moves to the host tier or is freed, and a history larger than
    /// the budget is not kept at all (each a budget eviction). A running turn's history is its working KV and
    /// does not count. Absent: only HBM pressure bounds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_budget_blocks: Option<u64>,
    /// How a step is formed from the running requests and the queue: which engine's scheduler to mimic.
    #[serde(default, skip_serializing_if = "BatchFormationSpec::is_vllm")]
    pub batch_formation: BatchFormationSpec,
    /// Stop the run at this simulated time; requests still in the system are reported unfinished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon_s: Option<f64>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn yes() -> bool {
    true
}

impl Default for EngineSpec {
    fn default() -> Self {
        EngineSpec {
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            chunked_prefill: true,
            prefill_chunk_tokens: None,
            block_size_tokens: 16,
            gpu_memory_utilization: 0.9,
            kv_capacity_tokens: None,
            kv_oversubscription: 1.0,
            preemption: PreemptionSpec::default(),
            request_overhead_ms: 0.0,
            frontend: None,
            step_cpu: None,
            max_model_len: None,
            batch_formation: BatchFormationSpec::Vllm,
            host_kv: None,
            retention_budget_blocks: None,
            horizon_s: None,
        }
    }
}

// `prefill_chunk_tokens` (≤ the token budget) and `max_model_len` (≤ the model's context) are bounded by other
// fields; validation checks them.
bounds!(EngineSpec {
    max_num_seqs: Bound::Int(1, 65_536),
    max_num_batched_tokens: Bound::Int(1, 1 << 22),
    block_size_tokens: Bound::Int(1, 4096),
    gpu_memory_utilization: Bound::OpenLo(0.0, 1.0),
    kv_capacity_tokens: Bound::Int(1, 1 << 40),
    kv_oversubscription: Bound::Range(0.1, 100.0),
    request_overhead_ms: Bound::Range(0.0, 1e6),
    retention_budget_blocks: Bound::Int(0, 1 << 40),
    horizon_s: Bound::OpenLo(0.0, 1e8),
});

/// A FIFO server per replica ahead of the scheduler: each request occupies it for `per_request_ms` plus
/// `per_prompt_token_us` per prompt token, so in a burst the first token's floor grows with the burst.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FrontendSpec {
    #[serde(default)]
    pub per_request_ms: f64,
    #[serde(default)]
    pub per_prompt_token_us: f64,
}

bounds!(FrontendSpec { per_request_ms: Bound::Range(0.0, 1e4), per_prompt_token_us: Bound::Range(0.0, 1e4) });

/// A step's host work: `per_step_us` + `per_seq_us` × the step's sequences. Not overlapped, it adds to the GPU
/// step; overlapped, the step takes the longer of the two (the CPU prepares step n + 1 while the GPU runs n).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepCpuSpec {
    #[serde(default)]
    pub per_step_us: f64,
    #[serde(default)]
    pub per_seq_us: f64,
    #[serde(default)]
    pub overlapped: bool,
}

bounds!(StepCpuSpec { per_step_us: Bound::Range(0.0, 1e6), per_seq_us: Bound::Range(0.0, 1e5) });

/// A worker's host-memory KV tier and the link between it and HBM (PCIe, or NVLink-C2C on a superchip).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostKvSpec {
    /// Host memory for KV per worker, GB (10^9 bytes).
    pub capacity_gb: f64,
    /// GB/s of the host-to-HBM direction; restores queue on it one at a time.
    pub bandwidth_gbps: f64,
    /// Fixed latency of a restore, ms (added once the bytes are sent; does not occupy the link).
    #[serde(default)]
    pub latency_ms: f64,
}

bounds!(HostKvSpec {
    capacity_gb: Bound::OpenLo(0.0, 1e5),
    bandwidth_gbps: Bound::Within(
        1e-3,
        1e4,
        "a restore takes bytes ÷ bandwidth; below 1 MB/s one outlasts the simulated clock"
    ),
    latency_ms: Bound::Range(0.0, 1e4),
});

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PreemptionSpec {
    pub victim: VictimSpec,
    /// A preempted request waits backoff × 2^(n−1) before it may be scheduled again, ms.
    pub backoff_ms: f64,
    /// A request preempted more than this many times fails.
    pub max_preemptions: u32,
    /// vLLM's formations: a victim's full blocks stay cached, as vLLM's prefix caching keeps a freed block's
    /// hash until the block is reused, so its readmission recomputes only what allocations took meanwhile.
    /// Off with prefix caching off (`prefix.caching`), and on SGLang's formations, whose retraction recomputes.
    pub reuse_freed_blocks: bool,
}

impl Default for PreemptionSpec {
    fn default() -> Self {
        PreemptionSpec { victim: VictimSpec::default(), backoff_ms: 0.0, max_preemptions: 16, reuse_freed_blocks: true }
    }
}

bounds!(PreemptionSpec { backoff_ms: Bound::Range(0.0, 1e6), max_preemptions: Bound::Int(0, 10_000) });

/// How a step's batch is formed (docs/model.md, "Batch formation", has each engine's source).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BatchFormationSpec {
    /// vLLM V1: the running requests first, in admission order (a decode token each, or a prompt's next
    /// chunk), then waiting prompts, all in one mixed step under the token budget.
    #[default]
    Vllm,
    /// SGLang's default: a step that can prefill (the chunked prompt's next chunk, then waiting prompts)
    /// prefills only, and decoding pauses for it; otherwise every running request decodes.
    Sglang,
    /// SGLang with `--enable-mixed-chunk`: every running request decodes, and prompts' chunks fill the rest
    /// of the token budget in the same step.
    SglangMixed,
}

impl BatchFormationSpec {
    pub fn is_vllm(&self) -> bool {
        *self == BatchFormationSpec::Vllm
    }
}

/// Which running request gives up its KV when memory runs out.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VictimSpec {
    /// The most recently admitted (vLLM's choice).
    #[default]
    Newest,
    /// The one with the least work done (fewest prefilled + generated tokens).
    LeastProgress,
    /// The least urgent class (highest priority number), newest among equals.
    LowestPriority,
}

/// Output-length prediction: one channel orders the queue, the other reserves memory.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EstimatorSpec {
    #[serde(default = "default_order_est")]
    pub order: PredictorSpec,
    #[serde(default = "default_reserve_est")]
    pub reserve: PredictorSpec,
}

fn default_order_est() -> PredictorSpec {
    PredictorSpec::Oracle
}
fn default_reserve_est() -> PredictorSpec {
    PredictorSpec::ClassMean
}

impl Default for EstimatorSpec {
    fn default() -> Self {
        EstimatorSpec { order: default_order_est(), reserve: default_reserve_est() }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PredictorSpec {
    /// The true output length.
    Oracle,
    /// True length × exp(σ·z), z standard normal drawn at creation (median-unbiased).
    Lognormal { sigma: f64 },
    /// The mean of the request's class output distribution.
    ClassMean,
    /// Predict zero: reserve only the prompt (vLLM's on-demand allocation).
    Zero,
}

/// Order of the waiting queue.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerSpec {
    #[default]
    Fcfs,
    /// Shortest predicted output first (order-channel prediction).
    Sjf,
    /// Shortest prompt first.
    Spf,
    /// Earliest end-to-end deadline first (arrival + class e2e SLO).
    Edf,
    /// Class priority, then arrival.
    Priority,
    /// Deficit round robin across tenants; a request costs prompt + predicted output tokens.
    Drr {
        #[serde(default = "default_quantum")]
        quantum_tokens: u32,
    },
}

fn default_quantum() -> u32 {
    2048
}

variant_bounds!(SchedulerSpec { Drr { quantum_tokens: Bound::Int(1, 100_000_000) } });

/// Which arrivals are turned away.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdmissionSpec {
    #[default]
    None,
    /// Reject when the target queue already holds this many waiting requests.
    QueueCap { max_waiting: u32 },
    /// Reject when the estimated completion misses the class e2e deadline.
    Deadline {
        /// Reject only when the estimate exceeds the deadline by this factor (1 = at once).
        #[serde(default = "one")]
        slack: f64,
    },
    /// Reject when the estimated first token, time per token or completion misses the class's TTFT, TPOT or
    /// e2e objective, the queue ahead estimated to drain at the rate requests have been completing and tokens
    /// to come at the measured step time.
    Feasible {
        /// Reject only when an estimate exceeds its objective by this factor (1 = at once).
        #[serde(default = "one")]
        slack: f64,
    },
    /// Drop each arrival with this probability (drawn at creation).
    RandomDrop { probability: f64 },
    /// Per-tenant token bucket on prompt + predicted output tokens.
    TokenBucket { rate_tokens_per_s: f64, burst_tokens: f64 },
}

variant_bounds!(AdmissionSpec {
    QueueCap { max_waiting: Bound::Int(1, 1_000_000_000) },
    Deadline { slack: Bound::Range(0.1, 100.0) },
    Feasible { slack: Bound::Range(0.1, 100.0) },
    RandomDrop { probability: Bound::Range(0.0, 1.0) },
    TokenBucket { rate_tokens_per_s: Bound::OpenLo(0.0, 1e12), burst_tokens: Bound::Range(1.0, 1e12) },
});

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSpec {
    pub replicas: u32,
    pub router: RouterSpec,
    /// Prefill/decode disaggregation: separate pools joined by a KV-transfer link. When given, `replicas`
    /// and `router` above are not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disaggregation: Option<DisaggSpec>,
}

/// Workers of a colocated cluster or of a P/D pool: the scenario's bound, and the fleet planner's on the units it
/// tries (a unit of P/D pools multiplies both), written once.
pub const REPLICAS: Bound = Bound::Int(1, MOST_REPLICAS as u64);
pub const MOST_REPLICAS: u32 = 4096;

bounds!(ClusterSpec { replicas: REPLICAS });

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec { replicas: 1, router: RouterSpec::default(), disaggregation: None }
    }
}

/// Prefill and decode on separate workers.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DisaggSpec {
    pub prefill: PoolSpec,
    pub decode: PoolSpec,
    pub link: LinkSpec,
}

/// One pool of identical workers.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    #[serde(default = "one_u32")]
    pub replicas: u32,
    /// The pool's device preset; absent: the scenario's `hardware` (with its overrides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// GPUs per worker; absent: `hardware.tp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    /// How requests pick a worker in this pool (central_queue is not available for pools).
    #[serde(default)]
    pub router: RouterSpec,
}

bounds!(PoolSpec { replicas: REPLICAS });

/// The interconnect that carries prompt KV from prefill to decode workers.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// GB/s (10^9 bytes per second) of one link.
    pub bandwidth_gbps: f64,
    /// Fixed latency of a transfer, ms (added once the bytes are sent; does not occupy the link).
    #[serde(default)]
    pub latency_ms: f64,
    #[serde(default)]
    pub topology: LinkTopology,
}

bounds!(LinkSpec {
    bandwidth_gbps: Bound::Within(
        1e-3,
        1e12,
        "a KV transfer takes bytes ÷ bandwidth; below 1 MB/s one outlasts the simulated clock"
    ),
    latency_ms: Bound::Range(0.0, 1e6),
});

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LinkTopology {
    /// One link per (prefill worker, decode worker) pair.
    #[default]
    PerPair,
    /// One link shared by every transfer.
    Shared,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RouterSpec {
    #[default]
    RoundRobin,
    Random,
    /// Fewest waiting + running requests.
    LeastOutstanding,
    /// Lowest KV-cache use.
    LeastKv,
    /// Two random replicas, the one with fewer outstanding requests.
    PowerOfTwo,
    /// One shared queue; the first replica with room takes the next request.
    CentralQueue,
    /// A session's later turns go to the worker that served its previous turn (where its KV is); first
    /// turns and requests outside sessions go to the fewest outstanding requests.
    Sticky,
    /// A session's turn stays on its previous worker unless that worker's estimated queue penalty exceeds
    /// the least-loaded worker's by more than `slack_ms`; then it goes to the least-loaded one. 0: pure load
    /// balancing (ties stay); very large: sticky.
    BoundedAffinity {
        slack_ms: f64,
    },
}

variant_bounds!(RouterSpec { BoundedAffinity { slack_ms: Bound::Range(0.0, 1e9) } });

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSpec {
    /// About how many points the time series should have.
    pub series_points: u32,
    /// Share of the arrival span, from the first arrival, left out of the steady-state window as warm-up.
    /// The window ends at the last arrival, so the drain is left out too.
    #[serde(skip_serializing_if = "is_default_warmup")]
    pub warmup_fraction: f64,
}

fn is_default_warmup(x: &f64) -> bool {
    *x == MetricsSpec::default().warmup_fraction
}

impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec { series_points: 200, warmup_fraction: 0.1 }
    }
}

bounds!(MetricsSpec { series_points: Bound::Int(10, 5000), warmup_fraction: Bound::Range(0.0, 0.9) });

/// Every block whose fields declare their bounds, at its path in the file. docs/scenario.md's tables and the
/// lab's controls are tested against these; a new block is listed here once.
pub fn declared_blocks() -> Vec<Block> {
    vec![
        Block::required::<WorkloadSpec>("workload"),
        Block::with_defaults::<ModelSpec>("model"),
        Block::with_defaults::<HardwareSpec>("hardware"),
        Block::with_defaults::<EngineSpec>("engine"),
        Block::with_defaults::<PreemptionSpec>("engine.preemption"),
        Block::with_defaults::<FrontendSpec>("engine.frontend"),
        Block::with_defaults::<StepCpuSpec>("engine.step_cpu"),
        Block::required::<HostKvSpec>("engine.host_kv"),
        Block::with_defaults::<ClusterSpec>("cluster"),
        Block::required::<PoolSpec>("cluster.disaggregation.prefill"),
        Block::required::<PoolSpec>("cluster.disaggregation.decode"),
        Block::required::<LinkSpec>("cluster.disaggregation.link"),
        Block::with_defaults::<MetricsSpec>("metrics"),
        Block::with_defaults::<CostScaleSpec>("cost_scale"),
        Block::required::<PrefixSpec>("prefix"),
        Block::with_defaults::<ObjectivesSpec>("objectives"),
    ]
}
