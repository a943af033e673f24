//! The workload, validated: arrivals, classes, tenants, output-length predictors and shared prefixes, each
//! built from its part of the scenario spec with the errors it finds. `scenario::validate` assembles them.

use super::TraceRow;
use super::class::{Class, Tenant, classes, tenants};
use crate::spec::at;
use crate::spec::field::Checked;
use crate::spec::{ArrivalSpec, Errors, NS_PER_S, PredictorSpec, PrefixSpec, TraceFormat, WorkloadSpec, s_to_ns};

/// The longest arrival span a run may have, ns (about 31 years): the u64 nanosecond clock holds 584 years,
/// and the drain after the last arrival must fit too.
pub(crate) const MAX_SPAN_NS: f64 = 1e18;
pub(crate) use crate::spec::MAX_REQUESTS;
/// Validated arrival process; gaps in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    Poisson {
        mean_gap_ns: f64,
    },
    Constant {
        gap_ns: f64,
    },
    Gamma {
        shape: f64,
        scale_ns: f64,
    },
    OnOff {
        on_rate_per_ns: f64,
        off_rate_per_ns: f64,
        mean_on_ns: f64,
        mean_off_ns: f64,
    },
    /// `clients` requests at t = 0; each later one answers a request's end after a think time (mean ns).
    ClosedLoop {
        clients: u64,
        think_ns: f64,
    },
    /// Every request at t = 0.
    Burst,
    Trace {
        rows: Vec<TraceRow>,
    },
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
    /// A replayed trace's block hashes, when it has them and they are replayed into the prefix cache.
    pub chains: Option<Chains>,
    /// Multi-turn sessions (each arrival starts one).
    pub sessions: Option<super::sessions::Sessions>,
}

/// A length distribution whose bounds cut the mean its spec asked for (by more than 1 %).
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    /// The distribution's field (`workload.classes[0].prompt_tokens`).
    pub path: String,
    pub asked_tokens: f64,
    pub sampled_tokens: f64,
    pub max_tokens: u32,
}

impl Truncation {
    /// "max 4096 cuts the mean of 2000 to 1812 tokens" (turns: "turns"), as said at the field.
    pub fn what(&self) -> String {
        let unit = if self.path.ends_with("turns") { "turns" } else { "tokens" };
        format!(
            "max {} cuts the mean of {:.0} to {:.0} {unit}",
            self.max_tokens, self.asked_tokens, self.sampled_tokens
        )
    }

    /// The field and `what`, as the report's setup says it.
    pub fn sentence(&self) -> String {
        format!("{}: {}", self.path, self.what())
    }
}

impl Workload {
    /// Every length distribution whose `max` cuts its asked mean: the classes', and the sessions' own when
    /// they draw programs (not a trace) and name no classes.
    pub fn truncations(&self) -> Vec<Truncation> {
        let mut out = Vec::new();
        let mut check = |path: String, d: &super::LengthDist| {
            if let Some((asked, sampled)) = d.truncated() {
                out.push(Truncation { path, asked_tokens: asked, sampled_tokens: sampled, max_tokens: d.max() });
            }
        };
        for (i, c) in self.classes.iter().enumerate() {
            check(format!("workload.classes[{i}].prompt_tokens"), &c.prompt);
            check(format!("workload.classes[{i}].output_tokens"), &c.output);
        }
        if let Some(s) = self.sessions.as_ref().filter(|s| s.trace.is_none() && !s.named_classes) {
            let c = &s.classes[0];
            for (key, d) in
                [("turns", &c.turns), ("first_tokens", &c.first), ("new_tokens", &c.new), ("output_tokens", &c.output)]
            {
                check(format!("workload.sessions.{key}"), d);
            }
        }
        out
    }
}

/// Block-hash chains of a trace (request i is row i), and the tokens each hashed block covers.
#[derive(Clone, Debug, PartialEq)]
pub struct Chains {
    pub block_tokens: u32,
    pub hashes: super::trace::HashChains,
}

