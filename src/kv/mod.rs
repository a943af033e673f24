//! Paged KV cache of one replica: a pool of fixed-size blocks.
//!
//! Architecture invariant: `free + used == total` after every operation; the engine audits it after every step.
//! Which request holds which block does not matter to timing, so the pool counts blocks rather than naming them.

/// Blocks of one replica, including those its prefix cache holds; and the replica's host tier, where evicted
/// session history goes when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPool {
    total: u64,
    free: u64,
    used: u64,
    pub cache: ReuseCache,
    /// Host memory for sessions' KV (None: evicted history is dropped).
    pub host: Option<HostStore>,
    /// Most blocks session entries may hold (u64::MAX: no budget).
    retention_budget: u64,
    /// Session entries evicted from HBM to make room (HBM pressure or the retention budget).
    pub pressure_evictions: u64,
    /// Shared prefixes (and trace blocks) evicted to make an allocation succeed.
    pub prefix_evictions: u64,
    /// Most blocks shared prefixes may hold (u64::MAX: no budget; a workflow's role prefixes have one), and
    /// the idle prefixes evicted to keep it.
    prefix_budget: u64,
    pub budget_evictions: u64,
    /// A workflow's forecast demand for each prefix group here (expected uses by the workflows whose next
    /// step is expected on this worker, in millionths): the budget evicts the idle prefix of least demand
    /// first, the least recently used among equals. Empty: least recently used alone.
    pub shared_demand: Vec<u64>,
}

