//! One worker: a model instance with its running batch, waiting queue and paged KV, and the state its
//! scheduler keeps between steps.

use super::step_end::Batch;
use crate::kv::BlockPool;
use crate::scenario::Scenario;
use crate::sched::admission::DrainRate;
use crate::sched::queue::{self, WaitingQueue};
use crate::sched::sglang::NewTokenRatio;

/// One model instance (tp GPUs) with its batch, queue and KV. It forms its own batches (batch.rs) and gives
/// KV back by preemption and retraction (preempt.rs), from what the simulation lends it ([`super::Around`]).
pub(crate) struct Replica {
    /// The pool this worker belongs to, and its index within it.
    pub pool: usize,
    pub local: usize,
    /// The running requests (see [`step_end`]).
    pub batch: Batch,
    pub queue: Box<dyn WaitingQueue>,
    pub kv: BlockPool,
    /// Σ reservations of running requests, blocks.
    pub reserved_blocks: u64,
    pub busy: bool,
    pub step_ns: u64,
    pub outstanding: u64,
    /// Prefill workers: blocks of prompts handed off and still crossing the link.
    pub transfer_blocks: u64,
    /// SGLang's formations: the share of predicted output a running request reserves.
    pub new_token_ratio: NewTokenRatio,
    /// The rate it has been completing requests (kept only for the admission that reads it).
    pub drain: DrainRate,
    /// Requests it preempted while forming its batch, to queue once the step is formed.
    pub requeue: Vec<u32>,
    /// Requests it preempted past their cap while forming its batch: final, to be answered once it is formed.
    pub failed: Vec<u32>,
}

impl Replica {
    /// Worker `local` of pool `pool`, idle and empty; its prefix cache held to `prefix_budget_blocks` (a
    /// workflow's prefix budget).
    pub fn new(sc: &Scenario, pool: usize, local: usize, prefix_budget_blocks: Option<u64>) -> Replica {
        let en = &sc.pools[pool].engine;
        Replica {
            pool,
            local,
            batch: Batch::new(en.max_num_seqs, en.block_size_tokens),
            queue: queue::build(&sc.scheduler, sc.workload.tenants.len()),
            kv: BlockPool::new(en.kv_total_blocks)
                .with_tiers(en.host.map(|h| h.capacity_blocks), en.retention_budget_blocks)
                .with_prefix_budget(prefix_budget_blocks),
            reserved_blocks: 0,
            busy: false,
            step_ns: 0,
            outstanding: 0,
            transfer_blocks: 0,
            new_token_ratio: NewTokenRatio::default(),
            drain: DrainRate::default(),
            requeue: Vec::new(),
            failed: Vec::new(),
        }
    }
}
