//! The way in, before any scheduler: the engine's `max_model_len`, the admission policy, and the serving
//! front end between them and the scheduler's queue — the API server's work on a request (HTTP, tokenising)
//! and the engine's fixed per-request overhead.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::scenario::Scenario;
use crate::sched::admission::{self, Admission, AdmitContext, Reject};
use crate::workload::Request;

/// What an arrival meets before the scheduler's queue.
pub(super) struct Door {
    /// The engine's `max_model_len` (u64::MAX: none), read at every arrival.
    max_model_len: u64,
    admission: Admission,
    frontend: FrontEnd,
}

impl Door {
    pub(super) fn new(sc: &Scenario) -> Door {
        Door {
            max_model_len: sc.front_pool().engine.max_model_len.map_or(u64::MAX, u64::from),
            admission: admission::build(&sc.admission, &sc.workload.tenants),
            frontend: FrontEnd::new(sc),
        }
    }

    /// Whether `req` gets in: refused when its prompt + output exceeds `max_model_len` (as vLLM refuses it),
    /// else as the admission policy decides.
    pub(super) fn admit(&mut self, req: &Request, cx: &AdmitContext) -> Result<(), Reject> {
        if req.prompt_tokens as u64 + req.output_tokens as u64 > self.max_model_len {
            return Err(Reject::TooLong);
        }
        self.admission.admit(req, cx)
    }

    /// The admission policy reads a latency estimate.
    pub(super) fn needs_estimate(&self) -> bool {
        self.admission.needs_estimate()
    }

    /// The admission policy reads the replicas' drain rates (kept only then).
    #[inline(always)]
    pub(super) fn reads_drain_rate(&self) -> bool {
        self.admission.reads_drain_rate()
    }

    /// When `req`, arriving at `now_ns` for worker `target`'s queue, reaches it (see [`FrontEnd::ready_ns`]).
    pub(super) fn ready_ns(&mut self, req: &Request, target: Option<usize>, now_ns: u64) -> (u64, bool) {
        self.frontend.ready_ns(req, target, now_ns)
    }

    /// See [`FrontEnd::through_by`].
    #[inline(always)]
    pub(super) fn through_by(&mut self, now_ns: u64) -> Option<u64> {
        self.frontend.through_by(now_ns)
    }

    /// See [`FrontEnd::busiest_fraction`].
    pub(super) fn busiest_fraction(&self, end_ns: u64) -> Option<f64> {
        self.frontend.busiest_fraction(end_ns)
    }
}

struct FrontEnd {
    /// Its service (ns per request, ns per prompt token); None: it takes no time.
    service: Option<(f64, f64)>,
    /// When each worker's front end (the last slot: the central queue's) is next free.
    free_ns: Vec<u64>,
    /// The engine's per-request serving overhead after the front end.
    overhead_ns: u64,
    /// When each request the front end holds is through it (waiting for it or in its service): the front end's
    /// backlog, which the waiting queue counts — a front end slower than the load is a queue that grows, where
    /// the scheduler's stays empty. The overhead after it is latency, not a backlog, and is not counted.
    held: BinaryHeap<Reverse<u64>>,
    /// Each front end's service time, summed (the last slot: the central queue's).
    busy_ns: Vec<u64>,
}

impl FrontEnd {
    pub fn new(sc: &Scenario) -> Self {
        let en = &sc.front_pool().engine;
        FrontEnd {
            service: en.frontend,
            free_ns: vec![0; sc.worker_count() as usize + 1],
            overhead_ns: en.request_overhead_ns,
            held: BinaryHeap::new(),
            busy_ns: vec![0; sc.worker_count() as usize + 1],
        }
    }

    /// When `req`, arriving at `now_ns` for worker `target`'s queue (None: the central queue), reaches it:
    /// its front end serves one request at a time, FIFO, from when it is free; then the overhead. `held`: the
    /// front end holds it (count it as waiting until [`FrontEnd::through_by`] says it is through).
    pub fn ready_ns(&mut self, req: &Request, target: Option<usize>, now_ns: u64) -> (u64, bool) {
        let Some((per_request_ns, per_token_ns)) = self.service else { return (now_ns + self.overhead_ns, false) };
        let slot = target.unwrap_or(self.free_ns.len() - 1);
        let service = libm::round(per_request_ns + per_token_ns * req.prompt_tokens as f64) as u64;
        let done = self.free_ns[slot].max(now_ns) + service;
        self.free_ns[slot] = done;
        self.busy_ns[slot] += service;
        self.held.push(Reverse(done));
        (done + self.overhead_ns, true)
    }

    /// The busiest front end's share of a run that ended at `end_ns` spent serving (what it still had to serve
    /// past the end left out); None without a front end.
    pub fn busiest_fraction(&self, end_ns: u64) -> Option<f64> {
        self.service?;
        let in_run = |(busy, free): (&u64, &u64)| busy.saturating_sub(free.saturating_sub(end_ns));
        let most = self.busy_ns.iter().zip(&self.free_ns).map(in_run).max().unwrap_or(0);
        Some(if end_ns > 0 { most as f64 / end_ns as f64 } else { 0.0 })
    }

    /// The earliest time at or before `now_ns` a held request got through the front end, taken: the engine
    /// counts each before it moves the clock past it.
    pub fn through_by(&mut self, now_ns: u64) -> Option<u64> {
        match self.held.peek() {
            Some(&Reverse(t)) if t <= now_ns => self.held.pop().map(|r| r.0),
            _ => None,
        }
    }
}
