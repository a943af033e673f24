//! Sessions' KV between turns: where each session's history is (the worker of its last turn, in HBM or in
//! that worker's host memory), what a turn's end does with it (the retention policy's decision, made when the
//! turn arrives), TTL expiry, restores over the host link, and the session's end.
//!
//! ```text
//!  turn arrives ─▶ routed to r ─▶ r holds it in host memory? ─yes─▶ restore (link FIFO) ─▶ Restored ─┐
//!                                   │ no                                                             ▼
//!                                   └──────────────────────────────────────────────────────────▶ queue ─▶ prefill what HBM lacks
//!  turn ends ─▶ keep: Hbm (idle entry; TTL expiry → host or freed) │ Host (moved at once) │ Drop
//! ```
//!
//! The static policies decide a turn's tier when it arrives; the gap oracle and the adaptive policies when it
//! ends (`SessionKv::end_turn`), the oracle from the realised gap, the adaptive ones from the estimate learned from
//! the tool calls that have returned (each observed when the next turn arrives, never before).

use super::Simulation;
use crate::kv::EntryId;
use crate::scenario::HostTier;
use crate::tiering::{GapEstimator, GapPrice, Tier};
use crate::workload::{NO_SESSION, Request, Retention, Sessions};

/// The tool call that follows a running turn, as known when the turn arrived: its tool, the latency drawn for
/// it (before any shift) and its gap price — exact (the oracle's: the next turn's new input is known to it),
/// and as a deployable policy can know it when the turn ends (without the next turn's input).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NextCall {
    pub tool: u16,
    pub drawn_gap_ns: u64,
    pub price: GapPrice,
    pub known: GapPrice,
}

/// A tool call in flight: when it started and what the turn's end chose for the history.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    pub start_ns: u64,
    pub tool: u16,
    pub price: GapPrice,
    pub estimate_ns: Option<f64>,
    pub tier: Tier,
}

/// What the engine keeps for agent sessions: each session's KV state, the host links, the retained-KV gauges,
/// and what the retention policy decides from.
pub(super) struct SessionState {
    /// Per session (by index): where its history is and what its running turn's end does with it.
    pub(super) kv: Vec<SessionKv>,
    /// Per worker: when its host-to-HBM link is next free, and its retained-KV gauges as last reported.
    pub(super) host_link_free_ns: Vec<u64>,
    pub(super) retained: Vec<(u64, u64)>,
    /// Sessions' KV may outlive a turn (any retention but stateless).
    pub(super) tracks_retention: bool,
    /// Each turn's tool call is priced, and what its end chose reported (an adaptive policy or the gap
    /// oracle decides from it, or a tool's latency shifts); the adaptive policies' estimates of the gaps.
    pub(super) gaps_priced: bool,
    pub(super) gap_estimator: GapEstimator,
    /// Workflows that predict their roles: the model, the forecasts pending, the prefetches.
    pub(super) workflows: Option<super::workflow::Workflows>,
}

impl SessionState {
    pub(super) fn new(sc: &crate::Scenario) -> SessionState {
        let sessions = sc.workload.sessions.as_ref();
        SessionState {
            kv: Vec::new(),
            host_link_free_ns: vec![0; sc.worker_count() as usize],
            retained: vec![(0, 0); sc.worker_count() as usize],
            tracks_retention: sessions.is_some_and(|s| s.retention.keeps()),
            gaps_priced: sessions.is_some_and(|s| s.prices_gaps()),
            gap_estimator: match sessions.map(|s| s.retention) {
                Some(Retention::Adaptive { alpha, per_tool }) => GapEstimator::new(alpha, per_tool),
                _ => GapEstimator::new(1.0, false),
            },
            workflows: super::workflow::Workflows::new(sc),
        }
    }

