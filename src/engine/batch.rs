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
//! (no lazy step end: a decoder does not take a token every step).

use super::{Running, Simulation};
use crate::cost::StepWork;
use crate::kv::{blocks_for, EntryId, ReuseCache};
use crate::metrics::{Limiter, Outcome, RequestRecord};
use crate::workload::{Chains, Prefix, NO_PREFIX, NO_SESSION};
use crate::scenario::{BatchFormationSpec, Engine, Role};
use crate::sched::victim;

/// A step being formed: the running requests before `from` are planned, `work` sums them, `budget` is left.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub work: StepWork,
    pub budget: u32,
    pub from: usize,
}

impl Plan {
    pub fn new(en: &Engine) -> Self {
        Plan { work: StepWork::default(), budget: en.max_num_batched_tokens, from: 0 }
    }
}

/// Tokens a running request takes in the next step under `budget`, and the blocks it must add for them.
#[inline(always)]
pub(crate) fn want_need(s: &Running, budget: u32, en: &Engine) -> (u32, u64) {
    let left = s.prefill_target - s.prefilled;
    let want = if left > 0 {
        if en.chunked_prefill { left.min(en.prefill_chunk_tokens).min(budget) } else if left <= budget { left } else { 0 }
    } else {
        u32::from(budget >= 1)
    };
    // Multiply rather than divide: most decode tokens fit in the last block.
    // Blocks are the request's own: a shared prefix's tokens sit in the cache's blocks.
    let tokens_after = (s.kv_tokens - s.shared_tokens) as u64 + want as u64;
    let block = en.block_size_tokens as u64;
    let need = if tokens_after <= s.blocks as u64 * block { 0 } else { blocks_for(tokens_after, en.block_size_tokens) - s.blocks as u64 };
    (want, need)
}

/// Record that `s` takes `want` tokens in the step (its `need` new blocks already allocated) and add it to
/// the step's work.
#[inline(always)]
pub(crate) fn take(s: &mut Running, want: u32, need: u64, budget: &mut u32, work: &mut StepWork) {
    s.blocks += need as u32;
    s.step_tokens = want;
    *budget -= want;
    if s.prefilled < s.prefill_target {
        work.prefill_seqs += 1;
        work.prefill_tokens += want;
        work.prefill_attention_pairs += want as u64 * s.prefilled as u64 + (want as u64 * (want as u64 + 1)) / 2;
        work.prefill_context_tokens += s.prefilled as u64;
    } else {
        work.decode_seqs += 1;
        work.decode_context_tokens += s.kv_tokens as u64;
    }
}

/// The leading prompt tokens of `rec` whose KV this worker's cache holds: its prefix group's (when the group
/// is cached), or the longest cached leading run of its trace's block hashes — leaving at least one prompt
/// token to compute, as vLLM does, so the step produces the first token. 0: none.
#[inline]
pub(crate) fn cached_shared(cache: &ReuseCache, chains: Option<&Chains>, prefix: Option<&Prefix>, rec: &RequestRecord, block_tokens: u32) -> u32 {
    if rec.session != NO_SESSION {
        // A session's shared prefix, when it has one, then its retained history after it (whole blocks), less
        // at least one prompt token to compute. Without its prefix the history is of no use (its KV follows
        // the prefix's, as a block's hash chains on its parent's).
        let p = session_prefix_tokens(cached_prefix_tokens(prefix), rec);
        if p > 0 && !cache.is_cached(EntryId::prefix(rec.prefix_group)) {
            return 0;
        }
        let held = cache.blocks_of(EntryId::session(rec.session)) * block_tokens as u64;
        let most = ((rec.prompt_tokens - 1) / block_tokens * block_tokens) as u64;
        return (p as u64 + held).min(most) as u32;
    }
    if let Some(c) = chains {
        let most = ((rec.prompt_tokens - 1) / c.block_tokens) as usize;
        let k = c.full_blocks(rec.id, rec.prompt_tokens).iter().take(most).take_while(|&&h| cache.is_cached(EntryId::block(h))).count();
        return k as u32 * c.block_tokens;
    }
    match prefix {
        Some(p) if p.caching && rec.prefix_group != NO_PREFIX && cache.is_cached(EntryId::prefix(rec.prefix_group)) => p.shared_tokens,
        _ => 0,
    }
}

/// The tokens of a shared prefix a worker caches (0: none, or prefix caching off).
#[inline]
pub(crate) fn cached_prefix_tokens(prefix: Option<&Prefix>) -> u32 {
    prefix.filter(|p| p.caching).map_or(0, |p| p.shared_tokens)
}

