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

use super::arrivals::Arrivals;
use super::workflow::Workflows;
use crate::metrics::ToolGap;
use crate::scenario::{HostTier, Scenario};
use crate::tiering::{GapEstimator, GapPrice, Tier};
use crate::workload::{NO_SESSION, Request, Retention, Sessions};

/// The tool call that follows a running turn, as known when the turn arrived: its tool, the latency drawn for
/// it (before any shift) and its gap price — exact (the oracle's: the next turn's new input is known to it),
/// and as a deployable policy can know it when the turn ends (without the next turn's input).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NextCall {
    tool: u16,
    drawn_gap_ns: u64,
    price: GapPrice,
    known: GapPrice,
}

/// A tool call in flight: when it started and what the turn's end chose for the history.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    start_ns: u64,
    tool: u16,
    price: GapPrice,
    estimate_ns: Option<f64>,
    tier: Tier,
}

/// What the engine keeps for agent sessions: each session's KV state, the host links, the retained-KV gauges,
/// and what the retention policy decides from.
pub(super) struct SessionState {
    /// Per session (by index): where its history is and what its running turn's end does with it.
    kv: Vec<SessionKv>,
    /// Per worker: when its host-to-HBM link is next free, and its retained-KV gauges as last reported.
    host_link_free_ns: Vec<u64>,
    retained: Vec<(u64, u64)>,
    /// Sessions' KV may outlive a turn (any retention but stateless).
    tracks_retention: bool,
    /// Each turn's tool call is priced, and what its end chose reported (an adaptive policy or the gap
    /// oracle decides from it, or a tool's latency shifts); the adaptive policies' estimates of the gaps.
    gaps_priced: bool,
    gap_estimator: GapEstimator,
    /// Workflows that predict their roles: the model, the forecasts pending, the prefetches.
    workflows: Option<Workflows>,
}

impl SessionState {
    pub(super) fn new(sc: &Scenario) -> SessionState {
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
            workflows: Workflows::new(sc),
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

    /// Each session's KV state, for a batch's formation and step end.
    pub(super) fn kv_mut(&mut self) -> &mut [SessionKv] {
        &mut self.kv
    }

    /// What a step end needs: whether sessions' KV outlives a turn, each session's state, and how a turn's end
    /// chooses its history's tier.
    pub(super) fn for_step_end<'s>(&'s mut self, sc: &'s Scenario) -> (bool, &'s mut [SessionKv], Option<TurnEnd<'s>>) {
        (self.tracks_retention, &mut self.kv, TurnEnd::of(sc, &self.gap_estimator))
    }

    /// Sessions' KV may outlive a turn (any retention but stateless).
    #[inline(always)]
    pub(super) fn tracks_retention(&self) -> bool {
        self.tracks_retention
    }

    /// The workflows' state (None without one that predicts).
    pub(super) fn workflows(&self) -> Option<&Workflows> {
        self.workflows.as_ref()
    }

    pub(super) fn workflows_mut(&mut self) -> Option<&mut Workflows> {
        self.workflows.as_mut()
    }

    /// Session `s` has a state from now on; whether it is new (its first turn).
    pub(super) fn open(&mut self, s: u32) -> bool {
        let s = s as usize;
        if s < self.kv.len() {
            return false;
        }
        let fresh = SessionKv {
            holder: NO_HOLDER,
            keep: Tier::Drop,
            next: None,
            call: None,
            expire_at_ns: u64::MAX,
            restoring_blocks: 0,
            restored: false,
        };
        self.kv.resize(s + 1, fresh);
        true
    }

    /// The worker holding session `s`'s history (None: no turn of it completed yet).
    pub(super) fn holder(&self, s: u32) -> Option<usize> {
        let h = self.kv.get(s as usize)?.holder;
        (h != NO_HOLDER).then_some(h as usize)
    }

    /// The affinity of `req` for routing: the worker of its session's previous turn.
    pub(super) fn affinity(&self, req: &Request) -> Option<usize> {
        if req.session == NO_SESSION { None } else { self.holder(req.session) }
    }

