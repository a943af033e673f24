//! What the scenario format and the tools offer, listed once for every front end: the arrival and length kinds
//! with the parameters a new block of that kind starts from, the trace formats, the latency metrics an
//! objective can bound, and the knobs calibration can fit. The lab's editors, the CLI's help and the worker
//! read these; the names come from the spec's own serde enums, so a new variant appears here by itself (and a
//! kind without a starting block fails this module's tests).

use serde::Serialize;
use serde_json::{Value, json};

use crate::spec::{ArrivalSpec, LatencyMetric, LengthSpec, SessionTraceFormat, TraceFormat};

/// Everything [`catalog`] lists.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Catalog {
    /// `workload.arrival` kinds, each with the block it starts from.
    pub arrival_kinds: Vec<KindDefaults>,
    /// Length-distribution kinds (`prompt_tokens`, `output_tokens`, sessions' lengths).
    pub length_kinds: Vec<KindDefaults>,
    pub trace_formats: Vec<String>,
    pub session_trace_formats: Vec<String>,
    /// Metrics a percentile objective can bound.
    pub metrics: Vec<String>,
    /// Knobs `calibrate --fit` takes besides the prefill and decode multipliers.
    pub calibration_knobs: Vec<String>,
}

/// A kind and the block a new one of that kind starts from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindDefaults {
    pub kind: String,
    pub defaults: Value,
}

/// The catalog.
pub fn catalog() -> Catalog {
    let with = |kinds: Vec<String>, f: &dyn Fn(&str) -> Value| {
        kinds.into_iter().map(|k| KindDefaults { defaults: f(&k), kind: k }).collect()
    };
    Catalog {
        arrival_kinds: with(variants::<ArrivalSpec>(true), &|k| arrival_of_kind(k, 1.0)),
        length_kinds: with(variants::<LengthSpec>(true), &|k| length_of_kind(k, 256.0)),
        trace_formats: variants::<TraceFormat>(false),
        session_trace_formats: variants::<SessionTraceFormat>(false),
        metrics: variants::<LatencyMetric>(false),
        calibration_knobs: std::iter::once(crate::truth::calibrate::AUTO)
            .chain(crate::truth::Extra::ALL.iter().map(|x| x.name()))
            .map(String::from)
            .collect(),
    }
}

/// The variant names of a serde enum, read off its refusal of an unknown one (so they cannot drift from it):
/// `tagged` for `{"kind": …}` enums.
fn variants<T: serde::de::DeserializeOwned>(tagged: bool) -> Vec<String> {
    crate::spec::names_in_refusal::<T>(if tagged { json!({"kind": "\u{1}"}) } else { json!("\u{1}") })
}

/// A `workload.arrival` block of kind `kind` at its starting parameters, at `rate_rps` where the kind has a rate.
pub fn arrival_of_kind(kind: &str, rate_rps: f64) -> Value {
    match kind {
        "gamma" => json!({"kind": kind, "rate_rps": rate_rps, "cv": 2.0}),
        // Bursts at 3× the rate a third of the time; quiet periods at a tenth of it.
        "on_off" => json!({
            "kind": kind, "rate_on_rps": rate_rps * 3.0, "rate_off_rps": rate_rps / 10.0,
            "mean_on_s": 10.0, "mean_off_s": 20.0
        }),
        // As many clients as a benchmark's usual `--max-concurrency`; no think time, as vLLM's client.
        "closed_loop" => json!({"kind": kind, "clients": 16, "think_s": 0.0}),
        "burst" => json!({"kind": kind}),
        "trace" => json!({"kind": kind, "path": "trace.csv", "format": "auto"}),
        _ => json!({"kind": kind, "rate_rps": rate_rps}),
    }
}

/// A length distribution of kind `kind` around `mean` tokens.
pub fn length_of_kind(kind: &str, mean: f64) -> Value {
    let mean = mean.max(1.0);
    let m = mean.round() as u64;
    match kind {
        "fixed" => json!({"kind": kind, "tokens": m}),
        "uniform" => json!({"kind": kind, "min": (m / 2).max(1), "max": m + m / 2}),
        "lognormal" => json!({"kind": kind, "mean": mean, "cv": 1.0, "max": (m * 8).max(16)}),
        "geometric" => json!({"kind": kind, "mean": mean, "max": (m * 8).max(16)}),
        _ => json!({"kind": kind, "values": [(m / 2).max(1), m, m * 2]}),
    }
}

/// The sessions a scenario starts from when a front end turns agent sessions on: the coding agent of
/// `scenarios/agent-sessions.json` (about 10 turns, six tools from file reads to builds, a 10 s TTL), so the
/// lab and the agent panels start from the shipped example's figures rather than a second set. A model with
/// a shorter context than the example's gets prompts that fit it: the first turn's and a new input's `max`
/// leave room for the longest output, and a first prompt's mean is at most half its max.
pub fn default_sessions(context_tokens: Option<u32>) -> Value {
    let example: Value = serde_json::from_str(include_str!("../scenarios/agent-sessions.json")).unwrap_or_default();
    let mut s = example.pointer("/workload/sessions").cloned().unwrap_or_else(|| json!({}));
    let out = s.pointer("/output_tokens/max").and_then(Value::as_u64).unwrap_or(0);
    let Some(room) = context_tokens.map(|c| (c as u64).saturating_sub(out).max(1)) else { return s };
    for key in ["first_tokens", "new_tokens"] {
        let Some(len) = s.get_mut(key).and_then(Value::as_object_mut) else { continue };
        let max = len.get("max").and_then(Value::as_u64).unwrap_or(room).min(room);
        len.insert("max".into(), json!(max));
        if let Some(mean) = len.get("mean").and_then(Value::as_f64) {
            len.insert("mean".into(), json!(mean.min((max / 2).max(1) as f64)));
        }
    }
    s
}

