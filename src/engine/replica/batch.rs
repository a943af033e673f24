//! Batch formation for one replica (iteration-level continuous batching, vLLM v1 / Sarathi style).
//!
//! 1. Running requests, in admission order: a decode token each, or the next prefill chunk. A request that
//!    needs a KV block when none is free preempts a victim (recompute), chosen among the requests not yet
//!    scheduled in this step, itself included.
//! 2. If nothing was preempted, admit from the waiting queue in policy order while the batch has a slot, the
//!    step has token budget, the reservation (prompt + predicted output) fits under the over-subscription
//!    limit, and the first chunk's blocks are free. A replica with nothing running always admits its head, so
//!    every run makes progress.
//!
//! That is vLLM V1's formation. SGLang's ([`BatchFormationSpec::Sglang`]) puts prompts first: a step that can
//! prefill runs only prefill and decoding sits it out; [`BatchFormationSpec::SglangMixed`] lets every decode
//! take its token and fills the rest of the budget with prompts. Both are planned from scratch at each step
//! (a decoder does not take a token every step), except a step that can only decode: the step end's pass
//! plans that one, lazily, as vLLM's (`Simulation::sglang_decodes_next`). Formation is the replica's
//! own ([`Replica`]); what it reads and changes outside the replica is lent to it ([`Around`]).

use super::{Around, Replica};
use crate::cost::StepWork;
use crate::engine::running::{Plan, Running, take, want_need};
use crate::engine::shared::{cached_prefix_tokens, cached_shared, pin_shared, session_prefix_tokens, unpin_shared};
use crate::kv::blocks_for;
use crate::metrics::{Limiter, RequestRecord};
use crate::scenario::{BatchFormationSpec, Engine, Role};
use crate::sched::queue::WaitingQueue;
use crate::sched::{sglang, victim};
use crate::workload::{NO_PREFIX, NO_SESSION};

impl Replica {
    /// Finish forming this replica's next step from `plan` (the requests before `plan.from` are planned);
    /// allocates KV. Returns the step's work and what stopped admission.
    pub(in crate::engine) fn form_batch(&mut self, plan: Plan, cx: &mut Around) -> (StepWork, Limiter) {
        let sc = cx.sc;
        let en = &sc.pools[self.pool].engine;
        match en.formation {
            BatchFormationSpec::Vllm => {}
            BatchFormationSpec::Sglang => return self.form_prefill_first(false, cx),
            BatchFormationSpec::SglangMixed => return self.form_prefill_first(true, cx),
        }
        let Plan { mut work, mut budget, from: mut i } = plan;
        let mut preempted = false;
        loop {
            // Hot path: one tight pass over the batch. It stops at the first request whose blocks cannot be
            // allocated; the slow path below preempts, then the pass resumes.
            let kv = &mut self.kv;
            let running = self.batch.unplanned(i);
            let mut stuck = None;
            while i < running.len() {
                let s = &mut running[i];
                let (want, need) = want_need(s, budget, en);
                if want > 0 {
                    if need > 0 && !kv.try_alloc(need) {
                        stuck = Some(need);
                        break;
                    }
                    take(s, want, need, &mut budget, &mut work);
                }
                i += 1;
            }
            let Some(need) = stuck else { break };
            // Slow path: free memory by preempting victims until request i fits, or it is the victim.
            loop {
                let v = self.victim(i, cx);
                self.preempt(v, cx);
                preempted = true;
                if v == i {
                    break; // index i now holds the next request
                }
                if self.kv.available() >= need {
                    break; // the pass resumes at i and allocates
                }
            }
        }
        if preempted {
            return (work, Limiter::Preemption);
        }
        let limiter = self.admit(&mut budget, &mut work, cx);
        (work, limiter)
    }

    /// The preemption victim among the running requests from position `from` on.
    fn victim(&self, from: usize, cx: &Around) -> usize {
        let en = &cx.sc.pools[self.pool].engine;
        let running = self.batch.requests();
        let priority = |j: usize| cx.sc.workload.classes[cx.requests[running[j].id as usize].class as usize].priority;
        victim::pick(en.victim, from, running.len(), |j| running[j].prefilled + running[j].generated, priority)
    }

