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
    /// Estimated arrival-to-first-token and arrival-to-completion times if admitted (only computed for the
    /// policies that check them, [`Admission::needs_estimate`]).
    pub estimate: Option<Estimate>,
    /// The class TTFT, TPOT and e2e SLOs.
    pub ttft_objective_ns: Option<u64>,
    pub tpot_objective_ns: Option<u64>,
    pub deadline_ns: Option<u64>,
}

/// An arrival's estimated time to its first token and to completion, from its arrival, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub ttft_ns: f64,
    pub e2e_ns: f64,
    /// The time per output token it would see (feasibility admission's: the measured step).
    pub tpot_ns: f64,
}

/// What deadline admission's estimate reads of the cluster at an arrival.
pub struct Backlog {
    /// Requests waiting ahead of the arrival (in its replica's queue, or in the central queue).
    pub ahead: usize,
    /// Requests running where it will run (its replica, or the least busy one for a central queue).
    pub running: usize,
    /// Replicas draining the queue ahead (1, or all for a central queue).
    pub servers: f64,
    /// Places free in the batch it joins (the engine's `max_num_seqs` less those running).
    pub free_seqs: usize,
    /// The measured time between completions where it would queue ([`DrainRate`]); 0 before any.
    pub per_completion_ns: f64,
    /// The measured step time where it would run; 0 before any.
    pub per_step_ns: f64,
}

/// The rate a replica has been completing requests: the time between completions, weighted exponentially
/// over about the last 16. A request waiting behind a full batch leaves the queue when a running one
/// finishes, so this — not the prefill rate — is the rate a queue drains at.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DrainRate {
    last_ns: Option<u64>,
    per_completion_ns: f64,
    per_step_ns: f64,
}

impl DrainRate {
    /// A step of `step_ns` ended: the step time a request joining now will decode at, weighted the same way
    /// (its chunks of other requests' prefill included, which the cost model's decode step leaves out).
    pub fn on_step(&mut self, step_ns: u64) {
        let x = step_ns as f64;
        self.per_step_ns = if self.per_step_ns == 0.0 { x } else { self.per_step_ns + (x - self.per_step_ns) / 16.0 };
    }

    /// The measured step time, ns (0 before any step).
    pub fn per_step_ns(&self) -> f64 {
        self.per_step_ns
    }

    /// `n` requests completed at `now_ns`.
    pub fn on_completions(&mut self, now_ns: u64, n: u32) {
        if n == 0 {
            return;
        }
        if let Some(last) = self.last_ns {
            let gap = (now_ns - last) as f64 / n as f64;
            if self.per_completion_ns == 0.0 {
                self.per_completion_ns = gap;
            } else {
                // One weight per completion (a step that ends several counts each); past 64 the old mean is gone.
                for _ in 0..n.min(64) {
                    self.per_completion_ns += (gap - self.per_completion_ns) / 16.0;
                }
            }
        }
        self.last_ns = Some(now_ns);
    }

