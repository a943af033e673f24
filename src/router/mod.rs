//! Routing across replicas. Routers read per-replica load summaries and change nothing; the central queue is
//! not a router but an engine mode (one shared waiting queue), see `engine`.
//!
//! Every decision is O(log N) or better: load summaries live in [`MinTree`]s that the engine updates in
//! O(log N) when a replica's load changes.

use crate::rng::Rng64;
use crate::spec::RouterSpec;
use crate::workload::Request;

/// A segment tree over replica loads answering "which replica has the least load" (lowest index on ties).
/// Update O(log N), query O(1).
#[derive(Clone, Debug)]
pub struct MinTree {
    n: usize,
    size: usize,
    /// (load, replica index); leaves at `size..size+n`, padding holds u64::MAX.
    tree: Vec<(u64, u32)>,
}

impl MinTree {
    pub fn new(n: usize) -> Self {
        let size = n.next_power_of_two().max(1);
        let mut tree = vec![(u64::MAX, u32::MAX); 2 * size];
        for i in 0..n {
            tree[size + i] = (0, i as u32);
        }
        for i in (1..size).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        MinTree { n, size, tree }
    }
    pub fn set(&mut self, idx: usize, load: u64) {
        let mut i = self.size + idx;
        if self.tree[i].0 == load {
            return;
        }
        self.tree[i] = (load, idx as u32);
        while i > 1 {
            i /= 2;
            self.tree[i] = self.tree[2 * i].min(self.tree[2 * i + 1]);
        }
    }
    pub fn get(&self, idx: usize) -> u64 {
        self.tree[self.size + idx].0
    }
    /// The least-loaded replica.
    pub fn argmin(&self) -> usize {
        self.tree[1].1 as usize
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Load summaries the engine keeps for routers.
pub struct Loads {
    /// Waiting + running requests per replica.
    pub outstanding: MinTree,
    /// KV blocks in use, as a fraction of the replica's blocks scaled to 2^32.
    pub kv: MinTree,
}

impl Loads {
    pub fn new(n: usize) -> Self {
        Loads { outstanding: MinTree::new(n), kv: MinTree::new(n) }
    }
}

/// A routing policy: picks a replica for a request from the load summaries. It sees the request it routes and
/// its affinity — for a session's later turn, the replica that served the previous turn (where its KV is, if
/// it was kept) — so an affinity policy can send it back. Every decision stays O(log N).
pub trait Router {
    fn route(&mut self, req: &Request, affinity: Option<usize>, loads: &Loads, rng: &mut Rng64) -> usize;
}

/// The registry of routers. `None` for the central queue, which the engine handles itself. `penalty_ns` is
/// the estimated queueing delay one outstanding request adds at a replica (bounded affinity weighs it).
pub fn build(spec: &RouterSpec, penalty_ns: f64) -> Option<Box<dyn Router>> {
    Some(match spec {
        RouterSpec::RoundRobin => Box::new(RoundRobin(0)),
        RouterSpec::Random => Box::new(Random),
        RouterSpec::LeastOutstanding => Box::new(LeastOutstanding),
        RouterSpec::LeastKv => Box::new(LeastKv),
        RouterSpec::PowerOfTwo => Box::new(PowerOfTwo),
        RouterSpec::CentralQueue => return None,
        RouterSpec::Sticky => Box::new(BoundedAffinity { slack_ns: f64::INFINITY, penalty_ns }),
        RouterSpec::BoundedAffinity { slack_ms } => Box::new(BoundedAffinity { slack_ns: slack_ms * 1e6, penalty_ns }),
    })
}

/// Stay with the affinity replica unless its estimated queue penalty (outstanding requests × `penalty_ns`)
/// exceeds the least-loaded replica's by more than `slack_ns`; without an affinity, the least loaded. Sticky
/// is an infinite slack.
struct BoundedAffinity {
    slack_ns: f64,
    penalty_ns: f64,
}
impl Router for BoundedAffinity {
    fn route(&mut self, _: &Request, affinity: Option<usize>, loads: &Loads, _: &mut Rng64) -> usize {
        let best = loads.outstanding.argmin();
        match affinity {
            Some(h) if h < loads.outstanding.len() => {
                let extra = (loads.outstanding.get(h) - loads.outstanding.get(best)) as f64 * self.penalty_ns;
                if extra <= self.slack_ns { h } else { best }
            }
            _ => best,
        }
    }
}

struct RoundRobin(usize);
impl Router for RoundRobin {
    fn route(&mut self, _: &Request, _: Option<usize>, loads: &Loads, _: &mut Rng64) -> usize {
        let r = self.0;
        self.0 = (self.0 + 1) % loads.outstanding.len();
        r
    }
}

struct Random;
impl Router for Random {
    fn route(&mut self, _: &Request, _: Option<usize>, loads: &Loads, rng: &mut Rng64) -> usize {
        rng.below(loads.outstanding.len() as u64) as usize
    }
}

struct LeastOutstanding;
impl Router for LeastOutstanding {
    fn route(&mut self, _: &Request, _: Option<usize>, loads: &Loads, _: &mut Rng64) -> usize {
        loads.outstanding.argmin()
    }
}

struct LeastKv;
impl Router for LeastKv {
    /// Least KV use; among equals the fewest outstanding requests is not tracked, so the lowest index wins.
    fn route(&mut self, _: &Request, _: Option<usize>, loads: &Loads, _: &mut Rng64) -> usize {
        loads.kv.argmin()
    }
}

struct PowerOfTwo;
impl Router for PowerOfTwo {
    fn route(&mut self, _: &Request, _: Option<usize>, loads: &Loads, rng: &mut Rng64) -> usize {
        let n = loads.outstanding.len() as u64;
        if n == 1 {
            return 0;
        }
        let a = rng.below(n) as usize;
        let mut b = rng.below(n - 1) as usize;
        if b >= a {
            b += 1;
        }
        if loads.outstanding.get(b) < loads.outstanding.get(a) { b } else { a }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_tree_tracks_argmin_with_low_index_ties() {
        let mut t = MinTree::new(5);
        assert_eq!(t.argmin(), 0);
        t.set(0, 3);
        t.set(1, 2);
        t.set(2, 2);
        t.set(3, 9);
        t.set(4, 9);
        assert_eq!(t.argmin(), 1);
        t.set(1, 5);
        assert_eq!(t.argmin(), 2);
    }
}