    /// SGLang's formation. Prefill first: the chunked prompts' next chunks (a chunk whose blocks are not free
    /// waits, as SGLang's memory check makes it), then waiting prompts; if that gives the step any prefill,
    /// the step is that alone. Otherwise every running request decodes, victims preempted as blocks run out.
    /// `mixed`: the decodes come first and prompts take the budget they leave, in the same step. If nothing
    /// at all could be planned, every running request is planned as vLLM would, preempting, so a batch of
    /// stuck chunks still makes progress.
    fn form_prefill_first(&mut self, mixed: bool, cx: &mut Around) -> (StepWork, Limiter) {
        let full_budget = cx.sc.pools[self.pool].engine.max_num_batched_tokens;
        let mut work = StepWork::default();
        let mut preempted = mixed && self.plan_decodes(&mut work, cx);
        let mut budget = full_budget.saturating_sub(work.decode_seqs);
        self.plan_chunks(&mut budget, &mut work, cx);
        let mut limiter = if preempted { Limiter::Preemption } else { self.admit(&mut budget, &mut work, cx) };
        if !mixed && work.prefill_seqs == 0 {
            preempted = self.plan_decodes(&mut work, cx);
        }
        if work.seqs() == 0 && !self.batch.is_empty() {
            preempted |= self.plan_running(&mut work, full_budget, false, cx);
        }
        if preempted {
            limiter = Limiter::Preemption;
        }
        (work, limiter)
    }

    /// The running prompts' next chunks under `budget`, in batch order; a chunk whose blocks are not free
    /// is left for a later step.
    fn plan_chunks(&mut self, budget: &mut u32, work: &mut StepWork, cx: &Around) {
        let en = &cx.sc.pools[self.pool].engine;
        for s in self.batch.unplanned(0).iter_mut() {
            if s.step_tokens > 0 || s.prefilled == s.prefill_target {
                continue;
            }
            let (want, need) = want_need(s, *budget, en);
            if want > 0 && (need == 0 || self.kv.try_alloc(need)) {
                take(s, want, need, budget, work);
            }
        }
    }

    /// SGLang's decode step: retract until every decoder's next token fits, then plan them. True if anything
    /// was retracted or preempted.
    fn plan_decodes(&mut self, work: &mut StepWork, cx: &mut Around) -> bool {
        let retracted = self.retract_for_decode(cx);
        self.plan_running(work, u32::MAX, true, cx) | retracted
    }

    /// Plan the running requests not yet in the step (only the decoders, with `only_decodes`) in batch order
    /// under `budget`, preempting victims when blocks run out. True if it preempted.
    fn plan_running(&mut self, work: &mut StepWork, mut budget: u32, only_decodes: bool, cx: &mut Around) -> bool {
        let sc = cx.sc;
        let en = &sc.pools[self.pool].engine;
        let mut preempted = false;
        let mut i = 0;
        while i < self.batch.len() {
            let s = &mut self.batch.unplanned(0)[i];
            if s.step_tokens > 0 || (only_decodes && s.prefilled < s.prefill_target) {
                i += 1;
                continue;
            }
            let (want, need) = want_need(s, budget, en);
            if want > 0 && need > 0 && !self.kv.try_alloc(need) {
                // Free blocks by preempting; then i holds the same request (retried) or, if it was the victim,
                // the next one.
                let v = self.victim(i, cx);
                self.preempt(v, cx);
                preempted = true;
                continue;
            }
            if want > 0 {
                take(s, want, need, &mut budget, work);
            }
            i += 1;
        }
        preempted
    }

    /// What stops admission (with `budget` tokens left in the step; `central`: the central queue, if there is
    /// one) before it looks at a request: a full batch, no budget, nothing waiting. None: the queue's head may
    /// be admitted. (The queue is asked last: a virtual call, on the coasting step end's path.)
    #[inline(always)]
    pub(in crate::engine) fn admission_closed(
        &self,
        en: &Engine,
        central: Option<&dyn WaitingQueue>,
        budget: u32,
    ) -> Option<Limiter> {
        if self.batch.len() >= en.max_num_seqs as usize {
            return Some(Limiter::MaxSeqs);
        }
        if budget == 0 {
            return Some(Limiter::TokenBudget);
        }
        (self.waiting(central) == 0).then_some(Limiter::QueueEmpty)
    }

    /// Requests waiting for this replica: its own queue's, or the central queue's when there is one.
    #[inline(always)]
    pub(in crate::engine) fn waiting(&self, central: Option<&dyn WaitingQueue>) -> usize {
        central.map_or(self.queue.len(), |q| q.len())
    }

