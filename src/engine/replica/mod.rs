//! One worker: a model instance with its running batch, waiting queue and paged KV, and the state its
//! scheduler keeps between steps.

mod batch;
mod preempt;

use super::sessions::SessionKv;
use super::step_end::{Batch, Ended, Handoff, Lent, RarePass, Tally};
use crate::kv::{BlockPool, EntryId};
use crate::metrics::{Recorder, RequestRecord};
use crate::scenario::Scenario;
use crate::scenario::{Engine, Pool, Role};
use crate::sched::admission::Backlog;
use crate::sched::admission::DrainRate;
use crate::sched::queue::QueueItem;
use crate::sched::queue::{self, WaitingQueue};
use crate::sched::sglang::NewTokenRatio;

/// What a replica's batch formation reads and changes outside the replica, lent by the simulation for one
/// formation: the scenario, the clock, the request table, the central queue (if any), the sessions' KV and the
/// recorder's hooks. (What the rest of the simulation must hear of it — the requests it preempted or failed —
/// the replica keeps until the simulation's `flush_requeue`; lending less keeps a formation's start cheap.)
pub(super) struct Around<'s> {
    pub sc: &'s Scenario,
    pub now: u64,
    /// The replica's index among all workers.
    pub r: usize,
    pub shares_prefixes: bool,
    pub requests: &'s mut [RequestRecord],
    pub central: Option<&'s mut (dyn WaitingQueue + 'static)>,
    pub sessions: &'s mut [SessionKv],
    pub rec: &'s mut Recorder,
}

/// One model instance (tp GPUs) with its batch, queue and KV. It forms its own batches (batch.rs) and gives
/// KV back by preemption and retraction (preempt.rs), from what the simulation lends it ([`Around`]).
pub(crate) struct Replica {
    /// The pool this worker belongs to, and its index within it.
    pool: usize,
    local: usize,
    /// The running requests (see engine/step_end.rs).
    batch: Batch,
    queue: Box<dyn WaitingQueue>,
    kv: BlockPool,
    /// Σ reservations of running requests, blocks.
    reserved_blocks: u64,
    busy: bool,
    step_ns: u64,
    outstanding: u64,
    /// Prefill workers: blocks of prompts handed off and still crossing the link.
    transfer_blocks: u64,
    /// SGLang's formations: the share of predicted output a running request reserves.
    new_token_ratio: NewTokenRatio,
    /// The rate it has been completing requests (kept only for the admission that reads it).
    drain: DrainRate,
    /// Requests it preempted while forming its batch, to queue once the step is formed.
    requeue: Vec<u32>,
    /// Requests it preempted past their cap while forming its batch: final, to be answered once it is formed.
    failed: Vec<u32>,
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

/// What the simulation asks of a worker: where it is, its load, its queue, its steps and their books.
impl Replica {
    /// Its pool, and its index within it.
    #[inline(always)]
    pub fn pool(&self) -> usize {
        self.pool
    }

    #[inline(always)]
    pub fn local(&self) -> usize {
        self.local
    }

    /// Requests routed to it and not yet gone (waiting, restoring, running).
    #[inline(always)]
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// A request was routed to it: its outstanding count from now on.
    pub fn routed_in(&mut self) -> u64 {
        self.outstanding += 1;
        self.outstanding
    }

    /// Requests in its batch.
    #[inline(always)]
    pub fn running(&self) -> usize {
        self.batch.len()
    }

    /// Requests in its own waiting queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Its paged KV, to read.
    #[inline(always)]
    pub fn kv(&self) -> &BlockPool {
        &self.kv
    }

    /// Its prefix cache keeps each of `roles` workflow roles' forecast demand.
    pub fn track_demand(&mut self, roles: usize) {
        self.kv.shared_demand = vec![0; roles];
    }

    /// The rate it has been completing requests.
    pub fn drain(&self) -> &DrainRate {
        &self.drain
    }

    /// `item` joins its waiting queue (`ahead`: back after a preemption, ahead of the others).
    pub fn join_queue(&mut self, item: QueueItem, ahead: bool) {
        if ahead { self.queue.requeue(item) } else { self.queue.push(item) }
    }

    /// The backlog a request joining its queue meets, with `max_num_seqs` batch slots.
    pub fn backlog(&self, max_num_seqs: usize) -> Backlog {
        Backlog {
            ahead: self.queue.len(),
            running: self.batch.len(),
            servers: 1.0,
            free_seqs: max_num_seqs.saturating_sub(self.batch.len()),
            per_completion_ns: self.drain.per_completion_ns(),
            per_step_ns: self.drain.per_step_ns(),
        }
    }