impl BlockPool {
    pub fn new(total: u64) -> Self {
        BlockPool {
            total,
            free: total,
            used: 0,
            cache: ReuseCache::default(),
            host: None,
            retention_budget: u64::MAX,
            pressure_evictions: 0,
            prefix_evictions: 0,
            prefix_budget: u64::MAX,
            budget_evictions: 0,
            shared_demand: Vec::new(),
        }
    }
    /// Most blocks shared prefixes may hold (u64::MAX: no budget).
    pub fn prefix_budget(&self) -> u64 {
        self.prefix_budget
    }
    /// The same pool whose shared prefixes may hold at most `blocks` blocks (None: no budget).
    pub fn with_prefix_budget(mut self, blocks: Option<u64>) -> Self {
        self.prefix_budget = blocks.unwrap_or(u64::MAX);
        self
    }
    /// The same pool with a host tier of `host_blocks` blocks (None: none) and a retention budget.
    pub fn with_tiers(mut self, host_blocks: Option<u64>, retention_budget: Option<u64>) -> Self {
        self.host = host_blocks.map(HostStore::new);
        self.retention_budget = retention_budget.unwrap_or(u64::MAX);
        self
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
    /// Free blocks plus those an allocation may take from idle cached entries and preempted requests' kept
    /// blocks.
    pub fn available(&self) -> u64 {
        self.free + self.cache.idle_blocks + self.cache.parked_blocks
    }
    /// Take `n` blocks; false (and nothing taken) if fewer are free even after evicting every cached prefix
    /// no running request shares. Cached prefixes yield, least recently used first, only when that makes
    /// the allocation succeed. O(1) without a cache; O(log K) per eviction.
    pub fn try_alloc(&mut self, n: u64) -> bool {
        if n > self.free {
            if n > self.available() {
                return false;
            }
            while self.free < n {
                if self.cache.parked_go_first() {
                    // A preempted request's kept blocks, tail first, only as many as the allocation lacks.
                    let b = self.cache.shrink_oldest_parked(n - self.free);
                    self.used -= b;
                    self.free += b;
                    continue;
                }
                self.evict_one(false);
                self.cache.evictions += 1;
            }
        }
        self.free -= n;
        self.used += n;
        true
    }
    /// Keep only `keep` of preempted request `id`'s kept blocks (those a readmission can use), freeing the rest.
    pub fn trim_parked(&mut self, id: u32, keep: u64) {
        let freed = self.cache.shrink_parked(id, keep);
        self.release(freed);
    }
    /// Return `n` blocks. O(1).
    pub fn release(&mut self, n: u64) {
        debug_assert!(n <= self.used, "released more KV blocks than held");
        let n = n.min(self.used);
        self.used -= n;
        self.free += n;
    }
    /// A request computed entry `id`'s KV itself, in `blocks` of its own blocks: if the cache holds the entry
    /// already (another request cached it meanwhile), the request shares that copy and frees its own;
    /// otherwise its blocks become the entry. Either way the request shares (pins) the entry from now on.
    pub fn share_or_adopt(&mut self, id: EntryId, blocks: u64) {
        if self.cache.is_cached(id) {
            self.cache.pin(id);
            self.release(blocks);
        } else {
            self.cache.adopt(id, blocks);
            self.keep_prefix_budget();
        }
    }
    /// A prefetch of entry `id` landed in `blocks` blocks it had taken: the entry joins the cache idle (and
    /// marked prefetched until a request shares it), within the prefix budget; if the cache holds it already
    /// (a request computed it meanwhile) the copy is freed. Whether it joined.
    pub fn land_prefetch(&mut self, id: EntryId, blocks: u64) -> bool {
        if self.cache.is_cached(id) {
            self.release(blocks);
            return false;
        }
        self.cache.insert_prefetched(id, blocks);
        self.keep_prefix_budget();
        true
    }
    /// Shared prefixes over their budget: idle ones go, least recently used first (one a running request
    /// shares stays, so the budget may be passed while they run; the engine calls this again when a request
    /// stops sharing one).
    #[inline]
    pub fn keep_prefix_budget(&mut self) {
        while self.cache.shared_held() > self.prefix_budget && self.cache.idle_shared() > 0 {
            let b = match self.budget_victim() {
                Some(id) => self.cache.remove_idle(id),
                None => self.cache.evict_lru(Which::Shared).1,
            };
            self.budget_evictions += 1;
            self.used -= b;
            self.free += b;
        }
    }
    /// The idle shared entries in the order the budget evicts them: least demand first, then least recently
    /// used.
    pub fn budget_order(&self) -> Vec<EntryId> {
        let mut idle: Vec<(u64, usize, EntryId)> = (self.cache.idle_shared_lru().enumerate())
            .map(|(k, id)| (self.shared_demand.get(id.0 as usize).copied().unwrap_or(0), k, id))
            .collect();
        if !self.shared_demand.is_empty() {
            idle.sort_unstable();
        }
        idle.into_iter().map(|x| x.2).collect()
    }
    /// The idle shared entry the budget evicts next when demand orders it (None: least recently used).
    fn budget_victim(&self) -> Option<EntryId> {
        if self.shared_demand.is_empty() {
            return None;
        }
        self.budget_order().into_iter().next()
    }
    /// The audit: free + used == total, and the host tier within its capacity.
    pub fn consistent(&self) -> bool {
        self.free + self.used == self.total && self.host.as_ref().is_none_or(|h| h.used_blocks <= h.capacity_blocks)
    }
    /// Evict the least recently used idle entry: a session's history moves to the host tier when there is
    /// one; anything else is dropped. Its blocks are freed.
    #[cold]
    fn evict_one(&mut self, session_only: bool) {
        let (id, b) = self.cache.evict_lru(if session_only { Which::Session } else { Which::Any });
        if id.is_session() {
            self.pressure_evictions += 1;
            if let Some(h) = &mut self.host {
                h.store(id, b);
            }
        } else {
            self.prefix_evictions += 1;
        }
        self.used -= b;
        self.free += b;
    }
    /// A session's turn ended: `blocks` of its own blocks join its history entry `id` in HBM, within the
    /// retention budget — older idle histories yield (least recently used first) to make room, and if the
    /// entry alone would pass the budget it is moved on (host tier, or freed) at once. The blocks taken from the
    /// turn (those it keeps); the caller frees the rest.
    pub fn retain(&mut self, id: EntryId, blocks: u64) -> u64 {
        if self.cache.blocks_of(id) + blocks > self.retention_budget {
            // Too large for the budget on its own: a budget eviction like any other.
            self.pressure_evictions += 1;
            self.move_to_host(id, blocks);
            return 0;
        }
        self.cache.retain(id, blocks);
        // The budget bounds retained history — idle between turns. A running turn's history is its working
        // KV, bounded by HBM like any request's, and neither counts nor yields; shared prefixes neither. The
        // idle histories go oldest first, this one last.
        while self.cache.idle_session_blocks() > self.retention_budget {
            self.evict_one(true);
        }
        blocks
    }
    /// Session history `id` moves to the host tier (dropped without one): its idle HBM entry is freed and the
    /// host stores it with `more` blocks of the turn's (which the caller frees).
    pub fn move_to_host(&mut self, id: EntryId, more: u64) {
        let have = self.drop_idle(id);
        if let Some(h) = &mut self.host {
            h.store(id, have + more);
        }
    }
    /// Drop idle entry `id` from HBM (0 blocks if it is not there), freeing its blocks; the blocks it held.
    pub fn drop_idle(&mut self, id: EntryId) -> u64 {
        let b = self.cache.remove_idle(id);
        self.release(b);
        b
    }
    /// Move idle entry `id` from HBM to the host tier (freed when there is none); the blocks it held.
    pub fn offload(&mut self, id: EntryId) -> u64 {
        let b = self.drop_idle(id);
        if let (Some(h), true) = (&mut self.host, b > 0) {
            h.store(id, b);
        }
        b
    }
}

/// A worker's host-memory KV: session histories moved out of HBM, each counted in HBM blocks, least recently
/// stored dropped first when a new one needs room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostStore {
    pub capacity_blocks: u64,
    pub used_blocks: u64,
    entries: std::collections::BTreeMap<EntryId, (u64, u64)>,
    lru: std::collections::BTreeSet<(u64, EntryId)>,
    tick: u64,
    /// Histories dropped from host memory to make room for newer ones, or too large to store at all.
    pub evictions: u64,
}

