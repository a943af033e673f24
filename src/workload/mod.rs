//! Workload: arrivals, lengths, traces. Produces requests in arrival order and never sees cluster state.
//!
//! Every random value of a request is drawn when it is created, from its own per-request stream
//! ([`crate::rng::Stream::Request`]), so two configurations run on one seed see identical requests whatever
//! their scheduler, router or engine.

mod build;
mod class;
mod dist;
mod sessions;
pub mod sessions_trace;
pub mod trace;

pub use build::{Arrival, Chains, Predictor, Prefix, Truncation, Workload};
pub use class::{Class, Slo, Tenant};
pub use sessions::{Retention, SessionClass, Sessions, Tool, no_tool_named};

pub use dist::LengthDist;
pub use trace::TraceRow;

use crate::rng::{self, Rng64, Stream};

/// A request as created: arrival, lengths, and everything random about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub id: u32,
    pub arrival_ns: u64,
    pub class: u16,
    pub tenant: u16,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Output length predicted by the order channel (queue ordering).
    pub pred_order_tokens: u32,
    /// Output length predicted by the reserve channel (KV reservation, admission).
    pub pred_reserve_tokens: u32,
    /// Uniform [0, 1) drawn at creation, used by random-drop admission.
    pub drop_u: f64,
    /// The shared prefix the prompt starts with, or `NO_PREFIX`.
    pub prefix_group: u16,
    /// The session the request is a turn of, or `NO_SESSION`.
    pub session: u32,
}

/// `Request::prefix_group` of a request without a shared prefix.
pub const NO_PREFIX: u16 = u16::MAX;
/// `Request::session` of a request outside any session.
pub const NO_SESSION: u32 = u32::MAX;

/// Everything one session will do, drawn when it starts (or read from a session trace): per turn its new input
/// (the first turn's is its whole prompt) and output, and after each turn but the last the tool it calls and
/// the tool's latency.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub new_tokens: Vec<u32>,
    pub output_tokens: Vec<u32>,
    pub tools: Vec<u16>,
    pub gaps_ns: Vec<u64>,
    /// Each turn's whole prompt when a trace gives it (inference-lab's `input`); empty: the history so far
    /// plus the new input.
    pub prompt_tokens: Vec<u32>,
    /// Its session class (`Sessions::classes`).
    pub class: u16,
    /// A workflow's: each step's role (a trace's: indices into its role names until the scenario maps them
    /// to the workflow's), and whether the roles followed the shifted transitions.
    pub roles: Vec<u16>,
    pub shifted: bool,
}

impl Program {
    /// Turn k's (0-based) prompt, after a turn of `prev_prompt` + `prev_output` tokens.
    pub fn prompt(&self, k: usize, prev_prompt: u32, prev_output: u32) -> u64 {
        match self.prompt_tokens.get(k) {
            Some(&p) => p as u64,
            None => prev_prompt as u64 + prev_output as u64 + self.new_tokens[k] as u64,
        }
    }

    /// The history turn k (0-based, ≥ 1) of `prompt` tokens re-sends: its prompt less its new input, and no
    /// more than the previous turn's prompt and output (a trace may claim more).
    pub fn history(&self, k: usize, prompt: u32) -> u64 {
        let h = (prompt - self.new_tokens[k].min(prompt)) as u64;
        match self.prompt_tokens.get(k - 1) {
            Some(&prev) => h.min(prev as u64 + self.output_tokens[k - 1] as u64),
            None => h,
        }
    }

    /// Whether turn k (0-based) carries the previous turn's whole prompt and output as its prefix; a traced
    /// agent that compacted or edited its history does not, and the kept KV is of no use.
    pub fn continues_history(&self, k: usize) -> bool {
        let p = &self.prompt_tokens;
        if p.is_empty() || k == 0 {
            return true;
        }
        (p[k] - self.new_tokens[k].min(p[k])) as u64 >= p[k - 1] as u64 + self.output_tokens[k - 1] as u64
    }
}

/// How each session ended, counted by the generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionEnds {
    /// Every turn completed.
    pub completed: u64,
    /// The next turn's prompt and output would exceed the model's context.
    pub context: u64,
    /// A turn was refused or failed.
    pub failed: u64,
}

