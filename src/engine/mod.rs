//! The discrete-event engine: clock, event queue, `enum Event` with one `match`.
//!
//! ```text
//!  Generator ──Arrival──▶ admission ──▶ router ──▶ waiting queue (per replica, or one central queue)
//!                                                     │ form_batch (policy order, KV reservation)
//!                                                     ▼
//!                            StepEnd ◀── cost model ── batch: decode tokens + prefill chunks
//!                               │
//!                               └─▶ tokens emitted, requests complete, KV released, next step formed
//! ```
//!
//! Time is integer nanoseconds; events at equal times pop in insertion order (FIFO), so a run is a pure
//! function of its scenario. Only this module schedules events; policies return decisions.

mod arrivals;
mod batch;
mod disagg;
mod events;
mod frontend;
mod preempt;
mod replica;
mod routing;
mod running;
mod sessions;
mod shared;
mod step_end;
mod workflow;

use arrivals::Arrivals;
use disagg::Links;
use frontend::Door;
pub(crate) use replica::Replica;
use running::Plan;
use sessions::SessionKv;
use step_end::{RarePass, Tally};

use crate::cost::StepWork;
use crate::metrics::{Limiter, Outcome, Recorder, RequestRecord, RunEnd};
use crate::scenario::{BatchFormationSpec, Role, Scenario};
use crate::sched::admission::{self, AdmitContext, Backlog};
use crate::sched::queue::{QueueItem, WaitingQueue};
use crate::workload::{FollowUps, Request};

/// Everything that can happen. One `match` in [`Simulation::run`] dispatches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The pending request arrives.
    Arrival,
    /// A replica's current step finishes.
    StepEnd { replica: u32 },
    /// A preempted request's backoff ends; it may queue again.
    Retry { request: u32 },
    /// An arrival's serving overhead (HTTP, tokenising) is over: it reaches the scheduler's queue.
    Ready { request: u32 },
    /// Disaggregated: a prompt's KV reached its decode worker.
    TransferDone { request: u32 },
    /// The earliest follow-up request (one the workload created in answer to a completion) arrives.
    FollowUp,
    /// A session's history came back from host memory: the turn waiting for it queues.
    Restored { request: u32 },
    /// A session's TTL ran out (stale, and skipped without advancing the clock, if a turn came since: the
    /// session's pending expiry is no longer this instant). One u32, so an event stays 8 bytes.
    Expire { session: u32 },
    /// A workflow's role prefix, prefetched from host memory, reached HBM.
    Prefetched { transfer: u32 },
    /// The run's horizon: stop, report what is still in the system as unfinished.
    Horizon,
}

/// Progress of a run, for front ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Requests that reached a final outcome.
    pub done: u64,
    /// Best estimate of how many requests the run will create.
    pub expected: u64,
    pub now_ns: u64,
}

impl Progress {
    pub fn fraction(&self) -> f64 {
        (self.done as f64 / self.expected.max(1) as f64).min(1.0)
    }
}

/// Why a run stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunError {
    Cancelled,
}

/// The simulated clock's end, ns (about 127 years; u64 holds 584): arrivals stay within 1e18 ns and a step
/// within `scenario::MAX_STEP_NS` (1e15 ns), so nothing real reaches it, and time sums never overflow.
pub const CLOCK_END_NS: u64 = 4_000_000_000_000_000_000;

/// What the scenario fixes for a whole run, read on hot paths.
struct Rules {
    /// Steady decoders become lazy (see [`step_end`]); false only in [`run_eager`], the reference for tests.
    lazy_steps: bool,
    /// The scenario shares prefixes at all (prefix groups, a trace's block hashes, or sessions' retained KV).
    shares_prefixes: bool,
}

/// What a replica's batch formation reads and changes outside the replica, lent by the simulation for one
/// formation: the scenario, the clock, the request table, the central queue (if any), the sessions' KV and the
/// recorder's hooks. (What the rest of the simulation must hear of it — the requests it preempted or failed —
/// the replica keeps until [`Simulation::flush_requeue`]; lending less keeps a formation's start cheap.)
struct Around<'s> {
    pub sc: &'s Scenario,
    pub now: u64,
    /// The replica's index among all workers.
    pub r: usize,
    pub shares_prefixes: bool,
    pub requests: &'s mut [RequestRecord],
    pub central: Option<&'s mut (dyn WaitingQueue + 'static)>,
    pub sessions: &'s mut [SessionKv],
    pub rec: &'s mut Recorder,
}