impl HostStore {
    pub fn new(capacity_blocks: u64) -> Self {
        HostStore {
            capacity_blocks,
            used_blocks: 0,
            entries: Default::default(),
            lru: Default::default(),
            tick: 0,
            evictions: 0,
        }
    }
    /// Blocks entry `id` holds here (0: not here).
    pub fn blocks_of(&self, id: EntryId) -> u64 {
        self.entries.get(&id).map_or(0, |e| e.0)
    }
    /// Store `blocks` blocks of entry `id` (replacing what it held), dropping the least recently stored
    /// entries while it does not fit; an entry larger than the whole tier is dropped itself.
    pub fn store(&mut self, id: EntryId, blocks: u64) {
        self.take(id);
        if blocks == 0 {
            return;
        }
        if blocks > self.capacity_blocks {
            self.evictions += 1;
            return;
        }
        while self.used_blocks + blocks > self.capacity_blocks {
            let (_, old) = self.lru.pop_first().expect("used blocks belong to entries");
            self.used_blocks -= self.entries.remove(&old).expect("an entry in the LRU").0;
            self.evictions += 1;
        }
        self.tick += 1;
        self.entries.insert(id, (blocks, self.tick));
        self.lru.insert((self.tick, id));
        self.used_blocks += blocks;
    }
    /// Remove entry `id` (restored to HBM, or its session ended); the blocks it held.
    pub fn take(&mut self, id: EntryId) -> u64 {
        let Some((b, t)) = self.entries.remove(&id) else { return 0 };
        self.lru.remove(&(t, id));
        self.used_blocks -= b;
        b
    }
}

/// The key of a reusable KV entry: a shared prompt prefix today (its group), a session's history next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub u64);