    /// `blocks` from `host` memory to worker `r`'s HBM over its host link, a FIFO server shared by restores
    /// and prefetches: booked at `now_ns` after what it carries already; when they are in HBM (bytes ÷
    /// bandwidth + latency).
    pub(super) fn book_host_link(&mut self, host: &HostTier, r: usize, blocks: u64, now_ns: u64) -> u64 {
        let send_ns = host.send_ns(blocks);
        let start = now_ns.max(self.host_link_free_ns[r]);
        self.host_link_free_ns[r] = start.saturating_add(send_ns);
        start.saturating_add(send_ns).saturating_add(host.latency_ns)
    }
}

/// One session's KV state, the engine's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionKv {
    /// The worker that served the session's latest completed turn (u32::MAX: none yet).
    pub holder: u32,
    /// The running turn's tier, for the policies that decide it at arrival.
    pub keep: Tier,
    /// The call after the running turn (None: its last turn, or no one asks), and the call in flight.
    pub next: Option<NextCall>,
    pub call: Option<Call>,
    /// When the pending TTL expiry fires (u64::MAX: none); a turn's arrival and the session's end clear it,
    /// so an expiry event at another instant is stale.
    pub expire_at_ns: u64,
    /// Blocks of a restore in flight (0: none).
    pub restoring_blocks: u64,
    /// A restore brought the history back for the turn waiting, which holds a pin on it until its admission.
    pub restored: bool,
}

const NO_HOLDER: u32 = u32::MAX;

/// What a turn's end needs to choose its history's tier: the policy, the estimates learned so far, and the
/// sessions (whose tool shift the oracle's realised gap follows).
pub(crate) struct TurnEnd<'a> {
    pub retention: Retention,
    pub estimator: &'a GapEstimator,
    pub sessions: &'a Sessions,
}

impl<'a> TurnEnd<'a> {
    /// What `sc`'s sessions' turn ends need, with the estimates `estimator` holds (None without sessions).
    pub fn of(sc: &'a crate::Scenario, estimator: &'a GapEstimator) -> Option<TurnEnd<'a>> {
        let sessions = sc.workload.sessions.as_ref()?;
        Some(TurnEnd { retention: sessions.retention, estimator, sessions })
    }
}

impl SessionKv {
    /// The running turn ended at `now_ns`: its history's tier — the gap oracle's cheapest for the realised gap,
    /// an adaptive policy's cheapest for its estimate (kept in HBM before any call returned), or what the
    /// turn's arrival decided — and the call that starts now.
    pub fn end_turn(&mut self, now_ns: u64, te: &TurnEnd) -> Tier {
        let Some(n) = self.next.take() else { return self.keep };
        let (tier, estimate_ns) = match te.retention {
            Retention::GapOracle => (n.price.best(te.sessions.gap_ns(n.tool, n.drawn_gap_ns, now_ns) as f64), None),
            Retention::Adaptive { .. } => {
                let e = te.estimator.estimate(n.tool);
                (e.map_or(Tier::Hbm, |g| n.known.best(g)), e)
            }
            _ => (self.keep, None),
        };
        self.call = Some(Call { start_ns: now_ns, tool: n.tool, price: n.price, estimate_ns, tier });
        tier
    }

    /// A later turn's first admission, on worker `r`, found `shared_tokens` of its prompt in HBM, `prefix_tokens`
    /// of them its shared prefix (a hit is history found past it; the prefix, part of the history a later turn
    /// re-sends, counts as reused): whether it ran where its last turn did, the hit, and whether a restore
    /// from host memory brought it — what `Recorder::on_turn_admitted` counts.
    pub fn later_turn_admitted(&mut self, r: usize, shared_tokens: u32, prefix_tokens: u32) -> (bool, bool, bool) {
        let restored = std::mem::take(&mut self.restored);
        let hit = shared_tokens > prefix_tokens;
        (self.holder == r as u32, hit, restored && hit)
    }
}