/// A simulation in progress. Owns all state; events get `&mut self` (no shared pointers, nothing static).
pub struct Simulation<'a> {
    pub(crate) sc: &'a Scenario,
    now: u64,
    events: events::EventQueue,
    arrivals: Arrivals<'a>,
    pub(crate) replicas: Vec<Replica>,
    /// Where an admitted request goes: each pool's router, or the central queue.
    dispatch: routing::Dispatch,
    /// Disaggregated: the links and the prompts crossing them.
    links: Links,
    /// The way in: max_model_len, admission, the front end.
    door: Door,
    /// Every request created so far, by id: the engine's own state, which it decides from. The recorder gets
    /// the table when the run ends.
    pub(crate) requests: Vec<RequestRecord>,
    pub(crate) rec: Recorder,
    rules: Rules,
    sessions: sessions::SessionState,
}

impl<'a> Simulation<'a> {
    pub fn new(sc: &'a Scenario) -> Self {
        Simulation::with_follow_ups(sc, FollowUps::None)
    }

    /// A simulation whose workload answers completions as `follow_ups` says.
    pub fn with_follow_ups(sc: &'a Scenario, follow_ups: FollowUps) -> Self {
        let replicas = (sc.pools.iter().enumerate())
            .flat_map(|(p, pool)| (0..pool.replicas as usize).map(move |local| (p, local)))
            .map(|(pool, local)| Replica::new(sc, pool, local, workflow::prefix_budget_blocks(sc)))
            .collect();
        let n_links = sc.link_count();
        let keeps = sc.workload.sessions.as_ref().is_some_and(|s| s.retention.keeps());
        let rec = Recorder::new(sc);
        let mut sim = Simulation {
            sc,
            now: 0,
            events: events::EventQueue::new(),
            arrivals: Arrivals::new(sc.generator().with_follow_ups(follow_ups)),
            replicas,
            dispatch: routing::Dispatch::new(sc),
            links: Links::new(n_links),
            door: Door::new(sc),
            requests: Vec::with_capacity(rec.expected_requests(0).min(1 << 24) as usize),
            rec,
            rules: Rules {
                lazy_steps: true,
                shares_prefixes: sc.prefix.is_some() || sc.workload.chains.is_some() || keeps,
            },
            sessions: sessions::SessionState::new(sc),
        };
        if let Some(w) = &sim.sessions.workflows {
            // Each worker's prefix cache keeps the forecasts' demand for each role.
            sim.replicas.iter_mut().for_each(|r| r.kv.shared_demand = vec![0; w.roles()]);
        }
        if let Some(at_ns) = sim.arrivals.next_arrival_ns() {
            sim.schedule(at_ns, Event::Arrival);
        }
        if let Some(h) = sc.horizon_ns {
            sim.schedule(h, Event::Horizon);
        }
        sim
    }

    fn schedule(&mut self, at_ns: u64, ev: Event) {
        debug_assert!(at_ns >= self.now, "an event in the past");
        // Past the clock's end an event never happens: the run ends with what it would have finished
        // unfinished, and the report says so (validation keeps real runs far from it).
        if at_ns > CLOCK_END_NS {
            self.rec.on_clock_end();
            return;
        }
        self.events.push(at_ns, ev);
    }

