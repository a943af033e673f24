//! A replica's running batch, and what happens to it when a step ends.
//!
//! At a step end every running request emits the token its step computed (or finishes a prefill chunk),
//! completed ones leave, and — in the same pass — the survivors plan their part of the next step. Most
//! requests at most step ends are *steady* decoders ([`Running::is_steady`]): they emit a token exactly one
//! step after the last and plan one more decode token. Touching each of them every step made the step end
//! O(batch). A steady decoder is instead left **lazy**: its counters (`kv_tokens`, `generated`,
//! `last_token_ns`, `blocks`) stay as they were when it became lazy, [`Lazy`]'s sums move by the count each
//! step, `exit_step` holds the step end at which its next token is its last, and `phase` counts it at the step
//! ends where its next token starts a block (those blocks are taken in one allocation). At its exit — or when
//! the budget runs out mid-pass, an allocation fails, or the free blocks might not cover the step, all of
//! which make order matter — it is brought up to date ([`Running::wake`]) and takes the general path
//! ([`RarePass::entry`]). The plan is the one touching every request would make: lazy requests each take one
//! token of budget, counted in batch order, and the others are still handled one by one in batch order
//! (`engine::run_eager` is the reference, and a property test compares the two byte for byte).
//!
//! When every running request is lazy and none leaves at a step end — nine step ends in ten of a decoding
//! batch — the pass would only count them: [`Batch::coast`] gives its result without it, and the engine then
//! skips formation too unless it may admit.
//!
//! Invariant: a batch has lazy requests only while its step is in flight, and they are all in it.

use super::running::{Running, take, want_need};
use crate::cost::StepWork;
use crate::kv::{BlockPool, EntryId, blocks_for};
use crate::metrics::{Outcome, RequestRecord};
use crate::scenario::Engine;
use crate::tiering::Tier;
use crate::workload::{Chains, NO_PREFIX};

/// The lazy requests of a batch, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Lazy {
    n: u64,
    /// Σ `kv_tokens` and Σ `blocks` of the lazy requests, up to date.
    kv_tokens: u64,
    blocks: u64,
}

impl Lazy {
    fn add(&mut self, s: &Running) {
        self.n += 1;
        self.kv_tokens += s.kv_tokens as u64;
        self.blocks += s.blocks as u64;
    }
    fn remove(&mut self, s: &Running) {
        self.n -= 1;
        self.kv_tokens -= s.kv_tokens as u64;
        self.blocks -= s.blocks as u64;
    }
}

/// The running requests of a replica, in admission order, with their lazy state.
pub(crate) struct Batch {
    running: Vec<Running>,
    /// Parallel to `running`: 0, or for a lazy request the step end at which it stops being one, when its
    /// next token is its last.
    exit_step: Vec<u64>,
    /// Step ends so far; numbers the step ends for `exit_step`. And the next one's number mod the block size,
    /// kept rather than divided for at every step end.
    steps: u64,
    next_in_block: usize,
    /// The earliest step end at which a lazy request stops being one, or 0 when not known yet: only a general
    /// step end changes which requests are lazy, and it clears this; [`Batch::coast`] finds it when it needs it.
    first_exit: u64,
    lazy: Lazy,
    /// Lazy requests by the step ends at which they need a new block: `phase[k mod block size]` of them
    /// take one at step end k (see [`Running::lazy_phase`]).
    phase: Vec<u32>,
    /// Scratch: the batch positions a step end takes through the general path.
    exceptions: Vec<u32>,
}

/// What a step end leaves for the next step and for the engine's books.
pub(crate) struct Ended {
    /// The next step so far: its work, the token budget left, and where `form_batch` resumes planning.
    pub work: StepWork,
    pub budget: u32,
    pub from: usize,
    /// Blocks the requests still running hold.
    pub held_blocks: u64,
}

