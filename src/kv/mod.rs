//! Paged KV cache of one replica: a pool of fixed-size blocks.
//!
//! Architecture invariant: `free + used == total` after every operation; the engine audits it after every step.
//! Which request holds which block does not matter to timing, so the pool counts blocks rather than naming them.

/// Blocks of one replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPool {
    total: u64,
    free: u64,
    used: u64,
    peak_used: u64,
}

impl BlockPool {
    pub fn new(total: u64) -> Self {
        BlockPool { total, free: total, used: 0, peak_used: 0 }
    }
    pub fn total(&self) -> u64 {
        self.total
    }
    pub fn free(&self) -> u64 {
        self.free
    }
    pub fn used(&self) -> u64 {
        self.used
    }
    pub fn peak_used(&self) -> u64 {
        self.peak_used
    }
    /// Take `n` blocks; false (and nothing taken) if fewer are free. O(1).
    pub fn try_alloc(&mut self, n: u64) -> bool {
        if n > self.free {
            return false;
        }
        self.free -= n;
        self.used += n;
        self.peak_used = self.peak_used.max(self.used);
        true
    }
    /// Return `n` blocks. O(1).
    pub fn release(&mut self, n: u64) {
        debug_assert!(n <= self.used, "released more KV blocks than held");
        let n = n.min(self.used);
        self.used -= n;
        self.free += n;
    }
    /// The audit: free + used == total.
    pub fn consistent(&self) -> bool {
        self.free + self.used == self.total
    }
}

/// Blocks needed to hold `tokens` tokens.
pub fn blocks_for(tokens: u64, block_size: u32) -> u64 {
    tokens.div_ceil(block_size as u64)
}