/// The shared prefix a session turn starts with and shares, on a worker caching prefixes of `prefix_tokens`
/// (its tokens; 0: none).
#[inline]
fn session_prefix_tokens(prefix_tokens: u32, rec: &RequestRecord) -> u32 {
    if rec.prefix_group != NO_PREFIX { prefix_tokens } else { 0 }
}

/// Pin the entries holding `rec`'s first `shared_tokens` tokens (nothing when 0).
#[inline]
pub(crate) fn pin_shared(cache: &mut ReuseCache, chains: Option<&Chains>, prefix_tokens: u32, rec: &RequestRecord, shared_tokens: u32) {
    for_each_shared(chains, prefix_tokens, rec, shared_tokens, |id| cache.pin(id));
}

/// Unpin what a request sharing its first `shared_tokens` tokens pinned (nothing when 0).
#[inline]
pub(crate) fn unpin_shared(cache: &mut ReuseCache, chains: Option<&Chains>, prefix_tokens: u32, rec: &RequestRecord, shared_tokens: u32) {
    for_each_shared(chains, prefix_tokens, rec, shared_tokens, |id| cache.unpin(id));
}

/// The cache entries holding `rec`'s first `shared_tokens` tokens: a session turn's shared prefix and its
/// session's retained history after it, the trace blocks of that run, or its prefix group's entry (none when
/// 0).
#[inline]
fn for_each_shared(chains: Option<&Chains>, prefix_tokens: u32, rec: &RequestRecord, shared_tokens: u32, mut f: impl FnMut(EntryId)) {
    if shared_tokens == 0 {
        return;
    }
    match chains {
        _ if rec.session != NO_SESSION => {
            let p = session_prefix_tokens(prefix_tokens, rec);
            if p > 0 {
                f(EntryId::prefix(rec.prefix_group));
            }
            if shared_tokens > p {
                f(EntryId::session(rec.session));
            }
        }
        Some(c) => {
            for &h in &c.full_blocks(rec.id, rec.prompt_tokens)[..(shared_tokens / c.block_tokens) as usize] {
                f(EntryId::block(h));
            }
        }
        None => f(EntryId::prefix(rec.prefix_group)),
    }
}