    /// Run to the end (all requests final, or the horizon). `progress` is called now and then; returning
    /// false cancels the run.
    pub fn run(mut self, progress: &mut dyn FnMut(Progress) -> bool) -> Result<Recorder, RunError> {
        while self.run_events(8192) {
            if !progress(self.progress()) {
                return Err(RunError::Cancelled);
            }
        }
        let _ = progress(self.progress());
        let (session_ends, programs) = self.arrivals.into_sessions();
        let end = RunEnd {
            end_ns: self.now,
            frontend_busy: self.door.frontend.busiest_fraction(self.now),
            prefix_evictions: self.replicas.iter().map(|r| r.kv.prefix_evictions).sum(),
            pressure_evictions: self.replicas.iter().map(|r| r.kv.pressure_evictions).sum(),
            host_evictions: self.replicas.iter().map(|r| r.kv.host.as_ref().map_or(0, |h| h.evictions)).sum(),
            session_ends,
            programs,
            budget_evictions: self.replicas.iter().map(|r| r.kv.budget_evictions).sum(),
            prefetch_used: self.replicas.iter().map(|r| r.kv.cache.prefetch_used).sum(),
            prefetch_unused: self.replicas.iter().map(|r| r.kv.cache.prefetch_unused).sum(),
            learned: self.sessions.workflows.as_ref().map_or_else(Vec::new, |w| w.learned()),
        };
        self.rec.finish(end, self.requests);
        Ok(self.rec)
    }

    /// Handle up to `n` events; false once the run is over. The event loop is a function called once per
    /// batch of events, not once per run, because a WebAssembly engine swaps in its optimised code for a
    /// function only at the next call: V8 runs a long first call to completion in its baseline tier, which
    /// made the first run in a fresh worker about twice as slow as the next.
    #[inline(never)]
    fn run_events(&mut self, n: u32) -> bool {
        for _ in 0..n {
            let Some((t, _, ev)) = self.events.pop() else { return false };
            if let Event::Expire { session } = ev
                && self.expiry_is_stale(session, t)
            {
                continue;
            }
            self.now = t;
            // The front end's backlog shrinks between events: each request through it stops waiting there.
            while let Some(through) = self.door.frontend.through_by(t) {
                self.rec.advance(through);
                self.rec.on_dequeued();
            }
            self.rec.advance(t);
            match ev {
                Event::Arrival => self.on_arrival(),
                Event::StepEnd { replica } => self.on_step_end(replica as usize),
                Event::Retry { request } => self.on_retry(request),
                Event::Ready { request } => self.on_ready(request),
                Event::TransferDone { request } => self.on_transfer_done(request),
                Event::FollowUp => self.on_follow_up(),
                Event::Restored { request } => self.on_restored(request),
                Event::Expire { session } => self.on_expire(session),
                Event::Prefetched { transfer } => self.on_prefetched(transfer),
                Event::Horizon => return false,
            }
            if self.arrivals.has_finals() {
                self.answer_completions();
            }
        }
        true
    }

    fn progress(&self) -> Progress {
        let created = self.requests.len() as u64;
        Progress { done: self.rec.n_final(created), expected: self.rec.expected_requests(created), now_ns: self.now }
    }

    fn on_arrival(&mut self) {
        let req = self.arrivals.take_arrival();
        if let Some(at_ns) = self.arrivals.next_arrival_ns() {
            self.schedule(at_ns, Event::Arrival);
        }
        self.arrive(req, 1);
    }

    fn on_follow_up(&mut self) {
        let (req, turn) = self.arrivals.take_follow_up();
        self.arrive(req, turn);
    }

    /// Requests that became final at this event: the workload may answer each with a follow-up.
    fn answer_completions(&mut self) {
        for id in self.arrivals.take_finals() {
            let done = self.requests[id as usize].request();
            let completed = self.requests[id as usize].outcome == Outcome::Completed;
            let next = self.arrivals.answer(&done, id, self.now, completed);
            if done.session != crate::workload::NO_SESSION {
                self.after_turn(id, next.is_none());
                if next.is_some() {
                    self.workflow_step_ends(id);
                }
            }
            if let Some(next) = next {
                let at = next.arrival_ns.max(self.now);
                self.arrivals.queue_answer(next, id, at, self.events.next_seq());
                self.schedule(at, Event::FollowUp);
            }
        }
    }

