//! Queueing-theory closed forms, and the checks that hold the engine to them in degenerate configurations.
//!
//! Reduction: a linear cost model with only a per-prefill-token cost, one sequence per batch, no chunking,
//! and one output token makes every request one step of `c · prompt` — a single-server queue whose service
//! distribution is the prompt-length distribution scaled by `c`. Several replicas behind the central queue
//! make it M/·/c.

use crate::scenario::{
    self, ArrivalSpec, ClassSpec, ClusterSpec, CostSpec, EngineSpec, LengthSpec, ModelSpec, RouterSpec, Spec,
    WorkloadSpec,
};
use serde::Serialize;

/// M/G/1 mean wait in queue (Pollaczek–Khinchine): Wq = λ E[S²] / (2 (1 − ρ)).
pub fn mg1_wq(lambda: f64, es: f64, es2: f64) -> f64 {
    lambda * es2 / (2.0 * (1.0 - lambda * es))
}

/// Erlang C: the probability an arrival waits in M/M/c with offered load a = λ/μ.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    // Sum a^k/k! iteratively for stability.
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let top = term * a / c as f64 / (1.0 - a / c as f64);
    top / (sum + top)
}

/// M/M/c mean wait in queue: C(c, a) / (cμ − λ).
pub fn mmc_wq(c: u32, lambda: f64, mu: f64) -> f64 {
    erlang_c(c, lambda / mu) / (c as f64 * mu - lambda)
}

/// One closed-form check: simulated against analytic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub simulated: f64,
    pub analytic: f64,
    pub relative_error: f64,
    pub tolerance: f64,
    pub pass: bool,
    /// Requests simulated in all (over every seed).
    pub requests: u64,
}

/// Mean service time of the reduced queues: 1000 tokens × 1 ms.
const MEAN_TOKENS: f64 = 1000.0;
const MS_PER_TOKEN: f64 = 1.0;

/// A scenario that reduces to a textbook queue: Poisson(λ) arrivals, service = prompt × 1 ms.
pub fn queue_spec(lambda_rps: f64, servers: u32, service: LengthSpec, requests: u64, seed: u64) -> Spec {
    Spec {
        name: format!("queue λ={lambda_rps} c={servers}"),
        description: String::new(),
        seed,
        workload: WorkloadSpec {
            arrival: ArrivalSpec::Poisson { rate_rps: lambda_rps },
            requests: Some(requests),
            duration_s: None,
            classes: vec![ClassSpec {
                prompt_tokens: service,
                output_tokens: LengthSpec::Fixed { tokens: 1 },
                ..ClassSpec::default()
            }],
            tenants: vec![Default::default()],
            sessions: None,
        },
        // The context raised past any length drawn: none is refused as too long, so service stays the
        // distribution the closed form assumes.
        model: ModelSpec { context_tokens: Some(scenario::MOST_CONTEXT_TOKENS), ..ModelSpec::default() },
        hardware: Default::default(),
        cost: CostSpec::Linear {
            base_ms: 0.0,
            per_seq_ms: 0.0,
            per_prefill_token_ms: MS_PER_TOKEN,
            per_kv_token_ms: 0.0,
        },
        engine: EngineSpec {
            max_num_seqs: 1,
            max_num_batched_tokens: 1 << 22,
            chunked_prefill: false,
            kv_capacity_tokens: Some(1 << 24),
            ..EngineSpec::default()
        },
        estimator: Default::default(),
        scheduler: Default::default(),
        admission: Default::default(),
        cluster: ClusterSpec { replicas: servers, router: RouterSpec::CentralQueue, disaggregation: None },
        metrics: Default::default(),
        prefix: None,
        cost_scale: None,
        objectives: Default::default(),
    }
}

/// Mean queue delay (s) and p99 time in system (s) averaged over seeds.
fn simulate_queue(lambda: f64, servers: u32, service: &LengthSpec, requests: u64, seeds: u64) -> (f64, f64) {
    let (mut wq, mut p99) = (0.0, 0.0);
    for seed in 1..=seeds {
        let sc = scenario::validate(&queue_spec(lambda, servers, service.clone(), requests, seed))
            .expect("the reduced scenarios are valid");
        let r = crate::simulate(&sc);
        wq += r.summary.queue_delay_s.mean;
        p99 += r.summary.e2e_s.p99;
    }
    (wq / seeds as f64, p99 / seeds as f64)
}

