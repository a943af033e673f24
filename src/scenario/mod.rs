//! Scenario: the one place where defaults and validation live.
//!
//! Two steps, as in ripgrep's low/high args: [`parse`] reads JSON into a raw [`Spec`] (serde, unknown fields
//! rejected with a suggestion), then [`validate`] checks every field once and derives the typed [`Scenario`]
//! the engine runs. Nothing downstream re-checks user input.
//!
//! Architecture invariant: a `Scenario` that exists is runnable — a lone request of the largest possible size
//! fits in KV and in the token budget, so every run makes progress.

mod error;
pub mod presets;
pub mod spec;

pub use error::{FieldError, ScenarioError};
pub use spec::*;

use crate::cost::{CostModel, Linear, Roofline};
use crate::workload::{self, LengthDist, TraceRow};
pub(crate) use error::Errors;
use error::suggest;

/// Nanoseconds per second.
pub const NS_PER_S: f64 = 1e9;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: f64 = 1e6;

/// Read a scenario file's text into a raw spec.
pub fn parse(text: &str) -> Result<Spec, ScenarioError> {
    // Editors on some systems save UTF-8 with a byte-order mark; it is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let de = &mut serde_json::Deserializer::from_str(text);
    let spec: Spec = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = match e.path().to_string() {
            p if p == "." || p.is_empty() => "(root)".to_string(),
            p => p,
        };
        ScenarioError::one(path, with_suggestion(&e.inner().to_string()))
    })?;
    de.end().map_err(|e| ScenarioError::one("(root)", e.to_string()))?;
    Ok(spec)
}

/// Parse then validate.
pub fn load(text: &str) -> Result<Scenario, ScenarioError> {
    validate(&parse(text)?)
}

/// serde says "unknown field `x`, expected one of `a`, `b`"; add "did you mean `a`?" when one is close.
/// Its type errors ("invalid type: string \"\", expected f64 at line 1 column 429") are said in the user's
/// words: "expected a number, got the text \"\" (line 1, column 429)".
fn with_suggestion(msg: &str) -> String {
    if let Some(rest) = msg.strip_prefix("invalid type: ").or_else(|| msg.strip_prefix("invalid value: ")) {
        return plain_type_error(rest);
    }
    if !(msg.starts_with("unknown field") || msg.starts_with("unknown variant")) {
        return msg.to_string();
    }
    let words: Vec<&str> = msg.split('`').skip(1).step_by(2).collect();
    match words.split_first() {
        Some((bad, candidates)) => match suggest(bad, candidates.iter().copied()) {
            Some(s) => format!("{msg}; did you mean `{s}`?"),
            None => msg.to_string(),
        },
        None => msg.to_string(),
    }
}

/// "string \"\", expected f64 at line 1 column 429" → "expected a number, got the text \"\" (line 1, column 429)".
fn plain_type_error(rest: &str) -> String {
    let (body, at) = match rest.rfind(" at line ") {
        Some(i) => (&rest[..i], rest[i + 4..].replacen(" column ", ", column ", 1)),
        None => (rest, String::new()),
    };
    let Some((got, expected)) = body.split_once(", expected ") else { return rest.to_string() };
    let expected = match expected {
        "f64" | "f32" => "a number",
        "u64" | "u32" | "u16" | "u8" | "usize" => "a whole number ≥ 0",
        "i64" | "i32" => "a whole number",
        "a boolean" => "true or false",
        "a string" => "text in quotes",
        other => other,
    };
    let got = if let Some(t) = got.strip_prefix("string ") {
        if t == "\"\"" { "an empty text \"\"".to_string() } else { format!("the text {t}") }
    } else if let Some(n) = got.strip_prefix("floating point `").or_else(|| got.strip_prefix("integer `")) {
        n.trim_end_matches('`').to_string()
    } else {
        got.to_string()
    };
    if at.is_empty() { format!("expected {expected}, got {got}") } else { format!("expected {expected}, got {got} ({at})") }
}

/// Latency objectives in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slo {
    pub ttft_ns: Option<u64>,
    pub tpot_ns: Option<u64>,
    pub e2e_ns: Option<u64>,
}

/// A validated request class.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub name: String,
    pub priority: u32,
    pub prompt: LengthDist,
    pub output: LengthDist,
    pub slo: Slo,
}

/// A validated tenant.
#[derive(Clone, Debug, PartialEq)]
pub struct Tenant {
    pub name: String,
    /// Token-bucket refill, tokens per second (None: no bucket for this tenant).
    pub rate_tokens_per_s: Option<f64>,
    pub burst_tokens: f64,
}

/// Validated arrival process; gaps in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    Poisson { mean_gap_ns: f64 },
    Constant { gap_ns: f64 },
    Gamma { shape: f64, scale_ns: f64 },
    OnOff { on_rate_per_ns: f64, off_rate_per_ns: f64, mean_on_ns: f64, mean_off_ns: f64 },
    Trace { rows: Vec<TraceRow> },
}

/// The workload the generator draws from.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub arrival: Arrival,
    /// Most requests to create.
    pub max_requests: u64,
    /// No request is created at or after this time.
    pub end_ns: u64,
    pub classes: Vec<Class>,
    /// Cumulative normalised class weights.
    pub class_cdf: Vec<f64>,
    pub tenants: Vec<Tenant>,
    pub tenant_cdf: Vec<f64>,
}

/// Model shape with derived byte figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub name: String,
    pub params: f64,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub bytes_per_param: f64,
    pub kv_bytes_per_elem: f64,
}

impl Model {
    /// KV bytes per token for the whole model (all GPUs of a replica together).
    pub fn kv_bytes_per_token(&self) -> f64 {
        2.0 * self.layers as f64 * self.kv_heads as f64 * self.head_dim as f64 * self.kv_bytes_per_elem
    }
    pub fn weight_bytes(&self) -> f64 {
        self.params * self.bytes_per_param
    }
}

/// Device figures and efficiencies.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    pub name: String,
    pub tp: u32,
    pub peak_flops: f64,
    pub hbm_bytes_per_s: f64,
    pub hbm_bytes: f64,
    pub interconnect_bytes_per_s: f64,
    pub mfu: f64,
    pub weight_bw_efficiency: f64,
    pub kv_bw_efficiency: f64,
    pub overlap_penalty: f64,
    pub step_overhead_ns: f64,
    pub allreduce_latency_ns: f64,
}