impl Simulation<'_> {
    /// A session's turn `turn` arrives: a new session's state; a later turn's makes any TTL expiry stale.
    /// Decides what the turn's end will do with the history.
    pub(super) fn session_turn_arrives(&mut self, req: &Request, turn: u32) {
        let s = req.session as usize;
        if s >= self.sessions.kv.len() {
            self.sessions.kv.resize(
                s + 1,
                SessionKv {
                    holder: NO_HOLDER,
                    keep: Tier::Drop,
                    next: None,
                    call: None,
                    expire_at_ns: u64::MAX,
                    restoring_blocks: 0,
                    restored: false,
                },
            );
            self.rec.on_session_start(self.now);
        }
        let holder = self.sessions.kv[s].holder;
        if turn > 1
            && holder != NO_HOLDER
            && self.sessions.tracks_retention
            && !self.arrivals.continues_history(req, turn)
        {
            // A traced agent compacted its history: what was kept is no prefix of this prompt.
            self.free_session_kv(holder as usize, req.session);
        }
        if turn > 1 {
            self.call_returned(s);
        }
        let keep = self.keep_for(req, turn);
        let next =
            (self.sessions.gaps_priced && !self.arrivals.is_last_turn(req, turn)).then(|| self.next_call(req, turn));
        let st = &mut self.sessions.kv[s];
        st.expire_at_ns = u64::MAX;
        (st.keep, st.next) = (keep, next);
    }

    /// Session `s`'s tool call returned (its next turn arrived): what the gap was, what the turn's end chose
    /// against the cheapest choice for that gap, and the estimates learn it.
    fn call_returned(&mut self, s: usize) {
        let Some(c) = self.sessions.kv[s].call.take() else { return };
        let gap_ns = self.now - c.start_ns;
        let g = gap_ns as f64;
        let (tier, cost_ns) = match self.sc.workload.sessions.as_ref().map(|x| x.retention) {
            Some(Retention::Ttl(ttl)) if c.tier == Tier::Hbm => c.price.ttl(ttl as f64, g),
            _ => (c.tier, c.price.cost_ns(c.tier, g)),
        };
        let best = c.price.best(g);
        self.rec.on_tool_gap(crate::metrics::ToolGap {
            start_ns: c.start_ns,
            tool: c.tool,
            estimate_ns: c.estimate_ns,
            tier,
            gap_ns,
            cost_ns,
            oracle_cost_ns: c.price.cost_ns(best, g),
            agrees: tier == best,
        });
        self.sessions.gap_estimator.observe(c.tool, g);
    }

    /// The affinity of `req` for routing: the worker of its session's previous turn.
    pub(super) fn affinity(&self, req: &Request) -> Option<usize> {
        let st = self.sessions.kv.get(req.session as usize)?;
        (req.session != NO_SESSION && st.holder != NO_HOLDER).then_some(st.holder as usize)
    }

    /// The retention policy's decision for turn `turn`'s end.
    fn keep_for(&self, req: &Request, turn: u32) -> Tier {
        let Some(s) = &self.sc.workload.sessions else { return Tier::Drop };
        if self.arrivals.is_last_turn(req, turn) {
            return Tier::Drop; // the session ends with this turn: nothing to keep for
        }
        let host = self.sc.front_pool().engine.host.is_some();
        match s.retention {
            Retention::Stateless => Tier::Drop,
            Retention::Retain => Tier::Hbm,
            // Decided when the turn ends (`SessionKv::end_turn`).
            Retention::GapOracle | Retention::Adaptive { .. } => Tier::Hbm,
            Retention::Ttl(0) | Retention::HostOffload if host => Tier::Host,
            Retention::Ttl(0) | Retention::HostOffload => Tier::Drop,
            Retention::Ttl(_) => Tier::Hbm,
        }
    }

    /// The call after turn `turn` of `req`'s session (not its last) and its gap prices. Keeping the history's
    /// share of the worker's KV for the gap costs that share × gap; recomputing it, the GPU time its prefill
    /// adds to the next turn's; restoring it, the host link's transfer and latency.
    fn next_call(&self, req: &Request, turn: u32) -> NextCall {
        let program = self.arrivals.program(req.session);
        let k = turn as usize;
        let pool = &self.sc.front_pool();
        let block = pool.engine.block_size_tokens as u64;
        let blocks = (req.prompt_tokens as u64 + req.output_tokens as u64).saturating_sub(1) / block;
        let prefill_ns = |tokens: u64| pool.cost.lone_prefill_ns(tokens);
        // A shared prefix stays cached apart from the session: what is kept, or recomputed, is what follows it.
        let prefix = super::shared::cached_prefix_tokens(self.sc.prefix.as_ref()) as u64 / block
            * (req.prefix_group != crate::workload::NO_PREFIX) as u64;
        let kept = blocks.saturating_sub(prefix);
        let price = |new: u64| GapPrice {
            hbm_share: kept as f64 / pool.engine.kv_total_blocks as f64,
            restore_ns: pool.engine.host.map(|h| (h.send_ns(kept) + h.latency_ns) as f64),
            recompute_ns: prefill_ns(kept * block + new) - prefill_ns(new),
        };
        NextCall {
            tool: program.tools[k - 1],
            drawn_gap_ns: program.gaps_ns[k - 1],
            price: price(program.new_tokens[k] as u64 + prefix * block),
            known: price(prefix * block),
        }
    }

    /// An admitted turn reaches the scheduler: if its worker holds its history in host memory (and not in
    /// HBM), the history comes back over the host link first; otherwise it queues now.
    pub(super) fn join_queue(&mut self, id: u32, target: Option<usize>) {
        let session = self.requests[id as usize].session;
        if let (Some(r), true) = (target, session != NO_SESSION && self.sc.front_pool().engine.host.is_some()) {
            let holds = self.sessions.kv[session as usize].holder == r as u32;
            let e = EntryId::session(session);
            let kv = &self.replicas[r].kv;
            if holds && !kv.cache.is_cached(e) && kv.host.as_ref().is_some_and(|h| h.blocks_of(e) > 0) {
                self.start_restore(id, r);
                return;
            }
        }
        let item = self.queue_item(id);
        self.enqueue(item, target, false);
    }

    /// Restore request `id`'s history from worker `r`'s host memory: HBM blocks now (if they cannot be had
    /// the history is dropped and the turn recomputes), then the link — a FIFO server, bytes ÷ bandwidth —
    /// and its latency.
    fn start_restore(&mut self, id: u32, r: usize) {
        let session = self.requests[id as usize].session;
        let e = EntryId::session(session);
        let host = self.sc.front_pool().engine.host.expect("restores need a host tier");
        let rep = &mut self.replicas[r];
        let blocks = rep.kv.host.as_mut().expect("a host tier").take(e);
        if blocks > self.sc.front_pool().engine.retention_budget_blocks.unwrap_or(u64::MAX) || !rep.kv.try_alloc(blocks)
        {
            self.note_retained(r);
            let item = self.queue_item(id);
            self.enqueue(item, Some(r), false);
            return;
        }
        rep.transfer_blocks += blocks;
        self.sessions.kv[session as usize].restoring_blocks = blocks;
        let done = self.sessions.book_host_link(&host, r, blocks, self.now);
        self.rec.on_restore(done - self.now, (blocks as f64 * host.block_bytes).round() as u64);
        self.note_retained(r);
        self.schedule(done, super::Event::Restored { request: id });
    }

    /// A restore landed: the history is in HBM again, held for the turn that waits for it (pinned until the
    /// turn's admission: it is that turn's working KV, not idle retention, so neither the retention budget
    /// nor an eviction takes it back), and the turn queues.
    pub(super) fn on_restored(&mut self, id: u32) {
        let (session, r) = (self.requests[id as usize].session, self.requests[id as usize].replica as usize);
        let st = &mut self.sessions.kv[session as usize];
        let blocks = std::mem::take(&mut st.restoring_blocks);
        st.restored = true;
        let rep = &mut self.replicas[r];
        rep.transfer_blocks -= blocks;
        let e = EntryId::session(session);
        rep.kv.cache.retain(e, blocks);
        rep.kv.cache.pin(e);
        let item = self.queue_item(id);
        self.enqueue(item, Some(r), false);
        self.note_retained(r);
    }

    /// A session's turn ended (completed, refused or failed) and `next` says whether another follows. A
    /// completed turn's worker becomes the holder (a copy left on an earlier holder is freed); a session's
    /// end frees what it holds; a TTL starts.
    pub(super) fn after_turn(&mut self, id: u32, ends: bool) {
        let rec = &self.requests[id as usize];
        let (s, completed, r) = (rec.session, rec.outcome == crate::metrics::Outcome::Completed, rec.replica as u32);
        let keeps = self.sessions.tracks_retention;
        if completed && !keeps {
            // Nothing kept, so no step end chose a tier: the call that starts now is priced here.
            if let Some(te) = TurnEnd::of(self.sc, &self.sessions.gap_estimator) {
                self.sessions.kv[s as usize].end_turn(self.now, &te);
            }
        }
        let old = self.sessions.kv[s as usize].holder;
        if completed && old != r {
            if keeps && old != NO_HOLDER {
                self.free_session_kv(old as usize, s);
            }
            self.sessions.kv[s as usize].holder = r;
        }
        if ends {
            let holder = self.sessions.kv[s as usize].holder;
            if keeps && holder != NO_HOLDER {
                self.free_session_kv(holder as usize, s);
            }
            self.sessions.kv[s as usize].expire_at_ns = u64::MAX;
            self.rec.on_session_end(s, self.now);
            return;
        }
        let Some(Retention::Ttl(ttl)) = self.sc.workload.sessions.as_ref().map(|x| x.retention) else { return };
        if completed
            && self.sessions.kv[s as usize].keep == Tier::Hbm
            && self.replicas[r as usize].kv.cache.is_cached(EntryId::session(s))
        {
            let at = self.now.saturating_add(ttl);
            self.sessions.kv[s as usize].expire_at_ns = at;
            self.schedule(at, super::Event::Expire { session: s });
        }
    }

    /// Whether a TTL expiry firing at `at_ns` is stale (a turn arrived, or the session ended, since it was set).
    pub(super) fn expiry_is_stale(&self, session: u32, at_ns: u64) -> bool {
        self.sessions.kv[session as usize].expire_at_ns != at_ns
    }

    /// A session's TTL ran out in a tool gap: its idle history leaves HBM for the host tier, or is freed.
    pub(super) fn on_expire(&mut self, session: u32) {
        self.sessions.kv[session as usize].expire_at_ns = u64::MAX;
        let r = self.sessions.kv[session as usize].holder as usize;
        let rep = &mut self.replicas[r];
        if rep.kv.offload(EntryId::session(session)) > 0 {
            self.rec.on_ttl_eviction();
            self.kv_changed(r);
        }
    }

    /// Free what worker `r` holds of session `s`, in HBM (when idle) and in host memory.
    fn free_session_kv(&mut self, r: usize, s: u32) {
        let e = EntryId::session(s);
        let rep = &mut self.replicas[r];
        let freed = rep.kv.drop_idle(e);
        let hosted = rep.kv.host.as_mut().map_or(0, |h| h.take(e));
        if freed + hosted > 0 {
            self.kv_changed(r);
        }
    }

    /// Keep the recorder's retained-KV gauges (idle session history in HBM, history in host memory) current
    /// for worker `r`.
    pub(super) fn note_retained(&mut self, r: usize) {
        if !self.sessions.tracks_retention {
            return;
        }
        let kv = &self.replicas[r].kv;
        let (hbm, host) = (kv.cache.idle_session_blocks(), kv.host.as_ref().map_or(0, |h| h.used_blocks));
        let (old_hbm, old_host) = std::mem::replace(&mut self.sessions.retained[r], (hbm, host));
        if (hbm, host) != (old_hbm, old_host) {
            self.rec.on_retained(self.now, hbm as i64 - old_hbm as i64, host as i64 - old_host as i64, hbm);
        }
    }
}