    /// Step 2: admit waiting requests while everything allows. Inlined into vLLM's formation, its hot caller.
    #[inline(always)]
    fn admit(&mut self, budget: &mut u32, work: &mut StepWork, cx: &mut Around) -> Limiter {
        let sc = cx.sc;
        let pool = &sc.pools[self.pool];
        let en = &pool.engine;
        let block = en.block_size_tokens;
        let chains = sc.workload.chains.as_ref();
        let prefix_tokens = cached_prefix_tokens(sc.prefix.as_ref());
        // SGLang's formations reserve by `new_token_ratio` (sched::sglang); vLLM's by prompt + predicted output.
        let mut sglang_reserved = (!en.formation.is_vllm()).then(|| self.sglang_reserved_tokens(cx));
        loop {
            if let Some(limiter) = self.admission_closed(en, cx.central.as_deref(), *budget) {
                return limiter;
            }
            let queue = match &mut cx.central {
                Some(q) => &mut **q,
                None => &mut *self.queue,
            };
            let id = queue.peek().expect("admission is open only with a request waiting").id;
            let rec = &cx.requests[id as usize];
            let mut entry = Entry::of(rec, pool.role);
            if entry.start_tokens == 0 && cx.shares_prefixes {
                entry.shared_tokens = cached_shared(&self.kv.cache, chains, sc.prefix.as_ref(), rec, block);
                entry.start_tokens = entry.shared_tokens;
            }
            // A preempted request's blocks kept here (vLLM's prefix caching of freed blocks) follow the tokens
            // it shared then: usable while those are cached, up to one token short of its prefill.
            let mut reused_blocks = 0;
            if rec.preemptions > 0 && !rec.kv_ready && self.kv.cache.parked_blocks > 0 {
                reused_blocks = reuse_parked(&mut self.kv, id, &mut entry, block);
            }
            let reserve = blocks_for(entry.reserve_tokens, block);
            let extend = (entry.prefill_target - entry.start_tokens) as u64;
            let out = (entry.reserve_tokens - rec.prompt_tokens as u64 - rec.generated as u64) as u32;
            let fits = match sglang_reserved {
                None => self.reserved_blocks + reserve <= en.kv_reserve_limit_blocks,
                Some(reserved) => sglang::admits(extend, out, self.kv.available() * block as u64, reserved),
            };
            if !self.batch.is_empty() && !fits {
                return Limiter::KvReservation;
            }
            let Some(want) = entry.first_want(en, *budget) else { return Limiter::TokenBudget };
            let shared_tokens = entry.shared_tokens;
            let need = blocks_for((entry.start_tokens - shared_tokens) as u64 + want as u64, block) - reused_blocks;
            // Pin the cached prefix first, and take back the kept blocks, so the allocation cannot evict the
            // very blocks it will use.
            if shared_tokens > 0 {
                pin_shared(&mut self.kv.cache, chains, prefix_tokens, rec, shared_tokens);
            }
            // The allocation fails when what may yield, its own kept blocks aside, falls short: then they stay
            // kept, as old as they were.
            if need > self.kv.available() - reused_blocks {
                if shared_tokens > 0 {
                    unpin_shared(&mut self.kv.cache, chains, prefix_tokens, rec, shared_tokens);
                }
                return Limiter::KvFree;
            }
            if reused_blocks > 0 {
                self.kv.cache.unpark(id);
            }
            let ok = self.kv.try_alloc(need);
            debug_assert!(ok, "what may yield was checked to cover the allocation");
            queue.pop();
            cx.rec.on_dequeued();
            self.on_admitted(id, shared_tokens, pool.role, cx);
            if cx.central.is_some() {
                // Taken from the central queue: from now on it belongs to this replica (until preempted).
                cx.requests[id as usize].replica = cx.r as u16;
                self.outstanding += 1;
            }
            self.reserved_blocks += reserve;
            if let Some(reserved) = &mut sglang_reserved {
                // A prompt whose last chunk runs now reserves its whole clipped output, until the next step
                // counts it at the ratio (SGLang's `PrefillAdder` charges a chunk only its tokens).
                *reserved += if want as u64 == extend { sglang::clip(out) as f64 } else { 0.0 };
            }
            let mut s = entry.running(id, &cx.requests[id as usize], reserve as u32);
            s.blocks = reused_blocks as u32;
            take(&mut s, want, need, budget, work);
            self.batch.push(s);
        }
    }

