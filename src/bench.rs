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

/// Textbook capacity estimate for comparison: peak decode throughput at the batch cap ÷ mean output length.
pub fn textbook_rps(spec: &Spec) -> Option<f64> {
    textbook_rps_of(&scenario::validate(spec).ok()?)
}

/// The textbook estimate of a validated scenario: a full batch of decodes (context: mean prompt + half the
/// mean output) on each decode worker, divided by the mean output length. It ignores prefill, queueing and
/// memory — which is why studies set it beside sustained capacity (`crate::capacity`).
pub fn textbook_rps_of(sc: &crate::Scenario) -> Option<f64> {
    let pool = sc.pools.last()?;
    if let Some(sessions) = &sc.workload.sessions {
        return textbook_sessions_per_s(sc, sessions);
    }
    let (mean_prompt, mean_out) = mean_tokens(sc);
    let b = pool.engine.max_num_seqs;
    let ctx = ((mean_prompt + mean_out / 2.0) * b as f64) as u64;
    let step =
        pool.cost.step(&crate::cost::StepWork { decode_seqs: b, decode_context_tokens: ctx, ..Default::default() });
    (mean_out > 0.0).then(|| b as f64 / (step.total_ns as f64 / 1e9) / mean_out * pool.replicas as f64)
}

/// A request's mean prompt and mean output tokens over the classes, by their weights.
pub fn mean_tokens(sc: &crate::Scenario) -> (f64, f64) {
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
    (mean_prompt, mean_out)
}

/// A session scenario's textbook estimate, in sessions/s: a full batch of decodes at a session turn's mean
/// context (turn k re-sends the history so far: the first prompt plus k × (new input + output), up to the turn
/// limit, plus half the turn's output) on each decode worker, divided by a session's mean output tokens (its
/// turns × a turn's output). Its class means are the session classes' — the request classes are placeholders.
fn textbook_sessions_per_s(sc: &crate::Scenario, s: &crate::workload::Sessions) -> Option<f64> {
    let pool = sc.pools.last()?;
    let cap = sc.turn_cap_tokens() as f64;
    let (mut context_sum, mut turns_sum, mut out_per_session) = (0.0, 0.0, 0.0);
    for c in &s.classes {
        let (turns, out) = (c.turns.mean(), c.output.mean());
        let step = c.new.mean() + out;
        let k_max = turns.ceil().max(1.0) as u32;
        let context: f64 = (0..k_max).map(|k| (c.first.mean() + k as f64 * step).min(cap) + out / 2.0).sum();
        context_sum += c.share * context * turns / k_max as f64;
        turns_sum += c.share * turns;
        out_per_session += c.share * turns * out;
    }
    let b = pool.engine.max_num_seqs;
    let ctx = (context_sum / turns_sum.max(1e-9) * b as f64) as u64;
    let step =
        pool.cost.step(&crate::cost::StepWork { decode_seqs: b, decode_context_tokens: ctx, ..Default::default() });
    (out_per_session > 0.0).then(|| b as f64 / (step.total_ns as f64 / 1e9) / out_per_session * pool.replicas as f64)
}

/// The H100 hardware block, for tests.
pub fn h100() -> HardwareSpec {
    HardwareSpec { device: Some("h100-sxm".into()), ..HardwareSpec::default() }
}
