//! Scenario: where validation lives (the defaults are the spec's, in `spec`).
//!
//! Two steps, as in ripgrep's low/high args: [`parse`] reads JSON into a raw [`Spec`] (serde, unknown fields
//! rejected with a suggestion), then [`validate`] checks every field once and derives the typed [`Scenario`]
//! the engine runs. Nothing downstream re-checks user input.
//!
//! Architecture invariant: a `Scenario` that exists is runnable — a lone request of the largest possible size
//! fits in KV and in the token budget, so every run makes progress.

mod budget;

pub use crate::cost::{Hardware, Model, presets};
pub use crate::spec::*;
pub use crate::workload::{Arrival, Class, Predictor, Prefix, Slo, Tenant, Workload};
pub(crate) use budget::ITL_CAP;
pub use budget::{Budget, Estimate};

use crate::cost::{CostModel, Roofline};
pub(crate) use crate::spec::field::Checked;
pub(crate) use crate::spec::{Errors, ms_to_ns, s_to_ns, suggest};
use crate::workload::Generator;

/// Read a scenario file's text into a raw spec.
pub fn parse(text: &str) -> Result<Spec, ScenarioError> {
    parse_raw(text).map_err(|(path, message)| {
        let (path, message) = whole_number_at_its_field(text, path, message);
        ScenarioError::one(path, message)
    })
}

/// [`parse`], its error as the path serde reached and the message in words.
fn parse_raw(text: &str) -> Result<Spec, (String, String)> {
    // Editors on some systems save UTF-8 with a byte-order mark; it is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let de = &mut serde_json::Deserializer::from_str(text);
    let spec: Spec = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = match e.path().to_string() {
            p if p == "." || p.is_empty() => "(root)".to_string(),
            p => p,
        };
        (path, with_suggestion(&e.inner().to_string()))
    })?;
    de.end().map_err(|e| ("(root)".to_string(), e.to_string()))?;
    Ok(spec)
}

/// A whole-number field given 2.5, 1e9 (a JSON float) or a number past its type: serde names the enclosing
/// object when the field is inside a tagged block (a length, an arrival), and only the type's range. Find the
/// field — the one number under that object equal to what was given — and its range, as validation states it:
/// the field is set to 0, then to 2^32 − 1, and validation's refusal at that path gives the bounds.
fn whole_number_at_its_field(text: &str, path: String, message: String) -> (String, String) {
    let Some(rest) = message.strip_prefix("expected a whole number") else { return (path, message) };
    let Some(given) = rest.split(", got ").nth(1).map(|g| g.split(" (line").next().unwrap_or(g).to_string()) else {
        return (path, message);
    };
    let Ok(mut root) = serde_json::from_str::<serde_json::Value>(text.strip_prefix('\u{feff}').unwrap_or(text)) else {
        return (path, message);
    };
    let Some(pointer) = json_pointer(&path) else { return (path, message) };
    let target: Option<f64> = given.parse().ok();
    let field = match root.pointer(&pointer) {
        Some(serde_json::Value::Object(m)) => {
            // The object's numbers, and those of its lists (a `sequence`'s or `empirical`'s values), by key.
            let mut hits = Vec::new();
            for (k, v) in m {
                match v {
                    serde_json::Value::Array(xs) => (xs.iter().enumerate())
                        .filter(|(_, x)| target.is_some() && x.as_f64() == target)
                        .for_each(|(i, _)| hits.push((k, Some(i)))),
                    v if target.is_some() && v.as_f64() == target => hits.push((k, None)),
                    _ => {}
                }
            }
            // One hit; or several in one list, where serde stopped at the first (each is probed alike).
            match hits[..] {
                [(k, None)] => Some((format!("{path}.{k}"), vec![format!("{pointer}/{k}")])),
                [(k, Some(i)), ..] if hits.iter().all(|h| h.0 == k) => Some((
                    format!("{path}.{k}[{i}]"),
                    hits.iter().filter_map(|h| h.1).map(|j| format!("{pointer}/{k}/{j}")).collect(),
                )),
                _ => None,
            }
        }
        Some(serde_json::Value::Number(_)) => Some((path.clone(), vec![pointer])),
        _ => None,
    };
    let Some((field, slots)) = field else { return (path, message) };
    for probe in [0u64, u32::MAX as u64] {
        for at in &slots {
            if let Some(slot) = root.pointer_mut(at) {
                *slot = serde_json::json!(probe);
            }
        }
        let refusal = parse_raw(&root.to_string()).ok().and_then(|s| validate(&s).err());
        let bounds = refusal.iter().flat_map(|e| &e.errors).find(|f| f.path == field).and_then(|f| {
            let (_, range) = f.message.split_once(" from ")?;
            Some(range.split(" (got").next()?.to_string())
        });
        if let Some(range) = bounds {
            return (field, format!("must be a whole number from {range} (got {given})"));
        }
    }
    let kind = rest.split(", got ").next().unwrap_or("");
    (field, format!("must be a whole number{kind} (got {given})"))
}

/// "workload.classes[0].prompt_tokens" → "/workload/classes/0/prompt_tokens".
fn json_pointer(path: &str) -> Option<String> {
    if path == "(root)" {
        return Some(String::new());
    }
    let mut out = String::new();
    for part in path.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, i)) => (n, Some(i.strip_suffix(']')?)),
            None => (part, None),
        };
        out += &format!("/{}", name.replace('~', "~0").replace('/', "~1"));
        if let Some(i) = index {
            out += &format!("/{i}");
        }
    }
    Some(out)
}

/// Parse then validate.
pub fn load(text: &str) -> Result<Scenario, ScenarioError> {
    validate(&parse(text)?)
}

