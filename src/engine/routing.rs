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
    pub routing: Vec<Routing>,
    pub central: Option<Box<dyn WaitingQueue>>,
    pub idle: BTreeSet<u32>,
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
}

pub(super) struct Routing {
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