    /// A request arrives (turn 1: from the open-loop arrivals; later turns: follow-ups): admission, routing,
    /// its queue. Its id is its place in the record.
    fn arrive(&mut self, mut req: Request, turn: u32) {
        req.id = self.requests.len() as u32;
        self.arrivals.arrived(req.id, turn);
        if req.session != crate::workload::NO_SESSION {
            self.session_turn_arrives(&req, turn);
            if turn > 1 {
                self.workflow_step_arrives(&req, turn);
            }
        }
        let class = &self.sc.workload.classes[req.class as usize];
        // Arrivals go to the first pool (colocated, or prefill).
        let affinity = self.affinity(&req);
        let target = self.dispatch.routing[0].route(&req, affinity);
        let waiting = match target {
            Some(r) => self.replicas[r].queue.len(),
            None => self.dispatch.central.as_ref().map_or(0, |q| q.len()),
        };
        let estimate = self.door.admission.needs_estimate().then(|| self.estimate_latency(&req, target));
        let cx = AdmitContext {
            now_ns: self.now,
            waiting,
            estimate,
            ttft_objective_ns: class.slo.ttft_ns,
            tpot_objective_ns: class.slo.tpot_ns,
            deadline_ns: class.slo.e2e_ns,
        };
        let verdict = self.door.admit(&req, &cx);
        let mut record = RequestRecord::new(&req);
        record.turn = turn.min(u16::MAX as u32) as u16;
        record.replica = target.map_or(u16::MAX, |r| r as u16);
        if let Err(why) = verdict {
            record.outcome = Outcome::Rejected(why);
            record.done_ns = self.now;
            self.requests.push(record);
            self.arrivals.finished(req.id);
            return;
        }
        self.requests.push(record);
        self.rec.on_admitted();
        if let Some(r) = target {
            // Routed here: the replica's load from now on, also while its front end or a host restore holds
            // the request before its queue does.
            let rep = &mut self.replicas[r];
            rep.outstanding += 1;
            self.dispatch.routing[rep.pool].outstanding(rep.local, rep.outstanding);
        }
        let (ready_ns, held) = self.door.frontend.ready_ns(&req, target, self.now);
        if held {
            // Waiting for the API server, as much as for a batch.
            self.rec.on_queued();
        }
        if ready_ns > self.now {
            // In the system (the API server holds it) but not yet in the scheduler's queue.
            self.schedule(ready_ns, Event::Ready { request: req.id });
            return;
        }
        self.join_queue(req.id, target);
    }

    /// An arrival's serving overhead is over: it joins the queue of the replica it was routed to.
    fn on_ready(&mut self, id: u32) {
        let replica = self.requests[id as usize].replica;
        let target = (self.dispatch.central.is_none() && replica != u16::MAX).then_some(replica as usize);
        self.join_queue(id, target);
    }

    fn on_retry(&mut self, id: u32) {
        let replica = self.requests[id as usize].replica;
        let target = (self.dispatch.central.is_none() && replica != u16::MAX).then_some(replica as usize);
        // The central queue feeds the front pool.
        let pool = target.map_or(0, |r| self.replicas[r].pool);
        let (item, ahead) = self.requeued(id, pool);
        self.enqueue(item, target, ahead);
    }

    /// Put a request in its queue and start a step where one can start. `ahead`: it comes back after a
    /// preemption, ahead of the others.
    fn enqueue(&mut self, item: QueueItem, target: Option<usize>, ahead: bool) {
        self.rec.on_queued();
        match target {
            Some(r) => {
                let rep = &mut self.replicas[r];
                if ahead {
                    rep.queue.requeue(item)
                } else {
                    rep.queue.push(item)
                }
                self.try_start(r);
            }
            None => {
                let q = self.dispatch.central.as_mut().expect("no target means the central queue");
                if ahead {
                    q.requeue(item)
                } else {
                    q.push(item)
                }
                self.kick_idle();
            }
        }
    }

    /// Central queue: the first idle replica takes work. O(log N).
    fn kick_idle(&mut self) {
        while let Some(&r) = self.dispatch.idle.first() {
            if self.dispatch.central.as_ref().is_none_or(|q| q.is_empty()) {
                return;
            }
            self.try_start(r as usize);
            if self.dispatch.idle.contains(&r) {
                return; // it could not take the head: nobody idle can
            }
        }
    }