/// Parse, validate, and refuse what would exceed the lab's budget ([`Budget::BROWSER`]).
pub fn load_for_browser(text: &str) -> Result<Scenario, ScenarioError> {
    load_spec_for_browser(text).map(|(_, sc)| sc)
}

/// `load_for_browser`, keeping the spec (the tested advice derives its changes from it).
pub fn load_spec_for_browser(text: &str) -> Result<(Spec, Scenario), ScenarioError> {
    let spec = parse(text)?;
    let sc = validate(&spec)?;
    sc.check_budget(&Budget::BROWSER, 1)?;
    Ok((spec, sc))
}

/// serde says "unknown field `x`, expected one of `a`, `b`"; add "did you mean `a`?" when one is close.
/// Its type errors ("invalid type: string \"\", expected f64 at line 1 column 429") are said in the user's
/// words: "expected a number, got the text \"\" (line 1, column 429)".
pub(crate) fn with_suggestion(msg: &str) -> String {
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
    if at.is_empty() {
        format!("expected {expected}, got {got}")
    } else {
        format!("expected {expected}, got {got} ({at})")
    }
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
    /// Requests whose prompt + output exceed this are refused at arrival.
    pub max_model_len: Option<u32>,
    /// From arrival to the scheduler's queue (the serving stack's per-request work).
    pub request_overhead_ns: u64,
    /// The front end's service of a request: (ns per request, ns per prompt token); None: no front end.
    pub frontend: Option<(f64, f64)>,
    /// Always `Vllm` on a decode pool: it has no prompts to put first.
    pub formation: BatchFormationSpec,
    pub backoff_ns: u64,
    pub max_preemptions: u32,
    /// A preempted request's full blocks stay cached for its readmission (`preemption.reuse_freed_blocks`
    /// on a vLLM formation with prefix caching on and per-worker queues).
    pub reuse_freed_blocks: bool,
    /// Sessions' host-memory KV tier, per worker.
    pub host: Option<HostTier>,
    /// Most blocks sessions' retained history may hold in HBM per worker.
    pub retention_budget_blocks: Option<u64>,
}

/// A worker's host-memory KV tier: its capacity in the pool's KV blocks and the host-to-HBM link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostTier {
    pub capacity_blocks: u64,
    /// Bytes of one KV block (the model's whole KV per token × block size).
    pub block_bytes: f64,
    /// Bytes per ns (= GB/s).
    pub bytes_per_ns: f64,
    pub latency_ns: u64,
}

impl HostTier {
    /// Time `blocks` blocks occupy the host-to-HBM link, ns.
    pub fn send_ns(&self, blocks: u64) -> u64 {
        (blocks as f64 * self.block_bytes / self.bytes_per_ns).round() as u64
    }
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

/// A validated scenario: everything the engine needs, in engine units.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub workload: Workload,
    pub model: Model,
    pub order_predictor: Predictor,
    pub reserve_predictor: Predictor,
    /// The cluster's queue order and admission policy (each built by its kind's `build`, the registry).
    pub scheduler: SchedulerSpec,
    pub admission: AdmissionSpec,
    /// The worker pools: one colocated pool, or prefill then decode. Each has its own device, cost model,
    /// engine limits (with its own KV capacity) and router; nothing cluster-wide is repeated outside them.
    pub pools: Vec<Pool>,
    /// The KV-transfer link, when disaggregated.
    pub link: Option<Link>,
    /// Shared prefixes, when some requests carry one (None also when the shared part is empty or the
    /// reuse fraction is 0: then the feature changes nothing).
    pub prefix: Option<Prefix>,
    /// The run's horizon: it stops here, reporting what is still in the system as unfinished.
    pub horizon_ns: Option<u64>,
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
    pub metric: LatencyMetric,
    pub percentile: f64,
    pub max_ns: u64,
    pub class: Option<u32>,
}

/// At most this many percentile objectives (each is a pass over the samples).
const MAX_OBJECTIVES: usize = 64;

