//! The serving front end between admission and the scheduler's queue: the API server's work on a request
//! (HTTP, tokenising) and the engine's fixed per-request overhead.

use crate::scenario::Scenario;
use crate::workload::Request;

pub(super) struct FrontEnd {
    /// Its service (ns per request, ns per prompt token); None: it takes no time.
    service: Option<(f64, f64)>,
    /// When each worker's front end (the last slot: the central queue's) is next free.
    free_ns: Vec<u64>,
    /// The engine's per-request serving overhead after the front end.
    overhead_ns: u64,
}

impl FrontEnd {
    pub fn new(sc: &Scenario) -> Self {
        let en = &sc.front_pool().engine;
        FrontEnd {
            service: en.frontend,
            free_ns: vec![0; sc.worker_count() as usize + 1],
            overhead_ns: en.request_overhead_ns,
        }
    }

    /// When `req`, arriving at `now_ns` for worker `target`'s queue (None: the central queue), reaches it:
    /// its front end serves one request at a time, FIFO, from when it is free; then the overhead.
    pub fn ready_ns(&mut self, req: &Request, target: Option<usize>, now_ns: u64) -> u64 {
        let Some((per_request_ns, per_token_ns)) = self.service else { return now_ns + self.overhead_ns };
        let slot = target.unwrap_or(self.free_ns.len() - 1);
        let service = libm::round(per_request_ns + per_token_ns * req.prompt_tokens as f64) as u64;
        let done = self.free_ns[slot].max(now_ns) + service;
        self.free_ns[slot] = done;
        done + self.overhead_ns
    }
}
