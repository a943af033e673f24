//! SGLang's memory reservations and retraction, as pure rules the engine applies in its SGLang formations.
//!
//! - A running request reserves only `new_token_ratio` of the output it is still predicted to produce
//!   (clipped at 4,096 tokens); a request being admitted reserves its whole clipped output
//!   (`schedule_policy.py PrefillAdder`, `mem_cache/prefill_budget.py`).
//! - The ratio starts at 0.7, falls by (0.7 − 0.098)/600 with every decode step that fits, returns to 0.7
//!   when the scheduler is idle, and after a retraction is re-estimated from the requests kept
//!   (`new_token_ratio_tracker.py`, `environ.py`).
//! - A decode step that does not fit retracts the request with the fewest generated tokens (on a tie the
//!   longest prompt, then the newest) until it fits, keeping at least one (`schedule_batch.py retract_decode`).

/// `SGLANG_INIT_NEW_TOKEN_RATIO` × `schedule_conservativeness` (1.0).
pub const INIT_RATIO: f64 = 0.7;
/// The ratio's floor: init × `SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR` (0.14).
pub const MIN_RATIO: f64 = INIT_RATIO * 0.14;
/// Decode steps over which the ratio falls from init to its floor (`SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`).
pub const DECAY_STEPS: f64 = 600.0;
/// Predicted output counted at most this many tokens (`SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`).
pub const CLIP_TOKENS: u32 = 4096;
/// Decode steps a retraction's re-estimate allows each kept request (`SGLANG_RETRACT_DECODE_STEPS`).
pub const RETRACT_DECODE_STEPS: u64 = 20;

/// The scheduler's `new_token_ratio`: the share of its remaining predicted output a running request reserves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewTokenRatio(pub f64);

impl Default for NewTokenRatio {
    fn default() -> Self {
        NewTokenRatio(INIT_RATIO)
    }
}

impl NewTokenRatio {
    /// A decode step fitted without retraction.
    pub fn decay(&mut self) {
        self.0 = (self.0 - (INIT_RATIO - MIN_RATIO) / DECAY_STEPS).max(MIN_RATIO);
    }
    /// The scheduler found nothing to run.
    pub fn reset(&mut self) {
        self.0 = INIT_RATIO;
    }
    /// After a retraction, from the requests kept: Σ generated tokens and Σ predicted outputs over `kept`.
    pub fn after_retraction(&mut self, generated: u64, predicted: u64, kept: u64) {
        self.0 = ((generated + RETRACT_DECODE_STEPS * kept) as f64 / (predicted + 1) as f64).min(1.0);
    }
    /// What a running request with `left` predicted output tokens to come reserves, tokens.
    pub fn reserve(&self, left: u32) -> f64 {
        clip(left) as f64 * self.0
    }
}

/// A predicted output as SGLang counts it in a reservation.
pub fn clip(tokens: u32) -> u32 {
    tokens.min(CLIP_TOKENS)
}

/// Whether a request whose prompt still needs `extend_tokens` and whose predicted output is `out_tokens` is
/// admitted, with `available_tokens` free or evictable and `reserved_tokens` reserved by the others. SGLang
/// refuses when the sum reaches what is left (`total_tokens >= rem_total_tokens`).
pub fn admits(extend_tokens: u64, out_tokens: u32, available_tokens: u64, reserved_tokens: f64) -> bool {
    ((extend_tokens + clip(out_tokens) as u64) as f64) < available_tokens as f64 - reserved_tokens
}

/// The decoder SGLang retracts first among `(generated, prompt)` pairs in batch order: the fewest generated
/// tokens, then the longest prompt, then the latest position. None when fewer than two decode (one is kept).
pub fn retraction_victim(decoders: impl Iterator<Item = (usize, u32, u32)>) -> Option<usize> {
    let mut n = 0;
    let mut best: Option<(usize, u32, u32)> = None;
    for (j, generated, prompt) in decoders {
        n += 1;
        let better = best.is_none_or(|(_, g, p)| (generated, std::cmp::Reverse(prompt)) <= (g, std::cmp::Reverse(p)));
        if better {
            best = Some((j, generated, prompt));
        }
    }
    if n < 2 { None } else { best.map(|b| b.0) }
}
