//! Admission: which arrivals are turned away before they queue. Built from the serde enum; `build` is the registry.

use crate::cost::{CostModel, StepWork};
use crate::spec::AdmissionSpec;
use crate::workload::Request;
use crate::workload::Tenant;

/// What the engine knows at an arrival, for the policies that look at load.
pub struct AdmitContext {
    pub now_ns: u64,
    /// Requests waiting in the queue the arrival would join.
    pub waiting: usize,
    /// Estimated arrival-to-completion time if admitted (only computed for the deadline policy).
    pub estimate_ns: Option<f64>,
    /// The class e2e SLO.
    pub deadline_ns: Option<u64>,
}

/// What deadline admission's estimate reads of the cluster at an arrival.
pub struct Backlog {
    /// Requests waiting ahead of the arrival (in its replica's queue, or in the central queue).
    pub ahead: usize,
    /// Requests running where it will run (its replica, or the least busy one for a central queue).
    pub running: usize,
    /// Replicas draining the queue ahead (1, or all for a central queue).
    pub servers: f64,
}

/// Deadline admission's estimate of an arrival's time to completion: the queue ahead drains at the prefill
/// rate of full chunks (this request's prompt standing in for the unknown prompts ahead of it), then its own
/// prefill, then its predicted output at the decode step time of the batch it joins. `cost` and `chunk` are
/// the pool's step-time model and prefill chunk.
pub fn deadline_estimate_ns(req: &Request, b: &Backlog, cost: &CostModel, chunk: u32) -> f64 {
    let chunk = chunk.max(1);
    let prefill_ns_per_token =
        cost.step(&StepWork { prefill_seqs: 1, prefill_tokens: chunk, ..Default::default() }).total_ns as f64
            / chunk as f64;
    let queue_ns = b.ahead as f64 * req.prompt_tokens as f64 * prefill_ns_per_token / b.servers;
    let ctx = req.prompt_tokens as u64 + req.pred_order_tokens as u64 / 2;
    let n = b.running as u32 + 1;
    let decode = cost
        .step(&StepWork { decode_seqs: n, decode_context_tokens: ctx * n as u64, ..Default::default() })
        .total_ns as f64;
    queue_ns + req.prompt_tokens as f64 * prefill_ns_per_token + req.pred_order_tokens as f64 * decode
}

/// Why an arrival was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    QueueFull,
    DeadlineInfeasible,
    Dropped,
    RateLimited,
    /// Prompt + output past the engine's `max_model_len` (vLLM answers such a request with an error).
    TooLong,
}

/// An admission policy with its state (token buckets).
pub enum Admission {
    None,
    QueueCap {
        max_waiting: usize,
    },
    Deadline {
        slack: f64,
    },
    RandomDrop {
        probability: f64,
    },
    /// Per-tenant (rate tokens/ns, burst, level, last refill).
    TokenBucket {
        buckets: Vec<(f64, f64, f64, u64)>,
    },
}

/// The registry of admission policies.
pub fn build(spec: &AdmissionSpec, tenants: &[Tenant]) -> Admission {
    match spec {
        AdmissionSpec::None => Admission::None,
        AdmissionSpec::QueueCap { max_waiting } => Admission::QueueCap { max_waiting: *max_waiting as usize },
        AdmissionSpec::Deadline { slack } => Admission::Deadline { slack: *slack },
        AdmissionSpec::RandomDrop { probability } => Admission::RandomDrop { probability: *probability },
        AdmissionSpec::TokenBucket { rate_tokens_per_s, burst_tokens } => Admission::TokenBucket {
            buckets: tenants
                .iter()
                .map(|t| {
                    let rate = t.rate_tokens_per_s.unwrap_or(*rate_tokens_per_s) / 1e9;
                    let burst = if t.burst_tokens > 0.0 { t.burst_tokens } else { *burst_tokens };
                    (rate, burst, burst, 0)
                })
                .collect(),
        },
    }
}

impl Admission {
    /// Whether the engine must compute `AdmitContext::estimate_ns`.
    pub fn needs_estimate(&self) -> bool {
        matches!(self, Admission::Deadline { .. })
    }

    pub fn admit(&mut self, r: &Request, cx: &AdmitContext) -> Result<(), Reject> {
        match self {
            Admission::None => Ok(()),
            Admission::QueueCap { max_waiting } => {
                if cx.waiting >= *max_waiting {
                    Err(Reject::QueueFull)
                } else {
                    Ok(())
                }
            }
            Admission::Deadline { slack } => match (cx.estimate_ns, cx.deadline_ns) {
                (Some(est), Some(d)) if est > d as f64 * *slack => Err(Reject::DeadlineInfeasible),
                _ => Ok(()),
            },
            Admission::RandomDrop { probability } => {
                if r.drop_u < *probability {
                    Err(Reject::Dropped)
                } else {
                    Ok(())
                }
            }
            Admission::TokenBucket { buckets } => {
                let (rate, burst, level, last) = &mut buckets[r.tenant as usize];
                *level = (*level + (cx.now_ns - *last) as f64 * *rate).min(*burst);
                *last = cx.now_ns;
                let cost = r.prompt_tokens as f64 + r.pred_reserve_tokens as f64;
                if *level >= cost {
                    *level -= cost;
                    Ok(())
                } else {
                    Err(Reject::RateLimited)
                }
            }
        }
    }
}