    /// The measured time between completions, ns (0 before two completions).
    pub fn per_completion_ns(&self) -> f64 {
        self.per_completion_ns
    }
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

/// Feasibility admission's estimate: the arrival waits for `ahead + 1` completions at the measured rate (none
/// when nothing waits and the batch has a free place), then its own prefill, then its predicted output at the
/// measured step time (the cost model's decode step of the batch it joins before any is measured). Before any rate is measured, the queue ahead drains
/// as [`deadline_estimate_ns`] assumes.
pub fn feasible_estimate(req: &Request, b: &Backlog, cost: &CostModel, chunk: u32) -> Estimate {
    let chunk = chunk.max(1);
    let prefill_ns_per_token =
        cost.step(&StepWork { prefill_seqs: 1, prefill_tokens: chunk, ..Default::default() }).total_ns as f64
            / chunk as f64;
    // A request still waiting means the batch had no room for it (KV binds before `max_num_seqs` as often as
    // not), so only an empty queue with a free place starts at once.
    let wait_ns = if b.ahead == 0 && b.free_seqs > 0 {
        0.0
    } else if b.per_completion_ns > 0.0 {
        (b.ahead + 1) as f64 * b.per_completion_ns
    } else {
        b.ahead as f64 * req.prompt_tokens as f64 * prefill_ns_per_token / b.servers
    };
    let ttft_ns = wait_ns + req.prompt_tokens as f64 * prefill_ns_per_token;
    let ctx = req.prompt_tokens as u64 + req.pred_order_tokens as u64 / 2;
    let n = b.running as u32 + 1;
    let modelled = || {
        cost.step(&StepWork { decode_seqs: n, decode_context_tokens: ctx * n as u64, ..Default::default() }).total_ns
            as f64
    };
    let step = if b.per_step_ns > 0.0 { b.per_step_ns } else { modelled() };
    Estimate { ttft_ns, e2e_ns: ttft_ns + req.pred_order_tokens as f64 * step, tpot_ns: step }
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
    Feasible {
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
        AdmissionSpec::Feasible { slack } => Admission::Feasible { slack: *slack },
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
    /// Whether the engine must compute `AdmitContext::estimate`.
    pub fn needs_estimate(&self) -> bool {
        matches!(self, Admission::Deadline { .. } | Admission::Feasible { .. })
    }

    /// Whether the estimate reads the measured drain rate (the engine keeps it only then).
    pub fn reads_drain_rate(&self) -> bool {
        matches!(self, Admission::Feasible { .. })
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
            Admission::Deadline { slack } => match (cx.estimate, cx.deadline_ns) {
                (Some(est), Some(d)) if est.e2e_ns > d as f64 * *slack => Err(Reject::DeadlineInfeasible),
                _ => Ok(()),
            },
            Admission::Feasible { slack } => {
                let late = |est: f64, objective: Option<u64>| objective.is_some_and(|o| est > o as f64 * *slack);
                match cx.estimate {
                    Some(est)
                        if late(est.ttft_ns, cx.ttft_objective_ns)
                            || late(est.tpot_ns, cx.tpot_objective_ns)
                            || late(est.e2e_ns, cx.deadline_ns) =>
                    {
                        Err(Reject::DeadlineInfeasible)
                    }
                    _ => Ok(()),
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Linear;

    /// A base of 1 ms a step and 10 µs a prefill token: a 512-token chunk takes 6.12 ms, 11,953.125 ns a token;
    /// a decode step 1 ms.
    fn cost() -> CostModel {
        CostModel::Linear(Linear {
            base_ns: 1e6,
            per_seq_ns: 0.0,
            per_prefill_token_ns: 1e4,
            per_kv_token_ns: 0.0,
            prefill_scale: 1.0,
            decode_scale: 1.0,
        })
    }

    fn request() -> Request {
        Request {
            id: 0,
            arrival_ns: 0,
            class: 0,
            tenant: 0,
            prompt_tokens: 1000,
            output_tokens: 100,
            pred_order_tokens: 100,
            pred_reserve_tokens: 100,
            drop_u: 0.5,
            prefix_group: crate::workload::NO_PREFIX,
            session: crate::workload::NO_SESSION,
        }
    }

    #[test]
    fn the_feasibility_estimate_waits_one_measured_gap_per_completion_it_needs() {
        let full =
            Backlog { ahead: 3, running: 8, servers: 1.0, free_seqs: 0, per_completion_ns: 2e8, per_step_ns: 0.0 };
        // (3 ahead + itself) completions at 0.2 s, its prefill of 1000 tokens, then 100 decode steps of 1 ms.
        let e = feasible_estimate(&request(), &full, &cost(), 512);
        assert_eq!((e.ttft_ns, e.e2e_ns), (8e8 + 11_953_125.0, 8e8 + 11_953_125.0 + 1e8));
        // Nothing waiting and a place free: no wait. A place free behind a waiting queue is no room (the KV
        // cache binds): it waits as behind a full batch.
        let room = Backlog { ahead: 0, free_seqs: 10, ..full };
        assert_eq!(feasible_estimate(&request(), &room, &cost(), 512).ttft_ns, 11_953_125.0);
        let kv_bound = Backlog { free_seqs: 10, ..full };
        assert_eq!(feasible_estimate(&request(), &kv_bound, &cost(), 512).ttft_ns, 8e8 + 11_953_125.0);
        let nothing_waits = Backlog { ahead: 0, ..full };
        assert_eq!(feasible_estimate(&request(), &nothing_waits, &cost(), 512).ttft_ns, 2e8 + 11_953_125.0);
        // No rate measured yet: the queue ahead drains at the prefill rate, as deadline admission assumes.
        // A measured step time (5 ms: the chunks of prefill it carries) replaces the modelled decode step.
        let stepped = Backlog { per_step_ns: 5e6, ..full };
        assert_eq!(feasible_estimate(&request(), &stepped, &cost(), 512).e2e_ns, 8e8 + 11_953_125.0 + 5e8);
        let unmeasured = Backlog { per_completion_ns: 0.0, ..full };
        let e = feasible_estimate(&request(), &unmeasured, &cost(), 512);
        assert_eq!(e.ttft_ns, 3.0 * 11_953_125.0 + 11_953_125.0);
        assert_eq!(e.e2e_ns, deadline_estimate_ns(&request(), &unmeasured, &cost(), 512));
    }

    #[test]
    fn the_drain_rate_is_the_gap_between_completions_weighted_toward_the_last() {
        let mut d = DrainRate::default();
        d.on_completions(1_000, 1);
        assert_eq!(d.per_completion_ns(), 0.0, "one completion measures no gap");
        d.on_completions(1_000 + 160, 2); // two at once: 80 ns each
        assert_eq!(d.per_completion_ns(), 80.0);
        d.on_completions(1_160 + 240, 1); // 240: a sixteenth of the way from 80
        assert_eq!(d.per_completion_ns(), 90.0);
        d.on_completions(2_000, 0);
        assert_eq!(d.per_completion_ns(), 90.0, "a step that completes nothing measures nothing");
        d.on_step(100);
        d.on_step(260);
        assert_eq!(d.per_step_ns(), 110.0);
    }
}
