//! Workflows in the engine: a step's end forecasts its workflow's coming roles and fetches the prefixes the
//! plan wants from host memory into the worker's prefix cache (`Event::Prefetched` when one lands); a step's
//! arrival reveals its role, which scores the forecast and is the only thing the model learns from.
//!
//! ```text
//!  step ends on r ─▶ forecast ─▶ plan ─▶ each role to fetch: HBM blocks now, the host link (FIFO) ─▶ Prefetched
//!  next step arrives ─▶ role seen: forecast scored, model learns (from, role)  ─▶ routed, queued as any step
//! ```

use crate::kv::{BlockPool, EntryId};
use crate::metrics::RoleSeen;
use crate::scenario::Scenario;
use crate::spec::RolePredictorSpec;
use crate::workflow::{Forecast, Holding, Plan, RoleModel, Workflow, plan};
use crate::workload::Program;

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

pub(crate) struct Pending {
    forecast: Option<Forecast>,
    wanted: u64,
    fetched: u64,
    future_k: u64,
    /// The worker the step ended on, and the demand the forecast added to its prefixes (millionths).
    worker: u32,
    demand: Vec<u64>,
}

impl Pending {
    /// A step end on worker `r` forecast `forecast` (`demand`: the demand it added to the worker's prefixes,
    /// millionths), whose plan wanted the roles `wanted` and fetched `fetched`; `future_k`: the roles to come.
    pub fn new(
        forecast: Option<Forecast>,
        wanted: u64,
        fetched: u64,
        future_k: u64,
        r: usize,
        demand: Vec<u64>,
    ) -> Self {
        Pending { forecast, wanted, fetched, future_k, worker: r as u32, demand }
    }
}

impl Workflows {
    /// The state for `sc`'s workflow (None without one, or when nothing is predicted).
    pub fn new(sc: &Scenario) -> Option<Workflows> {
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

    /// A role prefix's blocks.
    pub fn prefix_blocks(&self) -> u64 {
        self.prefix_blocks
    }

    /// Step `turn` (1-based, ≥ 2) of session `session`'s workflow (`program`) arrived: its role is seen now,
    /// answering the forecast its predecessor's end made; the model learns the transition.
    pub fn step_arrives(&mut self, program: &Program, session: u32, turn: u32) -> Seen {
        let (from, to) = (program.roles[turn as usize - 2], program.roles[turn as usize - 1]);
        let pending = self.pending.get_mut(session as usize).and_then(Option::take);
        self.model.observe(from, to);
        Seen { pending, to, shifted: program.shifted }
    }

    /// At the end of step `k` (1-based) of a workflow (`program`) with another to come: the forecast of its
    /// coming roles (None: the model knows nothing yet), and the roles among the next `recall_k` as a mask.
    pub fn forecast(&self, sc: &Scenario, program: &Program, k: usize) -> (Option<Forecast>, u64) {
        let wf = workflow(sc);
        let (horizon, recall_k) = (wf.horizon() as usize, wf.recall_k as usize);
        let from = program.roles[k - 1];
        let future = &program.roles[k..];
        let future_k = future.iter().take(recall_k).fold(0u64, |m, &r| m | 1 << r);
        let forecast = match wf.predictor {
            RolePredictorSpec::Clairvoyant => {
                Some(Forecast::known(wf.roles.len(), &future[..horizon.min(future.len())]))
            }
            _ => Forecast::learned(&self.model, from, horizon as u32),
        };
        (forecast, future_k)
    }

    /// The prefetch plan for `forecast` on worker `r`, whose KV is `kv`.
    pub fn plan(&self, sc: &Scenario, forecast: &Forecast, r: usize, kv: &BlockPool) -> Plan {
        plan(workflow(sc).prefetch, forecast, &self.holding(sc, r, kv), self.prefill_ns, self.transfer_ns)
    }

    /// What worker `r` (whose KV is `kv`) holds of the role prefixes, for a plan.
    fn holding(&self, sc: &Scenario, r: usize, kv: &BlockPool) -> Holding {
        let n = workflow(sc).roles.len() as u16;
        let cached = (0..n).filter(|&g| kv.cache.is_cached(EntryId::prefix(g))).fold(0u64, |m, g| m | 1 << g);
        let held = kv.cache.shared_held() + self.inflight[r].count_ones() as u64 * self.prefix_blocks;
        Holding {
            present: cached | self.inflight[r],
            idle_lru: kv.budget_order().into_iter().map(|id| id.0 as u16).collect(),
            room: kv.prefix_budget().saturating_sub(held) / self.prefix_blocks.max(1),
        }
    }

    /// `role`'s prefix (`blocks`) is on its way to worker `r`: the transfer's index.
    pub fn prefetching(&mut self, r: usize, role: u16, blocks: u64) -> u32 {
        self.inflight[r] |= 1 << role;
        self.transfers.push((r as u32, role, blocks));
        self.transfers.len() as u32 - 1
    }

    /// Prefetch `transfer` landed: its worker, role and blocks.
    pub fn landed(&mut self, transfer: u32) -> (usize, u16, u64) {
        let (r, role, blocks) = self.transfers[transfer as usize];
        self.inflight[r as usize] &= !(1 << role);
        (r as usize, role, blocks)
    }

    /// What step end of session `s` forecast and planned, to be scored when its next step arrives.
    pub fn pend(&mut self, s: u32, pending: Pending) {
        if self.pending.len() <= s as usize {
            self.pending.resize_with(s as usize + 1, || None);
        }
        self.pending[s as usize] = Some(Box::new(pending));
    }
}

/// A step's role, seen when it arrives, with what its predecessor's end forecast.
pub(crate) struct Seen {
    pending: Option<Box<Pending>>,
    to: u16,
    shifted: bool,
}

impl Seen {
    /// The worker whose prefixes the answered forecast's demand leaves, and that demand.
    pub fn demand(&self) -> Option<(usize, &[u64])> {
        self.pending.as_ref().map(|p| (p.worker as usize, &p.demand[..]))
    }

    /// The role seen, scored against the forecast, as the report counts it.
    pub fn role_seen(&self) -> RoleSeen<'_> {
        let p = self.pending.as_deref();
        RoleSeen {
            to: self.to,
            shifted: self.shifted,
            forecast: p.and_then(|p| p.forecast.as_ref()),
            wanted: p.map_or(0, |p| p.wanted),
            fetched: p.map_or(0, |p| p.fetched),
            future_k: p.map_or(0, |p| p.future_k),
        }
    }
}

/// `sc`'s workflow.
fn workflow(sc: &Scenario) -> &Workflow {
    sc.workload.sessions.as_ref().and_then(|s| s.workflow.as_ref()).expect("a workflow")
}

/// The prefix budget of each worker of `sc` in blocks: the workflow's share of all its roles' prefixes (None:
/// no workflow, no budget).
pub(crate) fn prefix_budget_blocks(sc: &Scenario) -> Option<u64> {
    let wf = sc.workload.sessions.as_ref()?.workflow.as_ref()?;
    let block = sc.front_pool().engine.block_size_tokens;
    let all = (wf.prefix_tokens / block) as f64 * wf.roles.len() as f64;
    Some((wf.prefix_budget * all).floor().min(u64::MAX as f64 / 2.0) as u64)
}