    /// Session `s`'s tool call returned at `now_ns` (its next turn arrived): what the gap was and what the
    /// turn's end chose against the cheapest choice for that gap; the estimates learn it.
    pub(super) fn call_returned(&mut self, s: u32, now_ns: u64, sc: &Scenario) -> Option<ToolGap> {
        let c = self.kv[s as usize].call.take()?;
        let gap_ns = now_ns - c.start_ns;
        let g = gap_ns as f64;
        let (tier, cost_ns) = match sc.workload.sessions.as_ref().map(|x| x.retention) {
            Some(Retention::Ttl(ttl)) if c.tier == Tier::Hbm => c.price.ttl(ttl as f64, g),
            _ => (c.tier, c.price.cost_ns(c.tier, g)),
        };
        let best = c.price.best(g);
        self.gap_estimator.observe(c.tool, g);
        Some(ToolGap {
            start_ns: c.start_ns,
            tool: c.tool,
            estimate_ns: c.estimate_ns,
            tier,
            gap_ns,
            cost_ns,
            oracle_cost_ns: c.price.cost_ns(best, g),
            agrees: tier == best,
        })
    }

    /// Turn `turn` of `req`'s session arrived: what its end will do with the history, and the call after it
    /// (priced, when a policy or a report reads it); a pending TTL expiry is stale from now.
    pub(super) fn plan_turn(&mut self, sc: &Scenario, arrivals: &Arrivals, req: &Request, turn: u32) {
        let last = arrivals.is_last_turn(req, turn);
        let keep = keep_for(sc, last);
        let next = (self.gaps_priced && !last).then(|| next_call(sc, arrivals, req, turn));
        let st = &mut self.kv[req.session as usize];
        st.expire_at_ns = u64::MAX;
        (st.keep, st.next) = (keep, next);
    }

    /// A completed turn of session `s` ended at `now_ns`. With nothing kept, no step end chose a tier: the
    /// call that starts now is priced here.
    pub(super) fn turn_completed(&mut self, s: u32, now_ns: u64, sc: &Scenario) {
        if self.tracks_retention {
            return;
        }
        if let Some(te) = TurnEnd::of(sc, &self.gap_estimator) {
            self.kv[s as usize].end_turn(now_ns, Some(&te));
        }
    }

    /// A completed turn of session `s` ran on worker `r`, which holds the history from now on: the worker
    /// whose copy is to be freed (an earlier holder, when history is kept).
    pub(super) fn hand_over(&mut self, s: u32, r: usize) -> Option<usize> {
        let st = &mut self.kv[s as usize];
        let old = std::mem::replace(&mut st.holder, r as u32);
        (self.tracks_retention && old != NO_HOLDER && old != r as u32).then_some(old as usize)
    }

    /// Session `s` ended: no expiry is pending; the worker whose copy is to be freed (when history is kept).
    pub(super) fn end(&mut self, s: u32) -> Option<usize> {
        self.kv[s as usize].expire_at_ns = u64::MAX;
        self.holder(s).filter(|_| self.tracks_retention)
    }

    /// The TTL after session `s`'s completed turn, when its history stays in HBM under a TTL policy.
    pub(super) fn ttl_ns(&self, s: u32, sc: &Scenario) -> Option<u64> {
        let Some(Retention::Ttl(ttl)) = sc.workload.sessions.as_ref().map(|x| x.retention) else { return None };
        (self.kv[s as usize].keep == Tier::Hbm).then_some(ttl)
    }

    /// Session `s`'s TTL expiry is pending at `at_ns`.
    pub(super) fn expire_at(&mut self, s: u32, at_ns: u64) {
        self.kv[s as usize].expire_at_ns = at_ns;
    }

    /// Whether a TTL expiry firing at `at_ns` is stale (a turn arrived, or the session ended, since it was set).
    pub(super) fn expiry_is_stale(&self, s: u32, at_ns: u64) -> bool {
        self.kv[s as usize].expire_at_ns != at_ns
    }

    /// Session `s`'s TTL ran out: nothing is pending; the worker holding its idle history.
    pub(super) fn expire(&mut self, s: u32) -> usize {
        self.kv[s as usize].expire_at_ns = u64::MAX;
        self.kv[s as usize].holder as usize
    }