impl EntryId {
    /// The entry of shared-prefix group `g`.
    pub fn prefix(g: u16) -> EntryId {
        EntryId(g as u64)
    }
    /// The entry of a trace's hashed block `h` (≤ `workload::trace::MAX_HASH`): the top bit tells it from a
    /// prefix group's.
    pub fn block(h: u64) -> EntryId {
        EntryId(1 << 63 | h)
    }
    /// The entry of session `s`'s retained history.
    pub fn session(s: u32) -> EntryId {
        EntryId(1 << 62 | s as u64)
    }
    pub fn is_session(self) -> bool {
        self.0 >> 62 == 1
    }
}

/// What a preempted request left behind: its own full blocks after the tokens it shared, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parked {
    tick: u64,
    pub blocks: u64,
    /// The leading tokens it shared from cached entries when preempted: its kept blocks follow them.
    pub base_tokens: u32,
}

/// One cached entry: its blocks, the running requests sharing it, and when it was last released.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Entry {
    blocks: u64,
    pins: u32,
    last_use: u64,
    /// A prefetch brought it and no request has shared it yet.
    prefetched: bool,
}

/// Which idle entries an eviction may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Any,
    Session,
    Shared,
}

/// The reusable KV of one worker: entries keyed by an [`EntryId`], each with its own length in blocks
/// (counted once however many requests share it) and the number of running requests sharing it. An entry
/// is pinned while shared; unshared entries wait in an LRU and are evicted only when an allocation would
/// otherwise fail. The engine audits `Σ held by requests + in transfer + cached == used` after every step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReuseCache {
    entries: std::collections::BTreeMap<EntryId, Entry>,
    /// Cached, unshared entries by last use.
    idle: std::collections::BTreeSet<(u64, EntryId)>,
    idle_blocks: u64,
    /// Blocks held by every cached entry.
    pub held_blocks: u64,
    tick: u64,
    /// Entries evicted to make an allocation succeed.
    pub evictions: u64,
    /// Of the blocks held, and of the idle ones, those of session histories (the rest are shared prefixes
    /// and trace blocks).
    pub session_held: u64,
    session_idle: u64,
    /// Prefetched entries a request then shared, and those that left unshared.
    pub prefetch_used: u64,
    pub prefetch_unused: u64,
    /// Preempted requests' kept blocks by request, and by when they were freed (held, not idle: counted in
    /// `held_blocks` and apart from shared prefixes and sessions), and the kept blocks allocations took.
    parked: std::collections::BTreeMap<u32, Parked>,
    parked_lru: std::collections::BTreeSet<(u64, u32)>,
    pub parked_blocks: u64,
    pub parked_evicted: u64,
}