/// Engine limits, with KV capacity resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Engine {
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub chunked_prefill: bool,
    pub prefill_chunk_tokens: u32,
    pub block_size_tokens: u32,
    pub kv_capacity_tokens: u64,
    pub kv_total_blocks: u64,
    /// Σ reservations may reach `kv_total_blocks × kv_oversubscription`.
    pub kv_reserve_limit_blocks: u64,
    pub victim: VictimSpec,
    pub backoff_ns: u64,
    pub max_preemptions: u32,
    pub horizon_ns: Option<u64>,
}

/// What a pool's workers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Prefill and decode on the same worker (the usual deployment).
    Colocated,
    /// Prompts only; each request leaves after its first token, its KV sent over the link.
    Prefill,
    /// Decode only; requests arrive with their prompt's KV.
    Decode,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Colocated => "colocated",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

/// A pool of identical workers: one in colocated serving, prefill + decode when disaggregated.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub role: Role,
    pub replicas: u32,
    /// Index of the pool's first worker among all workers (pools are numbered in order).
    pub first: u32,
    pub hardware: Hardware,
    pub cost: CostModel,
    /// The engine limits with this pool's KV capacity.
    pub engine: Engine,
    pub router: RouterSpec,
}

/// The KV-transfer interconnect of a disaggregated scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// Bytes per ns (= GB/s).
    pub bytes_per_ns: f64,
    pub latency_ns: u64,
    pub topology: LinkTopology,
    /// KV bytes of one token (the model's whole KV: all layers and KV heads).
    pub kv_bytes_per_token: f64,
    /// Profile-error multiplier of transfer times (`cost_scale.transfer`).
    pub scale: f64,
}

impl Link {
    /// Time one prompt's KV occupies the link, ns.
    pub fn send_ns(&self, prompt_tokens: u32) -> u64 {
        (self.kv_bytes(prompt_tokens) / self.bytes_per_ns * self.scale).round() as u64
    }

    /// KV bytes of a prompt: the model's KV bytes per token × prompt tokens.
    pub fn kv_bytes(&self, prompt_tokens: u32) -> f64 {
        prompt_tokens as f64 * self.kv_bytes_per_token
    }
}

/// Shared prefixes (validated).
#[derive(Clone, Debug, PartialEq)]
pub struct Prefix {
    /// Tokens shared: the configured length rounded down to whole KV blocks (> 0).
    pub shared_tokens: u32,
    pub reuse_fraction: f64,
    /// Cumulative Zipf weights of the groups.
    pub group_cdf: Vec<f64>,
    pub caching: bool,
}

/// Output-length predictor (validated).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Predictor {
    Oracle,
    Lognormal { sigma: f64 },
    ClassMean,
    Zero,
}

/// A validated scenario: everything the engine needs, in engine units.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub workload: Workload,
    pub model: Model,
    pub hardware: Hardware,
    pub cost: CostModel,
    pub engine: Engine,
    pub order_predictor: Predictor,
    pub reserve_predictor: Predictor,
    pub scheduler: SchedulerSpec,
    pub admission: AdmissionSpec,
    pub replicas: u32,
    pub router: RouterSpec,
    /// The worker pools: one colocated pool, or prefill then decode.
    pub pools: Vec<Pool>,
    /// The KV-transfer link, when disaggregated.
    pub link: Option<Link>,
    /// Shared prefixes, when some requests carry one (None also when the shared part is empty or the
    /// reuse fraction is 0: then the feature changes nothing).
    pub prefix: Option<Prefix>,
    /// Width of one time-series window.
    pub series_window_ns: u64,
    pub series_points: u32,
    /// Share of the arrival span left out of the steady-state window as warm-up.
    pub warmup_fraction: f64,
    pub objectives: Objectives,
}

/// The run's objectives: the attainment target, and objectives on percentiles.
#[derive(Clone, Debug, PartialEq)]
pub struct Objectives {
    pub attainment_target: f64,
    pub percentiles: Vec<PercentileObjective>,
}

/// "p`percentile` of `metric` ≤ `max_ns`" over the completed requests of `class` (None: all).
#[derive(Clone, Debug, PartialEq)]
pub struct PercentileObjective {
    pub metric: spec::LatencyMetric,
    pub percentile: f64,
    pub max_ns: u64,
    pub class: Option<u32>,
}

/// At most this many percentile objectives (each is a pass over the samples).
const MAX_OBJECTIVES: usize = 64;

fn validate_objectives(o: &ObjectivesSpec, w: Option<&Workload>, e: &mut Errors) -> Objectives {
    e.range_open_lo("objectives.attainment_target", o.attainment_target, 0.0, 1.0);
    if o.percentiles.len() > MAX_OBJECTIVES {
        e.push("objectives.percentiles", format!("at most {MAX_OBJECTIVES} objectives (got {})", o.percentiles.len()));
        return Objectives { attainment_target: o.attainment_target, percentiles: vec![] };
    }
    let mut percentiles = Vec::new();
    for (i, p) in o.percentiles.iter().enumerate() {
        let path = format!("objectives.percentiles[{i}]");
        let ok = e.range_open_lo(&format!("{path}.percentile"), p.percentile, 0.0, 100.0) & e.range_open_lo(&format!("{path}.max_ms"), p.max_ms, 0.0, 1e9);
        let class = match (&p.class, w) {
            (None, _) => Some(None),
            (Some(name), Some(w)) => match w.classes.iter().position(|c| c.name == *name) {
                Some(k) => Some(Some(k as u32)),
                None => {
                    let hint = suggest(name, w.classes.iter().map(|c| c.name.as_str())).map(|s| format!("; did you mean \"{s}\"?")).unwrap_or_default();
                    e.push(format!("{path}.class"), format!("no class is named \"{name}\"{hint}"));
                    None
                }
            },
            (Some(_), None) => None,
        };
        if let (true, Some(class)) = (ok, class) {
            percentiles.push(PercentileObjective { metric: p.metric, percentile: p.percentile, max_ns: ms_to_ns(p.max_ms), class });
        }
    }
    Objectives { attainment_target: o.attainment_target, percentiles }
}

impl Scenario {
    /// GPUs the scenario occupies: Σ over pools of workers × TP.
    pub fn gpu_count(&self) -> u32 {
        self.pools.iter().map(|p| p.replicas * p.hardware.tp).sum()
    }