    /// Session `s`'s history is on its way back from worker `r`'s host memory (`blocks`, over its host link
    /// booked at `now_ns`): when it is in HBM.
    pub(super) fn restoring(&mut self, s: u32, host: &HostTier, r: usize, blocks: u64, now_ns: u64) -> u64 {
        self.kv[s as usize].restoring_blocks = blocks;
        self.book_host_link(host, r, blocks, now_ns)
    }

    /// Session `s`'s restore landed: the blocks it brought, held for the turn waiting for it.
    pub(super) fn restored(&mut self, s: u32) -> u64 {
        let st = &mut self.kv[s as usize];
        st.restored = true;
        std::mem::take(&mut st.restoring_blocks)
    }

    /// Worker `r`'s retained KV is now `hbm` and `host` blocks: the change since last reported, if any.
    pub(super) fn retained_moved(&mut self, r: usize, hbm: u64, host: u64) -> Option<(i64, i64)> {
        let (old_hbm, old_host) = std::mem::replace(&mut self.retained[r], (hbm, host));
        ((hbm, host) != (old_hbm, old_host)).then(|| (hbm as i64 - old_hbm as i64, host as i64 - old_host as i64))
    }

    /// The learned role transitions (normalised rows; empty without workflows).
    pub(super) fn learned(&self) -> Vec<Vec<f64>> {
        self.workflows.as_ref().map_or_else(Vec::new, |w| w.learned())
    }
}

/// The retention policy's decision for a turn's end (`last`: the session ends with it).
fn keep_for(sc: &Scenario, last: bool) -> Tier {
    let Some(s) = &sc.workload.sessions else { return Tier::Drop };
    if last {
        return Tier::Drop; // the session ends with this turn: nothing to keep for
    }
    let host = sc.front_pool().engine.host.is_some();
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
/// share of the worker's KV for the gap costs that share × gap; recomputing it, the GPU time its prefill adds
/// to the next turn's; restoring it, the host link's transfer and latency.
fn next_call(sc: &Scenario, arrivals: &Arrivals, req: &Request, turn: u32) -> NextCall {
    let program = arrivals.program(req.session);
    let k = turn as usize;
    let pool = &sc.front_pool();
    let block = pool.engine.block_size_tokens as u64;
    let blocks = (req.prompt_tokens as u64 + req.output_tokens as u64).saturating_sub(1) / block;
    let prefill_ns = |tokens: u64| pool.cost.lone_prefill_ns(tokens);
    // A shared prefix stays cached apart from the session: what is kept, or recomputed, is what follows it.
    let prefix = super::shared::cached_prefix_tokens(sc.prefix.as_ref()) as u64 / block
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

/// One session's KV state, the engine's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionKv {
    /// The worker that served the session's latest completed turn (u32::MAX: none yet).
    holder: u32,
    /// The running turn's tier, for the policies that decide it at arrival.
    keep: Tier,
    /// The call after the running turn (None: its last turn, or no one asks), and the call in flight.
    next: Option<NextCall>,
    call: Option<Call>,
    /// When the pending TTL expiry fires (u64::MAX: none); a turn's arrival and the session's end clear it,
    /// so an expiry event at another instant is stale.
    expire_at_ns: u64,
    /// Blocks of a restore in flight (0: none).
    restoring_blocks: u64,
    /// A restore brought the history back for the turn waiting, which holds a pin on it until its admission.
    restored: bool,
}

const NO_HOLDER: u32 = u32::MAX;

/// What a turn's end needs to choose its history's tier: the policy, the estimates learned so far, and the
/// sessions (whose tool shift the oracle's realised gap follows).
pub(crate) struct TurnEnd<'a> {
    retention: Retention,
    estimator: &'a GapEstimator,
    sessions: &'a Sessions,
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
    pub fn end_turn(&mut self, now_ns: u64, te: Option<&TurnEnd>) -> Tier {
        let Some(te) = te else { return self.keep };
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

    /// A restore brought the history back for the turn waiting, which holds a pin on it until its admission.
    pub fn pinned_by_restore(&self) -> bool {
        self.restored
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
