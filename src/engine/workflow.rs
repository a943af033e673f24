//! Workflows in the engine: a step's end forecasts its workflow's coming roles and fetches the prefixes the
//! plan wants from host memory into the worker's prefix cache (`Event::Prefetched` when one lands); a step's
//! arrival reveals its role, which scores the forecast and is the only thing the model learns from.
//!
//! ```text
//!  step ends on r ─▶ forecast ─▶ plan ─▶ each role to fetch: HBM blocks now, the host link (FIFO) ─▶ Prefetched
//!  next step arrives ─▶ role seen: forecast scored, model learns (from, role)  ─▶ routed, queued as any step
//! ```

use super::Simulation;
use crate::kv::EntryId;
use crate::metrics::{Decision, RoleSeen};
use crate::spec::RolePredictorSpec;
use crate::workflow::{Forecast, Holding, RoleModel, Workflow, plan};
use crate::workload::Request;

/// The engine's workflow state.
pub(crate) struct Workflows {
    model: RoleModel,
    /// Per session: what its last step's end forecast and planned, scored when the next step arrives.
    pending: Vec<Option<Box<Pending>>>,
    /// Per worker: the roles whose prefix is on its way (a bit each).
    inflight: Vec<u64>,
    /// Prefetches by index: the worker, the role and the blocks taken.
    transfers: Vec<(u32, u16, u64)>,
    /// A role prefix's blocks, its prefill alone and its trip over the host link (ns).
    prefix_blocks: u64,
    prefill_ns: f64,
    transfer_ns: f64,
}

struct Pending {
    forecast: Option<Forecast>,
    wanted: u64,
    fetched: u64,
    future_k: u64,
    /// The worker the step ended on, and the demand the forecast added to its prefixes (millionths).
    worker: u32,
    demand: Vec<u64>,
}

impl Workflows {
    /// The state for `sc`'s workflow (None without one, or when nothing is predicted).
    pub fn new(sc: &crate::Scenario) -> Option<Workflows> {
        let wf = sc.workload.sessions.as_ref()?.workflow.as_ref()?;
        let decay = match wf.predictor {
            RolePredictorSpec::None => return None,
            RolePredictorSpec::Decayed { decay } => decay,
            _ => 1.0,
        };
        let pool = sc.front_pool();
        let block = pool.engine.block_size_tokens;
        let prefix_blocks = (wf.prefix_tokens / block) as u64;
        let host = pool.engine.host.expect("validation: prefetching needs a host tier");
        Some(Workflows {
            model: RoleModel::new(wf.roles.len(), decay),
            pending: Vec::new(),
            inflight: vec![0; sc.worker_count() as usize],
            transfers: Vec::new(),
            prefix_blocks,
            prefill_ns: pool.cost.lone_prefill_ns(prefix_blocks * block as u64),
            transfer_ns: (host.send_ns(prefix_blocks) + host.latency_ns) as f64,
        })
    }

    /// The workflows' roles: each worker's prefix cache keeps the forecasts' demand for each.
    pub fn roles(&self) -> usize {
        self.model.roles()
    }

    /// The learned transitions (normalised rows).
    pub fn learned(&self) -> Vec<Vec<f64>> {
        self.model.rows()
    }
}

/// The prefix budget of each worker of `sc` in blocks: the workflow's share of all its roles' prefixes (None:
/// no workflow, no budget).
pub(crate) fn prefix_budget_blocks(sc: &crate::Scenario) -> Option<u64> {
    let wf = sc.workload.sessions.as_ref()?.workflow.as_ref()?;
    let block = sc.front_pool().engine.block_size_tokens;
    let all = (wf.prefix_tokens / block) as f64 * wf.roles.len() as f64;
    Some((wf.prefix_budget * all).floor().min(u64::MAX as f64 / 2.0) as u64)
}

