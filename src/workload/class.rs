//! Request classes and tenants — lengths, objectives, priorities, token buckets and mix weights — validated
//! from their spec (a leaf of the workload: the workload and the sessions' classes build on it).

use super::LengthDist;
use crate::spec::field::Checked;
use crate::spec::{ClassSpec, Errors, LengthSpec, TenantSpec, at, ms_to_ns};

pub(crate) use crate::spec::MAX_TOKENS;
/// At most this many classes (each is a row of the report's per-class tables).
const MAX_CLASSES: usize = 64;

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

/// The classes (the list at `at`) and their cumulative weights.
pub(super) fn classes(specs: &[ClassSpec], at: &str, e: &mut Errors) -> (Vec<Class>, Vec<f64>) {
    if specs.is_empty() || specs.len() > MAX_CLASSES {
        e.push(at, format!("must list 1 to {MAX_CLASSES} classes (got {})", specs.len()));
        return (Vec::new(), Vec::new());
    }
    let classes = specs.iter().enumerate().filter_map(|(i, c)| Class::build(c, &format!("{at}[{i}]"), e)).collect();
    (classes, cdf(specs.iter().map(|c| c.weight), at, e))
}

impl Class {
    /// The class at path `p` (`workload.classes[i]`); errors under it.
    fn build(c: &ClassSpec, p: &str, e: &mut Errors) -> Option<Class> {
        c.check_fields(p, e);
        let prompt = validate_length(&c.prompt_tokens, &format!("{p}.prompt_tokens"), e);
        let output = validate_length(&c.output_tokens, &format!("{p}.output_tokens"), e);
        // Out-of-bound objectives are reported (and the scenario refused); in bound, they are the class's.
        let slo = match c.slo.check_fields(&format!("{p}.{}", at!(c.slo)), e) {
            true => Slo {
                ttft_ns: c.slo.ttft_ms.map(ms_to_ns),
                tpot_ns: c.slo.tpot_ms.map(ms_to_ns),
                e2e_ns: c.slo.e2e_ms.map(ms_to_ns),
            },
            false => Slo::default(),
        };
        Some(Class { name: c.name.clone(), priority: c.priority, prompt: prompt?, output: output?, slo })
    }
}

/// The tenants (the list at `at`) and their cumulative weights.
pub(super) fn tenants(specs: &[TenantSpec], at: &str, e: &mut Errors) -> (Vec<Tenant>, Vec<f64>) {
    if specs.is_empty() || specs.len() > 1024 {
        e.push(at, format!("must list 1 to 1024 tenants (got {})", specs.len()));
    }
    let mut tenants = Vec::new();
    for (i, t) in specs.iter().enumerate() {
        let p = format!("{at}[{i}]");
        t.check_fields(&p, e);
        tenants.push(Tenant {
            name: t.name.clone(),
            rate_tokens_per_s: t.rate_tokens_per_s,
            burst_tokens: t.burst_tokens.unwrap_or(0.0),
        });
    }
    (tenants, cdf(specs.iter().map(|t| t.weight), at, e))
}

/// Normalised cumulative weights; an error if they do not sum to something positive (each weight is checked
/// at its field, 0 … 1e9, by the caller).
pub(super) fn cdf(weights: impl Iterator<Item = f64>, path: &str, e: &mut Errors) -> Vec<f64> {
    let w: Vec<f64> = weights.collect();
    let total: f64 = w.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        e.push(path, "weights must be ≥ 0 and sum to more than 0");
        return vec![];
    }
    let mut acc = 0.0;
    let mut out: Vec<f64> = w
        .iter()
        .map(|x| {
            acc += x;
            acc / total
        })
        .collect();
    if let Some(last) = out.last_mut() {
        *last = 1.0;
    }
    out
}

/// A list of 1 to 10^7 lengths, each 1 … `most`, at `at`; the first bad one is named.
fn listed(values: &[u32], at: &str, most: u32, e: &mut Errors) -> bool {
    if values.is_empty() || values.len() > 10_000_000 {
        e.push(at.to_string(), format!("must hold 1 to 10,000,000 lengths (got {})", values.len()));
        return false;
    }
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| **v == 0 || **v > most) {
        e.push(format!("{at}[{i}]"), format!("must be from 1 to {most} (got {v})"));
        return false;
    }
    true
}

/// A length distribution of tokens (1 … `MAX_TOKENS`) at `p`.
pub(super) fn validate_length(l: &LengthSpec, p: &str, e: &mut Errors) -> Option<LengthDist> {
    validate_length_within(l, p, MAX_TOKENS, e)
}

/// A length distribution whose values are 1 … `most` (tokens, or a session's turns), its bounds stated as such.
pub(super) fn validate_length_within(l: &LengthSpec, p: &str, most: u32, e: &mut Errors) -> Option<LengthDist> {
    let max_t = most as u64;
    match l {
        LengthSpec::Fixed { tokens } => {
            e.int(&at!(p, LengthSpec::Fixed { tokens }), *tokens as u64, 1, max_t).then_some(LengthDist::Fixed(*tokens))
        }
        LengthSpec::Uniform { min, max } => {
            let a = e.int(&at!(p, LengthSpec::Uniform { min }), *min as u64, 1, max_t);
            let b = e.int(&at!(p, LengthSpec::Uniform { max }), *max as u64, 1, max_t);
            if a && b && min > max {
                e.push(at!(p, LengthSpec::Uniform { max }), format!("must be ≥ min ({min}) (got {max})"));
                return None;
            }
            (a && b).then_some(LengthDist::Uniform { min: *min, max: *max })
        }
        LengthSpec::Lognormal { mean, cv, max } => {
            let a = e.range(&at!(p, LengthSpec::Lognormal { mean }), *mean, 1.0, most as f64);
            let b = e.range(&at!(p, LengthSpec::Lognormal { cv }), *cv, 0.0, 20.0);
            let c = e.int(&at!(p, LengthSpec::Lognormal { max }), *max as u64, 1, max_t);
            (a && b && c).then(|| LengthDist::lognormal(*mean, *cv, *max))
        }
        LengthSpec::Geometric { mean, max } => {
            let a = e.range(&at!(p, LengthSpec::Geometric { mean }), *mean, 1.0, most as f64);
            let c = e.int(&at!(p, LengthSpec::Geometric { max }), *max as u64, 1, max_t);
            (a && c).then(|| LengthDist::geometric(*mean, *max))
        }
        LengthSpec::Empirical { values } => listed(values, &at!(p, LengthSpec::Empirical { values }), most, e)
            .then(|| LengthDist::Empirical(values.clone())),
        LengthSpec::Sequence { values } => listed(values, &at!(p, LengthSpec::Sequence { values }), most, e)
            .then(|| LengthDist::Sequence(values.clone())),
    }
}
