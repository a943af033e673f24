//! What each event does: the simulation's handlers, and the steps they share. Each asks the parts
//! (arrivals, replicas, the routers, the door, the links, the sessions' state) and tells the others what
//! changed; only here and in engine/mod.rs are events scheduled.

use super::disagg::{self, Transfer};
use super::replica::{Around, Replica, Settled};
use super::running::Plan;
use super::step_end::{self, Handoff, Lent, Tally};
use super::workflow::Pending;
use super::{Event, Simulation};
use crate::cost::StepWork;
use crate::metrics::{Decision, Limiter, Outcome, RequestRecord};
use crate::scenario::{BatchFormationSpec, Role};
use crate::sched::admission::{self, AdmitContext, Backlog};
use crate::sched::queue::QueueItem;
use crate::workload::{NO_SESSION, Request};

impl Simulation<'_> {
    pub(super) fn on_arrival(&mut self) {
        let req = self.arrivals.take_arrival();
        if let Some(at_ns) = self.arrivals.next_arrival_ns() {
            self.schedule(at_ns, Event::Arrival);
        }
        self.arrive(req, 1);
    }

    pub(super) fn on_follow_up(&mut self) {
        let (req, turn) = self.arrivals.take_follow_up();
        self.arrive(req, turn);
    }

    /// Requests that became final at this event: the workload may answer each with a follow-up.
    pub(super) fn answer_completions(&mut self) {
        for id in self.arrivals.take_finals() {
            let done = self.requests[id as usize].request();
            let completed = self.requests[id as usize].outcome == Outcome::Completed;
            let next = self.arrivals.answer(&done, id, self.now, completed);
            if done.session != NO_SESSION {
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
        let affinity = self.sessions.affinity(&req);
        let target = self.dispatch.route(0, &req, affinity);
        let waiting = match target {
            Some(r) => self.replicas[r].queued(),
            None => self.dispatch.central().map_or(0, |q| q.len()),
        };
        let estimate = self.door.needs_estimate().then(|| self.estimate_latency(&req, target));
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
            let n = rep.routed_in();
            self.dispatch.outstanding(rep.pool(), rep.local(), n);
        }
        let (ready_ns, held) = self.door.ready_ns(&req, target, self.now);
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
    pub(super) fn on_ready(&mut self, id: u32) {
        let replica = self.requests[id as usize].replica;
        let target = (!self.dispatch.is_central() && replica != u16::MAX).then_some(replica as usize);
        self.join_queue(id, target);
    }

    pub(super) fn on_retry(&mut self, id: u32) {
        let replica = self.requests[id as usize].replica;
        let target = (!self.dispatch.is_central() && replica != u16::MAX).then_some(replica as usize);
        // The central queue feeds the front pool.
        let pool = target.map_or(0, |r| self.replicas[r].pool());
        let (item, ahead) = self.requeued(id, pool);
        self.enqueue(item, target, ahead);
    }

    /// Put a request in its queue and start a step where one can start. `ahead`: it comes back after a
    /// preemption, ahead of the others.
    fn enqueue(&mut self, item: QueueItem, target: Option<usize>, ahead: bool) {
        self.rec.on_queued();
        match target {
            Some(r) => {
                self.replicas[r].join_queue(item, ahead);
                self.try_start(r);
            }
            None => {
                let q = self.dispatch.central_mut().expect("no target means the central queue");
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
        while let Some(r) = self.dispatch.first_idle() {
            if self.dispatch.central().is_none_or(|q| q.is_empty()) {
                return;
            }
            self.try_start(r);
            if self.dispatch.is_idle(r) {
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

    fn queue_item(&self, id: u32) -> QueueItem {
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
            Some(r) => self.replicas[r].backlog(seqs),
            None => {
                let rates: Vec<f64> = self.replicas.iter().map(|r| r.drain().per_completion_ns()).collect();
                Backlog {
                    ahead: self.dispatch.central().map_or(0, |q| q.len()),
                    running: self.replicas.iter().map(|r| r.running()).min().unwrap_or(0),
                    servers: self.replicas.len() as f64,
                    free_seqs: self.replicas.iter().map(|r| seqs.saturating_sub(r.running())).sum(),
                    // Until every replica has a rate, none is assumed (the prefill-rate estimate stands in).
                    per_completion_ns: if rates.iter().all(|x| *x > 0.0) {
                        1.0 / rates.iter().map(|x| 1.0 / x).sum::<f64>()
                    } else {
                        0.0
                    },
                    // The step it would run at: the longest a replica has been taking (the one it may land on).
                    per_step_ns: self.replicas.iter().map(|r| r.drain().per_step_ns()).fold(0.0, f64::max),
                }
            }
        };
        let chunk = pool.engine.prefill_chunk_tokens;
        match self.door.reads_drain_rate() {
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
        self.rec.on_kv_change(r, rep.running() as u64, rep.kv().used());
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
            central: dispatch.central_mut(),
            sessions: sessions.kv_mut(),
            rec,
        };
        (&mut replicas[r], cx)
    }

    /// What stops admission to replica `r` (with `budget` tokens left in the step) before it looks at a
    /// request (see [`Replica::admission_closed`]).
    #[inline(always)]
    fn admission_closed(&self, r: usize, budget: u32) -> Option<Limiter> {
        let rep = &self.replicas[r];
        rep.admission_closed(&self.sc.pools[rep.pool()].engine, self.dispatch.central(), budget)
    }

    /// Form and start a step on replica `r` if it is idle and has work.
    fn try_start(&mut self, r: usize) {
        self.start_step(r, Plan::new(&self.sc.pools[self.replicas[r].pool()].engine));
    }

    /// Finish forming a step from `plan` and start it, if the replica is idle and has work.
    fn start_step(&mut self, r: usize, plan: Plan) {
        if self.replicas[r].is_busy() {
            return;
        }
        let (rep, mut cx) = self.around(r);
        let (work, limiter) = rep.form_batch(plan, &mut cx);
        self.note_retained(r);
        self.flush_requeue(r);
        if work.seqs() == 0 {
            self.replicas[r].went_idle();
            self.dispatch.set_idle(r, true);
            return;
        }
        self.launch(r, &work, limiter);
    }

    /// Start replica `r`'s formed step, of `work` (not empty); `limiter` stopped its admission.
    fn launch(&mut self, r: usize, work: &StepWork, limiter: Limiter) {
        let rep = &mut self.replicas[r];
        let cost = self.sc.pools[rep.pool()].cost.step(work);
        rep.launch(cost.total_ns);
        self.dispatch.set_idle(r, false);
        self.dispatch.kv_used(rep.pool(), rep.local(), rep.kv().used(), rep.kv().total());
        self.rec.on_step(r, work, &cost, limiter, rep.running() as u64, rep.kv().used());
        self.schedule(self.now.saturating_add(cost.total_ns), Event::StepEnd { replica: r as u32 });
        // Forming the batch may have evicted cached prefixes.
        self.note_prefix_held(r);
    }

    /// Requests preempted while forming a batch go back to their queue (or wait out a backoff); those that
    /// failed are final; the router hears the replica's count.
    fn flush_requeue(&mut self, r: usize) {
        let rep = &mut self.replicas[r];
        if !rep.has_preempted() {
            return;
        }
        let central = self.dispatch.is_central();
        let failed = rep.take_failed();
        if central || !failed.is_empty() {
            self.dispatch.outstanding(rep.pool(), rep.local(), rep.outstanding());
        }
        for id in failed {
            self.arrivals.finished(id);
        }
        let pool = rep.pool();
        for id in self.replicas[r].take_requeue() {
            let n = self.requests[id as usize].preemptions as u32;
            let backoff = self.sc.pools[pool].engine.backoff_ns;
            if backoff > 0 {
                let at = self.now.saturating_add(backoff.saturating_mul(1u64 << (n - 1).min(30)));
                self.schedule(at, Event::Retry { request: id });
            } else {
                let (item, ahead) = self.requeued(id, pool);
                self.rec.on_queued();
                match self.dispatch.central_mut() {
                    Some(q) if ahead => q.requeue(item),
                    Some(q) => q.push(item),
                    None => self.replicas[r].join_queue(item, ahead),
                }
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
    pub(super) fn on_step_end(&mut self, r: usize) {
        let pool = &self.sc.pools[self.replicas[r].pool()];
        let en = &pool.engine;
        // vLLM's formation is planned in the step end's pass. SGLang's is planned from scratch, except when its
        // next step can only decode (see `Replica::sglang_decodes_next`): then it is the pass's plan too.
        // (Checked here first: vLLM's hot step end does not pay the call.)
        let sglang_decodes = !en.formation.is_vllm()
            && self.rules.lazy_steps
            && self.replicas[r].sglang_decodes_next(pool, self.dispatch.central());
        let (budget, lazy) = match en.formation {
            BatchFormationSpec::Vllm => (en.max_num_batched_tokens, self.rules.lazy_steps),
            // Non-mixed SGLang gives decodes no token budget; mixed, the step's.
            BatchFormationSpec::Sglang if sglang_decodes => (u32::MAX, true),
            BatchFormationSpec::SglangMixed if sglang_decodes => (en.max_num_batched_tokens, true),
            _ => (0, false),
        };
        let rep = &mut self.replicas[r];
        rep.step_ended();
        if let Some((ended, tally)) = rep.coast(en, budget, sglang_decodes) {
            return self.coasted(r, ended, &tally);
        }
        let (retain_sessions, sessions, turn_end) = self.sessions.for_step_end(self.sc);
        let lent = Lent {
            now: self.now,
            requests: &mut self.requests,
            itl: self.rec.itl_sink(),
            prefill_role: pool.role == Role::Prefill,
            block: en.block_size_tokens,
            prefix: match &self.sc.prefix {
                Some(p) if p.caching && pool.role != Role::Decode => p.shared_tokens,
                _ => 0,
            },
            chains: self.sc.workload.chains.as_ref(),
            retain_sessions,
            sessions,
            turn_end,
            completed: self.arrivals.finals_sink(),
        };
        let (ended, tally, handoff) = rep.end_step(lent, en, budget, lazy);
        self.settle_step_end(r, &tally, ended.held_blocks, &handoff);
        if sglang_decodes && self.replicas[r].running() > 0 {
            // The pass planned every survivor's decode token, as SGLang's formation would have: no retraction
            // (the blocks were free), the ratio decays, and with nothing waiting no prompt joins.
            debug_assert!(handoff.is_empty() && ended.from == self.replicas[r].running());
            self.replicas[r].decay_ratio();
            let limiter = self.admission_closed(r, ended.budget).expect("nothing waits");
            self.launch(r, &ended.work, limiter);
        } else {
            self.start_step(r, Plan { work: ended.work, budget: ended.budget, from: ended.from });
        }
        for (id, blocks, shared_group) in handoff {
            self.start_transfer(id, r, blocks, shared_group);
        }
        if self.dispatch.is_central() {
            self.kick_idle();
        }
    }

    /// The rest of a step end that `Replica::coast` made: the books, and the next step (whose formation may
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
        if self.dispatch.is_central() {
            self.kick_idle();
        }
    }

    /// The books after replica `r`'s step end: KV released, reservations given back, prompts handed to the
    /// link (they keep their blocks here until the transfer ends), the prefix cache's size, the router's
    /// loads, the audit, and the recorder's gauges — which see the state between the steps: after the
    /// releases, before the next step's allocations.
    #[inline(always)]
    fn settle_step_end(&mut self, r: usize, t: &Tally, held_blocks: u64, handoff: &[Handoff]) {
        let handed = (handoff.len() as u64, handoff.iter().map(|h| h.1).sum::<u64>());
        let rep = &mut self.replicas[r];
        let books = rep.settle(t, held_blocks, handed, self.now, self.door.reads_drain_rate());
        if books.left > 0 {
            self.dispatch.outstanding(rep.pool(), rep.local(), rep.outstanding());
        }
        let n_running = rep.running() as u64;
        let Settled { step_ns, kv_between, kv_ok, .. } = books;
        self.rec.on_step_end(r, step_ns, t.bulk_itl, t.emitted_n, t.finished, n_running, kv_between, kv_ok);
        self.note_prefix_held(r);
        self.note_retained(r);
    }

    /// A session's turn `turn` arrives: a new session's state; history a traced agent compacted away is freed;
    /// the call that ended is scored and learned from; what the turn's end will do with the history is decided.
    fn session_turn_arrives(&mut self, req: &Request, turn: u32) {
        let s = req.session;
        if self.sessions.open(s) {
            self.rec.on_session_start(self.now);
        }
        if turn > 1
            && let Some(holder) = self.sessions.holder(s)
            && self.sessions.tracks_retention()
            && !self.arrivals.continues_history(req, turn)
        {
            // A traced agent compacted its history: what was kept is no prefix of this prompt.
            self.free_session_kv(holder, s);
        }
        if turn > 1
            && let Some(gap) = self.sessions.call_returned(s, self.now, self.sc)
        {
            self.rec.on_tool_gap(gap);
        }
        self.sessions.plan_turn(self.sc, &self.arrivals, req, turn);
    }

    /// An admitted turn reaches the scheduler: if its worker holds its history in host memory (and not in
    /// HBM), the history comes back over the host link first; otherwise it queues now.
    fn join_queue(&mut self, id: u32, target: Option<usize>) {
        let session = self.requests[id as usize].session;
        if let Some(r) = target
            && session != NO_SESSION
            && self.sc.front_pool().engine.host.is_some()
            && self.sessions.holder(session) == Some(r)
            && self.replicas[r].hosts_only(session)
        {
            self.start_restore(id, r);
            return;
        }
        let item = self.queue_item(id);
        self.enqueue(item, target, false);
    }

    /// Restore request `id`'s history from worker `r`'s host memory: HBM blocks now (if they cannot be had
    /// the history is dropped and the turn recomputes), then the link — a FIFO server, bytes ÷ bandwidth —
    /// and its latency.
    fn start_restore(&mut self, id: u32, r: usize) {
        let session = self.requests[id as usize].session;
        let engine = &self.sc.front_pool().engine;
        let host = engine.host.expect("restores need a host tier");
        let Some(blocks) = self.replicas[r].restore_from_host(session, engine.retention_budget_blocks) else {
            self.note_retained(r);
            let item = self.queue_item(id);
            self.enqueue(item, Some(r), false);
            return;
        };
        let done = self.sessions.restoring(session, &host, r, blocks, self.now);
        self.rec.on_restore(done - self.now, (blocks as f64 * host.block_bytes).round() as u64);
        self.note_retained(r);
        self.schedule(done, Event::Restored { request: id });
    }

    /// A restore landed: the history is in HBM again, held for the turn that waits for it, and the turn queues.
    pub(super) fn on_restored(&mut self, id: u32) {
        let (session, r) = (self.requests[id as usize].session, self.requests[id as usize].replica as usize);
        let blocks = self.sessions.restored(session);
        self.replicas[r].land_restore(session, blocks);
        let item = self.queue_item(id);
        self.enqueue(item, Some(r), false);
        self.note_retained(r);
    }

    /// A session's turn ended (completed, refused or failed) and `ends` says whether the session ends with it.
    /// A completed turn's worker becomes the holder (a copy left on an earlier holder is freed); a session's
    /// end frees what it holds; a TTL starts.
    fn after_turn(&mut self, id: u32, ends: bool) {
        let rec = &self.requests[id as usize];
        let (s, completed, r) = (rec.session, rec.outcome == Outcome::Completed, rec.replica as usize);
        if completed {
            self.sessions.turn_completed(s, self.now, self.sc);
            if let Some(old) = self.sessions.hand_over(s, r) {
                self.free_session_kv(old, s);
            }
        }
        if ends {
            if let Some(holder) = self.sessions.end(s) {
                self.free_session_kv(holder, s);
            }
            self.rec.on_session_end(s, self.now);
            return;
        }
        if completed
            && let Some(ttl) = self.sessions.ttl_ns(s, self.sc)
            && self.replicas[r].holds_session(s)
        {
            let at = self.now.saturating_add(ttl);
            self.sessions.expire_at(s, at);
            self.schedule(at, Event::Expire { session: s });
        }
    }

    /// A session's TTL ran out in a tool gap: its idle history leaves HBM for the host tier, or is freed.
    pub(super) fn on_expire(&mut self, session: u32) {
        let r = self.sessions.expire(session);
        if self.replicas[r].offload_session(session) {
            self.rec.on_ttl_eviction();
            self.kv_changed(r);
        }
    }

    /// Free what worker `r` holds of session `s`, in HBM (when idle) and in host memory.
    fn free_session_kv(&mut self, r: usize, s: u32) {
        if self.replicas[r].free_session(s) {
            self.kv_changed(r);
        }
    }

    /// Keep the recorder's retained-KV gauges (idle session history in HBM, history in host memory) current
    /// for worker `r`.
    fn note_retained(&mut self, r: usize) {
        if !self.sessions.tracks_retention() {
            return;
        }
        let (hbm, host) = self.replicas[r].retained_blocks();
        if let Some((d_hbm, d_host)) = self.sessions.retained_moved(r, hbm, host) {
            self.rec.on_retained(self.now, d_hbm, d_host, hbm);
        }
    }

    /// Step `turn` (≥ 2) of `req`'s workflow arrived: its role is seen now — the forecast its predecessor's end
    /// made is scored (its demand leaves that worker's prefixes), and the model learns the transition.
    fn workflow_step_arrives(&mut self, req: &Request, turn: u32) {
        let Some(w) = self.sessions.workflows_mut() else { return };
        let seen = w.step_arrives(self.arrivals.program(req.session), req.session, turn);
        if let Some((r, demand)) = seen.demand() {
            self.replicas[r].demand(demand, false);
        }
        self.rec.on_role_seen(&seen.role_seen());
    }

    /// Step `id` of a workflow ended with another to come: forecast the coming roles, plan, and fetch what
    /// the plan wants and its worker lacks.
    fn workflow_step_ends(&mut self, id: u32) {
        let Some(w) = self.sessions.workflows() else { return };
        let rec = &self.requests[id as usize];
        let (s, r, k) = (rec.session, rec.replica as usize, rec.turn as usize);
        let (forecast, future_k) = w.forecast(self.sc, self.arrivals.program(s), k);
        let p = match &forecast {
            Some(f) => w.plan(self.sc, f, r, self.replicas[r].kv()),
            None => Default::default(),
        };
        // The forecast's demand steers which idle prefixes the budget keeps while the step is awaited.
        let demand: Vec<u64> =
            forecast.as_ref().map_or_else(Vec::new, |f| f.within.iter().map(|p| (p * 1e6).round() as u64).collect());
        self.replicas[r].demand(&demand, true);
        let mut fetched = 0u64;
        for &role in &p.fetch {
            if self.start_prefetch(r, role) {
                fetched |= 1 << role;
            }
        }
        self.rec.on_prefetch_decision(Decision { at_ns: self.now, session: s, wanted: p.wanted, fetched });
        let pending = Pending::new(forecast, p.wanted, fetched, future_k, r, demand);
        self.sessions.workflows_mut().expect("checked").pend(s, pending);
    }

    /// Fetch `role`'s prefix to worker `r`: HBM blocks now (none to be had: no prefetch), then the host link —
    /// a FIFO server shared with restores — and its latency. Whether it started.
    fn start_prefetch(&mut self, r: usize, role: u16) -> bool {
        let w = self.sessions.workflows_mut().expect("a workflow");
        let blocks = w.prefix_blocks();
        if !self.replicas[r].reserve_transfer(blocks) {
            return false;
        }
        let transfer = w.prefetching(r, role, blocks);
        let host = self.sc.front_pool().engine.host.expect("validation: prefetching needs a host tier");
        let done = self.sessions.book_host_link(&host, r, blocks, self.now);
        self.rec.on_prefetch((blocks as f64 * host.block_bytes).round() as u64);
        self.note_prefix_held(r);
        self.schedule(done, Event::Prefetched { transfer });
        true
    }

    /// A prefetch landed: the prefix joins worker `r`'s cache idle, within its budget (or, cached meanwhile,
    /// the copy is freed).
    pub(super) fn on_prefetched(&mut self, transfer: u32) {
        let w = self.sessions.workflows_mut().expect("a prefetch means a workflow");
        let (r, role, blocks) = w.landed(transfer);
        let joined = self.replicas[r].land_prefetch(role, blocks);
        self.rec.on_prefetch_landed(joined);
        self.note_prefix_held(r);
        self.kv_changed(r);
    }

    /// Keep the recorder's prefix-cache gauge current for worker `r` (called at every step's start and end).
    #[inline]
    fn note_prefix_held(&mut self, r: usize) {
        if !self.rules.shares_prefixes {
            return;
        }
        self.rec.on_prefix_held(self.now, r, self.replicas[r].prefix_held());
    }

    /// Disaggregated: request `id` finished prefill on worker `from`, its prompt's KV (`blocks` there)
    /// goes to a decode worker over the link. The decode pool's router picks the worker now, so its load
    /// counts the transfer; the link is a FIFO server (bytes / bandwidth), then the latency.
    fn start_transfer(&mut self, id: u32, from: usize, blocks: u64, shared_group: Option<u16>) {
        let (now, sc) = (self.now, self.sc);
        let link = sc.link.expect("transfers happen only when disaggregated");
        let dec = &sc.pools[1];
        let req = self.requests[id as usize].request();
        let local = self.dispatch.route(1, &req, None).expect("validation refuses a central queue for pools");
        let d = dec.first as usize + local;
        let n = self.replicas[d].routed_in();
        self.dispatch.outstanding(1, local, n);
        let rec = &mut self.requests[id as usize];
        rec.handoff_ns = now;
        rec.replica = d as u16;
        // The first token was emitted by prefill; it and the prompt's KV travel together.
        rec.generated = 1;
        let prompt_tokens = rec.prompt_tokens;
        let l = disagg::link_between(&link, self.replicas[from].local(), local, dec.replicas as usize);
        let sent = self.links.send(&link, l, now, id, prompt_tokens, Transfer { from, blocks, shared_group });
        self.rec.on_transfer(l, sent.send_ns, sent.through_ns, link.kv_bytes(prompt_tokens).round() as u64);
        self.schedule(sent.arrives_ns, Event::TransferDone { request: id });
    }

    /// Disaggregated: the KV arrived. The prefill worker frees its copy; the request waits for decode KV in
    /// its decode worker's queue. The user sees the first token now (it came with the KV).
    pub(super) fn on_transfer_done(&mut self, id: u32) {
        let t = self.links.arrived(id);
        let from = &mut self.replicas[t.from];
        from.handed_off(t.blocks, t.shared_group);
        let (n_running, used) = (from.running() as u64, from.kv().used());
        self.rec.on_kv_change(t.from, n_running, used);
        let rec = &mut self.requests[id as usize];
        rec.first_token_ns = self.now;
        rec.last_token_ns = self.now;
        rec.kv_ready = true;
        let d = rec.replica as usize;
        let item = self.queue_item(id);
        self.enqueue(item, Some(d), false);
        self.try_start(t.from);
    }
}