    /// A step is running.
    #[inline(always)]
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Its formation found nothing to run: it waits idle (SGLang's idle check resets its ratio; vLLM's
    /// formation never reads it).
    pub fn went_idle(&mut self) {
        debug_assert_eq!(self.batch.lazy_count(), 0, "lazy requests outside a step");
        self.new_token_ratio.reset();
    }

    /// A formed step of `step_ns` starts.
    #[inline(always)]
    pub fn launch(&mut self, step_ns: u64) {
        self.busy = true;
        self.step_ns = step_ns;
    }

    /// Its formation preempted requests, to queue again or answer as failed.
    #[inline(always)]
    pub fn has_preempted(&self) -> bool {
        !self.requeue.is_empty() || !self.failed.is_empty()
    }

    /// The requests its formation preempted past their cap (final), taken.
    pub fn take_failed(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.failed)
    }

    /// The requests its formation preempted, to queue again, taken.
    pub fn take_requeue(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.requeue)
    }

    /// Its step ended: it is idle until the next is formed.
    #[inline(always)]
    pub fn step_ended(&mut self) {
        self.busy = false;
    }

    /// Whether its step's end coasted (see [`Batch::coast`]): if so, what it left and its tally. `decay`:
    /// SGLang's formation would have decoded every request and retracted none.
    #[inline(always)]
    pub fn coast(&mut self, en: &Engine, budget: u32, decay: bool) -> Option<(Ended, Tally)> {
        let coasted = self.batch.coast(&mut self.kv, en, budget);
        if coasted.is_some() && decay {
            self.new_token_ratio.decay(); // what `retract_for_decode` does when nothing is retracted
        }
        coasted
    }

    /// Its step's end off the coasting path: the pass over the batch (see [`Batch::end_step`]) with what the
    /// simulation lends; what it left, its tally, and the prompts handed to the link.
    #[inline(always)]
    pub fn end_step(&mut self, lent: Lent<'_>, en: &Engine, budget: u32, lazy: bool) -> (Ended, Tally, Vec<Handoff>) {
        let mut pass = RarePass::new(lent, &mut self.kv, self.step_ns);
        let ended = self.batch.end_step(&mut pass, en, budget, lazy);
        let (tally, handoff) = pass.into_books();
        (ended, tally, handoff)
    }

    /// SGLang's ratio decays (a decode-only step with nothing retracted).
    pub fn decay_ratio(&mut self) {
        self.new_token_ratio.decay();
    }

    /// Whether SGLang's formation of its next step, at this step end, can only decode every running request,
    /// one token each, with no retraction: nothing waits to be admitted (`central`: the central queue, if it
    /// feeds it), no running prompt has a chunk left after this step, and the free blocks cover a new block for
    /// every request. That step is the one vLLM's pass plans with the budget SGLang gives decodes, so it may be
    /// planned there — and coast, lazy, as vLLM's does — instead of from scratch. For SGLang's formations only.
    #[inline(never)]
    pub fn sglang_decodes_next(&self, pool: &Pool, central: Option<&dyn WaitingQueue>) -> bool {
        let en = &pool.engine;
        debug_assert!(!en.formation.is_vllm(), "vLLM's step end plans in its pass");
        if pool.role == Role::Prefill {
            return false;
        }
        let n = self.batch.len() as u64;
        let budget_ok =
            en.formation == crate::scenario::BatchFormationSpec::Sglang || n <= en.max_num_batched_tokens as u64;
        // A lazy batch is all decoders; otherwise each is looked at (a step end off the coasting path).
        let decoders = self.batch.lazy_count() == n
            || self.batch.requests().iter().all(|s| s.prefilled + s.step_tokens >= s.prefill_target);
        self.waiting(central) == 0 && budget_ok && n <= self.kv.free() && decoders
    }

    /// The books after its step end: KV released, reservations given back, prompts handed to the link (they
    /// keep their blocks here until the transfer ends: `handoff_blocks` of `handoff`), the requests gone from
    /// its count, its drain rate (`drain`: kept only for the admission that reads it) and the audit, with the
    /// running requests holding `held_blocks`.
    #[inline(always)]
    pub fn settle(&mut self, t: &Tally, held_blocks: u64, handoff: (u64, u64), now: u64, drain: bool) -> Settled {
        self.kv.release(t.released);
        self.reserved_blocks -= t.unreserved;
        self.transfer_blocks += handoff.1;
        let left = t.finished as u64 + handoff.0;
        self.outstanding -= left;
        if drain {
            self.drain.on_completions(now, t.finished);
            self.drain.on_step(self.step_ns);
        }
        let kv_ok =
            self.kv.consistent() && held_blocks + self.transfer_blocks + self.kv.cache.held_blocks == self.kv.used();
        Settled { left, kv_ok, step_ns: self.step_ns, kv_between: self.kv.used() - t.allocated }
    }