impl ReuseCache {
    /// Blocks entry `id` holds; 0 when it is not cached.
    pub fn blocks_of(&self, id: EntryId) -> u64 {
        self.entries.get(&id).map_or(0, |e| e.blocks)
    }
    pub fn is_cached(&self, id: EntryId) -> bool {
        self.blocks_of(id) > 0
    }
    /// A request starts sharing cached entry `id`.
    pub fn pin(&mut self, id: EntryId) {
        let e = self.entries.get_mut(&id).expect("pinning an entry that is not cached");
        e.pins += 1;
        if std::mem::take(&mut e.prefetched) {
            self.prefetch_used += 1;
        }
        if e.pins == 1 {
            self.idle.remove(&(e.last_use, id));
            self.idle_blocks -= e.blocks;
            if id.is_session() {
                self.session_idle -= e.blocks;
            }
        }
    }
    /// Preempted request `id` leaves `blocks` of its own full blocks behind, after the `base_tokens` leading
    /// tokens it shared: vLLM frees a preempted request's blocks with their hashes kept, so a readmission finds
    /// them as a cached prefix until an allocation takes them (tail first, oldest freed first). They stay in
    /// use (the caller frees the rest of the request's blocks).
    pub fn park(&mut self, id: u32, blocks: u64, base_tokens: u32) {
        self.tick += 1;
        self.repark(id, Parked { tick: self.tick, blocks, base_tokens });
    }
    /// Readmitted request `id` takes back what it left behind (None: nothing left); the blocks stay in use,
    /// now its own again (or freed by the caller).
    pub fn unpark(&mut self, id: u32) -> Option<Parked> {
        let p = self.parked.remove(&id)?;
        self.parked_lru.remove(&(p.tick, id));
        self.parked_blocks -= p.blocks;
        self.held_blocks -= p.blocks;
        Some(p)
    }
    /// What preempted request `id` left behind, if anything is left.
    pub fn parked_of(&self, id: u32) -> Option<Parked> {
        self.parked.get(&id).copied()
    }
    /// Put back what [`ReuseCache::unpark`] took (an admission that did not happen), as old as it was.
    fn repark(&mut self, id: u32, p: Parked) {
        let old = self.parked.insert(id, p);
        debug_assert!(old.is_none(), "a request parked twice without readmission");
        self.parked_lru.insert((p.tick, id));
        self.parked_blocks += p.blocks;
        self.held_blocks += p.blocks;
    }
    /// Keep only `keep` of preempted request `id`'s kept blocks, as old as they were; the blocks it left, to
    /// free.
    fn shrink_parked(&mut self, id: u32, keep: u64) -> u64 {
        let Some(p) = self.parked.get_mut(&id) else { return 0 };
        let b = p.blocks.saturating_sub(keep);
        p.blocks -= b;
        if p.blocks == 0 {
            let tick = p.tick;
            self.parked.remove(&id);
            self.parked_lru.remove(&(tick, id));
        }
        self.parked_blocks -= b;
        self.held_blocks -= b;
        b
    }
    /// Whether the oldest freed blocks are a preempted request's (older than every idle entry's last use).
    fn parked_go_first(&self) -> bool {
        match (self.parked_lru.first(), self.idle.first()) {
            (Some(p), Some(i)) => p.0 < i.0,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
    /// Take up to `n` blocks from the oldest preempted request's kept blocks, from its tail (vLLM frees a
    /// request's blocks in reverse, so its tail is evicted first and what remains is still a prefix); the
    /// blocks taken, to free.
    fn shrink_oldest_parked(&mut self, n: u64) -> u64 {
        let &(tick, id) = self.parked_lru.first().expect("the caller checked");
        let p = self.parked.get_mut(&id).expect("a parked request is in the map");
        let b = p.blocks.min(n);
        p.blocks -= b;
        if p.blocks == 0 {
            self.parked.remove(&id);
            self.parked_lru.remove(&(tick, id));
        }
        self.parked_blocks -= b;
        self.held_blocks -= b;
        self.parked_evicted += b;
        b
    }
    /// A request stops sharing entry `id` (it completed, was preempted, or its KV left for decode).
    pub fn unpin(&mut self, id: EntryId) {
        self.tick += 1;
        let e = self.entries.get_mut(&id).expect("unpinning an entry that is not cached");
        e.pins -= 1;
        e.last_use = self.tick;
        if e.pins == 0 {
            self.idle.insert((self.tick, id));
            self.idle_blocks += e.blocks;
            if id.is_session() {
                self.session_idle += e.blocks;
            }
        }
    }
    /// A request that computed entry `id`'s KV itself hands those `blocks` blocks to the cache and shares them
    /// from now on (they stay in use; only their owner changes).
    pub fn adopt(&mut self, id: EntryId, blocks: u64) {
        let old = self.entries.insert(id, Entry { blocks, pins: 1, last_use: 0, prefetched: false });
        debug_assert!(old.is_none(), "adopting an entry that is cached");
        self.held_blocks += blocks;
    }
    /// A session's turn ended: `blocks` more of the turn's own blocks join entry `id` (created if absent),
    /// which is left unshared — idle, evictable — until the session's next turn pins it.
    pub fn retain(&mut self, id: EntryId, blocks: u64) {
        self.tick += 1;
        let tick = self.tick;
        let e = self.entries.entry(id).or_insert(Entry { blocks: 0, pins: 0, last_use: tick, prefetched: false });
        debug_assert_eq!(e.pins, 0, "retaining into an entry a running request shares");
        let old = (e.last_use, e.blocks);
        e.blocks += blocks;
        e.last_use = tick;
        if old.1 > 0 {
            self.idle.remove(&(old.0, id));
        }
        self.idle.insert((tick, id));
        self.idle_blocks += blocks;
        self.held_blocks += blocks;
        debug_assert!(id.is_session(), "only sessions retain");
        self.session_idle += blocks;
        self.session_held += blocks;
    }
    /// A prefetch brought entry `id` (not cached) in `blocks` blocks: idle, the most recently used.
    pub fn insert_prefetched(&mut self, id: EntryId, blocks: u64) {
        debug_assert!(!id.is_session(), "only shared prefixes are prefetched");
        self.tick += 1;
        let old = self.entries.insert(id, Entry { blocks, pins: 0, last_use: self.tick, prefetched: true });
        debug_assert!(old.is_none(), "prefetching an entry that is cached");
        self.idle.insert((self.tick, id));
        self.idle_blocks += blocks;
        self.held_blocks += blocks;
    }
    /// Drop unshared entry `id` (its session ended); the blocks it held, to free (0 if it is not cached).
    pub fn remove_idle(&mut self, id: EntryId) -> u64 {
        let Some(e) = self.entries.get(&id).copied() else { return 0 };
        debug_assert_eq!(e.pins, 0, "removing an entry a running request shares");
        self.entries.remove(&id);
        self.idle.remove(&(e.last_use, id));
        self.forget(id, e);
        e.blocks
    }
    /// Blocks held by shared prefixes (and trace blocks): every entry but sessions' histories (and preempted
    /// requests' kept blocks, which are no entry).
    pub fn shared_held(&self) -> u64 {
        self.held_blocks - self.session_held - self.parked_blocks
    }
    /// Of those, the blocks no running request shares.
    pub fn idle_shared(&self) -> u64 {
        self.idle_blocks - self.session_idle
    }
    /// The idle shared entries, least recently used first (the order they would be evicted in).
    pub fn idle_shared_lru(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.idle.iter().map(|(_, id)| *id).filter(|id| !id.is_session())
    }
    /// Blocks of cached entries no running request shares.
    pub fn idle_blocks(&self) -> u64 {
        self.idle_blocks
    }
    /// Blocks of session histories no running turn shares (what retention holds idle in HBM).
    pub fn idle_session_blocks(&self) -> u64 {
        self.session_idle
    }
    /// Drop the least recently used unshared entry of the kind `which`; it and its block
    /// count (to free).
    fn evict_lru(&mut self, which: Which) -> (EntryId, u64) {
        let key = *match which {
            Which::Any => self.idle.first(),
            Which::Session => self.idle.iter().find(|(_, id)| id.is_session()),
            Which::Shared => self.idle.iter().find(|(_, id)| !id.is_session()),
        }
        .expect("the caller checked idle blocks of the kind");
        self.idle.remove(&key);
        let id = key.1;
        let e = self.entries.remove(&id).expect("an idle entry is cached");
        self.forget(id, e);
        (id, e.blocks)
    }
    /// The books of an idle entry that left.
    fn forget(&mut self, id: EntryId, e: Entry) {
        let b = e.blocks;
        self.prefetch_unused += e.prefetched as u64;
        self.idle_blocks -= b;
        self.held_blocks -= b;
        if id.is_session() {
            self.session_idle -= b;
            self.session_held -= b;
        }
    }
}

/// Blocks needed to hold `tokens` tokens.
pub fn blocks_for(tokens: u64, block_size: u32) -> u64 {
    tokens.div_ceil(block_size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The retention budget bounds idle history only: a history larger than it is not kept and counts as an
    /// eviction; a running turn's (pinned) history neither counts nor yields; past the budget the least
    /// recently used idle histories move to the host tier, each an eviction.
    #[test]
    fn the_retention_budget_counts_idle_history_and_its_evictions() {
        let s = EntryId::session;
        let mut kv = BlockPool::new(100).with_tiers(Some(1000), Some(10));
        assert!(kv.try_alloc(12));
        assert_eq!(kv.retain(s(0), 12), 0, "larger than the budget: not kept");
        kv.release(12);
        assert_eq!(kv.pressure_evictions, 1);
        assert_eq!(kv.host.as_ref().unwrap().blocks_of(s(0)), 12, "moved on to the host tier");
        assert!(kv.try_alloc(8));
        assert_eq!(kv.retain(s(1), 8), 8);
        kv.cache.pin(s(1)); // its next turn runs: working KV now
        assert!(kv.try_alloc(6));
        assert_eq!(kv.retain(s(2), 6), 6, "8 pinned + 6 idle: only the idle 6 count");
        assert!(kv.cache.is_cached(s(1)) && kv.cache.is_cached(s(2)));
        assert_eq!(kv.pressure_evictions, 1);
        kv.cache.unpin(s(1)); // the turn ended; 14 idle until the next retain enforces the budget
        assert!(kv.try_alloc(3));
        assert_eq!(kv.retain(s(3), 3), 3);
        // 17 idle > 10: the oldest (2, then 1) go to the host tier, this one stays.
        assert_eq!((kv.cache.idle_session_blocks(), kv.pressure_evictions), (3, 3));
        assert!(!kv.cache.is_cached(s(1)) && !kv.cache.is_cached(s(2)) && kv.cache.is_cached(s(3)));
        assert_eq!(kv.host.as_ref().unwrap().blocks_of(s(2)), 6);
        assert!(kv.consistent());
    }

    /// A preempted request's kept blocks and idle entries yield in the order they were freed; kept blocks only
    /// as many as the allocation lacks (vLLM frees a request's tail first, so what stays is still a prefix), and
    /// a readmission that takes them back and does not happen puts them back as old as they were.
    #[test]
    fn kept_blocks_yield_oldest_first_and_only_what_is_lacking() {
        let mut kv = BlockPool::new(20);
        assert!(kv.try_alloc(20));
        kv.cache.adopt(EntryId(0), 4);
        kv.cache.unpin(EntryId(0)); // freed first
        kv.cache.park(7, 6, 0); // request 7 keeps 6 of its 10 blocks
        kv.release(4);
        kv.cache.park(8, 6, 0); // request 8 keeps all 6 of its own
        assert_eq!((kv.free(), kv.available(), kv.cache.held_blocks, kv.cache.shared_held()), (4, 20, 16, 4));
        assert!(kv.try_alloc(6), "4 free, then the prefix (freed before either request)");
        assert!(!kv.cache.is_cached(EntryId(0)) && kv.cache.parked_blocks == 12);
        assert!(kv.try_alloc(4), "2 free, then 2 of request 7's, its tail");
        assert_eq!((kv.cache.parked_of(7).unwrap().blocks, kv.cache.parked_of(8).unwrap().blocks), (4, 6));
        let p = kv.cache.unpark(8).unwrap(); // its readmission takes them back …
        assert!(!kv.try_alloc(5) && kv.cache.parked_blocks == 4, "… so only request 7's 4 may yield");
        kv.cache.repark(8, p); // … and does not happen: 8 is again the newer
        assert!(kv.try_alloc(5));
        let eight = kv.cache.parked_of(8).unwrap().blocks;
        assert_eq!((kv.cache.parked_of(7), eight, kv.cache.parked_evicted), (None, 5, 7));
        kv.trim_parked(8, 2);
        assert_eq!((kv.cache.parked_blocks, kv.free(), kv.cache.held_blocks), (2, 3, 2));
        assert!(kv.consistent());
    }

    /// A step end's allocations may be made together (the lazy requests' crossings in one call, after the
    /// exceptions'): the pool is then exactly as after the same allocations one block at a time — the same
    /// victims, in the same order, and counters and host tier — for every count, from every amount of free
    /// blocks, among idle prefixes, session histories and kept blocks of mixed age.
    #[test]
    fn allocations_leave_the_pool_the_same_however_grouped() {
        let s = EntryId::session;
        for free in 0..4 {
            let mut kv = BlockPool::new(30 + free).with_tiers(Some(100), None);
            assert!(kv.try_alloc(30));
            kv.cache.adopt(EntryId(0), 3);
            kv.cache.unpin(EntryId(0));
            kv.cache.park(7, 4, 0);
            assert_eq!(kv.retain(s(1), 5), 5);
            kv.cache.park(8, 2, 0);
            kv.cache.adopt(EntryId(2), 6);
            kv.cache.unpin(EntryId(2));
            let pinned = 30 - 3 - 4 - 5 - 2 - 6;
            assert_eq!(kv.available(), 30 + free - pinned);
            for n in 0..=kv.available() + 1 {
                let (mut at_once, mut halves, mut one_by_one) = (kv.clone(), kv.clone(), kv.clone());
                let ok = at_once.try_alloc(n);
                assert_eq!(ok, n <= kv.available(), "{n} of {free} free");
                if ok {
                    assert!(halves.try_alloc(n / 2) && halves.try_alloc(n - n / 2));
                    (0..n).for_each(|_| assert!(one_by_one.try_alloc(1)));
                }
                assert_eq!(at_once, one_by_one, "{n} blocks from {free} free");
                assert_eq!(halves, one_by_one, "{n} blocks from {free} free, in halves");
                assert!(at_once.consistent());
            }
        }
    }

    #[test]
    fn cached_prefixes_yield_lru_first_and_only_when_that_suffices() {
        let mut kv = BlockPool::new(10);
        assert!(kv.try_alloc(6));
        // Two requests computed prefixes 0 and 1 (2 blocks each) and hand them to the cache.
        kv.cache.adopt(EntryId(0), 2);
        kv.cache.adopt(EntryId(1), 2);
        kv.release(2); // the rest of their blocks
        kv.cache.unpin(EntryId(1));
        kv.cache.unpin(EntryId(0)); // 0 is now the most recently used
        assert_eq!((kv.used(), kv.free(), kv.cache.held_blocks), (4, 6, 4));
        assert!(!kv.try_alloc(11), "more than free + idle: nothing evicted");
        assert_eq!(kv.cache.evictions, 0);
        assert!(kv.try_alloc(8), "evicts the least recently used prefix (1), which suffices");
        assert_eq!(kv.cache.evictions, 1);
        assert!(!kv.cache.is_cached(EntryId(1)) && kv.cache.is_cached(EntryId(0)));
        assert!(kv.try_alloc(2), "then 0");
        assert_eq!((kv.cache.evictions, kv.used(), kv.cache.held_blocks), (2, 10, 0));
        assert!(kv.consistent());
        // A pinned prefix never yields.
        let mut kv = BlockPool::new(4);
        assert!(kv.try_alloc(2));
        kv.cache.adopt(EntryId(3), 2);
        assert!(!kv.try_alloc(3));
        assert!(kv.cache.is_cached(EntryId(3)));
        kv.cache.unpin(EntryId(3));
        kv.cache.pin(EntryId(3));
        assert!(!kv.try_alloc(3), "pinned again");
        kv.cache.unpin(EntryId(3));
        assert!(kv.try_alloc(3));
        assert_eq!(kv.used(), 3);
    }
}