    /// A preempted request's queue entry on a worker of `pool`, and whether it goes back ahead of others.
    /// vLLM puts it back at the front; SGLang appends a retracted request to its waiting queue, so it queues
    /// as if it arrived now.
    fn requeued(&self, id: u32, pool: usize) -> (QueueItem, bool) {
        let item = self.queue_item(id);
        if self.sc.pools[pool].engine.formation.is_vllm() {
            (item, true)
        } else {
            (QueueItem { arrival_ns: self.now, ..item }, false)
        }
    }

    pub(crate) fn queue_item(&self, id: u32) -> QueueItem {
        let r = &self.requests[id as usize];
        let class = &self.sc.workload.classes[r.class as usize];
        QueueItem {
            id,
            arrival_ns: r.arrival_ns,
            tenant: r.tenant,
            priority: class.priority,
            prompt_tokens: r.prompt_tokens,
            pred_order_tokens: r.pred_order_tokens,
            deadline_ns: class.slo.e2e_ns.map_or(u64::MAX, |d| r.arrival_ns.saturating_add(d)),
        }
    }

    /// Deadline or feasibility admission's estimate for `req` joining `target` (None: the central queue); the
    /// policy module computes it from the backlog the engine reads off.
    fn estimate_latency(&self, req: &Request, target: Option<usize>) -> admission::Estimate {
        let pool = &self.sc.front_pool();
        let seqs = pool.engine.max_num_seqs as usize;
        // With a central queue, the queue ahead is shared by every replica, and drains at all their rates.
        let backlog = match target {
            Some(r) => {
                let rep = &self.replicas[r];
                Backlog {
                    ahead: rep.queue.len(),
                    running: rep.batch.len(),
                    servers: 1.0,
                    free_seqs: seqs.saturating_sub(rep.batch.len()),
                    per_completion_ns: rep.drain.per_completion_ns(),
                    per_step_ns: rep.drain.per_step_ns(),
                }
            }
            None => {
                let rates: Vec<f64> = self.replicas.iter().map(|r| r.drain.per_completion_ns()).collect();
                Backlog {
                    ahead: self.dispatch.central.as_ref().map_or(0, |q| q.len()),
                    running: self.replicas.iter().map(|r| r.batch.len()).min().unwrap_or(0),
                    servers: self.replicas.len() as f64,
                    free_seqs: self.replicas.iter().map(|r| seqs.saturating_sub(r.batch.len())).sum(),
                    // Until every replica has a rate, none is assumed (the prefill-rate estimate stands in).
                    per_completion_ns: if rates.iter().all(|x| *x > 0.0) {
                        1.0 / rates.iter().map(|x| 1.0 / x).sum::<f64>()
                    } else {
                        0.0
                    },
                    // The step it would run at: the longest a replica has been taking (the one it may land on).
                    per_step_ns: self.replicas.iter().map(|r| r.drain.per_step_ns()).fold(0.0, f64::max),
                }
            }
        };
        let chunk = pool.engine.prefill_chunk_tokens;
        match self.door.admission.reads_drain_rate() {
            true => admission::feasible_estimate(req, &backlog, &pool.cost, chunk),
            false => {
                let e2e_ns = admission::deadline_estimate_ns(req, &backlog, &pool.cost, chunk);
                admission::Estimate { ttft_ns: f64::NAN, e2e_ns, tpot_ns: f64::NAN }
            }
        }
    }

    /// Worker `r`'s KV changed outside a step: the recorder's gauges, and a step if the room lets one start.
    fn kv_changed(&mut self, r: usize) {
        let rep = &self.replicas[r];
        self.rec.on_kv_change(r, rep.batch.len() as u64, rep.kv.used());
        self.note_retained(r);
        self.try_start(r);
    }

    /// Replica `r`, and what its formation reads and changes outside it.
    #[inline(always)]
    fn around(&mut self, r: usize) -> (&mut Replica, Around<'_>) {
        let Simulation { sc, now, replicas, dispatch, requests, rec, rules, sessions, .. } = self;
        let cx = Around {
            sc,
            now: *now,
            r,
            shares_prefixes: rules.shares_prefixes,
            requests,
            central: dispatch.central.as_deref_mut(),
            sessions: &mut sessions.kv,
            rec,
        };
        (&mut replicas[r], cx)
    }

