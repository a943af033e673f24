//! Paged KV cache of one replica: a pool of fixed-size blocks.
//!
//! Architecture invariant: `free + used == total` after every operation; the engine audits it after every step.
//! Which request holds which block does not matter to timing, so the pool counts blocks rather than naming them.

/// Blocks of one replica, including those its prefix cache holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPool {
    total: u64,
    free: u64,
    used: u64,
    peak_used: u64,
    pub cache: PrefixCache,
}

impl BlockPool {
    pub fn new(total: u64) -> Self {
        BlockPool { total, free: total, used: 0, peak_used: 0, cache: PrefixCache::default() }
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
    /// Free blocks plus those an allocation may take from idle cached prefixes.
    pub fn available(&self) -> u64 {
        self.free + self.cache.idle_blocks
    }
    pub fn peak_used(&self) -> u64 {
        self.peak_used
    }
    /// Take `n` blocks; false (and nothing taken) if fewer are free even after evicting every cached prefix
    /// no running request shares. Cached prefixes yield, least recently used first, only when that makes
    /// the allocation succeed. O(1) without a cache; O(log K) per eviction.
    pub fn try_alloc(&mut self, n: u64) -> bool {
        if n > self.free {
            if n > self.free + self.cache.idle_blocks {
                return false;
            }
            while self.free < n {
                let b = self.cache.evict_lru();
                self.used -= b;
                self.free += b;
            }
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

/// The prefix cache of one worker: for each shared prefix, the blocks holding its KV (counted once however
/// many requests share them) and how many running requests share it. Unshared entries wait in an LRU and
/// are evicted when an allocation would otherwise fail.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrefixCache {
    /// Per group: (blocks, pins, last use); blocks 0 = not cached.
    entries: Vec<(u64, u32, u64)>,
    /// Cached, unshared groups by last use.
    idle: std::collections::BTreeSet<(u64, u16)>,
    idle_blocks: u64,
    /// Blocks held by every cached prefix.
    pub held_blocks: u64,
    tick: u64,
    pub evictions: u64,
}

impl PrefixCache {
    fn entry(&mut self, g: u16) -> &mut (u64, u32, u64) {
        let g = g as usize;
        if self.entries.len() <= g {
            self.entries.resize(g + 1, (0, 0, 0));
        }
        &mut self.entries[g]
    }
    pub fn is_cached(&self, g: u16) -> bool {
        self.entries.get(g as usize).is_some_and(|e| e.0 > 0)
    }
    /// A request starts sharing cached prefix `g`.
    pub fn pin(&mut self, g: u16) {
        let e = self.entry(g);
        debug_assert!(e.0 > 0, "pinning a prefix that is not cached");
        e.1 += 1;
        let (blocks, pins, last) = *e;
        if pins == 1 {
            self.idle.remove(&(last, g));
            self.idle_blocks -= blocks;
        }
    }
    /// A request stops sharing prefix `g` (it completed, was preempted, or its KV left for decode).
    pub fn unpin(&mut self, g: u16) {
        self.tick += 1;
        let tick = self.tick;
        let e = self.entry(g);
        e.1 -= 1;
        e.2 = tick;
        let (blocks, pins, _) = *e;
        if pins == 0 {
            self.idle.insert((tick, g));
            self.idle_blocks += blocks;
        }
    }
    /// A request that computed prefix `g` itself hands its first `blocks` blocks to the cache and shares
    /// them from now on (they stay in use; only their owner changes).
    pub fn adopt(&mut self, g: u16, blocks: u64) {
        let e = self.entry(g);
        debug_assert_eq!(e.0, 0, "adopting a prefix that is cached");
        *e = (blocks, 1, 0);
        self.held_blocks += blocks;
    }
    /// Drop the least recently used unshared prefix; its block count (to free).
    fn evict_lru(&mut self) -> u64 {
        let (_, g) = self.idle.pop_first().expect("the caller checked idle blocks");
        let e = &mut self.entries[g as usize];
        let b = e.0;
        e.0 = 0;
        self.idle_blocks -= b;
        self.held_blocks -= b;
        self.evictions += 1;
        b
    }
}

/// Blocks needed to hold `tokens` tokens.
pub fn blocks_for(tokens: u64, block_size: u32) -> u64 {
    tokens.div_ceil(block_size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_prefixes_yield_lru_first_and_only_when_that_suffices() {
        let mut kv = BlockPool::new(10);
        assert!(kv.try_alloc(6));
        // Two requests computed prefixes 0 and 1 (2 blocks each) and hand them to the cache.
        kv.cache.adopt(0, 2);
        kv.cache.adopt(1, 2);
        kv.release(2); // the rest of their blocks
        kv.cache.unpin(1);
        kv.cache.unpin(0); // 0 is now the most recently used
        assert_eq!((kv.used(), kv.free(), kv.cache.held_blocks), (4, 6, 4));
        assert!(!kv.try_alloc(11), "more than free + idle: nothing evicted");
        assert_eq!(kv.cache.evictions, 0);
        assert!(kv.try_alloc(8), "evicts the least recently used prefix (1), which suffices");
        assert_eq!(kv.cache.evictions, 1);
        assert!(!kv.cache.is_cached(1) && kv.cache.is_cached(0));
        assert!(kv.try_alloc(2), "then 0");
        assert_eq!((kv.cache.evictions, kv.used(), kv.cache.held_blocks), (2, 10, 0));
        assert!(kv.consistent());
        // A pinned prefix never yields.
        let mut kv = BlockPool::new(4);
        assert!(kv.try_alloc(2));
        kv.cache.adopt(3, 2);
        assert!(!kv.try_alloc(3));
        assert!(kv.cache.is_cached(3));
        kv.cache.unpin(3);
        kv.cache.pin(3);
        assert!(!kv.try_alloc(3), "pinned again");
        kv.cache.unpin(3);
        assert!(kv.try_alloc(3));
        assert_eq!(kv.used(), 3);
    }
}