    /// Workers in all pools.
    pub fn worker_count(&self) -> u32 {
        self.pools.iter().map(|p| p.replicas).sum()
    }

    pub fn is_disaggregated(&self) -> bool {
        self.link.is_some()
    }
}

fn s_to_ns(s: f64) -> u64 {
    (s * NS_PER_S).round() as u64
}
fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS).round() as u64
}

const MAX_RATE_RPS: f64 = 1e7;
/// The longest arrival span a run may have, ns (about 31 years): the u64 nanosecond clock holds 584 years,
/// and the drain after the last arrival must fit too.
const MAX_SPAN_NS: f64 = 1e18;
const MAX_REQUESTS: u64 = 50_000_000;
const MAX_TOKENS: u32 = 10_000_000;

/// Check every field and derive the engine's scenario.
pub fn validate(spec: &Spec) -> Result<Scenario, ScenarioError> {
    let mut e = Errors::default();
    let workload = validate_workload(&spec.workload, &mut e);
    if let Some(w) = &workload
        && !matches!(w.arrival, Arrival::Trace { .. })
    {
        // Requests × the mean gap (or the duration): a span past the clock would drop arrivals unseen.
        let span = (w.mean_gap_ns() * w.max_requests as f64).min(w.end_ns as f64);
        if span > MAX_SPAN_NS {
            e.push(
                "workload.requests",
                format!("{} requests at this rate span {:.3e} s of simulated time, past the clock's limit of {:.0e} s (about 31 years): fewer requests, a higher rate, or workload.duration_s", w.max_requests, span / NS_PER_S, MAX_SPAN_NS / NS_PER_S),
            );
        }
    }
    let model = validate_model(&spec.model, &mut e);
    let hardware = validate_hardware(&spec.hardware, model.as_ref(), &mut e);
    let order_predictor = validate_predictor(&spec.estimator.order, "estimator.order", &mut e);
    let reserve_predictor = validate_predictor(&spec.estimator.reserve, "estimator.reserve", &mut e);
    validate_policies(spec, &mut e);
    e.int("cluster.replicas", spec.cluster.replicas as u64, 1, 4096);
    e.int("metrics.series_points", spec.metrics.series_points as u64, 10, 5000);
    e.range("metrics.warmup_fraction", spec.metrics.warmup_fraction, 0.0, 0.9);
    let objectives = validate_objectives(&spec.objectives, workload.as_ref(), &mut e);
    let engine = match (&model, &hardware) {
        (Some(m), Some(h)) => validate_engine(&spec.engine, m, h, &mut e),
        _ => None,
    };
    let cost = match (&spec.cost, &model, &hardware) {
        (CostSpec::Linear { base_ms, per_seq_ms, per_prefill_token_ms, per_kv_token_ms }, _, _) => {
            let mut ok = true;
            for (name, v) in [
                ("base_ms", base_ms),
                ("per_seq_ms", per_seq_ms),
                ("per_prefill_token_ms", per_prefill_token_ms),
                ("per_kv_token_ms", per_kv_token_ms),
            ] {
                ok &= e.range(&format!("cost.{name}"), *v, 0.0, 1e6);
            }
            if ok && *base_ms + *per_seq_ms + *per_prefill_token_ms <= 0.0 {
                e.push("cost", "a linear cost model needs base_ms, per_seq_ms or per_prefill_token_ms > 0 (every step must take time)");
                ok = false;
            }
            ok.then(|| {
                CostModel::Linear(Linear {
                    base_ns: base_ms * NS_PER_MS,
                    per_seq_ns: per_seq_ms * NS_PER_MS,
                    per_prefill_token_ns: per_prefill_token_ms * NS_PER_MS,
                    per_kv_token_ns: per_kv_token_ms * NS_PER_MS,
                    prefill_scale: 1.0,
                    decode_scale: 1.0,
                })
            })
        }
        (CostSpec::Roofline, Some(m), Some(h)) => Some(CostModel::Roofline(Roofline::new(m, h))),
        _ => None,
    };

    // Cross-field checks need the pieces above.
    if let (Some(w), Some(en)) = (&workload, &engine) {
        check_fits(w, en, &mut e);
        if let AdmissionSpec::Deadline { .. } = spec.admission {
            for (i, c) in w.classes.iter().enumerate() {
                if c.slo.e2e_ns.is_none() {
                    e.push(
                        format!("workload.classes[{i}].slo.e2e_ms"),
                        "required when admission.kind is \"deadline\" (the deadline to test against)",
                    );
                }
            }
        }
    }
    let scale = spec.cost_scale.unwrap_or(CostScaleSpec { prefill: 1.0, decode: 1.0, transfer: 1.0 });
    for (name, v) in [("prefill", scale.prefill), ("decode", scale.decode), ("transfer", scale.transfer)] {
        e.range_open_lo(&format!("cost_scale.{name}"), v, 0.0, 100.0);
    }
    let cost = cost.map(|c| c.scaled(scale.prefill, scale.decode));
    let disagg = match (&spec.cluster.disaggregation, &model, &hardware, &cost, &engine, &workload) {
        (Some(d), Some(m), Some(_), Some(c), Some(_), Some(w)) => validate_disagg(spec, d, m, c, w, &mut e),
        _ => None,
    };
    let prefix = match (&spec.prefix, &engine, &workload) {
        (Some(p), Some(en), Some(w)) => validate_prefix(p, en, w, &mut e),
        _ => None,
    };
    e.finish()?;
    let (workload, engine) = (workload.unwrap(), engine.unwrap());
    let (hardware, cost) = (hardware.unwrap(), cost.unwrap());
    let (pools, link) = match disagg {
        Some((pools, link)) => (pools, Some(link)),
        None => (
            vec![Pool {
                role: Role::Colocated,
                replicas: spec.cluster.replicas,
                first: 0,
                hardware: hardware.clone(),
                cost: cost.clone(),
                engine: engine.clone(),
                router: spec.cluster.router.clone(),
            }],
            None,
        ),
    };
    let points = spec.metrics.series_points;
    let window = (expected_span_ns(&workload) / points as f64).max(1e6) as u64;
    Ok(Scenario {
        name: spec.name.clone(),
        seed: spec.seed,
        workload,
        model: model.unwrap(),
        hardware,
        cost,
        engine,
        order_predictor: order_predictor.unwrap(),
        reserve_predictor: reserve_predictor.unwrap(),
        scheduler: spec.scheduler.clone(),
        admission: spec.admission.clone(),
        replicas: spec.cluster.replicas,
        router: spec.cluster.router.clone(),
        pools,
        link,
        prefix: prefix.flatten(),
        series_window_ns: window,
        series_points: points,
        warmup_fraction: spec.metrics.warmup_fraction,
        objectives,
    })
}