/// Creates requests one at a time, in arrival order.
pub struct Generator<'a> {
    workload: &'a Workload,
    prefix: Option<&'a Prefix>,
    /// The order and the reserve channels' predictors.
    predictors: [Predictor; 2],
    seed: u64,
    arrival_rng: Rng64,
    next_idx: u64,
    t_ns: f64,
    /// On/off state: currently on, and time left in the state.
    on: bool,
    left_ns: f64,
    class_mean_output: Vec<f64>,
    /// Follow-ups: who answers a completion with a new request (none in open-loop workloads).
    follow_ups: FollowUps,
    /// Sessions: each started one's program, by session index, and how they ended.
    programs: Vec<Program>,
    pub session_ends: SessionEnds,
    /// The model's context length: a turn past it ends its session.
    context_tokens: u64,
    /// Each session class's mean output (the class-mean predictor's guess), computed once: a trace's is a
    /// long list.
    session_output_mean: Vec<f64>,
}

/// How a workload answers a completed request with a new one: the mechanism closed-loop clients and session
/// turns build on. Today's workloads are open loop (`None`); `Echo` exists for the engine's tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FollowUps {
    #[default]
    None,
    /// Each completed request is followed, `delay_ns` after its last token, by one with its class, tenant and
    /// lengths, up to `turns` requests in a chain.
    Echo { delay_ns: u64, turns: u32 },
}

impl<'a> Generator<'a> {
    /// The requests of `workload` on `seed`, with shared prefixes and the two predictors' guesses.
    pub fn new(workload: &'a Workload, prefix: Option<&'a Prefix>, predictors: [Predictor; 2], seed: u64) -> Self {
        let mut arrival_rng = rng::stream(seed, Stream::Arrivals, 0);
        let (on, left_ns) = match &workload.arrival {
            Arrival::OnOff { mean_on_ns, .. } => (true, arrival_rng.exponential(*mean_on_ns)),
            _ => (true, 0.0),
        };
        let class_mean_output = match &workload.arrival {
            Arrival::Trace { rows } => {
                let m = rows.iter().map(|r| r.output_tokens as f64).sum::<f64>() / rows.len() as f64;
                vec![m; workload.classes.len()]
            }
            _ => workload.classes.iter().map(|c| c.output.mean()).collect(),
        };
        Generator {
            workload,
            prefix,
            predictors,
            seed,
            arrival_rng,
            next_idx: 0,
            t_ns: 0.0,
            on,
            left_ns,
            class_mean_output,
            follow_ups: FollowUps::None,
            programs: Vec::new(),
            session_ends: SessionEnds::default(),
            context_tokens: u64::MAX,
            session_output_mean: workload
                .sessions
                .as_ref()
                .map_or(Vec::new(), |s| s.classes.iter().map(|c| c.output.mean()).collect()),
        }
    }

    /// Sessions end when a turn's prompt and output would pass `tokens`.
    pub fn with_context(mut self, tokens: Option<u32>) -> Self {
        self.context_tokens = tokens.map_or(u64::MAX, u64::from);
        self
    }

    /// The same requests, with completions answered as `f` says.
    pub fn with_follow_ups(mut self, f: FollowUps) -> Self {
        self.follow_ups = f;
        self
    }

    /// Whether any request's end can be answered (the engine then tells the workload of each).
    pub fn answers_completions(&self) -> bool {
        self.follow_ups != FollowUps::None
            || matches!(self.workload.arrival, Arrival::ClosedLoop { .. })
            || self.workload.sessions.is_some()
    }

    /// The request that answers the completion of `done` (turn `turn` of its chain, the first being 1) at
    /// `now_ns`, if any. Its id is the engine's to give; what it draws comes from its own stream, so the
    /// open-loop requests — and their random values — are the same with and without follow-ups.
    /// `completed`: the request completed (not refused or failed).
    pub fn follow_up(&mut self, done: &Request, turn: u32, now_ns: u64, completed: bool) -> Option<Request> {
        if let Arrival::ClosedLoop { think_ns, .. } = self.workload.arrival {
            return self.next_in_loop(think_ns, now_ns);
        }
        if done.session != NO_SESSION {
            return self.next_turn(done, turn, now_ns, completed);
        }
        match self.follow_ups {
            FollowUps::None => None,
            FollowUps::Echo { delay_ns, turns } => {
                (turn < turns).then(|| Request { arrival_ns: now_ns.saturating_add(delay_ns), ..*done })
            }
        }
    }