impl Batch {
    pub fn new(max_num_seqs: u32, block_tokens: u32) -> Self {
        let cap = max_num_seqs.min(4096) as usize;
        Batch {
            running: Vec::with_capacity(cap),
            exit_step: Vec::with_capacity(cap),
            steps: 0,
            next_in_block: 1 % block_tokens.max(1) as usize,
            first_exit: 0,
            lazy: Lazy::default(),
            phase: vec![0; block_tokens as usize],
            exceptions: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.running.len()
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    pub fn requests(&self) -> &[Running] {
        &self.running
    }

    /// The requests for batch formation to plan, from position `from` on: none of those is lazy.
    pub fn unplanned(&mut self, from: usize) -> &mut [Running] {
        debug_assert!(
            self.exit_step[from.min(self.running.len())..].iter().all(|&e| e == 0),
            "lazy requests left to plan"
        );
        &mut self.running
    }

    pub fn lazy_count(&self) -> u64 {
        self.lazy.n
    }

    pub fn push(&mut self, s: Running) {
        self.running.push(s);
        self.exit_step.push(0);
    }

    /// Take out the request at position `v` (a preemption victim: never lazy).
    pub fn remove(&mut self, v: usize) -> Running {
        debug_assert_eq!(self.exit_step[v], 0, "a lazy request is never a victim");
        self.exit_step.remove(v);
        self.running.remove(v)
    }

    /// End the step for every request and plan the survivors' part of the next, from `budget` tokens.
    /// Lazy requests are skipped over in runs; the others — the exceptions — go through `pass.entry` in batch
    /// order, the batch compacting over requests that left. `lazy_steps` false: none is left lazy.
    #[inline]
    pub fn end_step(&mut self, pass: &mut RarePass<'_>, en: &Engine, budget: u32, lazy_steps: bool) -> Ended {
        let (k, at) = (self.steps + 1, self.next_in_block);
        self.count_step_end(en);
        let block = en.block_size_tokens as u64;
        let prev_end_ns = pass.now - pass.step_ns;
        self.find_exceptions(k);
        // Lazy requests crossing into a block take theirs in one allocation after the pass, which is the plan's
        // result in any order as long as every allocation of the step succeeds without evicting: if free blocks
        // might not cover them all, every lazy request is brought up to date and the whole batch takes the
        // general path, in order. (Evictions could interleave with what the exceptions free, pin or leave idle.)
        let bulk = self.lazy.n > 0 && self.blocks_bound(at, block) <= pass.kv.free();
        let evictions_before = pass.kv.cache.evictions;
        if self.lazy.n > 0 && !bulk {
            self.wake_all(k, prev_end_ns, en.block_size_tokens);
        }
        let swept = self.sweep(pass, en, budget, (k, at), lazy_steps);
        debug_assert!(
            !bulk || (pass.stuck_at.is_none() && pass.kv.cache.evictions == evictions_before),
            "the bound on the exceptions' blocks failed"
        );
        let crossing = self.phase[at] as u64 - swept.fresh_crossing_now;
        self.first_exit = 0;
        self.settle_lazy(pass, swept, crossing)
    }

    /// The step end when every running request is lazy and none stops being lazy at it — most step ends of a
    /// batch that is decoding. The general pass from `budget` tokens would only count them (no exception, a
    /// run the budget covers, crossings the free blocks cover); this gives what it leaves and its tally
    /// without the pass. None, with nothing changed, when the general pass must run.
    #[inline(always)]
    pub fn coast(&mut self, kv: &mut BlockPool, en: &Engine, budget: u32) -> Option<(Ended, Tally)> {
        let (n, k, at) = (self.running.len() as u64, self.steps + 1, self.next_in_block);
        if n == 0 || self.lazy.n != n {
            return None;
        }
        if self.first_exit == 0 {
            self.first_exit = self.exit_step.iter().copied().min().unwrap_or(0); // all lazy: none is 0
        }
        let crossing = self.phase[at] as u64;
        // The crossings are the step end's only allocations, in batch order with nothing freed between them:
        // one call evicts as they would, so what cached entries and kept blocks could yield counts too.
        if k >= self.first_exit || n > budget as u64 || crossing > kv.available() {
            return None;
        }
        self.count_step_end(en);
        // Unconditionally (0 takes nothing): whether a step end crosses is data, and a branch on it mispredicts.
        let ok = kv.try_alloc(crossing);
        debug_assert!(ok, "the crossings were checked to fit");
        let lazy = &mut self.lazy;
        lazy.blocks += crossing;
        lazy.kv_tokens += n;
        let work = StepWork { decode_seqs: n as u32, decode_context_tokens: lazy.kv_tokens, ..StepWork::default() };
        let ended = Ended { work, budget: budget - n as u32, from: n as usize, held_blocks: lazy.blocks };
        Some((ended, Tally { bulk_itl: n as u32, emitted_n: n, allocated: crossing, ..Tally::default() }))
    }

    /// The positions of the requests that are not lazy, or whose laziness ends at step end `k`. Eight at a
    /// time, without a branch per request: most steps have a handful of exceptions in a batch of dozens, and
    /// in wasm each loop iteration also pays V8's interrupt check.
    #[inline(always)]
    fn find_exceptions(&mut self, k: u64) {
        let exc = &mut self.exceptions;
        exc.clear();
        let mut chunks = self.exit_step.chunks_exact(8);
        let mut base = 0;
        for c in chunks.by_ref() {
            let any = (c[0] <= k)
                | (c[1] <= k)
                | (c[2] <= k)
                | (c[3] <= k)
                | (c[4] <= k)
                | (c[5] <= k)
                | (c[6] <= k)
                | (c[7] <= k);
            if any {
                for (i, &e) in c.iter().enumerate() {
                    if e <= k {
                        exc.push((base + i) as u32);
                    }
                }
            }
            base += 8;
        }
        for (i, &e) in chunks.remainder().iter().enumerate() {
            if e <= k {
                exc.push((base + i) as u32);
            }
        }
    }

    /// Count a step end: the next one's number, and that mod the block size.
    #[inline(always)]
    fn count_step_end(&mut self, en: &Engine) {
        self.steps += 1;
        self.next_in_block += 1;
        if self.next_in_block == en.block_size_tokens as usize {
            self.next_in_block = 0;
        }
    }

    /// A bound on the blocks the step end at `at` (mod the block size) may take: the lazy requests crossing
    /// into a block, and the exceptions' most each.
    fn blocks_bound(&self, at: usize, block: u64) -> u64 {
        let crossing = self.phase[at] as u64;
        crossing + self.exceptions.iter().map(|&j| self.running[j as usize].blocks_bound(block)).sum::<u64>()
    }

    /// Bring every lazy request up to date; all of them become exceptions.
    #[cold]
    fn wake_all(&mut self, k: u64, prev_end_ns: u64, block_tokens: u32) {
        for (s, e) in self.running.iter_mut().zip(self.exit_step.iter_mut()) {
            if *e != 0 {
                s.wake(*e, k, prev_end_ns, block_tokens);
                *e = 0;
            }
        }
        self.phase.fill(0);
        self.lazy = Lazy::default();
        self.exceptions.clear();
        self.exceptions.extend(0..self.running.len() as u32);
    }

    /// The pass over the batch at step end `k`: runs of lazy requests counted (each a decode token of
    /// budget), the exceptions ended and planned one by one, the batch compacted as it goes. Once the plan
    /// stops (the budget ran out, or an allocation failed) every later request only ends its step, so from
    /// there on lazy requests take the general path too.
    #[inline(always)]
    fn sweep(
        &mut self,
        pass: &mut RarePass<'_>,
        en: &Engine,
        mut budget: u32,
        (k, in_block): (u64, usize),
        lazy_steps: bool,
    ) -> Swept {
        let block = en.block_size_tokens as u64;
        let prev_end_ns = pass.now - pass.step_ns;
        let Batch { running, exit_step: exit, phase, lazy, exceptions: exc, .. } = self;
        let mut fresh = Lazy::default();
        let n = running.len();
        let (mut j, mut kept, mut n_fast, mut next) = (0, 0, 0u64, 0);
        let (mut fresh_crossing_now, mut held_blocks) = (0u64, 0u64);
        let mut planning = true;
        while j < n {
            if planning {
                let start = j;
                j = exc.get(next).map_or(n, |&x| x as usize);
                let mut run = (j - start) as u32;
                if run > budget {
                    // The budget runs out inside the run: the rest cannot plan their token.
                    run = budget;
                    j = start + run as usize;
                    planning = false;
                }
                budget -= run;
                n_fast += run as u64;
                if kept != start {
                    running.copy_within(start..j, kept);
                    exit.copy_within(start..j, kept);
                }
                kept += run as usize;
                if j == n {
                    break;
                }
            }
            if exc.get(next) == Some(&(j as u32)) {
                next += 1;
            }
            let s = &mut running[j];
            if exit[j] != 0 {
                debug_assert!(exit[j] >= k, "a lazy request missed its exit");
                phase[s.lazy_phase(exit[j], block)] -= 1;
                s.wake(exit[j], k, prev_end_ns, en.block_size_tokens);
                lazy.remove(s);
            }
            let at = j;
            j += 1;
            match pass.entry(s, kept, en, budget) {
                Some(left) => budget = left,
                None => continue, // completed, or left for the link
            }
            planning &= pass.stuck_at.is_none();
            held_blocks += s.blocks as u64;
            exit[kept] = if planning && lazy_steps && s.is_steady(pass.now) {
                debug_assert_eq!(
                    s.blocks as u64,
                    blocks_for((s.kv_tokens - s.shared_tokens) as u64 + 1, en.block_size_tokens)
                );
                fresh.add(s);
                let e = k + (s.target - s.generated) as u64;
                let p = s.lazy_phase(e, block);
                phase[p] += 1;
                // Its block for this step's token was planned just now, not by the lazy crossing.
                fresh_crossing_now += u64::from(p == in_block);
                e
            } else {
                0
            };
            if kept != at {
                running[kept] = running[at];
            }
            kept += 1;
        }
        running.truncate(kept);
        exit.truncate(kept);
        debug_assert_eq!(lazy.n, n_fast);
        Swept { budget, kept, n_fast, fresh, fresh_crossing_now, held_blocks }
    }

    /// After the pass: each lazy request that stayed lazy emitted a token one step after its last and planned
    /// the next; those whose next token starts a block (`crossing` of them) take it now. The lazy sums take
    /// in the fresh ones.
    #[inline(always)]
    fn settle_lazy(&mut self, pass: &mut RarePass<'_>, swept: Swept, crossing: u64) -> Ended {
        let lazy = &mut self.lazy;
        debug_assert!(crossing <= pass.kv.free(), "lazy requests' blocks were checked to fit");
        if crossing > 0 {
            let ok = pass.kv.try_alloc(crossing);
            debug_assert!(ok);
            pass.tally.allocated += crossing;
            lazy.blocks += crossing;
        }
        let n_fast = swept.n_fast;
        lazy.kv_tokens += n_fast;
        let t = &mut pass.tally;
        t.bulk_itl += n_fast as u32;
        t.emitted_n += n_fast;
        t.work.decode_seqs += n_fast as u32;
        t.work.decode_context_tokens += lazy.kv_tokens;
        let held_blocks = swept.held_blocks + lazy.blocks;
        lazy.n += swept.fresh.n;
        lazy.kv_tokens += swept.fresh.kv_tokens;
        lazy.blocks += swept.fresh.blocks;
        Ended { work: t.work, budget: swept.budget, from: pass.stuck_at.unwrap_or(swept.kept), held_blocks }
    }
}

/// What the pass over the batch found.
struct Swept {
    budget: u32,
    /// Requests still running.
    kept: usize,
    /// Lazy requests that stayed lazy through the pass.
    n_fast: u64,
    /// Requests that became lazy in the pass.
    fresh: Lazy,
    /// Of those, the ones whose block for this step's token was planned in the pass.
    fresh_crossing_now: u64,
    held_blocks: u64,
}

/// What the requests' step ends added up to.
#[derive(Default)]
pub(crate) struct Tally {
    /// The work of the requests planned (with the lazy requests' decode tokens once the pass is over).
    pub work: StepWork,
    /// Tokens emitted exactly one step after the request's last, and tokens emitted in all.
    pub bulk_itl: u32,
    pub emitted_n: u64,
    pub finished: u32,
    /// Blocks released by completed requests, reservations given back, blocks taken for the next step.
    pub released: u64,
    pub unreserved: u64,
    pub allocated: u64,
}

/// A prompt a prefill worker handed to the link: (request, its blocks here, the shared prefix it holds here).
pub(crate) type Handoff = (u32, u64, Option<u16>);

/// What the simulation lends a step end's pass (the replica adds its own KV and step time): the clock, the
/// request table, the recorder's inter-token gaps, the pool's role and block size, the shared prefix's tokens
/// when this worker caches prefixes (0: it does not), a replayed trace's block hashes, the sessions' KV and
/// how a turn's end chooses its history's tier, and where completed requests' ids go.
pub(crate) struct Lent<'a> {
    pub now: u64,
    pub requests: &'a mut Vec<RequestRecord>,
    pub itl: &'a mut Vec<u64>,
    pub prefill_role: bool,
    pub block: u32,
    pub prefix: u32,
    pub chains: Option<&'a Chains>,
    pub retain_sessions: bool,
    pub sessions: &'a mut [super::sessions::SessionKv],
    pub turn_end: Option<super::sessions::TurnEnd<'a>>,
    pub completed: Option<&'a mut Vec<u32>>,
}

/// The rare cases of the step-end pass, kept out of the hot loop: first tokens, irregular inter-token gaps,
/// completions, prefill chunks, new blocks, and stopping the plan at the first allocation that fails.
pub(crate) struct RarePass<'a> {
    now: u64,
    step_ns: u64,
    requests: &'a mut Vec<RequestRecord>,
    itl: &'a mut Vec<u64>,
    kv: &'a mut BlockPool,
    /// A prefill worker: a request whose prompt is done leaves (to the link) instead of decoding here.
    prefill_role: bool,
    /// (request, blocks, shared prefix) of those that left.
    handoff: Vec<Handoff>,
    /// Tokens of a shared prefix when this worker caches prefixes (0: it does not).
    prefix: u32,
    /// A replayed trace's block hashes, when they go into this worker's cache (instead of prefix groups).
    chains: Option<&'a Chains>,
    /// Sessions' KV may outlive a turn; what each session's running turn's end does with it.
    retain_sessions: bool,
    sessions: &'a mut [super::sessions::SessionKv],
    /// How a session's turn end chooses its history's tier (None without sessions).
    turn_end: Option<super::sessions::TurnEnd<'a>>,
    block: u32,
    tally: Tally,
    /// The batch position at which an allocation failed: planning stops there.
    stuck_at: Option<usize>,
    /// Where completed requests' ids go, when the workload answers completions.
    completed: Option<&'a mut Vec<u32>>,
}