impl Workload {
    /// Mean gap between arrivals (long-run), ns.
    pub fn mean_gap_ns(&self) -> f64 {
        match &self.arrival {
            Arrival::Poisson { mean_gap_ns } => *mean_gap_ns,
            Arrival::Constant { gap_ns } => *gap_ns,
            Arrival::Gamma { shape, scale_ns } => shape * scale_ns,
            Arrival::OnOff { on_rate_per_ns, off_rate_per_ns, mean_on_ns, mean_off_ns } => {
                let rate = (on_rate_per_ns * mean_on_ns + off_rate_per_ns * mean_off_ns) / (mean_on_ns + mean_off_ns);
                1.0 / rate.max(1e-30)
            }
            Arrival::Trace { rows } => {
                let n = rows.len().max(2);
                rows[rows.len() - 1].arrival_ns as f64 / (n - 1) as f64
            }
        }
    }
}

/// How long arrivals are expected to last, to size the time-series window.
fn expected_span_ns(w: &Workload) -> f64 {
    if let Arrival::Trace { rows } = &w.arrival {
        let n = (w.max_requests as usize).min(rows.len()).max(1);
        return (rows[n - 1].arrival_ns as f64).min(w.end_ns as f64).max(1e9);
    }
    (w.mean_gap_ns() * w.max_requests.min(u32::MAX as u64) as f64).min(w.end_ns as f64).max(1e9)
}

fn validate_workload(w: &WorkloadSpec, e: &mut Errors) -> Option<Workload> {
    let n0 = e.0.len();
    let arrival = match &w.arrival {
        ArrivalSpec::Poisson { rate_rps } => e
            .range_open_lo("workload.arrival.rate_rps", *rate_rps, 0.0, MAX_RATE_RPS)
            .then(|| Arrival::Poisson { mean_gap_ns: NS_PER_S / rate_rps }),
        ArrivalSpec::Constant { rate_rps } => e
            .range_open_lo("workload.arrival.rate_rps", *rate_rps, 0.0, MAX_RATE_RPS)
            .then(|| Arrival::Constant { gap_ns: NS_PER_S / rate_rps }),
        ArrivalSpec::Gamma { rate_rps, cv } => {
            let a = e.range_open_lo("workload.arrival.rate_rps", *rate_rps, 0.0, MAX_RATE_RPS);
            let b = e.range("workload.arrival.cv", *cv, 0.05, 20.0);
            (a && b).then(|| {
                let shape = 1.0 / (cv * cv);
                Arrival::Gamma { shape, scale_ns: NS_PER_S / rate_rps / shape }
            })
        }
        ArrivalSpec::OnOff { rate_on_rps, rate_off_rps, mean_on_s, mean_off_s } => {
            let a = e.within("workload.arrival.rate_on_rps", *rate_on_rps, 1e-6, MAX_RATE_RPS, "the arrival rate while on");
            let b = e.range("workload.arrival.rate_off_rps", *rate_off_rps, 0.0, MAX_RATE_RPS);
            let period = "a mean period; the generator walks the periods one by one";
            let c = e.within("workload.arrival.mean_on_s", *mean_on_s, 1e-3, 1e6, period);
            let d = e.within("workload.arrival.mean_off_s", *mean_off_s, 1e-3, 1e6, period);
            // The generator walks on/off periods one at a time between arrivals: with far fewer than one
            // arrival per on-period it would walk millions of them per request (a run that never ends).
            let per_period = rate_on_rps * mean_on_s;
            let e_ok = !(a && c) || per_period >= 1e-3 || {
                e.push(
                    "workload.arrival.mean_on_s",
                    format!("rate_on_rps × mean_on_s must be at least 0.001 arrivals per on-period (got {per_period:e}): raise the rate or the on period"),
                );
                false
            };
            (a && b && c && d && e_ok).then(|| Arrival::OnOff {
                on_rate_per_ns: rate_on_rps / NS_PER_S,
                off_rate_per_ns: rate_off_rps / NS_PER_S,
                mean_on_ns: mean_on_s * NS_PER_S,
                mean_off_ns: mean_off_s * NS_PER_S,
            })
        }
        ArrivalSpec::Trace { path, data, format, time_scale } => {
            let ok = e.range_open_lo("workload.arrival.time_scale", *time_scale, 0.0, 1e6);
            match data {
                None => {
                    let why = match path {
                        Some(p) => format!("trace contents missing: the front end did not load `{p}`"),
                        None => "a trace needs `path` (a file) or `data` (its text)".into(),
                    };
                    e.push("workload.arrival.data", why);
                    None
                }
                Some(text) => match workload::trace::parse(text, *format) {
                    Ok(rows) if ok => {
                        // Scaled arrivals must stay on the clock: an arrival past it would be dropped unseen.
                        let last = rows.iter().map(|r| r.arrival_ns).max().unwrap_or(0) as f64 * time_scale;
                        if last > MAX_SPAN_NS {
                            e.push(
                                "workload.arrival.time_scale",
                                format!("the trace's last arrival would be at {:.3e} s after scaling, past the simulated clock's limit of {:.0e} s (about 31 years): lower time_scale", last / NS_PER_S, MAX_SPAN_NS / NS_PER_S),
                            );
                            None
                        } else {
                            Some(Arrival::Trace { rows: workload::trace::scale(rows, *time_scale) })
                        }
                    }
                    Ok(_) => None,
                    Err(msg) => {
                        e.push("workload.arrival.data", msg);
                        None
                    }
                },
            }
        }
    };
    let is_trace = matches!(w.arrival, ArrivalSpec::Trace { .. });
    if let Some(n) = w.requests {
        e.int("workload.requests", n, 1, MAX_REQUESTS);
    }
    if let Some(d) = w.duration_s {
        e.range_open_lo("workload.duration_s", d, 0.0, 1e8);
    }
    if !is_trace && w.requests.is_none() && w.duration_s.is_none() {
        e.push("workload", "give `requests` (a count) or `duration_s` (seconds of arrivals), or both");
    }
    let max_requests = w.requests.unwrap_or(MAX_REQUESTS);
    let end_ns = w.duration_s.filter(|d| d.is_finite() && *d > 0.0).map(s_to_ns).unwrap_or(u64::MAX);

    let mut classes = Vec::new();
    if w.classes.is_empty() || w.classes.len() > 64 {
        e.push("workload.classes", format!("must list 1 to 64 classes (got {})", w.classes.len()));
    }
    for (i, c) in w.classes.iter().enumerate() {
        let p = format!("workload.classes[{i}]");
        e.range(&format!("{p}.weight"), c.weight, 0.0, 1e9);
        e.int(&format!("{p}.priority"), c.priority as u64, 0, 1000);
        let prompt = validate_length(&c.prompt_tokens, &format!("{p}.prompt_tokens"), e);
        let output = validate_length(&c.output_tokens, &format!("{p}.output_tokens"), e);
        let mut slo = Slo::default();
        for (name, v, slot) in [
            ("ttft_ms", c.slo.ttft_ms, &mut slo.ttft_ns),
            ("tpot_ms", c.slo.tpot_ms, &mut slo.tpot_ns),
            ("e2e_ms", c.slo.e2e_ms, &mut slo.e2e_ns),
        ] {
            if let Some(v) = v
                && e.range_open_lo(&format!("{p}.slo.{name}"), v, 0.0, 1e9) {
                    *slot = Some(ms_to_ns(v));
                }
        }
        if let (Some(prompt), Some(output)) = (prompt, output) {
            classes.push(Class { name: c.name.clone(), priority: c.priority, prompt, output, slo });
        }
    }
    let class_cdf = cdf(w.classes.iter().map(|c| c.weight), "workload.classes", e);
    if w.tenants.is_empty() || w.tenants.len() > 1024 {
        e.push("workload.tenants", format!("must list 1 to 1024 tenants (got {})", w.tenants.len()));
    }
    let mut tenants = Vec::new();
    for (i, t) in w.tenants.iter().enumerate() {
        let p = format!("workload.tenants[{i}]");
        e.range(&format!("{p}.weight"), t.weight, 0.0, 1e9);
        if let Some(r) = t.rate_tokens_per_s {
            e.range_open_lo(&format!("{p}.rate_tokens_per_s"), r, 0.0, 1e12);
        }
        if let Some(b) = t.burst_tokens {
            e.range(&format!("{p}.burst_tokens"), b, 1.0, 1e12);
        }
        tenants.push(Tenant {
            name: t.name.clone(),
            rate_tokens_per_s: t.rate_tokens_per_s,
            burst_tokens: t.burst_tokens.unwrap_or(0.0),
        });
    }
    let tenant_cdf = cdf(w.tenants.iter().map(|t| t.weight), "workload.tenants", e);
    if e.0.len() > n0 {
        return None;
    }
    Some(Workload { arrival: arrival?, max_requests, end_ns, classes, class_cdf, tenants, tenant_cdf })
}