    fn gap_ns(&mut self, a: &Arrival) -> f64 {
        let r = &mut self.arrival_rng;
        match a {
            Arrival::Poisson { mean_gap_ns } => r.exponential(*mean_gap_ns),
            Arrival::Constant { gap_ns } => *gap_ns,
            Arrival::Gamma { shape, scale_ns } => r.gamma(*shape) * scale_ns,
            Arrival::OnOff { on_rate_per_ns, off_rate_per_ns, mean_on_ns, mean_off_ns } => {
                // Memoryless in both states: draw a gap at the current rate; if the state ends first, move on.
                let mut gap = 0.0;
                loop {
                    let rate = if self.on { *on_rate_per_ns } else { *off_rate_per_ns };
                    if rate > 0.0 {
                        let g = r.exponential(1.0 / rate);
                        if g < self.left_ns {
                            self.left_ns -= g;
                            return gap + g;
                        }
                    }
                    gap += self.left_ns;
                    self.on = !self.on;
                    self.left_ns = r.exponential(if self.on { *mean_on_ns } else { *mean_off_ns });
                }
            }
            Arrival::Trace { .. } | Arrival::ClosedLoop { .. } | Arrival::Burst => {
                unreachable!("these arrivals have no gaps")
            }
        }
    }
}

impl Iterator for Generator<'_> {
    type Item = Request;

    /// The next request, or `None` when the workload is exhausted.
    fn next(&mut self) -> Option<Request> {
        let w = self.workload;
        if self.next_idx >= w.max_requests {
            return None;
        }
        if w.sessions.is_some() {
            return self.next_session();
        }
        let idx = self.next_idx;
        let trace_row = match &w.arrival {
            Arrival::Trace { rows } => Some(*rows.get(idx as usize)?),
            _ => None,
        };
        let arrival_ns = match (&w.arrival, trace_row) {
            (_, Some(r)) => r.arrival_ns,
            // A closed loop's first requests, one per client, all at t = 0; the rest answer completions.
            (Arrival::ClosedLoop { clients, .. }, _) if idx >= *clients => return None,
            (Arrival::ClosedLoop { .. } | Arrival::Burst, _) => 0,
            (a, None) => {
                self.t_ns += self.gap_ns(a);
                self.t_ns.round() as u64
            }
        };
        if arrival_ns >= w.end_ns {
            return None;
        }
        self.next_idx += 1;
        Some(self.draw(idx, arrival_ns, trace_row))
    }
}