/// The workflow sessions a workflow study's panel starts from when the scenario has none: those of
/// `scenarios/agent-workflows.json` (four roles, 8k-token prefixes, a shift mid-run, half the prefixes in HBM).
pub fn workflow_sessions() -> Value {
    let example: Value = serde_json::from_str(include_str!("../scenarios/agent-workflows.json")).unwrap_or_default();
    example.pointer("/workload/sessions").cloned().unwrap_or_else(|| json!({}))
}

/// A policy's kind as the scenario file spells it (`least_outstanding`): the tag its serde enum writes.
pub fn kind_of<T: Serialize>(policy: &T) -> String {
    serde_json::to_value(policy).ok().and_then(|v| v["kind"].as_str().map(str::to_string)).unwrap_or_default()
}

/// `{"kind": k}` for a policy (estimator, admission, scheduler, router) with the parameters that kind
/// requires, at sensible starting values.
pub fn policy_of_kind(kind: &str) -> Value {
    match kind {
        "lognormal" => json!({"kind": kind, "sigma": 0.5}),
        "queue_cap" => json!({"kind": kind, "max_waiting": 64}),
        "deadline" | "feasible" => json!({"kind": kind, "slack": 1.0}),
        "random_drop" => json!({"kind": kind, "probability": 0.1}),
        "token_bucket" => json!({"kind": kind, "rate_tokens_per_s": 20000.0, "burst_tokens": 100000.0}),
        "drr" => json!({"kind": kind, "quantum_tokens": 2048}),
        "bounded_affinity" => json!({"kind": kind, "slack_ms": 50.0}),
        _ => json!({"kind": kind}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{AdmissionSpec, PredictorSpec, RouterSpec, SchedulerSpec};

    #[test]
    fn the_default_sessions_are_the_examples_and_validate_on_any_scenario() {
        let example = default_sessions(None);
        assert_eq!(example["tools"].as_array().map(Vec::len), Some(6));
        assert_eq!(example["first_tokens"]["mean"], 6000);
        for (model, context) in [("llama-3-8b", 8192), ("llama-3.1-8b", 131_072)] {
            let s = default_sessions(Some(context));
            let mut v = json!({"workload": {"arrival": {"kind": "poisson", "rate_rps": 0.2}, "requests": 20},
                "model": {"preset": model}});
            v["workload"]["sessions"] = s;
            let spec = crate::scenario::parse(&v.to_string()).expect("parses");
            crate::scenario::validate(&spec).unwrap_or_else(|e| panic!("{model}: {e:?}"));
        }
        assert_eq!(default_sessions(Some(8192))["first_tokens"]["max"], 6192, "8192 less the 2000-token output");
        assert_eq!(default_sessions(Some(8192))["first_tokens"]["mean"], 3096.0);
    }

    #[test]
    fn every_kind_is_listed_and_starts_from_a_block_that_reads() {
        let c = catalog();
        let arrivals: Vec<&str> = c.arrival_kinds.iter().map(|k| k.kind.as_str()).collect();
        assert_eq!(arrivals, ["poisson", "constant", "gamma", "on_off", "closed_loop", "burst", "trace"]);
        for k in &c.arrival_kinds {
            serde_json::from_value::<ArrivalSpec>(k.defaults.clone()).unwrap_or_else(|e| panic!("{}: {e}", k.kind));
        }
        assert_eq!(c.length_kinds.len(), 6, "fixed, uniform, lognormal, geometric, empirical, sequence");
        for k in &c.length_kinds {
            serde_json::from_value::<LengthSpec>(k.defaults.clone()).unwrap_or_else(|e| panic!("{}: {e}", k.kind));
        }
        assert_eq!(c.trace_formats, ["auto", "vidur", "azure", "burstgpt", "mooncake"]);
        assert_eq!(c.session_trace_formats, ["auto", "inferscale", "inference_lab"]);
        assert_eq!(c.metrics, ["ttft", "tpot", "e2e", "queue_delay"]);
        assert_eq!(
            c.calibration_knobs,
            ["auto", "step_overhead", "request_overhead", "tp_comm", "frontend", "seq_overhead"]
        );
    }

    #[test]
    fn every_policy_kind_starts_from_a_block_that_reads() {
        fn each<T: serde::de::DeserializeOwned>() {
            for k in variants::<T>(true) {
                serde_json::from_value::<T>(policy_of_kind(&k)).unwrap_or_else(|e| panic!("{k}: {e}"));
            }
        }
        each::<PredictorSpec>();
        each::<AdmissionSpec>();
        each::<SchedulerSpec>();
        each::<RouterSpec>();
        assert!(variants::<RouterSpec>(true).contains(&"bounded_affinity".to_string()));
    }
}
