//! A request holding a batch slot, and how it takes its part of a step: the types batch formation, the step
//! end and the sessions' KV share (a leaf of the engine: it imports none of the engine's files).

use crate::cost::StepWork;
use crate::kv::blocks_for;
use crate::scenario::Engine;

/// A request holding a batch slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Running {
    pub id: u32,
    /// Tokens to prefill: the prompt, plus tokens generated before a recompute preemption.
    pub prefill_target: u32,
    pub prefilled: u32,
    /// Output tokens emitted so far (kept across preemptions).
    pub generated: u32,
    pub target: u32,
    /// Tokens whose KV is held.
    pub kv_tokens: u32,
    pub blocks: u32,
    pub reserve_blocks: u32,
    /// Tokens scheduled in the current step (0: not in this step).
    pub step_tokens: u32,
    pub last_token_ns: u64,
    /// Leading tokens whose KV is a cached shared prefix (in the cache's blocks, not in `blocks`). Which
    /// prefix, and the request's priority, are in its record: the rare paths that need them look them up,
    /// so that a `Running` stays at 48 bytes — the step end's order-preserving compaction copies them.
    pub shared_tokens: u32,
}

impl Running {
    /// Steady: just planned one decode token, one step after its last (`now`), with more to come after it.
    /// Such a request can be left lazy until its last token: every step end until then is the same for it.
    #[inline(always)]
    pub(super) fn is_steady(&self, now: u64) -> bool {
        self.step_tokens == 1
            && self.prefilled == self.prefill_target
            && self.generated + 1 < self.target
            && self.last_token_ns == now
    }

    /// The most blocks a request may take at one step end: one for a decoder, the chunk's blocks (and one
    /// for its partial first and last block) for a prefill.
    #[inline(always)]
    pub(super) fn blocks_bound(&self, block: u64) -> u64 {
        let left = (self.prefill_target - self.prefilled) as u64;
        if left > 0 { left / block + 2 } else { 1 }
    }

    /// The step end at which this lazy request (lazy until step end `exit`) became lazy: its counters are as
    /// they were then, and it leaves at its last token, `target − generated` step ends later.
    #[inline(always)]
    pub(super) fn lazy_since(&self, exit: u64) -> u64 {
        exit - (self.target - self.generated) as u64
    }

    /// Bring this lazy request (lazy until step end `exit`) to where the step ends before step end `k` left
    /// it: a token emitted at each, the last at `prev_end_ns`, and the blocks for the token planned then.
    #[inline(always)]
    pub(super) fn wake(&mut self, exit: u64, k: u64, prev_end_ns: u64, block_tokens: u32) {
        let d = (k - 1 - self.lazy_since(exit)) as u32;
        self.kv_tokens += d;
        self.generated += d;
        self.last_token_ns = prev_end_ns;
        self.blocks =
            self.blocks.max(blocks_for((self.kv_tokens - self.shared_tokens) as u64 + 1, block_tokens) as u32);
    }

    /// The step ends at which this lazy request needs a new block are those ≡ this (mod the block size):
    /// after `d` steps its KV holds `kv + d` tokens, and the next token starts a block when `kv + d − shared`
    /// is a multiple of the block size.
    #[inline(always)]
    pub(super) fn lazy_phase(&self, exit: u64, block: u64) -> usize {
        let since = self.lazy_since(exit);
        ((since % block + self.shared_tokens as u64 % block + block - self.kv_tokens as u64 % block) % block) as usize
    }
}

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
        if en.chunked_prefill {
            left.min(en.prefill_chunk_tokens).min(budget)
        } else if left <= budget {
            left
        } else {
            0
        }
    } else {
        u32::from(budget >= 1)
    };
    // Multiply rather than divide: most decode tokens fit in the last block.
    // Blocks are the request's own: a shared prefix's tokens sit in the cache's blocks.
    let tokens_after = (s.kv_tokens - s.shared_tokens) as u64 + want as u64;
    let block = en.block_size_tokens as u64;
    let need = if tokens_after <= s.blocks as u64 * block {
        0
    } else {
        blocks_for(tokens_after, en.block_size_tokens) - s.blocks as u64
    };
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