impl Simulation<'_> {
    fn workflow(&self) -> &Workflow {
        self.sc.workload.sessions.as_ref().and_then(|s| s.workflow.as_ref()).expect("a workflow")
    }

    /// Step `turn` (1-based, ≥ 2) of `req`'s workflow arrived: its role is seen now — the forecast its
    /// predecessor's end made is scored, then the model learns the transition.
    pub(super) fn workflow_step_arrives(&mut self, req: &Request, turn: u32) {
        let Some(w) = self.sessions.workflows.as_mut() else { return };
        let program = self.arrivals.program(req.session);
        let (from, to) = (program.roles[turn as usize - 2], program.roles[turn as usize - 1]);
        let p = w.pending.get_mut(req.session as usize).and_then(Option::take);
        if let Some(p) = &p {
            // The forecast is answered: its demand leaves the worker's.
            let d = &mut self.replicas[p.worker as usize].kv.shared_demand;
            d.iter_mut().zip(&p.demand).for_each(|(x, y)| *x -= y);
        }
        let seen = RoleSeen {
            to,
            shifted: program.shifted,
            forecast: p.as_ref().and_then(|p| p.forecast.as_ref()),
            wanted: p.as_ref().map_or(0, |p| p.wanted),
            fetched: p.as_ref().map_or(0, |p| p.fetched),
            future_k: p.as_ref().map_or(0, |p| p.future_k),
        };
        self.rec.on_role_seen(&seen);
        w.model.observe(from, to);
    }

    /// Step `id` of a workflow ended with another to come: forecast the coming roles, plan, and fetch what
    /// the plan wants and its worker lacks.
    pub(super) fn workflow_step_ends(&mut self, id: u32) {
        if self.sessions.workflows.is_none() {
            return;
        }
        let rec = &self.requests[id as usize];
        let (s, r, k) = (rec.session, rec.replica as usize, rec.turn as usize);
        let wf = self.workflow();
        let (horizon, spec, recall_k) = (wf.horizon() as usize, wf.prefetch, wf.recall_k as usize);
        let roles = &self.arrivals.program(s).roles;
        let from = roles[k - 1];
        let future = &roles[k..];
        let future_k = future.iter().take(recall_k).fold(0u64, |m, &r| m | 1 << r);
        let w = self.sessions.workflows.as_ref().expect("checked");
        let forecast = match wf.predictor {
            RolePredictorSpec::Clairvoyant => {
                Some(Forecast::known(wf.roles.len(), &future[..horizon.min(future.len())]))
            }
            _ => Forecast::learned(&w.model, from, horizon as u32),
        };
        let p = match &forecast {
            Some(f) => plan(spec, f, &self.holding(r), w.prefill_ns, w.transfer_ns),
            None => Default::default(),
        };
        // The forecast's demand steers which idle prefixes the budget keeps while the step is awaited.
        let demand: Vec<u64> =
            forecast.as_ref().map_or_else(Vec::new, |f| f.within.iter().map(|p| (p * 1e6).round() as u64).collect());
        let d = &mut self.replicas[r].kv.shared_demand;
        d.iter_mut().zip(&demand).for_each(|(x, y)| *x += y);
        let mut fetched = 0u64;
        for &role in &p.fetch {
            if self.start_prefetch(r, role) {
                fetched |= 1 << role;
            }
        }
        self.rec.on_prefetch_decision(Decision { at_ns: self.now, session: s, wanted: p.wanted, fetched });
        let w = self.sessions.workflows.as_mut().expect("checked");
        if w.pending.len() <= s as usize {
            w.pending.resize_with(s as usize + 1, || None);
        }
        let pending = Pending { forecast, wanted: p.wanted, fetched, future_k, worker: r as u32, demand };
        w.pending[s as usize] = Some(Box::new(pending));
    }

    /// What worker `r` holds of the role prefixes, for a plan.
    fn holding(&self, r: usize) -> Holding {
        let w = self.sessions.workflows.as_ref().expect("a workflow");
        let cache = &self.replicas[r].kv.cache;
        let n = self.workflow().roles.len() as u16;
        let cached = (0..n).filter(|&g| cache.is_cached(EntryId::prefix(g))).fold(0u64, |m, g| m | 1 << g);
        let budget = self.replicas[r].kv.prefix_budget();
        let held = cache.shared_held() + w.inflight[r].count_ones() as u64 * w.prefix_blocks;
        Holding {
            present: cached | w.inflight[r],
            idle_lru: self.replicas[r].kv.budget_order().into_iter().map(|id| id.0 as u16).collect(),
            room: budget.saturating_sub(held) / w.prefix_blocks.max(1),
        }
    }

    /// Fetch `role`'s prefix to worker `r`: HBM blocks now (none to be had: no prefetch), then the host link —
    /// a FIFO server shared with restores — and its latency. Whether it started.
    fn start_prefetch(&mut self, r: usize, role: u16) -> bool {
        let w = self.sessions.workflows.as_mut().expect("a workflow");
        let blocks = w.prefix_blocks;
        let rep = &mut self.replicas[r];
        if !rep.kv.try_alloc(blocks) {
            return false;
        }
        rep.transfer_blocks += blocks;
        w.inflight[r] |= 1 << role;
        let transfer = w.transfers.len() as u32;
        w.transfers.push((r as u32, role, blocks));
        let host = self.sc.front_pool().engine.host.expect("validation: prefetching needs a host tier");
        let done = self.sessions.book_host_link(&host, r, blocks, self.now);
        self.rec.on_prefetch((blocks as f64 * host.block_bytes).round() as u64);
        self.note_prefix_held(r);
        self.schedule(done, super::Event::Prefetched { transfer });
        true
    }

    /// A prefetch landed: the prefix joins worker `r`'s cache idle, within its budget (or, cached meanwhile,
    /// the copy is freed).
    pub(super) fn on_prefetched(&mut self, transfer: u32) {
        let w = self.sessions.workflows.as_mut().expect("a prefetch means a workflow");
        let (r, role, blocks) = w.transfers[transfer as usize];
        let r = r as usize;
        w.inflight[r] &= !(1 << role);
        let rep = &mut self.replicas[r];
        rep.transfer_blocks -= blocks;
        let joined = rep.kv.land_prefetch(EntryId::prefix(role), blocks);
        self.rec.on_prefetch_landed(joined);
        self.note_prefix_held(r);
        self.kv_changed(r);
    }

    /// Keep the recorder's prefix-cache gauge current for worker `r` (called at every step's start and end).
    #[inline]
    pub(super) fn note_prefix_held(&mut self, r: usize) {
        if !self.rules.shares_prefixes {
            return;
        }
        self.rec.on_prefix_held(self.now, r, self.replicas[r].kv.cache.shared_held());
    }
}