impl<'a> RarePass<'a> {
    /// A pass over a replica's step end (of `step_ns`), its KV `kv`, with what the simulation lends.
    #[inline(always)]
    pub fn new(lent: Lent<'a>, kv: &'a mut BlockPool, step_ns: u64) -> Self {
        let Lent {
            now,
            requests,
            itl,
            prefill_role,
            block,
            prefix,
            chains,
            retain_sessions,
            sessions,
            turn_end,
            completed,
        } = lent;
        RarePass {
            now,
            step_ns,
            requests,
            itl,
            kv,
            prefill_role,
            handoff: Vec::new(),
            prefix,
            chains,
            retain_sessions,
            sessions,
            turn_end,
            block,
            tally: Tally::default(),
            stuck_at: None,
            completed,
        }
    }

    /// What the pass added up to, and the prompts that left for the link.
    #[inline(always)]
    pub fn into_books(self) -> (Tally, Vec<Handoff>) {
        (self.tally, self.handoff)
    }
}

impl RarePass<'_> {
    /// End the step for `s` and plan its next one (the general case), from `budget` tokens left in the
    /// next step. The budget then left, or None when `s` left the batch.
    #[cold]
    #[inline(never)]
    fn entry(&mut self, s: &mut Running, kept: usize, en: &Engine, mut budget: u32) -> Option<u32> {
        if s.step_tokens > 0 && self.emit(s) && s.generated >= s.target {
            self.leave(s);
            return None;
        }
        if self.stuck_at.is_none() {
            let (want, need) = want_need(s, budget, en);
            if want > 0 {
                if need > 0 && !self.kv.try_alloc(need) {
                    self.stuck_at = Some(kept);
                } else {
                    self.tally.allocated += need;
                    take(s, want, need, &mut budget, &mut self.tally.work);
                }
            }
        }
        Some(budget)
    }

    /// The step's tokens for `s` are computed: true when that emitted a token (a decode token, or the
    /// prompt's last chunk, whose step also produces the first output token).
    fn emit(&mut self, s: &mut Running) -> bool {
        let now = self.now;
        let emitted = if s.prefilled < s.prefill_target {
            s.prefilled += s.step_tokens;
            s.kv_tokens += s.step_tokens;
            s.prefilled == s.prefill_target
        } else {
            s.kv_tokens += 1;
            true
        };
        s.step_tokens = 0;
        if !emitted {
            return false;
        }
        if s.generated == 0 {
            if let Some(c) = self.chains {
                self.share_blocks(s, c);
            } else if self.prefix > 0 && s.shared_tokens == 0 {
                let group = self.requests[s.id as usize].prefix_group;
                if group != NO_PREFIX {
                    self.share_prefix(s, group);
                }
            }
        }
        self.tally.emitted_n += 1;
        if s.generated == 0 {
            self.requests[s.id as usize].first_token_ns = now;
        } else if now - s.last_token_ns == self.step_ns {
            self.tally.bulk_itl += 1;
        } else {
            self.itl.push(crate::metrics::pack_itl(now - s.last_token_ns, 1));
        }
        s.generated += 1;
        s.last_token_ns = now;
        true
    }

    /// `s` emitted its last token here: it completes, or — on a prefill worker — leaves for the link.
    fn leave(&mut self, s: &Running) {
        let shared = (s.shared_tokens > 0).then(|| self.requests[s.id as usize].prefix_group);
        self.tally.unreserved += s.reserve_blocks as u64;
        if self.prefill_role && self.requests[s.id as usize].output_tokens > s.generated {
            self.handoff.push((s.id, s.blocks as u64, shared));
            return;
        }
        if s.shared_tokens > 0 {
            super::shared::unpin_shared(
                &mut self.kv.cache,
                self.chains,
                self.prefix,
                &self.requests[s.id as usize],
                s.shared_tokens,
            );
            self.kv.keep_prefix_budget();
        }
        let kept = if self.retain_sessions { self.retain(s) } else { 0 };
        self.tally.released += s.blocks as u64 - kept;
        let rec = &mut self.requests[s.id as usize];
        rec.generated = s.generated;
        rec.done_ns = self.now;
        rec.outcome = Outcome::Completed;
        self.tally.finished += 1;
        if let Some(c) = &mut self.completed {
            c.push(s.id);
        }
    }

    /// A session's turn `s` completed: what its retention decided. `Hbm`: its history's whole blocks stay on
    /// this worker as the session's cache entry (the blocks the entry lacks move from the turn to it, within
    /// the retention budget; a partial last block is freed). `Host`: the whole history moves to the host tier
    /// and HBM frees it. `Drop`: freed. The blocks kept, of the turn's own.
    #[cold]
    fn retain(&mut self, s: &Running) -> u64 {
        let session = self.requests[s.id as usize].session;
        if session == crate::workload::NO_SESSION {
            return 0;
        }
        let id = EntryId::session(session);
        let have = self.kv.cache.blocks_of(id);
        // The session's entry holds its history after its shared prefix (which the turn shares by now).
        let prefix = if self.requests[s.id as usize].prefix_group != crate::workload::NO_PREFIX {
            (self.prefix / self.block) as u64
        } else {
            0
        };
        let own = ((s.kv_tokens / self.block) as u64).saturating_sub(have + prefix).min(s.blocks as u64);
        let st = &mut self.sessions[session as usize];
        let tier = st.end_turn(self.now, self.turn_end.as_ref());
        match tier {
            Tier::Hbm if own > 0 || have > 0 => self.kv.retain(id, own),
            Tier::Host => {
                self.kv.move_to_host(id, own);
                0
            }
            _ => {
                self.kv.drop_idle(id);
                0
            }
        }
    }

    /// `s` just computed its prompt past the blocks it found cached: each whole hashed block it computed becomes
    /// a cache entry (or, if another request cached that block meanwhile, `s` drops its copy and shares that
    /// one), and it shares all its whole blocks from now on.
    #[cold]
    fn share_blocks(&mut self, s: &mut Running, c: &Chains) {
        let hashes = c.full_blocks(s.id, self.requests[s.id as usize].prompt_tokens);
        let per = (c.block_tokens / self.block) as u64;
        let from = (s.shared_tokens / c.block_tokens) as usize;
        for &h in &hashes[from..] {
            self.kv.share_or_adopt(EntryId::block(h), per);
        }
        s.blocks -= (per * (hashes.len() - from) as u64) as u32;
        s.shared_tokens = hashes.len() as u32 * c.block_tokens;
    }

    /// `s` just computed its whole prompt, shared prefix included, itself (it missed the cache). If another
    /// request cached the prefix meanwhile, `s` drops its own copy and shares that one; otherwise its first
    /// blocks become the cached copy. Either way it shares the prefix from now on.
    #[cold]
    fn share_prefix(&mut self, s: &mut Running, group: u16) {
        let blocks = (self.prefix / self.block) as u64;
        self.kv.share_or_adopt(EntryId::prefix(group), blocks);
        s.blocks -= blocks as u32;
        s.shared_tokens = self.prefix;
    }
}

const _: () = assert!(std::mem::size_of::<Running>() == 48, "a Running is copied whenever the batch compacts");