impl Chains {
    /// The hashes of request `id`'s whole blocks of its first `prompt_tokens` tokens (a partial last block is
    /// not reusable, as in vLLM's prefix cache).
    pub fn full_blocks(&self, id: u32, prompt_tokens: u32) -> &[u64] {
        let all = self.hashes.of(id as usize);
        &all[..all.len().min((prompt_tokens / self.block_tokens) as usize)]
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

impl Workload {
    /// Mean prompt of a request (for sessions, of a turn: the first prompt plus, on average, half the
    /// session's later turns' new input and output).
    pub fn mean_prompt_tokens(&self) -> f64 {
        if let Some(s) = &self.sessions {
            return s.mean_of(|c| {
                c.first.mean() + (c.turns.mean() - 1.0).max(0.0) / 2.0 * (c.new.mean() + c.output.mean())
            });
        }
        if let Arrival::Trace { rows } = &self.arrival {
            return rows.iter().map(|r| r.prompt_tokens as f64).sum::<f64>() / rows.len().max(1) as f64;
        }
        let mut last = 0.0;
        (self.classes.iter().zip(&self.class_cdf))
            .map(|(c, &cum)| (cum - std::mem::replace(&mut last, cum)) * c.prompt.mean())
            .sum()
    }

    /// Mean prompt tokens a request makes a worker prefill: for sessions that keep their KV, a turn's new
    /// input (the first turn's whole prompt), as when its history is found; otherwise the whole prompt.
    pub fn mean_computed_prompt_tokens(&self) -> f64 {
        match &self.sessions {
            Some(s) if s.retention.keeps() => s.mean_of(|c| {
                let t = c.turns.mean().max(1.0);
                (c.first.mean() + (t - 1.0) * c.new.mean()) / t
            }),
            _ => self.mean_prompt_tokens(),
        }
    }

    /// Mean gap between arrivals (long-run), ns.
    pub fn mean_gap_ns(&self) -> f64 {
        match &self.arrival {
            Arrival::Poisson { mean_gap_ns } => *mean_gap_ns,
            Arrival::Constant { gap_ns } => *gap_ns,
            Arrival::Gamma { shape, scale_ns } => shape * scale_ns,
            // A closed loop's rate is the system's; as a span bound, a think time per client and request.
            Arrival::ClosedLoop { clients, think_ns } => think_ns / *clients as f64,
            Arrival::Burst => 0.0,
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

impl Workload {
    /// The workload of `w`; errors under `workload.`.
    pub(crate) fn build(w: &WorkloadSpec, e: &mut Errors) -> Option<Workload> {
        let n0 = e.0.len();
        let arrival = Arrival::build(&w.arrival, e);
        let is_trace = matches!(w.arrival, ArrivalSpec::Trace { .. });
        w.check_fields("workload", e);
        if matches!(w.arrival, ArrivalSpec::Burst {}) && w.requests.is_none() {
            e.push(at!("workload", w.requests), "a burst needs `requests`: how many arrive at t = 0");
        } else if !is_trace && w.requests.is_none() && w.duration_s.is_none() {
            e.push("workload", "give `requests` (a count) or `duration_s` (seconds of arrivals), or both");
        }
        let max_requests = w.requests.unwrap_or(MAX_REQUESTS);
        let end_ns = w.duration_s.filter(|d| d.is_finite() && *d > 0.0).map(s_to_ns).unwrap_or(u64::MAX);
        let (classes, class_cdf) = classes(&w.classes, &at!("workload", w.classes), e);
        let (tenants, tenant_cdf) = tenants(&w.tenants, &at!("workload", w.tenants), e);
        if e.0.len() > n0 {
            return None;
        }
        let (arrival, hashes) = arrival?;
        let chains = match (&w.arrival, hashes) {
            (ArrivalSpec::Trace { reuse_hash_ids: true, hash_block_tokens, .. }, Some(hashes)) => {
                Some(Chains { block_tokens: *hash_block_tokens, hashes })
            }
            _ => None,
        };
        let sessions = match &w.sessions {
            Some(spec) => {
                if !matches!(
                    w.arrival,
                    ArrivalSpec::Poisson { .. }
                        | ArrivalSpec::Constant { .. }
                        | ArrivalSpec::Gamma { .. }
                        | ArrivalSpec::OnOff { .. }
                ) {
                    e.push(at!("workload", w.sessions), "sessions start on an open-loop arrival process (poisson, constant, gamma, on_off); to replay recorded sessions use workload.sessions.trace (a closed loop of sessions is not modelled)");
                    return None;
                }
                Some(super::sessions::Sessions::build(spec, &classes, e)?)
            }
            None => None,
        };
        let w = Workload { arrival, max_requests, end_ns, classes, class_cdf, tenants, tenant_cdf, chains, sessions };
        w.check_span(e);
        Some(w)
    }

    /// Requests × the mean gap (or the duration): a span past the clock would drop arrivals unseen.
    fn check_span(&self, e: &mut Errors) {
        if matches!(self.arrival, Arrival::Trace { .. }) {
            return;
        }
        let span = (self.mean_gap_ns() * self.max_requests as f64).min(self.end_ns as f64);
        if span > MAX_SPAN_NS {
            e.push(
                at!("workload", WorkloadSpec::requests),
                format!("{} requests at this rate span {:.3e} s of simulated time, past the clock's limit of {:.0e} s (about 31 years): fewer requests, a higher rate, or workload.duration_s", self.max_requests, span / NS_PER_S, MAX_SPAN_NS / NS_PER_S),
            );
        }
    }
}

impl Arrival {
    /// The arrival process of `a`, and a trace's block-hash chains when it has them; errors under
    /// `workload.arrival.`.
    fn build(a: &ArrivalSpec, e: &mut Errors) -> Option<(Arrival, Option<super::trace::HashChains>)> {
        // Every number within its declared bound (`spec::ArrivalSpec`'s), each error at its field.
        let ok = a.check_fields(&at!("workload", WorkloadSpec::arrival), e);
        if let ArrivalSpec::Trace { path, data, format, time_scale, .. } = a {
            return trace(path.as_deref(), data.as_deref(), *format, ok.then_some(*time_scale), e);
        }
        if !ok {
            return None;
        }
        let arrival = match *a {
            ArrivalSpec::Poisson { rate_rps } => Arrival::Poisson { mean_gap_ns: NS_PER_S / rate_rps },
            ArrivalSpec::Constant { rate_rps } => Arrival::Constant { gap_ns: NS_PER_S / rate_rps },
            ArrivalSpec::Gamma { rate_rps, cv } => {
                let shape = 1.0 / (cv * cv);
                Arrival::Gamma { shape, scale_ns: NS_PER_S / rate_rps / shape }
            }
            ArrivalSpec::OnOff { rate_on_rps, rate_off_rps, mean_on_s, mean_off_s } => {
                on_off(rate_on_rps, rate_off_rps, mean_on_s, mean_off_s, e)?
            }
            ArrivalSpec::ClosedLoop { clients, think_s } => {
                Arrival::ClosedLoop { clients: clients as u64, think_ns: think_s * NS_PER_S }
            }
            ArrivalSpec::Burst {} => Arrival::Burst,
            ArrivalSpec::Trace { .. } => unreachable!("handled above"),
        };
        Some((arrival, None))
    }
}

/// On/off (Markov-modulated Poisson) arrivals, of fields within their bounds.
fn on_off(rate_on_rps: f64, rate_off_rps: f64, mean_on_s: f64, mean_off_s: f64, e: &mut Errors) -> Option<Arrival> {
    // The generator walks on/off periods one at a time between arrivals: with far fewer than one
    // arrival per on-period it would walk millions of them per request (a run that never ends).
    let per_period = rate_on_rps * mean_on_s;
    if per_period < 1e-3 {
        e.push(
            at!("workload.arrival", ArrivalSpec::OnOff { mean_on_s }),
            format!("rate_on_rps × mean_on_s must be at least 0.001 arrivals per on-period (got {per_period:e}): raise the rate or the on period"),
        );
        return None;
    }
    Some(Arrival::OnOff {
        on_rate_per_ns: rate_on_rps / NS_PER_S,
        off_rate_per_ns: rate_off_rps / NS_PER_S,
        mean_on_ns: mean_on_s * NS_PER_S,
        mean_off_ns: mean_off_s * NS_PER_S,
    })
}

/// Trace replay: the rows of the trace's text, scaled in time.
fn trace(
    path: Option<&str>,
    data: Option<&str>,
    format: TraceFormat,
    time_scale: Option<f64>,
    e: &mut Errors,
) -> Option<(Arrival, Option<super::trace::HashChains>)> {
    match data {
        None => {
            let why = match path {
                Some(p) => format!("trace contents missing: the front end did not load `{p}`"),
                None => "a trace needs `path` (a file) or `data` (its text)".into(),
            };
            e.push(at!("workload.arrival", ArrivalSpec::Trace { data }), why);
            None
        }
        Some(text) => match super::trace::parse_with_chains(text, format) {
            Ok((rows, chains)) => {
                // None: the fields were out of their bounds (reported); the text was still read for its errors.
                let time_scale = time_scale?;
                // Scaled arrivals must stay on the clock: an arrival past it would be dropped unseen.
                let last = rows.iter().map(|r| r.arrival_ns).max().unwrap_or(0) as f64 * time_scale;
                if last > MAX_SPAN_NS {
                    e.push(
                            at!("workload.arrival", ArrivalSpec::Trace { time_scale }),
                            format!("the trace's last arrival would be at {:.3e} s after scaling, past the simulated clock's limit of {:.0e} s (about 31 years): lower time_scale", last / NS_PER_S, MAX_SPAN_NS / NS_PER_S),
                        );
                    None
                } else {
                    Some((Arrival::Trace { rows: super::trace::scale(rows, time_scale) }, chains))
                }
            }
            Err(msg) => {
                e.push(at!("workload.arrival", ArrivalSpec::Trace { data }), msg);
                None
            }
        },
    }
}

impl Prefix {
    /// Shared prefixes of whole KV blocks (`block` tokens): Some(None) when valid but inert (nothing is
    /// shared); errors under `prefix.`.
    pub(crate) fn build(p: &PrefixSpec, block: u32, w: &Workload, e: &mut Errors) -> Option<Option<Prefix>> {
        let n0 = e.0.len();
        p.check_fields("prefix", e);
        if e.0.len() > n0 {
            return None;
        }
        // A session's prefix is its first turn's (the system prompt every later turn re-sends).
        let longest = match (&w.sessions, &w.arrival) {
            (Some(s), _) => s.max_of(|c| c.first.max()),
            (None, Arrival::Trace { rows }) => rows.iter().map(|r| r.prompt_tokens).max().unwrap_or(0),
            _ => w.classes.iter().map(|c| c.prompt.max()).max().unwrap_or(0),
        };
        if p.prefix_tokens > 0 && p.prefix_tokens >= longest {
            e.push(at!("prefix", p.prefix_tokens), format!("must be shorter than the longest prompt ({longest} tokens): a shared prefix is part of a prompt (got {})", p.prefix_tokens));
            return None;
        }
        let shared_tokens = p.prefix_tokens / block * block;
        if shared_tokens == 0 || p.reuse_fraction == 0.0 {
            return Some(None);
        }
        let weights: Vec<f64> = (1..=p.groups).map(|k| 1.0 / libm::pow(k as f64, p.zipf_s)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let group_cdf = weights
            .iter()
            .map(|x| {
                acc += x / total;
                acc
            })
            .collect();
        Some(Some(Prefix { shared_tokens, reuse_fraction: p.reuse_fraction, group_cdf, caching: p.caching }))
    }
}

impl Predictor {
    /// The predictor of `p`; errors under `path`.
    pub(crate) fn build(p: &PredictorSpec, path: &str, e: &mut Errors) -> Option<Predictor> {
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
}