    /// A request enters the batch: its first admission stamps its time and counts its cache lookup (cache
    /// statistics count a request once), and a session's turn tells the session.
    #[inline(always)]
    fn on_admitted(&mut self, id: u32, shared_tokens: u32, role: Role, cx: &mut Around) {
        let rec = &mut cx.requests[id as usize];
        if rec.first_scheduled_ns != u64::MAX {
            return;
        }
        rec.first_scheduled_ns = cx.now;
        let prefix = cx.sc.prefix.as_ref();
        let session_prefix = if rec.session != NO_SESSION {
            session_prefix_tokens(cached_prefix_tokens(prefix), rec).min(shared_tokens)
        } else {
            shared_tokens
        };
        if rec.session != NO_SESSION {
            let session = &mut cx.sessions[rec.session as usize];
            if session.pinned_by_restore() {
                // The restore's pin passes to the turn (which shares the history, if it can use it).
                self.kv.cache.unpin(crate::kv::EntryId::session(rec.session));
            }
            if rec.turn > 1 {
                let (local, hit, host_hit) = session.later_turn_admitted(cx.r, shared_tokens, session_prefix);
                cx.rec.on_turn_admitted(rec.session, shared_tokens, local, hit, host_hit);
            }
        }
        let looks_up = match cx.sc.workload.chains.as_ref() {
            Some(c) => !c.full_blocks(id, rec.prompt_tokens).is_empty(),
            None => rec.prefix_group != NO_PREFIX && prefix.is_some_and(|p| p.caching),
        };
        if looks_up && role != Role::Decode {
            cx.rec.on_prefix_lookup(session_prefix);
        }
    }
}

/// What preempted request `id` kept on this worker, as its readmission `entry` can use it: its kept blocks
/// follow the `base_tokens` it shared when preempted, so they serve while those are cached (all of them, or
/// no shared prefix at all), up to one token short of its prefill (vLLM recomputes at least the last token to
/// produce the next). When they start it further than the cache alone would, the entry starts there; what it
/// cannot use is freed. The blocks it reuses.
#[inline(never)]
fn reuse_parked(kv: &mut crate::kv::BlockPool, id: u32, entry: &mut Entry, block: u32) -> u64 {
    let Some(p) = kv.cache.parked_of(id) else { return 0 };
    let usable = p.base_tokens == 0 || entry.shared_tokens >= p.base_tokens;
    let room = (entry.prefill_target.saturating_sub(1).saturating_sub(p.base_tokens) / block) as u64;
    let blocks = if usable { p.blocks.min(room) } else { 0 };
    let start = p.base_tokens + blocks as u32 * block;
    let blocks = if blocks > 0 && start > entry.start_tokens { blocks } else { 0 };
    if blocks > 0 {
        entry.shared_tokens = p.base_tokens;
        entry.start_tokens = start;
    }
    kv.trim_parked(id, blocks);
    blocks
}

/// Where an admitted request starts and what it reserves.
struct Entry {
    /// Tokens its prefill covers: the prompt (and, for a recompute after preemption, the tokens so far).
    prefill_target: u32,
    /// KV tokens it holds on entry: its prompt's (it crossed the link to this decode worker), a cached
    /// shared prefix's, or none.
    start_tokens: u32,
    shared_tokens: u32,
    /// Tokens it generates here (a prefill worker's part ends with the first token).
    target: u32,
    reserve_tokens: u64,
}

impl Entry {
    #[inline(always)]
    fn of(rec: &RequestRecord, role: Role) -> Entry {
        let (prefill_target, start_tokens) =
            if rec.kv_ready { (rec.prompt_tokens, rec.prompt_tokens) } else { (rec.prompt_tokens + rec.generated, 0) };
        let (target, reserve_tokens) = match role {
            Role::Prefill => (1, rec.prompt_tokens as u64 + 1),
            _ => (rec.output_tokens, rec.prompt_tokens as u64 + (rec.pred_reserve_tokens.max(rec.generated)) as u64),
        };
        Entry { prefill_target, start_tokens, shared_tokens: 0, target, reserve_tokens }
    }

    /// Tokens its first step takes under `budget`; None when a prompt that cannot be chunked does not fit.
    #[inline(always)]
    fn first_want(&self, en: &Engine, budget: u32) -> Option<u32> {
        let left = self.prefill_target - self.start_tokens;
        if left == 0 {
            Some(1) // a decode token
        } else if en.chunked_prefill {
            Some(left.min(en.prefill_chunk_tokens).min(budget))
        } else {
            (left <= budget).then_some(left)
        }
    }

    #[inline(always)]
    fn running(&self, id: u32, rec: &RequestRecord, reserve_blocks: u32) -> Running {
        Running {
            id,
            prefill_target: self.prefill_target,
            prefilled: self.start_tokens,
            generated: rec.generated,
            target: self.target,
            kv_tokens: self.start_tokens,
            blocks: 0,
            reserve_blocks,
            step_tokens: 0,
            last_token_ns: rec.last_token_ns,
            shared_tokens: self.shared_tokens,
        }
    }
}