impl Simulation<'_> {
    /// Finish forming the next step of replica `r` from `plan` (the requests before `plan.from` are planned);
    /// allocates KV. Returns the step's work and what stopped admission.
    pub(super) fn form_batch(&mut self, r: usize, plan: Plan) -> (StepWork, Limiter) {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        match en.formation {
            BatchFormationSpec::Vllm => {}
            BatchFormationSpec::Sglang => return self.form_prefill_first(r, false),
            BatchFormationSpec::SglangMixed => return self.form_prefill_first(r, true),
        }
        let Plan { mut work, mut budget, from: mut i } = plan;
        let mut preempted = false;
        loop {
            // Hot path: one tight pass over the batch. It stops at the first request whose blocks cannot be
            // allocated; the slow path below preempts, then the pass resumes.
            let rep = &mut self.replicas[r];
            let kv = &mut rep.kv;
            let running = rep.batch.unplanned(i);
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
                let v = self.victim(r, i);
                self.preempt(r, v);
                preempted = true;
                if v == i {
                    break; // index i now holds the next request
                }
                if self.replicas[r].kv.available() >= need {
                    break; // the pass resumes at i and allocates
                }
            }
        }
        if preempted {
            return (work, Limiter::Preemption);
        }
        let limiter = self.admit(r, &mut budget, &mut work);
        (work, limiter)
    }

    /// The preemption victim among the running requests of replica `r` from position `from` on.
    fn victim(&self, r: usize, from: usize) -> usize {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        let running = self.replicas[r].batch.requests();
        let priority = |j: usize| self.sc.workload.classes[self.requests[running[j].id as usize].class as usize].priority;
        victim::pick(en.victim, from, running.len(), |j| running[j].prefilled + running[j].generated, priority)
    }

    /// SGLang's formation. Prefill first: the chunked prompts' next chunks (a chunk whose blocks are not free
    /// waits, as SGLang's memory check makes it), then waiting prompts; if that gives the step any prefill,
    /// the step is that alone. Otherwise every running request decodes, victims preempted as blocks run out.
    /// `mixed`: the decodes come first and prompts take the budget they leave, in the same step. If nothing
    /// at all could be planned, every running request is planned as vLLM would, preempting, so a batch of
    /// stuck chunks still makes progress.
    fn form_prefill_first(&mut self, r: usize, mixed: bool) -> (StepWork, Limiter) {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        let full_budget = en.max_num_batched_tokens;
        let mut work = StepWork::default();
        let mut preempted = mixed && self.plan_running(r, &mut work, u32::MAX, true);
        let mut budget = full_budget.saturating_sub(work.decode_seqs);
        self.plan_chunks(r, &mut budget, &mut work);
        let mut limiter = if preempted { Limiter::Preemption } else { self.admit(r, &mut budget, &mut work) };
        if !mixed && work.prefill_seqs == 0 {
            preempted = self.plan_running(r, &mut work, u32::MAX, true);
        }
        if work.seqs() == 0 && !self.replicas[r].batch.is_empty() {
            preempted |= self.plan_running(r, &mut work, full_budget, false);
        }
        if preempted {
            limiter = Limiter::Preemption;
        }
        (work, limiter)
    }

    /// The running prompts' next chunks under `budget`, in batch order; a chunk whose blocks are not free
    /// is left for a later step.
    fn plan_chunks(&mut self, r: usize, budget: &mut u32, work: &mut StepWork) {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        let rep = &mut self.replicas[r];
        for s in rep.batch.unplanned(0).iter_mut() {
            if s.step_tokens > 0 || s.prefilled == s.prefill_target {
                continue;
            }
            let (want, need) = want_need(s, *budget, en);
            if want > 0 && (need == 0 || rep.kv.try_alloc(need)) {
                take(s, want, need, budget, work);
            }
        }
    }

    /// Plan the running requests not yet in the step (only the decoders, with `only_decodes`) in batch order
    /// under `budget`, preempting victims when blocks run out. True if it preempted.
    fn plan_running(&mut self, r: usize, work: &mut StepWork, mut budget: u32, only_decodes: bool) -> bool {
        let en = &self.sc.pools[self.replicas[r].pool].engine;
        let mut preempted = false;
        let mut i = 0;
        while i < self.replicas[r].batch.len() {
            let rep = &mut self.replicas[r];
            let s = &mut rep.batch.unplanned(0)[i];
            if s.step_tokens > 0 || (only_decodes && s.prefilled < s.prefill_target) {
                i += 1;
                continue;
            }
            let (want, need) = want_need(s, budget, en);
            if want > 0 && need > 0 && !rep.kv.try_alloc(need) {
                // Free blocks by preempting; then i holds the same request (retried) or, if it was the victim,
                // the next one.
                let v = self.victim(r, i);
                self.preempt(r, v);
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

    /// What stops admission to replica `r` (with `budget` tokens left in the step) before it looks at a
    /// request: a full batch, no budget, nothing waiting. None: the queue's head may be admitted.
    #[inline(always)]
    pub(super) fn admission_closed(&self, r: usize, budget: u32) -> Option<Limiter> {
        let rep = &self.replicas[r];
        if rep.batch.len() >= self.sc.pools[rep.pool].engine.max_num_seqs as usize {
            return Some(Limiter::MaxSeqs);
        }
        if budget == 0 {
            return Some(Limiter::TokenBudget);
        }
        let waiting = self.central.as_ref().map_or(rep.queue.len(), |q| q.len());
        (waiting == 0).then_some(Limiter::QueueEmpty)
    }

    /// Step 2: admit waiting requests while everything allows. Inlined into vLLM's formation, its hot caller.
    #[inline(always)]
    fn admit(&mut self, r: usize, budget: &mut u32, work: &mut StepWork) -> Limiter {
        let pool = &self.sc.pools[self.replicas[r].pool];
        let en = &pool.engine;
        let block = en.block_size_tokens;
        loop {
            if let Some(limiter) = self.admission_closed(r, *budget) {
                return limiter;
            }
            let rep = &mut self.replicas[r];
            let queue = match &mut self.central {
                Some(q) => q,
                None => &mut rep.queue,
            };
            let head = queue.peek().expect("admission is open only with a request waiting");
            let rec = &self.requests[head.id as usize];
            // Where the request starts: holding its prompt's KV (it crossed the link to this decode worker),
            // or from nothing (a new prompt, or a recompute after preemption: prompt + tokens so far).
            let (prefill_target, mut start_tokens) = if rec.kv_ready { (rec.prompt_tokens, rec.prompt_tokens) } else { (rec.prompt_tokens + rec.generated, 0) };
            // A cached shared prefix: its KV is there already, prefill starts after it.
            let group = rec.prefix_group;
            let chains = self.sc.workload.chains.as_ref();
            let shared_tokens = if start_tokens == 0 && self.shares_prefixes { cached_shared(&rep.kv.cache, chains, self.sc.prefix.as_ref(), rec, block) } else { 0 };
            start_tokens += shared_tokens;
            // A prefill worker's part ends with the first token.
            let (target, reserve_tokens) = match pool.role {
                Role::Prefill => (1, rec.prompt_tokens as u64 + 1),
                _ => (rec.output_tokens, rec.prompt_tokens as u64 + (rec.pred_reserve_tokens.max(rec.generated)) as u64),
            };
            let reserve = blocks_for(reserve_tokens, block);
            let alone = rep.batch.is_empty();
            if !alone && rep.reserved_blocks + reserve > en.kv_reserve_limit_blocks {
                return Limiter::KvReservation;
            }
            let left = prefill_target - start_tokens;
            let want = if left == 0 {
                1 // a decode token
            } else if en.chunked_prefill {
                left.min(en.prefill_chunk_tokens).min(*budget)
            } else if left <= *budget {
                left
            } else {
                return Limiter::TokenBudget;
            };
            let need = blocks_for((start_tokens - shared_tokens) as u64 + want as u64, block);
            // Pin the cached prefix first, so the allocation cannot evict the very entries it will share.
            if shared_tokens > 0 {
                pin_shared(&mut rep.kv.cache, chains, cached_prefix_tokens(self.sc.prefix.as_ref()), rec, shared_tokens);
            }
            if !rep.kv.try_alloc(need) {
                if shared_tokens > 0 {
                    unpin_shared(&mut rep.kv.cache, chains, cached_prefix_tokens(self.sc.prefix.as_ref()), rec, shared_tokens);
                }
                return Limiter::KvFree;
            }
            queue.pop();
            self.rec.on_dequeued();
            let rec = &mut self.requests[head.id as usize];
            if rec.first_scheduled_ns == u64::MAX {
                rec.first_scheduled_ns = self.now;
                // Cache statistics count a request once, at its first admission.
                let session_prefix = if rec.session != NO_SESSION { session_prefix_tokens(cached_prefix_tokens(self.sc.prefix.as_ref()), rec).min(shared_tokens) } else { shared_tokens };
                if rec.session != NO_SESSION {
                    super::sessions::note_turn_admitted(&mut self.sessions[rec.session as usize], &mut self.rec, rec, r, shared_tokens, session_prefix);
                }
                let looks_up = match chains {
                    Some(c) => !c.full_blocks(head.id, rec.prompt_tokens).is_empty(),
                    None => group != NO_PREFIX && self.sc.prefix.as_ref().is_some_and(|p| p.caching),
                };
                if looks_up && pool.role != Role::Decode {
                    self.rec.on_prefix_lookup(session_prefix);
                }
            }
            if self.central.is_some() {
                // Taken from the central queue: from now on it belongs to this replica (until preempted).
                rec.replica = r as u16;
                rep.outstanding += 1;
            }
            rep.reserved_blocks += reserve;
            let mut s = Running {
                id: head.id,
                prefill_target,
                prefilled: start_tokens,
                generated: rec.generated,
                target,
                kv_tokens: start_tokens,
                blocks: 0,
                reserve_blocks: reserve as u32,
                step_tokens: 0,
                last_token_ns: rec.last_token_ns,
                shared_tokens,
            };
            take(&mut s, want, need, budget, work);
            rep.batch.push(s);
        }
    }

    /// Recompute preemption of running[v]: free its KV; it queues again (after backoff) or fails past the cap.
    fn preempt(&mut self, r: usize, v: usize) {
        let rep = &mut self.replicas[r];
        let s = rep.batch.remove(v);
        rep.kv.release(s.blocks as u64);
        if s.shared_tokens > 0 {
            unpin_shared(&mut rep.kv.cache, self.sc.workload.chains.as_ref(), cached_prefix_tokens(self.sc.prefix.as_ref()), &self.requests[s.id as usize], s.shared_tokens);
        }
        rep.reserved_blocks -= s.reserve_blocks as u64;
        let rec = &mut self.requests[s.id as usize];
        rec.preemptions = rec.preemptions.saturating_add(1);
        rec.generated = s.generated;
        rec.last_token_ns = s.last_token_ns;
        // Its KV is gone: readmitted, it recomputes (on whichever worker it is queued at).
        rec.kv_ready = false;
        let failed = rec.preemptions as u32 > self.sc.pools[rep.pool].engine.max_preemptions;
        self.rec.on_preempted(failed);
        // Per-replica queues keep a preempted request on its replica; the central queue takes it back.
        if failed || self.central.is_some() {
            rep.outstanding -= 1;
            self.loads[rep.pool].outstanding.set(rep.local, rep.outstanding);
        }
        if failed {
            rec.outcome = Outcome::Failed;
            rec.done_ns = self.now;
            if self.generator.answers_completions() {
                self.completed.push(s.id); // a closed-loop client goes on after a failure too
            }
        } else {
            self.requeue.push(s.id);
        }
    }
}