impl Generator<'_> {
    /// Request `idx`, arriving at `arrival_ns`: everything random about it from its own streams.
    fn draw(&self, idx: u64, arrival_ns: u64, trace_row: Option<TraceRow>) -> Request {
        let w = self.workload;
        let mut r = rng::stream(self.seed, Stream::Request, idx);
        // Fixed-count draws first, so they never shift with the length distributions' kinds.
        let class = pick(&w.class_cdf, r.uniform());
        let tenant = pick(&w.tenant_cdf, r.uniform());
        let z_order = r.std_normal();
        let z_reserve = r.std_normal();
        let drop_u = r.uniform();
        let c = &w.classes[class];
        let (prompt_tokens, output_tokens) = match trace_row {
            Some(t) => (t.prompt_tokens, t.output_tokens),
            None => (c.prompt.sample_at(idx, &mut r), c.output.sample_at(idx, &mut r)),
        };
        let mean = self.class_mean_output[class];
        let prefix_group = self.prefix_group(idx, prompt_tokens);
        Request {
            id: idx as u32,
            arrival_ns,
            class: class as u16,
            tenant: tenant as u16,
            prompt_tokens,
            output_tokens,
            pred_order_tokens: predict(self.predictors[0], output_tokens, mean, z_order),
            pred_reserve_tokens: predict(self.predictors[1], output_tokens, mean, z_reserve),
            drop_u,
            prefix_group,
            session: NO_SESSION,
        }
    }

    /// Request `idx`'s shared prefix, for a prompt of `prompt_tokens`: drawn from a stream of its own, so
    /// requests are the same with and without the feature (a prompt no longer than the prefix has none).
    fn prefix_group(&self, idx: u64, prompt_tokens: u32) -> u16 {
        let Some(p) = self.prefix else { return NO_PREFIX };
        let mut pr = rng::stream(self.seed, Stream::Prefix, idx);
        let (u_reuse, u_group) = (pr.uniform(), pr.uniform());
        if u_reuse < p.reuse_fraction && prompt_tokens > p.shared_tokens {
            pick(&p.group_cdf, u_group) as u16
        } else {
            NO_PREFIX
        }
    }

    /// The next session's first turn: the session's program is drawn now, from its own stream; the turn is
    /// request `idx` drawn as any other (class, tenant, the predictors' noise), with the program's lengths.
    fn next_session(&mut self) -> Option<Request> {
        let (w, idx) = (self.workload, self.next_idx);
        let s = w.sessions.as_ref().expect("a sessions workload");
        // A trace's sessions start at their recorded times; otherwise the arrival process starts them.
        let arrival_ns = match &s.trace {
            Some(t) if !t.arrivals_ns.is_empty() => *t.arrivals_ns.get(idx as usize)?,
            _ => {
                let arrival = w.arrival.clone();
                self.t_ns += self.gap_ns(&arrival);
                self.t_ns.round() as u64
            }
        };
        if arrival_ns >= w.end_ns {
            return None;
        }
        self.next_idx += 1;
        // A trace's programs are replayed in file order (cycling when the arrival process starts more).
        let mut program = match &s.trace {
            Some(t) => t.programs[idx as usize % t.programs.len()].clone(),
            None => {
                // The class from a stream of its own: a mix's weights move which class a session is, never
                // what a class's session draws.
                let class = if s.classes.len() > 1 {
                    pick(&s.class_cdf, rng::stream(self.seed, Stream::SessionClass, idx).uniform())
                } else {
                    0
                };
                draw_program(s, class, &mut rng::stream(self.seed, Stream::Session, idx))
            }
        };
        if let Some(wf) = &s.workflow {
            as_workflow(wf, &mut program, arrival_ns, &mut rng::stream(self.seed, Stream::Workflow, idx));
        }
        let mut r = self.draw(idx, arrival_ns, None);
        r.prompt_tokens = program.prompt_tokens.first().copied().unwrap_or(program.new_tokens[0]);
        r.output_tokens = program.output_tokens[0];
        // The session's system prompt: every turn starts with its first turn's shared prefix (a workflow's
        // step with its role's).
        r.prefix_group = match program.roles.first() {
            Some(&role) => role,
            None => self.prefix_group(idx, r.prompt_tokens),
        };
        if let Some(k) = s.classes[program.class as usize].request_class {
            r.class = k;
        }
        r.session = self.programs.len() as u32;
        self.programs.push(program);
        self.predict_into(&mut r, &mut rng::stream(self.seed, Stream::Turn, idx << 16));
        Some(r)
    }

    /// Turn `turn + 1` of `done`'s session, after `done` (turn `turn`) ended at `now_ns` and its tool ran;
    /// None when the session is over — every turn done, a turn refused or failed, or the context full.
    fn next_turn(&mut self, done: &Request, turn: u32, now_ns: u64, completed: bool) -> Option<Request> {
        let p = &self.programs[done.session as usize];
        let k = turn as usize;
        let ends = &mut self.session_ends;
        if !completed {
            ends.failed += 1;
            return None;
        }
        if k >= p.new_tokens.len() {
            ends.completed += 1;
            return None;
        }
        let (prompt, output) = (p.prompt(k, done.prompt_tokens, done.output_tokens), p.output_tokens[k]);
        if prompt + output as u64 > self.context_tokens.min(u32::MAX as u64) {
            ends.context += 1;
            return None;
        }
        let sessions = self.workload.sessions.as_ref().expect("a session's turn means sessions");
        let mut r = Request {
            arrival_ns: now_ns.saturating_add(sessions.gap_ns(p.tools[k - 1], p.gaps_ns[k - 1], now_ns)),
            prompt_tokens: prompt as u32,
            output_tokens: output,
            ..*done
        };
        if let Some(&role) = p.roles.get(k) {
            r.prefix_group = role;
        } else if self.prefix.is_some_and(|x| r.prompt_tokens <= x.shared_tokens) {
            r.prefix_group = NO_PREFIX; // a traced agent compacted its history below the shared prefix
        }
        let key = (done.session as u64) << 16 | (k as u64).min(0xffff);
        self.predict_into(&mut r, &mut rng::stream(self.seed, Stream::Turn, key));
        Some(r)
    }

    /// Whether turn `turn` of `req`'s session is its last: its program has no more, or the next would pass
    /// the context (as [`Generator::follow_up`] will find when the turn completes).
    pub fn is_last_turn(&self, req: &Request, turn: u32) -> bool {
        let p = &self.programs[req.session as usize];
        let k = turn as usize;
        if k >= p.new_tokens.len() {
            return true;
        }
        let next = p.prompt(k, req.prompt_tokens, req.output_tokens) + p.output_tokens[k] as u64;
        next > self.context_tokens.min(u32::MAX as u64)
    }

    /// Whether turn `turn` (1-based) of `req`'s session starts with its previous turn's whole prompt and output
    /// (see [`Program::continues_history`]).
    pub fn continues_history(&self, req: &Request, turn: u32) -> bool {
        self.programs[req.session as usize].continues_history(turn as usize - 1)
    }

    /// A session turn's predicted output on both channels, from `r`'s own stream.
    fn predict_into(&self, req: &mut Request, r: &mut Rng64) {
        let mean = self.session_output_mean[self.programs.get(req.session as usize).map_or(0, |p| p.class as usize)];
        let (z_order, z_reserve) = (r.std_normal(), r.std_normal());
        req.pred_order_tokens = predict(self.predictors[0], req.output_tokens, mean, z_order);
        req.pred_reserve_tokens = predict(self.predictors[1], req.output_tokens, mean, z_reserve);
    }

    /// Session `s`'s program (drawn when it started).
    pub fn program(&self, s: u32) -> &Program {
        &self.programs[s as usize]
    }

    /// The sessions started so far, by index (a session's program is fixed when it starts), taken at the
    /// run's end.
    pub fn take_programs(&mut self) -> Vec<Program> {
        std::mem::take(&mut self.programs)
    }

    /// A closed loop's next request, answering an end at `now_ns`: request `next_idx` (drawn as any other,
    /// so a closed and an open loop on one seed send the same requests in the same order), after the
    /// client's think time — drawn from a stream of its own, keyed by the request.
    fn next_in_loop(&mut self, think_ns: f64, now_ns: u64) -> Option<Request> {
        let w = self.workload;
        if self.next_idx >= w.max_requests {
            return None;
        }
        let idx = self.next_idx;
        let think =
            if think_ns > 0.0 { rng::stream(self.seed, Stream::Arrivals, idx + 1).exponential(think_ns) } else { 0.0 };
        let arrival_ns = now_ns.saturating_add(think.round() as u64);
        if arrival_ns >= w.end_ns {
            return None;
        }
        self.next_idx += 1;
        Some(self.draw(idx, arrival_ns, None))
    }
}