fn validate_objectives(o: &ObjectivesSpec, w: Option<&Workload>, e: &mut Errors) -> Objectives {
    o.check_fields("objectives", e);
    if o.percentiles.len() > MAX_OBJECTIVES {
        e.push(
            at!("objectives", o.percentiles),
            format!("at most {MAX_OBJECTIVES} objectives (got {})", o.percentiles.len()),
        );
        return Objectives { attainment_target: o.attainment_target, percentiles: vec![] };
    }
    let mut percentiles = Vec::new();
    for (i, p) in o.percentiles.iter().enumerate() {
        let path = format!("{}[{i}]", at!("objectives", o.percentiles));
        let ok = e.range_open_lo(&format!("{path}.percentile"), p.percentile, 0.0, 100.0)
            & e.range_open_lo(&format!("{path}.max_ms"), p.max_ms, 0.0, 1e9);
        let class = match (&p.class, w) {
            (None, _) => Some(None),
            (Some(name), Some(w)) => match w.classes.iter().position(|c| c.name == *name) {
                Some(k) => Some(Some(k as u32)),
                None => {
                    let hint = suggest(name, w.classes.iter().map(|c| c.name.as_str()))
                        .map(|s| format!("; did you mean \"{s}\"?"))
                        .unwrap_or_default();
                    e.push(format!("{path}.class"), format!("no class is named \"{name}\"{hint}"));
                    None
                }
            },
            (Some(_), None) => None,
        };
        if let (true, Some(class)) = (ok, class) {
            percentiles.push(PercentileObjective {
                metric: p.metric,
                percentile: p.percentile,
                max_ns: ms_to_ns(p.max_ms),
                class,
            });
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

    /// The pool every request enters first: the colocated one, or the prefill pool. Its engine holds what
    /// applies at arrival (max_model_len, the serving overhead), its router routes arrivals, and sessions' KV
    /// between turns lives on its workers.
    pub fn front_pool(&self) -> &Pool {
        &self.pools[0]
    }

    pub fn is_disaggregated(&self) -> bool {
        self.link.is_some()
    }

    /// Where requests can be drawn longer than the front pool's `max_model_len` (refused at arrival, counted as
    /// `rejected_too_long`), said before the run — at a class's prompt (its largest prompt + largest output
    /// passes it) or at a trace (how many of the rows that will run pass it). Sessions end at the context
    /// instead (counted), so they are not listed.
    pub fn past_max_model_len(&self) -> Vec<PastLimit> {
        let Some(limit) = self.front_pool().engine.max_model_len else { return Vec::new() };
        let whose = if self.model.context_tokens == Some(limit) { " (the model's context)" } else { "" };
        let (w, mut out) = (&self.workload, Vec::new());
        if w.sessions.is_some() {
            return out;
        }
        if let Arrival::Trace { rows } = &w.arrival {
            let rows = &rows[..(w.max_requests as usize).min(rows.len())];
            let past = (rows.iter()).filter(|r| r.prompt_tokens as u64 + r.output_tokens as u64 > limit as u64).count();
            if past > 0 {
                out.push(PastLimit {
                    path: at!("workload.arrival", ArrivalSpec::Trace { data }),
                    what: format!(
                        "{past} of its {} requests {} longer (prompt + output) than engine.max_model_len {limit}{whose}: refused at arrival",
                        rows.len(),
                        if past == 1 { "is" } else { "are" }
                    ),
                });
            }
            return out;
        }
        for (i, c) in w.classes.iter().enumerate() {
            let (prompt, output) = (c.prompt.max(), c.output.max());
            if prompt as u64 + output as u64 > limit as u64 {
                out.push(PastLimit {
                    path: format!("workload.classes[{i}].prompt_tokens"),
                    what: format!(
                        "max {prompt} + output up to {output} passes engine.max_model_len {limit}{whose}: requests drawn past it are refused at arrival"
                    ),
                });
            }
        }
        out
    }

    /// KV-transfer links: one per (prefill, decode) pair, one shared, or none when colocated.
    pub fn link_count(&self) -> usize {
        match (&self.link, self.pools.as_slice()) {
            (Some(l), [p, d]) if l.topology == LinkTopology::PerPair => (p.replicas * d.replicas) as usize,
            (Some(_), _) => 1,
            (None, _) => 0,
        }
    }

    /// The queueing delay one outstanding request adds at a worker of pool `p`, as bounded affinity weighs
    /// it: the prompt tokens a request makes a worker prefill on average (a retained session turn's new input;
    /// otherwise the whole prompt) at the pool's prefill rate (a chunk's step time per token).
    pub fn queue_penalty_ns(&self, p: usize) -> f64 {
        let pool = &self.pools[p];
        let chunk = pool.engine.prefill_chunk_tokens.max(1);
        let step =
            pool.cost.step(&crate::cost::StepWork { prefill_seqs: 1, prefill_tokens: chunk, ..Default::default() });
        self.workload.mean_computed_prompt_tokens() * step.total_ns as f64 / chunk as f64
    }

    /// Bytes of one KV block of the (first) pool: the model's whole KV per token × the block size — what a
    /// session's retained blocks weigh in reports and studies.
    pub fn kv_block_bytes(&self) -> f64 {
        self.model.kv_bytes_per_token() * self.front_pool().engine.block_size_tokens as f64
    }

    /// The most tokens a session's turn may hold (prompt + output): the model's context, or one worker's KV. A
    /// turn past it ends its session; the budget's estimate stops a session there too.
    pub fn turn_cap_tokens(&self) -> u64 {
        let kv = self
            .pools
            .iter()
            .map(|p| p.engine.kv_total_blocks * p.engine.block_size_tokens as u64)
            .min()
            .unwrap_or(u64::MAX);
        self.model.context_tokens.map_or(kv, |c| (c as u64).min(kv))
    }

    /// The requests of this scenario, in arrival order.
    pub fn generator(&self) -> Generator<'_> {
        let limit = self.turn_cap_tokens().min(u32::MAX as u64) as u32;
        Generator::new(&self.workload, self.prefix.as_ref(), [self.order_predictor, self.reserve_predictor], self.seed)
            .with_context(Some(limit))
    }
}

/// [`validate`], then refuse one run over `budget`: the check every run the product makes on the user's
/// behalf (a tested change, a capacity probe, a longer run) passes before it runs.
pub fn validate_within(spec: &Spec, budget: &Budget) -> Result<Scenario, ScenarioError> {
    let sc = validate(spec)?;
    sc.check_budget(budget, 1)?;
    Ok(sc)
}

/// Check every field and derive the engine's scenario.
pub fn validate(spec: &Spec) -> Result<Scenario, ScenarioError> {
    let mut e = Errors::default();
    let workload = Workload::build(&spec.workload, &mut e);
    let model = Model::build(&spec.model, &mut e);
    let hardware = Hardware::build(&spec.hardware, model.as_ref(), &mut e);
    let order_predictor = Predictor::build(&spec.estimator.order, "estimator.order", &mut e);
    let reserve_predictor = Predictor::build(&spec.estimator.reserve, "estimator.reserve", &mut e);
    validate_policies(spec, &mut e);
    spec.cluster.check_fields(at!(spec.cluster), &mut e);
    spec.metrics.check_fields(at!(spec.metrics), &mut e);
    let objectives = validate_objectives(&spec.objectives, workload.as_ref(), &mut e);
    let engine = match (&model, &hardware) {
        (Some(m), Some(h)) => validate_engine(&spec.engine, m, h, &mut e),
        _ => None,
    };
    let cost = CostModel::build(&spec.cost, model.as_ref(), hardware.as_ref(), &mut e);
    // Cross-field checks need the pieces above.
    if let (Some(w), Some(en)) = (&workload, &engine) {
        check_fits(w, en, model.as_ref().and_then(|m| m.context_tokens), &mut e);
        check_deadlines(spec, w, &mut e);
        check_chains(spec, w, en, &mut e);
        if w.sessions.is_some() && spec.cluster.disaggregation.is_some() {
            e.push(
                path_of!(spec.cluster.disaggregation),
                "sessions with disaggregated prefill and decode are not modelled: remove one of them",
            );
        }
        check_session_kv(spec, w, &mut e);
    }
    let cost = scaled(spec.cost_scale, cost, &mut e);
    let cost = with_step_cpu(&spec.engine, &spec.cost, cost, &mut e);
    let disagg = match (&spec.cluster.disaggregation, &model, &hardware, &cost, &engine, &workload) {
        (Some(d), Some(m), Some(_), Some(c), Some(_), Some(w)) => validate_disagg(spec, d, m, c, w, &mut e),
        _ => None,
    };
    let prefix = match (&spec.prefix, &engine, &workload) {
        (_, Some(en), Some(w)) if w.sessions.as_ref().is_some_and(|s| s.workflow.is_some()) => {
            workflow_prefix(spec, w, en.block_size_tokens, &mut e)
        }
        (Some(p), Some(en), Some(w)) => Prefix::build(p, en.block_size_tokens, w, &mut e),
        _ => None,
    };
    e.finish()?;
    let workload = workload.expect("no errors: the workload is valid");
    let (mut pools, link) = match disagg {
        Some((pools, link)) => (pools, Some(link)),
        None => {
            let (hardware, cost, engine) = (hardware.expect("valid"), cost.expect("valid"), engine.expect("valid"));
            let colocated = Pool {
                role: Role::Colocated,
                replicas: spec.cluster.replicas,
                first: 0,
                hardware,
                cost,
                engine,
                router: spec.cluster.router.clone(),
            };
            (vec![colocated], None)
        }
    };
    let prefix = prefix.flatten();
    // Kept blocks wait for the readmission on the victim's worker: a central queue may readmit it on any, and
    // with prefix caching off vLLM keeps no hash to find them by.
    let hashed = prefix.as_ref().is_none_or(|p| p.caching);
    for p in &mut pools {
        p.engine.reuse_freed_blocks &= hashed && !matches!(p.router, RouterSpec::CentralQueue);
    }
    let mut e = Errors::default();
    for p in &pools {
        check_longest_step(p, pools.len() > 1, &mut e);
    }
    e.finish()?;
    let points = spec.metrics.series_points;
    let window = (expected_span_ns(&workload) / points as f64).max(1e6) as u64;
    Ok(Scenario {
        name: spec.name.clone(),
        seed: spec.seed,
        workload,
        model: model.expect("valid"),
        order_predictor: order_predictor.expect("valid"),
        reserve_predictor: reserve_predictor.expect("valid"),
        scheduler: spec.scheduler.clone(),
        admission: spec.admission.clone(),
        pools,
        link,
        prefix,
        horizon_ns: spec.engine.horizon_s.map(s_to_ns),
        series_window_ns: window,
        series_points: points,
        warmup_fraction: spec.metrics.warmup_fraction,
        objectives,
    })
}

/// The host tier and the retention budget hold sessions' KV: they need sessions; offloading needs a host tier;
/// a restore is started where the router sends a turn, so the host tier needs a router.
fn check_session_kv(spec: &Spec, w: &Workload, e: &mut Errors) {
    let en = &spec.engine;
    let Some(s) = &w.sessions else {
        if en.host_kv.is_some() {
            e.push(
                path_of!(spec.engine.host_kv),
                "the host tier holds sessions' KV between turns: it needs workload.sessions",
            );
        }
        if en.retention_budget_blocks.is_some() {
            e.push(
                path_of!(spec.engine.retention_budget_blocks),
                "the retention budget caps sessions' retained KV: it needs workload.sessions",
            );
        }
        return;
    };
    if s.retention == crate::workload::Retention::HostOffload
        && en.host_kv.is_none()
        && let Some(ss) = &spec.workload.sessions
    {
        e.push(
            format!("{}.{}", path_of!(spec.workload.sessions), path_of!(ss.retention)),
            "host_offload moves a session's KV to host memory: it needs engine.host_kv (capacity_gb, bandwidth_gbps)",
        );
    }
    if en.host_kv.is_some() && spec.cluster.router == RouterSpec::CentralQueue {
        e.push(path_of!(spec.cluster.router), "a host tier restores a turn's KV on the worker a router picks at arrival: central_queue picks at dispatch; use a router (sticky, bounded_affinity, least_outstanding, …)");
    }
}

/// A workflow's role prefixes are shared prefixes, one group per role, always cached; their whole blocks are
/// shared. Not with `prefix` (the roles are the workflow's shared prefixes); prefetching needs the host link.
fn workflow_prefix(spec: &Spec, w: &Workload, block: u32, e: &mut Errors) -> Option<Option<Prefix>> {
    let Some(wf) = w.sessions.as_ref().and_then(|s| s.workflow.as_ref()) else { return Some(None) };
    let at = || format!("{}.workflow", path_of!(spec.workload.sessions));
    if spec.prefix.is_some() {
        e.push(path_of!(spec.prefix), "a workflow's role prefixes are its shared prefixes: remove `prefix`");
    }
    if spec.cluster.disaggregation.is_some() {
        e.push(path_of!(spec.cluster.disaggregation), "workflows are modelled for colocated serving only");
    }
    if wf.prefix_tokens < block {
        let why = format!("must be at least a KV block ({block} tokens): only whole blocks are cached");
        e.push(format!("{}.prefix_tokens", at()), format!("{why} (got {})", wf.prefix_tokens));
        return None;
    }
    if !wf.predictor.is_none() && spec.engine.host_kv.is_none() {
        e.push(format!("{}.predictor", at()), "prefetching brings role prefixes from host memory: it needs engine.host_kv (its link's bandwidth and latency)");
    }
    let n = wf.roles.len();
    let group_cdf = (1..=n).map(|k| k as f64 / n as f64).collect();
    Some(Some(Prefix {
        shared_tokens: wf.prefix_tokens / block * block,
        reuse_fraction: 1.0,
        group_cdf,
        caching: true,
    }))
}

/// Deadline admission tests each request against its class's end-to-end SLO: every class needs one.
/// Feasibility admission tests its TTFT, TPOT and e2e SLOs: every class needs one of them.
fn check_deadlines(spec: &Spec, w: &Workload, e: &mut Errors) {
    let feasible = matches!(spec.admission, AdmissionSpec::Feasible { .. });
    if !feasible && !matches!(spec.admission, AdmissionSpec::Deadline { .. }) {
        return;
    }
    for (i, (c, cs)) in w.classes.iter().zip(&spec.workload.classes).enumerate() {
        if feasible && c.slo.ttft_ns.is_none() && c.slo.tpot_ns.is_none() && c.slo.e2e_ns.is_none() {
            e.push(
                format!("{}[{i}].{}", path_of!(spec.workload.classes), path_of!(cs.slo.ttft_ms)),
                "required, or slo.tpot_ms or slo.e2e_ms, when admission.kind is \"feasible\" (the objectives to test against)",
            );
        } else if !feasible && c.slo.e2e_ns.is_none() {
            e.push(
                format!("{}[{i}].{}", path_of!(spec.workload.classes), path_of!(cs.slo.e2e_ms)),
                "required when admission.kind is \"deadline\" (the deadline to test against)",
            );
        }
    }
}

/// The cost model with `cost_scale`'s profile-error multipliers of prefill and decode applied.
/// The roofline with the engine's host work per step (`engine.step_cpu`), in its bounds; refused with the linear
/// cost, whose per-sequence time is its own `per_seq_ms`.
fn with_step_cpu(en: &EngineSpec, spec: &CostSpec, cost: Option<CostModel>, e: &mut Errors) -> Option<CostModel> {
    let Some(c) = &en.step_cpu else { return cost };
    let at = at!("engine", en.step_cpu);
    if !c.check_fields(&at, e) {
        return cost;
    }
    if matches!(spec, CostSpec::Linear { .. }) {
        e.push(at, "applies to the roofline cost: the linear cost's per_seq_ms is its time per sequence");
        return cost;
    }
    cost.map(|m| m.with_cpu(c.per_step_us * 1e3, c.per_seq_us * 1e3, c.overlapped))
}

fn scaled(scale: Option<CostScaleSpec>, cost: Option<CostModel>, e: &mut Errors) -> Option<CostModel> {
    let scale = scale.unwrap_or_default();
    scale.check_fields("cost_scale", e);
    cost.map(|c| c.scaled(scale.prefill, scale.decode))
}

/// How long arrivals are expected to last, to size the time-series window.
fn expected_span_ns(w: &Workload) -> f64 {
    if let Arrival::Trace { rows } = &w.arrival {
        let n = (w.max_requests as usize).min(rows.len()).max(1);
        return (rows[n - 1].arrival_ns as f64).min(w.end_ns as f64).max(1e9);
    }
    (w.mean_gap_ns() * w.max_requests.min(u32::MAX as u64) as f64).min(w.end_ns as f64).max(1e9)
}

fn validate_engine(en: &EngineSpec, m: &Model, h: &Hardware, e: &mut Errors) -> Option<Engine> {
    let n0 = e.0.len();
    check_engine_fields(en, m, e);
    if e.0.len() > n0 {
        return None;
    }
    let block_bytes = m.kv_bytes_per_token() * en.block_size_tokens as f64;
    let host = en.host_kv.as_ref().map(|h| HostTier {
        capacity_blocks: (h.capacity_gb * 1e9 / block_bytes).floor() as u64,
        block_bytes,
        bytes_per_ns: h.bandwidth_gbps,
        latency_ns: ms_to_ns(h.latency_ms),
    });
    let kv_capacity_tokens = kv_capacity_tokens(en, m, h, e)?;
    let block = en.block_size_tokens as u64;
    let kv_total_blocks = kv_capacity_tokens / block;
    if kv_total_blocks == 0 {
        e.push(
            at!("engine", en.kv_capacity_tokens),
            format!("KV capacity ({kv_capacity_tokens} tokens) is less than one block ({block} tokens)"),
        );
        return None;
    }
    Some(Engine {
        max_num_seqs: en.max_num_seqs,
        max_num_batched_tokens: en.max_num_batched_tokens,
        chunked_prefill: en.chunked_prefill,
        prefill_chunk_tokens: if en.chunked_prefill {
            en.prefill_chunk_tokens.unwrap_or(en.max_num_batched_tokens)
        } else {
            en.max_num_batched_tokens
        },
        block_size_tokens: en.block_size_tokens,
        kv_capacity_tokens,
        kv_total_blocks,
        kv_reserve_limit_blocks: (kv_total_blocks as f64 * en.kv_oversubscription).floor() as u64,
        victim: en.preemption.victim,
        // vLLM's default max_model_len is the model's context (max_position_embeddings).
        max_model_len: en.max_model_len.or(m.context_tokens),
        request_overhead_ns: ms_to_ns(en.request_overhead_ms),
        frontend: en.frontend.as_ref().map(|f| (f.per_request_ms * 1e6, f.per_prompt_token_us * 1e3)),
        formation: en.batch_formation,
        backoff_ns: ms_to_ns(en.preemption.backoff_ms),
        max_preemptions: en.preemption.max_preemptions,
        reuse_freed_blocks: en.preemption.reuse_freed_blocks && en.batch_formation.is_vllm(),
        host,
        retention_budget_blocks: en.retention_budget_blocks,
    })
}

/// The engine's fields, each within its bounds.
fn check_engine_fields(en: &EngineSpec, m: &Model, e: &mut Errors) {
    let at = "engine";
    en.check_fields(at, e);
    en.preemption.check_fields(&at!(at, en.preemption), e);
    if let Some(f) = &en.frontend {
        f.check_fields(&at!(at, en.frontend), e);
    }
    if let Some(h) = &en.host_kv {
        h.check_fields(&at!(at, en.host_kv), e);
    }
    if !en.batch_formation.is_vllm() {
        // SGLang's formations reserve by new_token_ratio and retract by progress (sched::sglang).
        let why = "applies to batch_formation vllm only: SGLang's formations reserve a decaying share of the output still to come and retract the least-progressed request";
        if en.kv_oversubscription != 1.0 {
            e.push(at!(at, en.kv_oversubscription), format!("{why}; leave it at 1"));
        }
        if en.preemption.victim != VictimSpec::default() {
            e.push(format!("{}.victim", at!(at, en.preemption)), format!("{why}; leave it at newest"));
        }
    }
    if let Some(chunk) = en.prefill_chunk_tokens {
        let most = en.max_num_batched_tokens.max(1) as u64;
        e.int(&at!(at, en.prefill_chunk_tokens), chunk as u64, 1, most);
    }
    if let Some(len) = en.max_model_len {
        // vLLM refuses a max_model_len past the model's context (without an override flag).
        let most = m.context_tokens.unwrap_or(MOST_CONTEXT_TOKENS) as u64;
        let why = if m.context_tokens.is_some() { " (model.context_tokens)" } else { "" };
        if !(1..=most).contains(&(len as u64)) {
            // Said as every whole-number range is, so a typed −1 or 1e308 (refused by serde) is told it too.
            e.push(at!(at, en.max_model_len), format!("must be an integer from 1 to {most}{why} (got {len})"));
        }
    }
}

/// Requests a scenario can draw past `engine.max_model_len`, said at the field that draws them.
#[derive(Clone, Debug, PartialEq)]
pub struct PastLimit {
    /// `workload.classes[1].prompt_tokens`, or the trace's `workload.arrival.data`.
    pub path: String,
    /// "max 16000 + output up to 1024 passes engine.max_model_len 8192 (the model's context): …"
    pub what: String,
}

/// KV tokens a replica holds: given, or what the HBM left after the weights holds.
fn kv_capacity_tokens(en: &EngineSpec, m: &Model, h: &Hardware, e: &mut Errors) -> Option<u64> {
    match en.kv_capacity_tokens {
        Some(c) => Some(c),
        None => {
            // Each GPU holds 1/tp of the weights and of the KV heads (KV heads replicate when tp > kv_heads).
            let tp = h.tp as f64;
            let weights_per_gpu = m.weight_bytes() / tp;
            let usable = h.hbm_bytes * en.gpu_memory_utilization;
            let kv_heads_per_gpu = (m.kv_heads as f64 / tp).max(1.0);
            let kv_per_token_per_gpu =
                2.0 * m.layers as f64 * kv_heads_per_gpu * m.head_dim as f64 * m.kv_bytes_per_elem;
            if usable <= weights_per_gpu {
                e.push(
                    at!("engine", en.gpu_memory_utilization),
                    format!(
                        "the weights ({:.1} GB per GPU at tp {}) do not fit in {:.1} GB (hardware.hbm_gb × gpu_memory_utilization): raise tp, memory or utilisation",
                        weights_per_gpu / 1e9, h.tp, usable / 1e9
                    ),
                );
                return None;
            }
            Some(((usable - weights_per_gpu) / kv_per_token_per_gpu).floor() as u64)
        }
    }
}

/// The longest a step may take: 10^6 s, about 12 days (real steps take milliseconds to seconds; a textbook
/// queue's linear cost or the slowest accepted GPU may make hours). Past it a run of a few thousand steps
/// would reach the simulated clock's end.
pub const MAX_STEP_NS: f64 = 1e15;

/// The largest step a pool's engine can form — a full token budget of prompt at the end of a full KV, beside a
/// full batch of decodes reading the whole KV: no step costs more — must take at most [`MAX_STEP_NS`]. (TP 64
/// over a 0.01 GB/s link at 0.1 % all-reduce efficiency made steps of 2e6 s, and the clock overflowed.) The
/// refusal names the figure that takes most of it.
fn check_longest_step(p: &Pool, named: bool, e: &mut Errors) {
    let en = &p.engine;
    let (budget, kv) = (en.max_num_batched_tokens as u64, en.kv_capacity_tokens);
    let largest = crate::cost::StepWork {
        decode_seqs: en.max_num_seqs,
        decode_context_tokens: kv,
        prefill_seqs: 1,
        prefill_tokens: en.max_num_batched_tokens,
        prefill_attention_pairs: budget.saturating_mul(kv.saturating_add(budget)),
        prefill_context_tokens: kv,
    };
    let c = p.cost.step(&largest);
    if c.total_ns as f64 <= MAX_STEP_NS {
        return;
    }
    let latency = p.cost.step(&crate::cost::StepWork { decode_seqs: 1, ..Default::default() }).comm_ns;
    let (path, what) = [
        (
            c.prefill_compute_ns + c.decode_compute_ns,
            at!("hardware", HardwareSpec::peak_tflops),
            "compute (peak_tflops × mfu)",
        ),
        (
            c.weights_ns + c.kv_read_ns,
            at!("hardware", HardwareSpec::hbm_bandwidth_gbps),
            "reading weights and KV (HBM bandwidth)",
        ),
        (
            (c.comm_ns - latency).max(0.0),
            at!("hardware", HardwareSpec::interconnect_gbps),
            "the all-reduce's bandwidth (interconnect_gbps × allreduce_bw_efficiency or allreduce_large_bw_efficiency)",
        ),
        (
            latency.min(c.comm_ns),
            at!("hardware", HardwareSpec::allreduce_latency_us),
            "the all-reduce's latency (twice a layer)",
        ),
        (c.overhead_ns, at!("hardware", HardwareSpec::step_overhead_ms), "the fixed step overhead"),
    ]
    .into_iter()
    .fold(
        (0.0, ("cost".to_string(), "the cost model")),
        |best, (ns, path, what)| if ns > best.0 { (ns, (path, what)) } else { best },
    )
    .1;
    let (path, what) = match p.cost {
        CostModel::Linear(_) => ("cost".to_string(), "the linear cost's per-step and per-token times"),
        _ => (path, what),
    };
    let pool = if named { format!(" ({} pool)", p.role.name()) } else { String::new() };
    e.push(
        path,
        format!(
            "a step would take up to {:.3e} s{pool}, over the {:.0} s a step may take (a full token budget of {} prompt tokens beside {} decodes over {} KV tokens), mostly {what}",
            c.total_ns as f64 / 1e9,
            MAX_STEP_NS / 1e9,
            en.max_num_batched_tokens,
            en.max_num_seqs,
            kv
        ),
    );
}

/// A trace's block hashes go into each worker's prefix cache: whole KV blocks per hashed block, on colocated
/// workers, and not together with synthetic prefix groups (which also use the cache).
fn check_chains(spec: &Spec, w: &Workload, en: &Engine, e: &mut Errors) {
    let Some(c) = &w.chains else { return };
    if c.block_tokens % en.block_size_tokens != 0 {
        e.push(path_of!(spec.engine.block_size_tokens), format!("must divide the trace's hashed block of {} tokens (workload.arrival.hash_block_tokens) to reuse its hash_ids (got {})", c.block_tokens, en.block_size_tokens));
    }
    if spec.prefix.is_some() {
        e.push(path_of!(spec.prefix), "a trace with hash_ids brings its own shared prefixes: remove `prefix`, or set workload.arrival.reuse_hash_ids to false");
    }
    if spec.cluster.disaggregation.is_some() {
        e.push(path_of!(spec.cluster.disaggregation), "replaying a trace's hash_ids into the prefix cache is modelled for colocated serving only: set workload.arrival.reuse_hash_ids to false");
    }
}

/// Every request must be able to run alone: its whole prompt + output fits in KV, and without chunked prefill
/// its prompt (which after a recompute-preemption includes generated tokens) fits in one step's token budget.
///
/// A session's first turn is also held to the model's `context` (later turns past it end their session; a
/// first turn past it would be a session that never starts).
fn check_fits(w: &Workload, en: &Engine, context: Option<u32>, e: &mut Errors) {
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
                check(
                    e,
                    format!("{} (request {})", at!("workload.arrival", ArrivalSpec::Trace { data }), i + 1),
                    r.prompt_tokens as u64,
                    r.output_tokens as u64,
                );
            }
        }
        _ => {
            for (i, c) in w.classes.iter().enumerate() {
                check(
                    e,
                    format!("{}[{i}]", at!("workload", WorkloadSpec::classes)),
                    c.prompt.max() as u64,
                    c.output.max() as u64,
                );
            }
        }
    }
    let context = context.map_or(u64::MAX, u64::from);
    check_first_turns(w, |at, prompt, output| {
        let n0 = e.0.len();
        check(e, at.clone(), prompt, output);
        if e.0.len() == n0 && prompt + output > context {
            e.push(at, format!("a session's first turn of {prompt} prompt + {output} output tokens exceeds the model's context (model.context_tokens: {context}); lower the first turn's lengths or raise the context"));
        }
    });
}