/// Normalised cumulative weights; an error if they do not sum to something positive.
fn cdf(weights: impl Iterator<Item = f64>, path: &str, e: &mut Errors) -> Vec<f64> {
    let w: Vec<f64> = weights.collect();
    let total: f64 = w.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        e.push(path, "weights must be ≥ 0 and sum to more than 0");
        return vec![];
    }
    let mut acc = 0.0;
    let mut out: Vec<f64> = w.iter().map(|x| {
        acc += x;
        acc / total
    }).collect();
    if let Some(last) = out.last_mut() {
        *last = 1.0;
    }
    out
}

fn validate_length(l: &LengthSpec, p: &str, e: &mut Errors) -> Option<LengthDist> {
    let max_t = MAX_TOKENS as u64;
    match l {
        LengthSpec::Fixed { tokens } => e.int(&format!("{p}.tokens"), *tokens as u64, 1, max_t).then_some(LengthDist::Fixed(*tokens)),
        LengthSpec::Uniform { min, max } => {
            let a = e.int(&format!("{p}.min"), *min as u64, 1, max_t);
            let b = e.int(&format!("{p}.max"), *max as u64, 1, max_t);
            if a && b && min > max {
                e.push(format!("{p}.max"), format!("must be ≥ min ({min}) (got {max})"));
                return None;
            }
            (a && b).then_some(LengthDist::Uniform { min: *min, max: *max })
        }
        LengthSpec::Lognormal { mean, cv, max } => {
            let a = e.range(&format!("{p}.mean"), *mean, 1.0, MAX_TOKENS as f64);
            let b = e.range(&format!("{p}.cv"), *cv, 0.0, 20.0);
            let c = e.int(&format!("{p}.max"), *max as u64, 1, max_t);
            (a && b && c).then(|| LengthDist::lognormal(*mean, *cv, *max))
        }
        LengthSpec::Geometric { mean, max } => {
            let a = e.range(&format!("{p}.mean"), *mean, 1.0, MAX_TOKENS as f64);
            let c = e.int(&format!("{p}.max"), *max as u64, 1, max_t);
            (a && c).then(|| LengthDist::geometric(*mean, *max))
        }
        LengthSpec::Empirical { values } => {
            if values.is_empty() || values.len() > 10_000_000 {
                e.push(format!("{p}.values"), format!("must hold 1 to 10,000,000 lengths (got {})", values.len()));
                return None;
            }
            if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| **v == 0 || **v > MAX_TOKENS) {
                e.push(format!("{p}.values[{i}]"), format!("must be from 1 to {MAX_TOKENS} (got {v})"));
                return None;
            }
            Some(LengthDist::Empirical(values.clone()))
        }
    }
}

/// Look a preset up by name; an unknown name is an error listing the known ones (with a suggestion).
/// Ok(None) when no name was given.
fn lookup<T: Copy>(name: Option<&str>, all: &[T], name_of: fn(&T) -> &'static str, path: &str, what: &str, e: &mut Errors) -> Result<Option<T>, ()> {
    let Some(name) = name else { return Ok(None) };
    if let Some(p) = all.iter().find(|p| name_of(p) == name) {
        return Ok(Some(*p));
    }
    let names: Vec<&str> = all.iter().map(name_of).collect();
    let hint = suggest(name, names.iter().copied()).map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
    e.push(path, format!("unknown {what} `{name}`; known: {}{hint}", names.join(", ")));
    Err(())
}