/// Run every closed-form check. `scale` multiplies the request counts (1.0 = the documented tolerances).
///
/// Tolerances: the standard error of a mean waiting time at ρ = 0.8 from n customers is about
/// √(κ/n)·Wq with κ ≈ 6 (M/D/1) to 12 (M/M/1) in units of Wq² (autocorrelated samples); with 4 seeds × 200,000
/// requests that is 0.3 %–0.4 % of Wq, so 3 % is ≥ 7 standard errors plus the small start-up bias
/// (the queue starts empty). At ρ = 0.5 errors are smaller. Geometric service is the discrete exponential:
/// its E[S²] = (2 − p)/p² (p = 1/1000) enters the M/G/1 formula exactly; for M/M/c and the M/M/1 p99 the
/// discretisation moves the answer by ≈ 0.05 %.
pub fn checks(scale: f64) -> Vec<Check> {
    let n = ((200_000.0 * scale) as u64).max(1000);
    let seeds = 4;
    let s = MS_PER_TOKEN / 1000.0 * MEAN_TOKENS; // mean service, s
    let mut out = Vec::new();
    let mut push = |name: String, sim: f64, ana: f64, tol: f64, reqs: u64| {
        let rel = (sim - ana).abs() / ana;
        out.push(Check {
            name,
            simulated: sim,
            analytic: ana,
            relative_error: rel,
            tolerance: tol,
            pass: rel <= tol,
            requests: reqs,
        });
    };
    let fixed = LengthSpec::Fixed { tokens: MEAN_TOKENS as u32 };
    let uniform = LengthSpec::Uniform { min: 1, max: 1999 };
    let geometric = LengthSpec::Geometric { mean: MEAN_TOKENS, max: 1_000_000 };
    let tok_s = MS_PER_TOKEN / 1000.0;
    let es2_uniform = (((1999.0f64 * 1999.0 - 1.0) / 12.0) + 1000.0 * 1000.0) * tok_s * tok_s;
    let p = 1.0 / MEAN_TOKENS;
    let es2_geo = (2.0 - p) / (p * p) * tok_s * tok_s;
    for rho in [0.5, 0.8] {
        let lambda = rho / s;
        let (sim, _) = simulate_queue(lambda, 1, &fixed, n, seeds);
        push(format!("M/D/1 rho={rho} Wq"), sim, mg1_wq(lambda, s, s * s), 0.03, n * seeds);
        let (sim, _) = simulate_queue(lambda, 1, &uniform, n, seeds);
        push(format!("M/G/1 (uniform service) rho={rho} Wq"), sim, mg1_wq(lambda, s, es2_uniform), 0.03, n * seeds);
    }
    let lambda = 0.8 / s;
    let (sim, p99) = simulate_queue(lambda, 1, &geometric, n, seeds);
    push("M/G/1 (geometric service) rho=0.8 Wq".into(), sim, mg1_wq(lambda, s, es2_geo), 0.03, n * seeds);
    // M/M/1 sojourn ~ Exp(μ − λ): p99 = ln(100) / (μ − λ).
    push("M/M/1 rho=0.8 p99 sojourn".into(), p99, libm::log(100.0) / (1.0 / s - lambda), 0.03, n * seeds);
    for c in [2u32, 4, 8] {
        let lambda = 0.8 * c as f64 / s;
        let (sim, _) = simulate_queue(lambda, c, &geometric, n, seeds);
        push(format!("M/M/{c} central queue rho=0.8 Wq"), sim, mmc_wq(c, lambda, 1.0 / s), 0.03, n * seeds);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms_match_the_reference_vectors() {
        // ../reference vectors: M/D/1 λ=0.8 Wq=2; M/M/2 λ=1.6 C=0.711111 Wq=1.777778; M/M/4 Wq=0.745541; M/M/8 Wq=0.286028.
        assert!((mg1_wq(0.8, 1.0, 1.0) - 2.0).abs() < 1e-12);
        assert!((mg1_wq(0.8, 1.0, 2.0) - 4.0).abs() < 1e-12);
        assert!((erlang_c(2, 1.6) - 0.711111).abs() < 1e-6);
        assert!((mmc_wq(2, 1.6, 1.0) - 1.777778).abs() < 1e-6);
        assert!((mmc_wq(4, 3.2, 1.0) - 0.745541).abs() < 1e-6);
        assert!((mmc_wq(8, 6.4, 1.0) - 0.286028).abs() < 1e-6);
    }
}