    /// What stops admission to replica `r` (with `budget` tokens left in the step) before it looks at a
    /// request (see [`Replica::admission_closed`]).
    #[inline(always)]
    fn admission_closed(&self, r: usize, budget: u32) -> Option<Limiter> {
        let rep = &self.replicas[r];
        rep.admission_closed(&self.sc.pools[rep.pool].engine, self.dispatch.central.as_deref(), budget)
    }

    /// Form and start a step on replica `r` if it is idle and has work.
    fn try_start(&mut self, r: usize) {
        self.start_step(r, Plan::new(&self.sc.pools[self.replicas[r].pool].engine));
    }

    /// Finish forming a step from `plan` and start it, if the replica is idle and has work.
    fn start_step(&mut self, r: usize, plan: Plan) {
        if self.replicas[r].busy {
            return;
        }
        let (rep, mut cx) = self.around(r);
        let (work, limiter) = rep.form_batch(plan, &mut cx);
        self.note_retained(r);
        self.flush_requeue(r);
        if work.seqs() == 0 {
            debug_assert_eq!(self.replicas[r].batch.lazy_count(), 0, "lazy requests outside a step");
            self.replicas[r].new_token_ratio.reset(); // SGLang's idle check (vLLM's formation never reads it)
            if self.dispatch.central.is_some() {
                self.dispatch.idle.insert(r as u32);
            }
            return;
        }
        self.launch(r, &work, limiter);
    }

    /// Start replica `r`'s formed step, of `work` (not empty); `limiter` stopped its admission.
    fn launch(&mut self, r: usize, work: &StepWork, limiter: Limiter) {
        let rep = &mut self.replicas[r];
        let cost = self.sc.pools[rep.pool].cost.step(work);
        rep.busy = true;
        rep.step_ns = cost.total_ns;
        if self.dispatch.central.is_some() {
            self.dispatch.idle.remove(&(r as u32));
        }
        self.dispatch.routing[rep.pool].kv_used(rep.local, rep.kv.used(), rep.kv.total());
        self.rec.on_step(r, work, &cost, limiter, rep.batch.len() as u64, rep.kv.used());
        self.schedule(self.now.saturating_add(cost.total_ns), Event::StepEnd { replica: r as u32 });
        // Forming the batch may have evicted cached prefixes.
        self.note_prefix_held(r);
    }

    /// Requests preempted while forming a batch go back to their queue (or wait out a backoff); those that
    /// failed are final; the router hears the replica's count.
    fn flush_requeue(&mut self, r: usize) {
        let rep = &mut self.replicas[r];
        if rep.requeue.is_empty() && rep.failed.is_empty() {
            return;
        }
        let central = self.dispatch.central.is_some();
        if central || !rep.failed.is_empty() {
            self.dispatch.routing[rep.pool].outstanding(rep.local, rep.outstanding);
        }
        for id in std::mem::take(&mut rep.failed) {
            self.arrivals.finished(id);
        }
        for id in std::mem::take(&mut self.replicas[r].requeue) {
            let n = self.requests[id as usize].preemptions as u32;
            let backoff = self.sc.pools[self.replicas[r].pool].engine.backoff_ns;
            if backoff > 0 {
                let at = self.now.saturating_add(backoff.saturating_mul(1u64 << (n - 1).min(30)));
                self.schedule(at, Event::Retry { request: id });
            } else {
                let (item, ahead) = self.requeued(id, self.replicas[r].pool);
                self.rec.on_queued();
                let q = match &mut self.dispatch.central {
                    Some(q) => q,
                    None => &mut self.replicas[r].queue,
                };
                if ahead { q.requeue(item) } else { q.push(item) }
            }
        }
        if central {
            self.kick_idle();
        }
    }