/// A field given in the spec, else the preset's; an error naming `section.field` when neither exists.
macro_rules! from_preset {
    ($e:expr, $spec:expr, $base:expr, $section:literal, $why:literal, $f:ident) => {
        match ($spec.$f, $base.map(|b| b.$f)) {
            (Some(v), _) | (None, Some(v)) => Some(v),
            (None, None) => {
                $e.push(concat!($section, ".", stringify!($f)), $why);
                None
            }
        }
    };
}

fn validate_model(m: &ModelSpec, e: &mut Errors) -> Option<Model> {
    let base = lookup(m.preset.as_deref(), presets::MODELS, |p| p.name, "model.preset", "model", e).ok()?;
    macro_rules! field {
        ($f:ident) => {
            from_preset!(e, m, base, "model", "required when model.preset is not given", $f)
        };
    }
    let (params_b, layers, hidden, heads, kv_heads, head_dim, bpp, kvb) = (
        field!(params_b),
        field!(layers),
        field!(hidden),
        field!(heads),
        field!(kv_heads),
        field!(head_dim),
        field!(bytes_per_param),
        field!(kv_bytes_per_elem),
    );
    let (params_b, layers, hidden, heads, kv_heads, head_dim, bpp, kvb) =
        (params_b?, layers?, hidden?, heads?, kv_heads?, head_dim?, bpp?, kvb?);
    let mut ok = e.range_open_lo("model.params_b", params_b, 0.0, 10_000.0);
    ok &= e.int("model.layers", layers as u64, 1, 1000);
    ok &= e.int("model.hidden", hidden as u64, 1, 1 << 20);
    ok &= e.int("model.heads", heads as u64, 1, 1024);
    ok &= e.int("model.kv_heads", kv_heads as u64, 1, 1024);
    ok &= e.int("model.head_dim", head_dim as u64, 1, 4096);
    ok &= e.range("model.bytes_per_param", bpp, 0.25, 8.0);
    ok &= e.range("model.kv_bytes_per_elem", kvb, 0.25, 8.0);
    if ok && kv_heads > heads {
        e.push("model.kv_heads", format!("must be ≤ heads ({heads}) (got {kv_heads})"));
        ok = false;
    }
    ok.then(|| Model {
        name: m.preset.clone().unwrap_or_else(|| "custom".into()),
        params: params_b * 1e9,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        bytes_per_param: bpp,
        kv_bytes_per_elem: kvb,
    })
}

fn validate_hardware(h: &HardwareSpec, model: Option<&Model>, e: &mut Errors) -> Option<Hardware> {
    let base = lookup(h.device.as_deref(), presets::DEVICES, |d| d.name, "hardware.device", "device", e).ok()?;
    macro_rules! field {
        ($f:ident) => {
            from_preset!(e, h, base, "hardware", "required when hardware.device is not given", $f)
        };
    }
    let (peak, bw, mem, link) = (field!(peak_tflops), field!(hbm_bandwidth_gbps), field!(hbm_gb), field!(interconnect_gbps));
    let (peak, bw, mem, link) = (peak?, bw?, mem?, link?);
    let mut ok = e.int("hardware.tp", h.tp as u64, 1, 64);
    if ok && !h.tp.is_power_of_two() {
        e.push("hardware.tp", format!("must be a power of two (1, 2, 4, 8, …) (got {})", h.tp));
        ok = false;
    }
    if let (true, Some(m)) = (ok, model)
        && m.heads % h.tp != 0 {
            e.push("hardware.tp", format!("must divide the model's attention heads ({}) (got {})", m.heads, h.tp));
            ok = false;
        }
    // Physical bounds: below them a single step would outlast the 584-year nanosecond clock, or the figure
    // describes no device; above them, none that exists.
    ok &= e.within("hardware.peak_tflops", peak, 0.01, 1e5, "dense TFLOPS per GPU; a step's compute time is its FLOPs divided by this");
    ok &= e.within("hardware.hbm_bandwidth_gbps", bw, 1.0, 1e5, "memory bandwidth per GPU; every decode step reads the weights through it");
    ok &= e.within("hardware.hbm_gb", mem, 0.1, 1e4, "memory per GPU for weights and KV");
    ok &= e.within("hardware.interconnect_gbps", link, 0.01, 1e5, "tensor-parallel all-reduce bandwidth per GPU");
    let mfu = h.mfu.unwrap_or(presets::DEFAULT_MFU);
    let wbe = h.weight_bw_efficiency.unwrap_or(presets::DEFAULT_WEIGHT_BW_EFFICIENCY);
    let kbe = h.kv_bw_efficiency.unwrap_or(presets::DEFAULT_KV_BW_EFFICIENCY);
    let olp = h.overlap_penalty.unwrap_or(presets::DEFAULT_OVERLAP_PENALTY);
    let ovh = h.step_overhead_ms.unwrap_or(presets::DEFAULT_STEP_OVERHEAD_MS);
    let arl = h.allreduce_latency_us.unwrap_or(presets::DEFAULT_ALLREDUCE_LATENCY_US);
    let share = "a share of the datasheet figure; below 1 % the roofline describes no real engine";
    ok &= e.within("hardware.mfu", mfu, 0.01, 1.0, share);
    ok &= e.within("hardware.weight_bw_efficiency", wbe, 0.01, 1.0, share);
    ok &= e.within("hardware.kv_bw_efficiency", kbe, 0.01, 1.0, share);
    ok &= e.range("hardware.overlap_penalty", olp, 0.0, 1.0);
    ok &= e.range("hardware.step_overhead_ms", ovh, 0.0, 10_000.0);
    ok &= e.range("hardware.allreduce_latency_us", arl, 0.0, 1e6);
    ok.then(|| Hardware {
        name: h.device.clone().unwrap_or_else(|| "custom".into()),
        tp: h.tp,
        peak_flops: peak * 1e12,
        hbm_bytes_per_s: bw * 1e9,
        hbm_bytes: mem * 1e9,
        interconnect_bytes_per_s: link * 1e9,
        mfu,
        weight_bw_efficiency: wbe,
        kv_bw_efficiency: kbe,
        overlap_penalty: olp,
        step_overhead_ns: ovh * NS_PER_MS,
        allreduce_latency_ns: arl * 1e3,
    })
}

