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
mod disagg;
mod events;
mod frontend;
mod handle;
mod replica;
mod routing;
mod running;
mod sessions;
mod shared;
mod step_end;
mod workflow;

use arrivals::Arrivals;
use disagg::Links;
pub use events::Event;
use frontend::Door;
use replica::Replica;

use crate::metrics::{Recorder, RequestRecord, RunEnd};
use crate::scenario::Scenario;
use crate::workload::FollowUps;

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

/// A simulation in progress. Owns all state; events get `&mut self` (no shared pointers, nothing static).
pub struct Simulation<'a> {
    sc: &'a Scenario,
    now: u64,
    events: events::EventQueue,
    arrivals: Arrivals<'a>,
    replicas: Vec<Replica>,
    /// Where an admitted request goes: each pool's router, or the central queue.
    dispatch: routing::Dispatch,
    /// Disaggregated: the links and the prompts crossing them.
    links: Links,
    /// The way in: max_model_len, admission, the front end.
    door: Door,
    /// Every request created so far, by id: the engine's own state, which it decides from. The recorder gets
    /// the table when the run ends.
    requests: Vec<RequestRecord>,
    rec: Recorder,
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
        if let Some(w) = sim.sessions.workflows() {
            // Each worker's prefix cache keeps the forecasts' demand for each role.
            let roles = w.roles();
            sim.replicas.iter_mut().for_each(|r| r.track_demand(roles));
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
            frontend_busy: self.door.busiest_fraction(self.now),
            prefix_evictions: self.replicas.iter().map(|r| r.kv().prefix_evictions).sum(),
            pressure_evictions: self.replicas.iter().map(|r| r.kv().pressure_evictions).sum(),
            host_evictions: self.replicas.iter().map(|r| r.kv().host.as_ref().map_or(0, |h| h.evictions)).sum(),
            session_ends,
            programs,
            budget_evictions: self.replicas.iter().map(|r| r.kv().budget_evictions).sum(),
            prefetch_used: self.replicas.iter().map(|r| r.kv().cache.prefetch_used).sum(),
            prefetch_unused: self.replicas.iter().map(|r| r.kv().cache.prefetch_unused).sum(),
            learned: self.sessions.learned(),
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
                && self.sessions.expiry_is_stale(session, t)
            {
                continue;
            }
            self.now = t;
            // The front end's backlog shrinks between events: each request through it stops waiting there.
            while let Some(through) = self.door.through_by(t) {
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