/// A session's program, in a fixed order of draws: the turn count, the first prompt, then per turn its output
/// and, before every later turn, the tool, its latency and the new input.
fn draw_program(s: &Sessions, class: usize, r: &mut Rng64) -> Program {
    let c = &s.classes[class];
    let turns = c.turns.sample(r).max(1) as usize;
    let mut p = Program {
        new_tokens: vec![c.first.sample(r)],
        output_tokens: Vec::with_capacity(turns),
        tools: Vec::new(),
        gaps_ns: Vec::new(),
        prompt_tokens: Vec::new(),
        class: class as u16,
        roles: Vec::new(),
        shifted: false,
    };
    for k in 0..turns {
        p.output_tokens.push(c.output.sample(r));
        if k + 1 < turns {
            let (u, z) = (r.uniform(), r.std_normal());
            let (tool, gap) = if c.tools.is_empty() {
                (0, 0.0)
            } else {
                let t = c.tools[pick(&c.tool_cdf, u)];
                let tool = &s.tools[t as usize];
                (t, if tool.sigma > 0.0 { libm::exp(tool.mu + tool.sigma * z) } else { tool.mean_ns })
            };
            p.tools.push(tool);
            p.gaps_ns.push(gap.round().min(1e17) as u64);
            p.new_tokens.push(c.new.sample(r));
        }
    }
    p
}

/// Make `p` a workflow's: each step's role (a trace's are given; otherwise the first role, then the chain of
/// the transitions in force when the workflow starts, one uniform per step from the workflow's own stream),
/// and each step's prompt its role's prefix then its own tokens (no history: steps are separate agents).
fn as_workflow(wf: &crate::workflow::Workflow, p: &mut Program, start_ns: u64, r: &mut Rng64) {
    if p.roles.is_empty() {
        let (rows, shifted) = wf.rows_at(start_ns);
        p.shifted = shifted;
        p.roles.push(wf.first);
        for _ in 1..p.new_tokens.len() {
            let from = *p.roles.last().expect("a first role") as usize;
            p.roles.push(pick(&rows[from], r.uniform()) as u16);
        }
    }
    p.prompt_tokens = p.new_tokens.iter().map(|&n| n.saturating_add(wf.prefix_tokens)).collect();
}

/// Index of the first cumulative weight above `u` (weights of 0 are never picked).
fn pick(cdf: &[f64], u: f64) -> usize {
    cdf.iter().position(|c| u < *c).unwrap_or(cdf.len() - 1)
}

fn predict(p: Predictor, actual: u32, class_mean: f64, z: f64) -> u32 {
    match p {
        Predictor::Oracle => actual,
        Predictor::Lognormal { sigma } => (actual as f64 * libm::exp(sigma * z)).round().clamp(1.0, 1e8) as u32,
        Predictor::ClassMean => class_mean.round().max(1.0) as u32,
        Predictor::Zero => 0,
    }
}