    /// A step ended: emit tokens, complete requests, and — in the same pass — plan the surviving requests'
    /// part of the next step (see [`step_end`]). The plan is the one a separate pass would make: allocations
    /// that succeed here would succeed after the releases too, and at the first that fails planning stops and
    /// resumes in `form_batch` after every release.
    fn on_step_end(&mut self, r: usize) {
        let rep = &mut self.replicas[r];
        let pool = &self.sc.pools[rep.pool];
        let en = &pool.engine;
        rep.busy = false;
        // vLLM's formation is planned in the step end's pass. SGLang's is planned from scratch, except when its
        // next step can only decode (see `sglang_decodes_next`): then it is the pass's plan too.
        // (Checked here first: vLLM's hot step end does not pay the call.)
        let sglang_decodes = !en.formation.is_vllm() && self.rules.lazy_steps && self.sglang_decodes_next(r);
        let rep = &mut self.replicas[r];
        let (budget, lazy) = match en.formation {
            BatchFormationSpec::Vllm => (en.max_num_batched_tokens, self.rules.lazy_steps),
            // Non-mixed SGLang gives decodes no token budget; mixed, the step's.
            BatchFormationSpec::Sglang if sglang_decodes => (u32::MAX, true),
            BatchFormationSpec::SglangMixed if sglang_decodes => (en.max_num_batched_tokens, true),
            _ => (0, false),
        };
        if let Some((ended, tally)) = rep.batch.coast(&mut rep.kv, en, budget) {
            if sglang_decodes {
                rep.new_token_ratio.decay(); // what `retract_for_decode` does when nothing is retracted
            }
            return self.coasted(r, ended, &tally);
        }
        let mut pass = RarePass {
            now: self.now,
            step_ns: rep.step_ns,
            requests: &mut self.requests,
            itl: self.rec.itl_sink(),
            kv: &mut rep.kv,
            prefill_role: pool.role == Role::Prefill,
            handoff: Vec::new(),
            block: en.block_size_tokens,
            prefix: match &self.sc.prefix {
                Some(p) if p.caching && pool.role != Role::Decode => p.shared_tokens,
                _ => 0,
            },
            chains: self.sc.workload.chains.as_ref(),
            retain_sessions: self.sessions.tracks_retention,
            sessions: &mut self.sessions.kv,
            turn_end: sessions::TurnEnd::of(self.sc, &self.sessions.gap_estimator),
            tally: Tally::default(),
            stuck_at: None,
            completed: self.arrivals.finals_sink(),
        };
        let ended = rep.batch.end_step(&mut pass, en, budget, lazy);
        let RarePass { tally, handoff, .. } = pass;
        self.settle_step_end(r, &tally, ended.held_blocks, &handoff);
        if sglang_decodes && !self.replicas[r].batch.is_empty() {
            // The pass planned every survivor's decode token, as SGLang's formation would have: no retraction
            // (the blocks were free), the ratio decays, and with nothing waiting no prompt joins.
            debug_assert!(handoff.is_empty() && ended.from == self.replicas[r].batch.len());
            self.replicas[r].new_token_ratio.decay();
            let limiter = self.admission_closed(r, ended.budget).expect("nothing waits");
            self.launch(r, &ended.work, limiter);
        } else {
            self.start_step(r, Plan { work: ended.work, budget: ended.budget, from: ended.from });
        }
        for (id, blocks, shared_group) in handoff {
            self.start_transfer(id, r, blocks, shared_group);
        }
        if self.dispatch.central.is_some() {
            self.kick_idle();
        }
    }

    /// Whether SGLang's formation of replica `r`'s next step, at this step end, can only decode every running
    /// request, one token each, with no retraction: nothing waits to be admitted, no running prompt has a chunk
    /// left after this step, and the free blocks cover a new block for every request. That step is the one
    /// vLLM's pass plans with the budget SGLang gives decodes, so it may be planned there — and coast, lazy, as
    /// vLLM's does — instead of from scratch. For SGLang's formations only (vLLM's caller does not ask).
    #[inline(never)]
    fn sglang_decodes_next(&self, r: usize) -> bool {
        let rep = &self.replicas[r];
        let en = &self.sc.pools[rep.pool].engine;
        debug_assert!(!en.formation.is_vllm(), "vLLM's step end plans in its pass");
        if self.sc.pools[rep.pool].role == Role::Prefill {
            return false;
        }
        let n = rep.batch.len() as u64;
        let budget_ok = en.formation == BatchFormationSpec::Sglang || n <= en.max_num_batched_tokens as u64;
        // A lazy batch is all decoders; otherwise each is looked at (a step end off the coasting path).
        let decoders = rep.batch.lazy_count() == n
            || rep.batch.requests().iter().all(|s| s.prefilled + s.step_tokens >= s.prefill_target);
        rep.waiting(self.dispatch.central.as_deref()) == 0 && budget_ok && n <= rep.kv.free() && decoders
    }