/// Each kind of session's largest first turn (a trace's, named by its line) given to `check`.
fn check_first_turns(w: &Workload, mut check: impl FnMut(String, u64, u64)) {
    let Some(s) = &w.sessions else { return };
    // A workflow's step starts with its role's prefix.
    let prefix = s.workflow.as_ref().map_or(0, |wf| wf.prefix_tokens as u64);
    match &s.trace {
        Some(t) => {
            let (i, widest) = (t.programs.iter().enumerate())
                .max_by_key(|(_, p)| p.prompt(0, 0, 0) + p.output_tokens[0] as u64)
                .expect("a trace has a session");
            let at = format!("{} (line {})", at!("workload.sessions", SessionsSpec::trace), t.lines[i]);
            check(at, prefix + widest.prompt(0, 0, 0), widest.output_tokens[0] as u64);
        }
        None => {
            for (i, c) in s.classes.iter().enumerate() {
                let at = if s.named_classes {
                    format!("{}[{i}]", at!("workload.sessions", SessionsSpec::classes))
                } else {
                    at!("workload", WorkloadSpec::sessions)
                };
                check(at, prefix + c.first.max() as u64, c.output.max() as u64);
            }
        }
    }
}

/// The prefill and decode pools and the link. Each pool's device and TP give it its own cost model and KV
/// capacity; every request must fit a worker of the pool it visits.
fn validate_disagg(
    spec: &Spec,
    d: &DisaggSpec,
    m: &Model,
    cost: &CostModel,
    w: &Workload,
    e: &mut Errors,
) -> Option<(Vec<Pool>, Link)> {
    let n0 = e.0.len();
    let mut pools = Vec::new();
    let mut first = 0;
    for (role, ps) in [(Role::Prefill, &d.prefill), (Role::Decode, &d.decode)] {
        let p = format!("{}.{}", path_of!(spec.cluster.disaggregation), role.name());
        ps.check_fields(&p, e);
        if ps.router == RouterSpec::CentralQueue {
            e.push(format!("{p}.router"), "central_queue is for colocated serving; pools route to per-worker queues (round_robin, random, least_outstanding, least_kv, power_of_two)");
        }
        let Some((hw, mut en)) = pool_parts(spec, ps, &p, role, m, e) else { continue };
        if role == Role::Decode {
            en.formation = BatchFormationSpec::Vllm;
        }
        check_fits_pool(role, en.kv_total_blocks * en.block_size_tokens as u64, w, e);
        let pool_cost = match cost {
            CostModel::Roofline(r) => {
                CostModel::Roofline(Roofline::new(m, &hw).with_cpu_of(r)).scaled(r.prefill_scale, r.decode_scale)
            }
            linear => linear.clone(),
        };
        pools.push(Pool {
            role,
            replicas: ps.replicas,
            first,
            hardware: hw,
            cost: pool_cost,
            engine: en,
            router: ps.router.clone(),
        });
        first += ps.replicas;
    }
    let l = &d.link;
    l.check_fields(&at!("cluster.disaggregation", d.link), e);
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

/// A pool's hardware (the scenario's, or a device preset; TP overridable either way) and engine, validated
/// with the usual checks and their errors named at the pool's fields.
fn pool_parts(
    spec: &Spec,
    ps: &PoolSpec,
    p: &str,
    role: Role,
    m: &Model,
    e: &mut Errors,
) -> Option<(Hardware, Engine)> {
    // The pool's hardware: the scenario's, or a device preset; TP overridable either way.
    let mut hs = match &ps.device {
        Some(dev) if Some(dev) != spec.hardware.device.as_ref() => {
            HardwareSpec { device: Some(dev.clone()), ..HardwareSpec::default() }
        }
        _ => spec.hardware.clone(),
    };
    if let Some(tp) = ps.tp {
        hs.tp = tp;
    }
    // Validate with the usual checks, then name the pool's fields in the errors.
    let mut sub = Errors::default();
    let hw = Hardware::build(&hs, Some(m), &mut sub);
    let en = hw.as_ref().and_then(|h| validate_engine(&spec.engine, m, h, &mut sub));
    for f in sub.0 {
        let path = match f.path.strip_prefix("hardware.") {
            Some("device") => format!("{p}.device"),
            Some("tp") => format!("{p}.tp"),
            _ => p.to_string(),
        };
        e.push(path, format!("{} ({} pool: {})", f.message, role.name(), f.path));
    }
    Some((hw?, en?))
}

/// A request must fit one worker of the pool it visits (`cap` KV tokens): the prompt (+ its first token) to
/// prefill, everything to decode.
fn check_fits_pool(role: Role, cap: u64, w: &Workload, e: &mut Errors) {
    // A request must fit one worker of this pool: the prompt (+ its first token) to prefill, everything
    // to decode.
    let need = |prompt: u32, output: u32| prompt as u64 + if role == Role::Prefill { 1 } else { output as u64 };
    match &w.arrival {
        // A trace's rows are its requests: the first that does not fit is named (a run would leave every
        // such request unfinished).
        Arrival::Trace { rows } => {
            if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| need(r.prompt_tokens, r.output_tokens) > cap) {
                let n = need(r.prompt_tokens, r.output_tokens);
                e.push(
                    format!("{} (request {})", at!("workload.arrival", ArrivalSpec::Trace { data }), i + 1),
                    format!(
                        "a request of {n} tokens exceeds the KV capacity of one {} worker ({cap} tokens)",
                        role.name()
                    ),
                );
            }
        }
        _ => {
            for (i, c) in w.classes.iter().enumerate() {
                let n = need(c.prompt.max(), c.output.max());
                if n > cap {
                    e.push(
                        format!("{}[{i}]", at!("workload", WorkloadSpec::classes)),
                        format!(
                            "a request of up to {n} tokens exceeds the KV capacity of one {} worker ({cap} tokens)",
                            role.name()
                        ),
                    );
                }
            }
        }
    }
}

fn validate_policies(spec: &Spec, e: &mut Errors) {
    // Each policy's numbers within the bounds declared beside its enum.
    spec.cluster.router.check_fields(&path_of!(spec.cluster.router), e);
    if let Some(d) = &spec.cluster.disaggregation {
        let at = path_of!(spec.cluster.disaggregation);
        d.prefill.router.check_fields(&format!("{at}.{}", path_of!(d.prefill.router)), e);
        d.decode.router.check_fields(&format!("{at}.{}", path_of!(d.decode.router)), e);
    }
    spec.scheduler.check_fields(&path_of!(spec.scheduler), e);
    spec.admission.check_fields(&path_of!(spec.admission), e);
}
