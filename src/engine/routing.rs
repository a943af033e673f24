//! A pool's routing: its router (none: the central queue), the router's random stream, and the load summaries
//! it reads, which the engine keeps current by telling it each worker's outstanding requests and KV use.

use std::collections::BTreeSet;

use crate::rng::{self, Rng64, Stream};
use crate::router::{self, Loads, Router};
use crate::scenario::{RouterSpec, Scenario};
use crate::sched::queue::{self, WaitingQueue};
use crate::workload::Request;

/// Where an admitted request goes: each pool's routing, or — `router: central_queue` — the front pool's one
/// central queue and its workers idle for the queue's head (kept only with that queue).
pub(super) struct Dispatch {
    routing: Vec<Routing>,
    central: Option<Box<dyn WaitingQueue>>,
    idle: BTreeSet<u32>,
}

impl Dispatch {
    pub fn new(sc: &Scenario) -> Dispatch {
        let central = matches!(sc.front_pool().router, RouterSpec::CentralQueue)
            .then(|| queue::build(&sc.scheduler, sc.workload.tenants.len()));
        Dispatch {
            routing: (0..sc.pools.len()).map(|p| Routing::new(sc, p)).collect(),
            central,
            idle: (0..sc.front_pool().replicas).collect(),
        }
    }

    /// The worker of pool `pool` (by its place in the pool) that `req` goes to, given its affinity; None: the
    /// central queue.
    pub fn route(&mut self, pool: usize, req: &Request, affinity: Option<usize>) -> Option<usize> {
        self.routing[pool].route(req, affinity)
    }

    /// Worker `local` of pool `pool` now has `n` requests waiting or running.
    pub fn outstanding(&mut self, pool: usize, local: usize, n: u64) {
        self.routing[pool].outstanding(local, n);
    }

    /// Worker `local` of pool `pool` now holds `used` of its `total` KV blocks.
    #[inline(always)]
    pub fn kv_used(&mut self, pool: usize, local: usize, used: u64, total: u64) {
        self.routing[pool].kv_used(local, used, total);
    }

    /// Whether admitted requests wait in the one central queue.
    #[inline(always)]
    pub fn is_central(&self) -> bool {
        self.central.is_some()
    }

    /// The central queue, if there is one.
    #[inline(always)]
    pub fn central(&self) -> Option<&(dyn WaitingQueue + 'static)> {
        self.central.as_deref()
    }

    #[inline(always)]
    pub fn central_mut(&mut self) -> Option<&mut (dyn WaitingQueue + 'static)> {
        self.central.as_deref_mut()
    }

    /// The first idle worker (the central queue's workers only), by index.
    pub fn first_idle(&self) -> Option<usize> {
        self.idle.first().map(|&r| r as usize)
    }

    pub fn is_idle(&self, r: usize) -> bool {
        self.idle.contains(&(r as u32))
    }

    /// Worker `r` (of the central queue's pool) is idle, or busy, from now on. (Called at every step's start:
    /// without the central queue only the check runs, inline.)
    #[inline(always)]
    pub fn set_idle(&mut self, r: usize, idle: bool) {
        if self.is_central() {
            self.mark_idle(r, idle);
        }
    }

    #[inline(never)]
    fn mark_idle(&mut self, r: usize, idle: bool) {
        if idle {
            self.idle.insert(r as u32);
        } else {
            self.idle.remove(&(r as u32));
        }
    }
}

struct Routing {
    router: Option<Box<dyn Router>>,
    rng: Rng64,
    loads: Loads,
    /// Its router reads the KV load (`least_kv`); no other does, so the others' steps skip keeping it.
    reads_kv: bool,
}

impl Routing {
    /// Pool `p`'s routing.
    pub fn new(sc: &Scenario, p: usize) -> Self {
        let pool = &sc.pools[p];
        Routing {
            router: router::build(&pool.router, sc.queue_penalty_ns(p)),
            rng: rng::stream(sc.seed, Stream::Router, p as u64),
            loads: Loads::new(pool.replicas as usize),
            reads_kv: pool.router == RouterSpec::LeastKv,
        }
    }

    /// The worker of the pool (by its place in the pool) that `req` goes to, given its affinity (the worker
    /// of its session's previous turn); None: the central queue.
    pub fn route(&mut self, req: &Request, affinity: Option<usize>) -> Option<usize> {
        let r = self.router.as_mut()?;
        Some(r.route(req, affinity, &self.loads, &mut self.rng))
    }

    /// Worker `local` now has `n` requests waiting or running.
    pub fn outstanding(&mut self, local: usize, n: u64) {
        self.loads.outstanding.set(local, n);
    }

    /// Worker `local` now holds `used` of its `total` KV blocks.
    #[inline(always)]
    pub fn kv_used(&mut self, local: usize, used: u64, total: u64) {
        // Only `least_kv` reads it (a division and a tree update per step otherwise spent for nothing).
        if self.reads_kv {
            self.loads.kv.set(local, (used << 32) / total);
        }
    }
}