fn validate_engine(en: &EngineSpec, m: &Model, h: &Hardware, e: &mut Errors) -> Option<Engine> {
    let n0 = e.0.len();
    e.int("engine.max_num_seqs", en.max_num_seqs as u64, 1, 65_536);
    e.int("engine.max_num_batched_tokens", en.max_num_batched_tokens as u64, 1, 1 << 22);
    e.int("engine.block_size_tokens", en.block_size_tokens as u64, 1, 4096);
    let chunk = en.prefill_chunk_tokens.unwrap_or(en.max_num_batched_tokens);
    if en.prefill_chunk_tokens.is_some() {
        e.int("engine.prefill_chunk_tokens", chunk as u64, 1, en.max_num_batched_tokens.max(1) as u64);
    }
    e.range_open_lo("engine.gpu_memory_utilization", en.gpu_memory_utilization, 0.0, 1.0);
    e.range("engine.kv_oversubscription", en.kv_oversubscription, 0.1, 100.0);
    e.range("engine.preemption.backoff_ms", en.preemption.backoff_ms, 0.0, 1e6);
    e.int("engine.preemption.max_preemptions", en.preemption.max_preemptions as u64, 0, 10_000);
    if let Some(hz) = en.horizon_s {
        e.range_open_lo("engine.horizon_s", hz, 0.0, 1e8);
    }
    if let Some(c) = en.kv_capacity_tokens {
        e.int("engine.kv_capacity_tokens", c, 1, 1 << 40);
    }
    if e.0.len() > n0 {
        return None;
    }
    let kv_capacity_tokens = match en.kv_capacity_tokens {
        Some(c) => c,
        None => {
            // Each GPU holds 1/tp of the weights and of the KV heads (KV heads replicate when tp > kv_heads).
            let tp = h.tp as f64;
            let weights_per_gpu = m.weight_bytes() / tp;
            let usable = h.hbm_bytes * en.gpu_memory_utilization;
            let kv_heads_per_gpu = (m.kv_heads as f64 / tp).max(1.0);
            let kv_per_token_per_gpu = 2.0 * m.layers as f64 * kv_heads_per_gpu * m.head_dim as f64 * m.kv_bytes_per_elem;
            if usable <= weights_per_gpu {
                e.push(
                    "engine.gpu_memory_utilization",
                    format!(
                        "the weights ({:.1} GB per GPU at tp {}) do not fit in {:.1} GB (hardware.hbm_gb × gpu_memory_utilization): raise tp, memory or utilisation",
                        weights_per_gpu / 1e9, h.tp, usable / 1e9
                    ),
                );
                return None;
            }
            ((usable - weights_per_gpu) / kv_per_token_per_gpu).floor() as u64
        }
    };
    let block = en.block_size_tokens as u64;
    let kv_total_blocks = kv_capacity_tokens / block;
    if kv_total_blocks == 0 {
        e.push("engine.kv_capacity_tokens", format!("KV capacity ({kv_capacity_tokens} tokens) is less than one block ({block} tokens)"));
        return None;
    }
    Some(Engine {
        max_num_seqs: en.max_num_seqs,
        max_num_batched_tokens: en.max_num_batched_tokens,
        chunked_prefill: en.chunked_prefill,
        prefill_chunk_tokens: if en.chunked_prefill { chunk } else { en.max_num_batched_tokens },
        block_size_tokens: en.block_size_tokens,
        kv_capacity_tokens,
        kv_total_blocks,
        kv_reserve_limit_blocks: (kv_total_blocks as f64 * en.kv_oversubscription).floor() as u64,
        victim: en.preemption.victim,
        backoff_ns: ms_to_ns(en.preemption.backoff_ms),
        max_preemptions: en.preemption.max_preemptions,
        horizon_ns: en.horizon_s.map(s_to_ns),
    })
}

/// Every request must be able to run alone: its whole prompt + output fits in KV, and without chunked prefill
/// its prompt (which after a recompute-preemption includes generated tokens) fits in one step's token budget.
fn check_fits(w: &Workload, en: &Engine, e: &mut Errors) {
    let cap = en.kv_total_blocks * en.block_size_tokens as u64;
    let budget = en.max_num_batched_tokens as u64;
    let check = |e: &mut Errors, path: String, prompt: u64, output: u64| {
        if prompt + output > cap {
            e.push(path, format!("a request of {prompt} prompt + {output} output tokens exceeds the KV capacity of one replica ({cap} tokens); lower the lengths or raise memory, tp or engine.kv_capacity_tokens"));
        } else if !en.chunked_prefill && prompt + output > budget {
            e.push(path, format!("without chunked prefill a request of {prompt} prompt + {output} output tokens must fit in engine.max_num_batched_tokens ({budget}); enable chunked_prefill or raise the budget"));
        }
    };
    match &w.arrival {
        Arrival::Trace { rows } => {
            if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| {
                let t = r.prompt_tokens as u64 + r.output_tokens as u64;
                t > cap || (!en.chunked_prefill && t > budget)
            }) {
                check(e, format!("workload.arrival.data (request {})", i + 1), r.prompt_tokens as u64, r.output_tokens as u64);
            }
        }
        _ => {
            for (i, c) in w.classes.iter().enumerate() {
                check(e, format!("workload.classes[{i}]"), c.prompt.max() as u64, c.output.max() as u64);
            }
        }
    }
}