    /// The prefix cache's blocks held.
    #[inline(always)]
    pub fn prefix_held(&self) -> u64 {
        self.kv.cache.shared_held()
    }
}

/// A step end's books, as the rest of the simulation hears them: requests gone (finished or handed off),
/// whether KV adds up, the step's time and the KV in use between the steps.
pub(crate) struct Settled {
    pub left: u64,
    pub kv_ok: bool,
    pub step_ns: u64,
    pub kv_between: u64,
}

/// What the worker's KV does for the parts around it: sessions' histories (restores, TTL expiry, a session's
/// end), workflows' prefetches, and P/D hand-offs. Each says what changed; the simulation tells the others.
impl Replica {
    /// Whether it holds session `s`'s history in host memory and not in HBM (a turn routed here restores it).
    pub fn hosts_only(&self, s: u32) -> bool {
        let e = EntryId::session(s);
        !self.kv.cache.is_cached(e) && self.kv.host.as_ref().is_some_and(|h| h.blocks_of(e) > 0)
    }

    /// Whether session `s`'s history is cached in HBM.
    pub fn holds_session(&self, s: u32) -> bool {
        self.kv.cache.is_cached(EntryId::session(s))
    }

    /// Session `s`'s history leaves host memory for HBM: the blocks it takes there (None: more than the
    /// retention budget `budget_blocks`, or not to be had — the history is dropped and the turn recomputes).
    pub fn restore_from_host(&mut self, s: u32, budget_blocks: Option<u64>) -> Option<u64> {
        let blocks = self.kv.host.as_mut().expect("a host tier").take(EntryId::session(s));
        if blocks > budget_blocks.unwrap_or(u64::MAX) || !self.kv.try_alloc(blocks) {
            return None;
        }
        self.transfer_blocks += blocks;
        Some(blocks)
    }

    /// Session `s`'s history (`blocks`) is back in HBM, pinned for the turn waiting for it until its admission
    /// (it is that turn's working KV, not idle retention, so neither the retention budget nor an eviction
    /// takes it back).
    pub fn land_restore(&mut self, s: u32, blocks: u64) {
        self.transfer_blocks -= blocks;
        let e = EntryId::session(s);
        self.kv.cache.retain(e, blocks);
        self.kv.cache.pin(e);
    }

    /// Free what it holds of session `s`, in HBM (when idle) and in host memory; whether anything was.
    pub fn free_session(&mut self, s: u32) -> bool {
        let e = EntryId::session(s);
        let freed = self.kv.drop_idle(e);
        let hosted = self.kv.host.as_mut().map_or(0, |h| h.take(e));
        freed + hosted > 0
    }

    /// Session `s`'s idle history leaves HBM for the host tier (or is freed); whether there was any.
    pub fn offload_session(&mut self, s: u32) -> bool {
        self.kv.offload(EntryId::session(s)) > 0
    }

    /// Its retained KV: idle session history in HBM, and history in host memory, blocks.
    pub fn retained_blocks(&self) -> (u64, u64) {
        (self.kv.cache.idle_session_blocks(), self.kv.host.as_ref().map_or(0, |h| h.used_blocks))
    }

    /// HBM blocks for a transfer coming in (a prefetch); whether they could be had.
    pub fn reserve_transfer(&mut self, blocks: u64) -> bool {
        if !self.kv.try_alloc(blocks) {
            return false;
        }
        self.transfer_blocks += blocks;
        true
    }

    /// `role`'s prefetched prefix (`blocks`) landed: it joins the prefix cache idle, within the budget (or,
    /// cached meanwhile, the copy is freed); whether it joined.
    pub fn land_prefetch(&mut self, role: u16, blocks: u64) -> bool {
        self.transfer_blocks -= blocks;
        self.kv.land_prefetch(EntryId::prefix(role), blocks)
    }

    /// A forecast's demand for each role prefix (millionths) joins (`add`) or leaves its prefix cache's.
    pub fn demand(&mut self, demand: &[u64], add: bool) {
        let d = &mut self.kv.shared_demand;
        match add {
            true => d.iter_mut().zip(demand).for_each(|(x, y)| *x += y),
            false => d.iter_mut().zip(demand).for_each(|(x, y)| *x -= y),
        }
    }

    /// A prompt it prefilled (`blocks`, sharing `shared_group`'s cached prefix) reached its decode worker: its
    /// copy is freed.
    pub fn handed_off(&mut self, blocks: u64, shared_group: Option<u16>) {
        self.kv.release(blocks);
        self.transfer_blocks -= blocks;
        if let Some(g) = shared_group {
            self.kv.cache.unpin(EntryId::prefix(g));
        }
    }
}
