//! The benchmark workload (a peer simulator was measured on it): Llama-3-8B BF16 on one H100-SXM, token budget
//! 8192, at most 256 running sequences, FCFS, chunked prefill, 16-token blocks, Poisson arrivals, prompt 1024 and
//! output 256 tokens fixed. Timing is the caller's (the core reads no clock).

use crate::scenario::{self, ArrivalSpec, HardwareSpec, Spec};

/// The scenario shipped as scenarios/peer-llama3-8b-h100.json, at a given rate and size.
pub fn peer_spec(rate_rps: f64, requests: u64) -> Spec {
    let text = include_str!("../scenarios/peer-llama3-8b-h100.json");
    let mut spec = scenario::parse(text).expect("the shipped benchmark scenario parses");
    spec.workload.arrival = ArrivalSpec::Poisson { rate_rps };
    spec.workload.requests = Some(requests);
    spec
}

/// The agent benchmark: scenarios/agent-sessions.json (a coding agent, ~10 turns a session, TTL + host tier +
/// sticky routing on two H100s) with `sessions` sessions.
pub fn agent_spec(sessions: u64) -> Spec {
    let mut spec =
        scenario::parse(include_str!("../scenarios/agent-sessions.json")).expect("the shipped agent scenario parses");
    spec.workload.requests = Some(sessions);
    spec
}

/// Measured saturation throughput (requests/s) of a spec: every request arrives at once (a closed burst),
/// and throughput is completions over the time the last one took. Capacity is measured, never derived.
pub fn saturation_rps(spec: &Spec, requests: u64) -> f64 {
    let mut s = spec.clone();
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 1e7 };
    s.workload.requests = Some(requests);
    s.workload.duration_s = None;
    s.engine.horizon_s = None;
    let sc = scenario::validate(&s).expect("a valid spec stays valid with a burst arrival");
    crate::simulate(&sc).summary.throughput_rps
}

/// Textbook capacity estimate for comparison: peak decode throughput at the batch cap ÷ mean output length.
pub fn textbook_rps(spec: &Spec) -> Option<f64> {
    textbook_rps_of(&scenario::validate(spec).ok()?)
}

/// The textbook estimate of a validated scenario: a full batch of decodes (context: mean prompt + half the
/// mean output) on each decode worker, divided by the mean output length. It ignores prefill, queueing and
/// memory — which is why studies set it beside measured saturation.
pub fn textbook_rps_of(sc: &crate::Scenario) -> Option<f64> {
    let pool = sc.pools.last()?;
    let weights = sc.workload.class_cdf.iter().scan(0.0, |prev, c| {
        let w = c - *prev;
        *prev = *c;
        Some(w)
    });
    let (mut mean_prompt, mut mean_out) = (0.0, 0.0);
    for (c, w) in sc.workload.classes.iter().zip(weights) {
        mean_prompt += c.prompt.mean() * w;
        mean_out += c.output.mean() * w;
    }
    let b = pool.engine.max_num_seqs;
    let ctx = ((mean_prompt + mean_out / 2.0) * b as f64) as u64;
    let step =
        pool.cost.step(&crate::cost::StepWork { decode_seqs: b, decode_context_tokens: ctx, ..Default::default() });
    (mean_out > 0.0).then(|| b as f64 / (step.total_ns as f64 / 1e9) / mean_out * pool.replicas as f64)
}

/// The H100 hardware block, for tests.
pub fn h100() -> HardwareSpec {
    HardwareSpec { device: Some("h100-sxm".into()), ..HardwareSpec::default() }
}