/// The prefill and decode pools and the link. Each pool's device and TP give it its own cost model and KV
/// capacity; every request must fit a worker of the pool it visits.
fn validate_disagg(spec: &Spec, d: &DisaggSpec, m: &Model, cost: &CostModel, w: &Workload, e: &mut Errors) -> Option<(Vec<Pool>, Link)> {
    let n0 = e.0.len();
    let mut pools = Vec::new();
    let mut first = 0;
    for (role, ps) in [(Role::Prefill, &d.prefill), (Role::Decode, &d.decode)] {
        let p = format!("cluster.disaggregation.{}", role.name());
        e.int(&format!("{p}.replicas"), ps.replicas as u64, 1, 4096);
        if ps.router == RouterSpec::CentralQueue {
            e.push(format!("{p}.router"), "central_queue is for colocated serving; pools route to per-worker queues (round_robin, random, least_outstanding, least_kv, power_of_two)");
        }
        // The pool's hardware: the scenario's, or a device preset; TP overridable either way.
        let mut hs = match &ps.device {
            Some(dev) if Some(dev) != spec.hardware.device.as_ref() => HardwareSpec { device: Some(dev.clone()), ..HardwareSpec::default() },
            _ => spec.hardware.clone(),
        };
        if let Some(tp) = ps.tp {
            hs.tp = tp;
        }
        // Validate with the usual checks, then name the pool's fields in the errors.
        let mut sub = Errors::default();
        let hw = validate_hardware(&hs, Some(m), &mut sub);
        let en = hw.as_ref().and_then(|h| validate_engine(&spec.engine, m, h, &mut sub));
        for f in sub.0 {
            let path = match f.path.strip_prefix("hardware.") {
                Some("device") => format!("{p}.device"),
                Some("tp") => format!("{p}.tp"),
                _ => p.clone(),
            };
            e.push(path, format!("{} ({} pool: {})", f.message, role.name(), f.path));
        }
        let (Some(hw), Some(en)) = (hw, en) else { continue };
        // A request must fit one worker of this pool: the prompt (+ its first token) to prefill, everything
        // to decode.
        let cap = en.kv_total_blocks * en.block_size_tokens as u64;
        let need = |prompt: u32, output: u32| prompt as u64 + if role == Role::Prefill { 1 } else { output as u64 };
        match &w.arrival {
            // A trace's rows are its requests: the first that does not fit is named (a run would leave every
            // such request unfinished).
            Arrival::Trace { rows } => {
                if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| need(r.prompt_tokens, r.output_tokens) > cap) {
                    let n = need(r.prompt_tokens, r.output_tokens);
                    e.push(format!("workload.arrival.data (request {})", i + 1), format!("a request of {n} tokens exceeds the KV capacity of one {} worker ({cap} tokens)", role.name()));
                }
            }
            _ => {
                for (i, c) in w.classes.iter().enumerate() {
                    let n = need(c.prompt.max(), c.output.max());
                    if n > cap {
                        e.push(format!("workload.classes[{i}]"), format!("a request of up to {n} tokens exceeds the KV capacity of one {} worker ({cap} tokens)", role.name()));
                    }
                }
            }
        }
        let pool_cost = match cost {
            CostModel::Roofline(r) => CostModel::Roofline(Roofline::new(m, &hw)).scaled(r.prefill_scale, r.decode_scale),
            linear => linear.clone(),
        };
        pools.push(Pool { role, replicas: ps.replicas, first, hardware: hw, cost: pool_cost, engine: en, router: ps.router.clone() });
        first += ps.replicas;
    }
    let l = &d.link;
    e.within("cluster.disaggregation.link.bandwidth_gbps", l.bandwidth_gbps, 1e-3, 1e12, "a KV transfer takes bytes ÷ bandwidth; below 1 MB/s one outlasts the simulated clock");
    e.range("cluster.disaggregation.link.latency_ms", l.latency_ms, 0.0, 1e6);
    if e.0.len() > n0 {
        return None;
    }
    let link = Link {
        bytes_per_ns: l.bandwidth_gbps,
        latency_ns: ms_to_ns(l.latency_ms),
        topology: l.topology,
        kv_bytes_per_token: m.kv_bytes_per_token(),
        scale: spec.cost_scale.map_or(1.0, |c| c.transfer),
    };
    Some((pools, link))
}

/// Shared prefixes: Some(None) when valid but inert (nothing is shared).
fn validate_prefix(p: &PrefixSpec, en: &Engine, w: &Workload, e: &mut Errors) -> Option<Option<Prefix>> {
    let n0 = e.0.len();
    e.int("prefix.prefix_tokens", p.prefix_tokens as u64, 0, MAX_TOKENS as u64);
    e.range("prefix.reuse_fraction", p.reuse_fraction, 0.0, 1.0);
    e.int("prefix.groups", p.groups as u64, 1, 1_000_000);
    e.range("prefix.zipf_s", p.zipf_s, 0.0, 10.0);
    if e.0.len() > n0 {
        return None;
    }
    let longest = match &w.arrival {
        Arrival::Trace { rows } => rows.iter().map(|r| r.prompt_tokens).max().unwrap_or(0),
        _ => w.classes.iter().map(|c| c.prompt.max()).max().unwrap_or(0),
    };
    if p.prefix_tokens > 0 && p.prefix_tokens >= longest {
        e.push("prefix.prefix_tokens", format!("must be shorter than the longest prompt ({longest} tokens): a shared prefix is part of a prompt (got {})", p.prefix_tokens));
        return None;
    }
    let block = en.block_size_tokens;
    let shared_tokens = p.prefix_tokens / block * block;
    if shared_tokens == 0 || p.reuse_fraction == 0.0 {
        return Some(None);
    }
    let weights: Vec<f64> = (1..=p.groups).map(|k| 1.0 / libm::pow(k as f64, p.zipf_s)).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    let group_cdf = weights.iter().map(|x| {
        acc += x / total;
        acc
    }).collect();
    Some(Some(Prefix { shared_tokens, reuse_fraction: p.reuse_fraction, group_cdf, caching: p.caching }))
}

fn validate_predictor(p: &PredictorSpec, path: &str, e: &mut Errors) -> Option<Predictor> {
    Some(match p {
        PredictorSpec::Oracle => Predictor::Oracle,
        PredictorSpec::ClassMean => Predictor::ClassMean,
        PredictorSpec::Zero => Predictor::Zero,
        PredictorSpec::Lognormal { sigma } => {
            if !e.range(&format!("{path}.sigma"), *sigma, 0.0, 5.0) {
                return None;
            }
            Predictor::Lognormal { sigma: *sigma }
        }
    })
}

fn validate_policies(spec: &Spec, e: &mut Errors) {
    if let SchedulerSpec::Drr { quantum_tokens } = spec.scheduler {
        e.int("scheduler.quantum_tokens", quantum_tokens as u64, 1, 100_000_000);
    }
    match spec.admission {
        AdmissionSpec::None => {}
        AdmissionSpec::QueueCap { max_waiting } => {
            e.int("admission.max_waiting", max_waiting as u64, 1, 1_000_000_000);
        }
        AdmissionSpec::Deadline { slack } => {
            e.range("admission.slack", slack, 0.1, 100.0);
        }
        AdmissionSpec::RandomDrop { probability } => {
            e.range("admission.probability", probability, 0.0, 1.0);
        }
        AdmissionSpec::TokenBucket { rate_tokens_per_s, burst_tokens } => {
            e.range_open_lo("admission.rate_tokens_per_s", rate_tokens_per_s, 0.0, 1e12);
            e.range("admission.burst_tokens", burst_tokens, 1.0, 1e12);
        }
    }
}