    /// The rest of a step end that [`Batch::coast`] made: the books, and the next step (whose formation may
    /// still admit from the queue).
    fn coasted(&mut self, r: usize, ended: step_end::Ended, tally: &Tally) {
        self.rec.on_coasted();
        self.settle_step_end(r, tally, ended.held_blocks, &[]);
        // Every running request is planned; unless formation may admit, the step is formed (and nothing
        // formation would note — retained KV, preemptions — changed).
        match self.admission_closed(r, ended.budget) {
            Some(limiter) => self.launch(r, &ended.work, limiter),
            None => self.start_step(r, Plan { work: ended.work, budget: ended.budget, from: ended.from }),
        }
        if self.dispatch.central.is_some() {
            self.kick_idle();
        }
    }

    /// The books after replica `r`'s step end: KV released, reservations given back, prompts handed to the
    /// link (they keep their blocks here until the transfer ends), the prefix cache's size, the router's
    /// loads, the audit, and the recorder's gauges — which see the state between the steps: after the
    /// releases, before the next step's allocations.
    #[inline(always)]
    fn settle_step_end(&mut self, r: usize, t: &Tally, held_blocks: u64, handoff: &[(u32, u64, Option<u16>)]) {
        let rep = &mut self.replicas[r];
        rep.kv.release(t.released);
        rep.reserved_blocks -= t.unreserved;
        rep.transfer_blocks += handoff.iter().map(|h| h.1).sum::<u64>();
        let left = t.finished as u64 + handoff.len() as u64;
        rep.outstanding -= left;
        // Kept only for the admission that reads it.
        if self.door.admission.reads_drain_rate() {
            rep.drain.on_completions(self.now, t.finished);
            rep.drain.on_step(rep.step_ns);
        }
        if left > 0 {
            self.dispatch.routing[rep.pool].outstanding(rep.local, rep.outstanding);
        }
        let kv_ok =
            rep.kv.consistent() && held_blocks + rep.transfer_blocks + rep.kv.cache.held_blocks == rep.kv.used();
        let (n_running, kv_between) = (rep.batch.len() as u64, rep.kv.used() - t.allocated);
        self.rec.on_step_end(r, rep.step_ns, t.bulk_itl, t.emitted_n, t.finished, n_running, kv_between, kv_ok);
        self.note_prefix_held(r);
        self.note_retained(r);
    }
}

/// Run a scenario to completion.
pub fn run(sc: &Scenario) -> Recorder {
    Simulation::new(sc).run(&mut |_| true).expect("a run that is never cancelled cannot fail")
}

/// Run with every running request taking the general path at every step end (no lazy requests): slower,
/// and the reference the lazy step end must equal exactly. For tests.
#[doc(hidden)]
pub fn run_eager(sc: &Scenario) -> Recorder {
    let mut sim = Simulation::new(sc);
    sim.rules.lazy_steps = false;
    sim.run(&mut |_| true).expect("a run that is never cancelled cannot fail")
}

/// Run with the workload answering completions as `follow_ups` says (the mechanism closed-loop clients and
/// session turns use; for tests until they land).
#[doc(hidden)]
pub fn run_with_follow_ups(sc: &Scenario, follow_ups: FollowUps) -> Recorder {
    Simulation::with_follow_ups(sc, follow_ups).run(&mut |_| true).expect("a run that is never cancelled cannot fail")
}

/// Run with a progress callback that may cancel.
pub fn run_with_progress(sc: &Scenario, progress: &mut dyn FnMut(Progress) -> bool) -> Result<Recorder, RunError> {
    Simulation::new(sc).run(progress)
}
