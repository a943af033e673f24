//! What a run will need, estimated from a validated scenario before it starts, and the budget it must fit.
//!
//! Memory grows with requests (each keeps its record, its latency samples and, exported, its CSV row) and
//! with the inter-token latency record (at most one entry per step and per irregular token, bounded by its
//! compaction); time grows with steps, of which a run has at most one per token it processes (a step carries
//! at least one request's decode token or prefill chunk). Both bounds are upper bounds: a run inside them
//! ends within the budget, and one outside is refused with the estimate, the limit and how to raise it.

use super::{FieldError, Scenario, ScenarioError, WorkloadSpec, at};
use crate::workload::Arrival;

/// Entries of the ITL record at which `metrics` compacts it (128 MB): below it — every run of up to millions
/// of requests — inter-token latencies are exact. Part of the memory budget, so it lives here.
pub(crate) const ITL_CAP: usize = 1 << 24;

/// Bytes a request costs over a run and its report: its record (96 bytes, up to twice that while the list
/// grows), five latency samples and their sorted copies, and its row in the per-request CSV.
const BYTES_PER_REQUEST: f64 = 400.0;
/// A session's program holds, per turn, its new input, output, tool and gap.
const PROGRAM_BYTES_PER_TURN: f64 = 24.0;
/// A workflow that predicts its roles records, per step end, its role and its prefetch decision
/// (`metrics::workflow::Decision`, 32 bytes; a test holds the size), twice over while the list grows.
const WORKFLOW_BYTES_PER_TURN: f64 = 2.0 * 32.0 + 2.0;
/// The ITL record's most entries (`metrics` compacts it there), 8 bytes each, twice over while it grows
/// (a doubling holds the old copy and the new; the report reads it in place, through a fixed histogram).
const ITL_MAX_BYTES: f64 = (ITL_CAP as f64) * 8.0 * 2.0;

/// How the command line's budget is raised.
const NATIVE_RAISE: &str = ", or raise the budget with --budget-gb";
/// How the lab's is: it is not; the command line runs larger runs.
const BROWSER_RAISE: &str = "; the command line runs larger ones (inferscale run --budget-gb GB)";

/// What one run may use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub memory_bytes: f64,
    /// Steps (step-end events), the measure of a run's time: a few million a second natively.
    pub steps: f64,
    /// How the user who set this budget raises it, appended to a refusal (the command line's flag, the lab's
    /// pointer to the command line).
    pub raise: &'static str,
}

impl Budget {
    /// The command line's default: 8 GB and 10^10 steps (about an hour at the slowest, batch-of-one, pace).
    pub const NATIVE: Budget = Budget { memory_bytes: 8e9, steps: 1e10, raise: NATIVE_RAISE };
    /// The lab's: a Web Worker's wasm32 memory is 4 GB at most; a long run can be cancelled (it runs in the
    /// worker), so its steps are bounded only against a shared link that would run for an hour.
    pub const BROWSER: Budget = Budget { memory_bytes: 1.5e9, steps: 2e9, raise: BROWSER_RAISE };

    /// The native budget with `gb` gigabytes of memory and steps raised in proportion.
    pub fn with_memory_gb(gb: f64) -> Budget {
        let scale = gb * 1e9 / Budget::NATIVE.memory_bytes;
        Budget { memory_bytes: gb * 1e9, steps: Budget::NATIVE.steps * scale.max(1.0), ..Budget::NATIVE }
    }
}

/// A run's needs, bounded from above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub requests: f64,
    /// Σ output tokens and Σ steps' worth of work (output tokens + prefill chunks) over the requests.
    pub output_tokens: f64,
    pub steps: f64,
    pub memory_bytes: f64,
}

impl Scenario {
    /// The most this run can need (see the module's documentation).
    pub fn estimate(&self) -> Estimate {
        let w = &self.workload;
        let chunk = self.pools.iter().map(|p| p.engine.prefill_chunk_tokens).min().unwrap_or(1).max(1) as f64;
        let (requests, output, prompt_chunks, trace_bytes) = match &w.arrival {
            Arrival::Trace { rows } => {
                let rows = &rows[..rows.len().min(w.max_requests.min(usize::MAX as u64) as usize)];
                let out: f64 = rows.iter().map(|r| r.output_tokens as f64).sum();
                let chunks: f64 = rows.iter().map(|r| (r.prompt_tokens as f64 / chunk).ceil()).sum();
                (rows.len() as f64, out, chunks, rows.len() as f64 * 16.0)
            }
            _ if w.sessions.as_ref().is_some_and(|s| s.trace.as_ref().is_some_and(|t| !t.arrivals_ns.is_empty())) => {
                self.timed_trace_load(chunk)
            }
            _ => {
                let by_rate = self.arrivals_within_duration();
                // Poisson arrivals over a duration can run a little ahead of the mean rate.
                let n = (w.max_requests as f64).min((by_rate * 1.25 + 10.0).ceil());
                let (mut out, mut chunks, mut worst) = (0.0, 0.0, 0.0f64);
                let mut prev = 0.0;
                for (c, cum) in w.classes.iter().zip(&w.class_cdf) {
                    let share = cum - prev;
                    prev = *cum;
                    out += share * c.output.mean();
                    chunks += share * (c.prompt.mean() / chunk + 1.0);
                    worst = worst.max(c.output.max() as f64 + (c.prompt.max() as f64 / chunk).ceil());
                }
                // A session is many requests: its turns, each re-sending the history so far.
                let mut turns = 1.0;
                if let Some(s) = &w.sessions {
                    (turns, out, chunks, worst) = self.session_load(s, chunk);
                }
                // Drawn lengths exceed their means by chance: a quarter more, and eight of the longest
                // requests (sessions), cover small runs as well as large ones.
                let margin = |x: f64| 1.25 * n * x + 8.0 * worst;
                let per_turn = match w.sessions.as_ref().map(|s| s.workflow.is_some()) {
                    Some(true) => PROGRAM_BYTES_PER_TURN + WORKFLOW_BYTES_PER_TURN,
                    Some(false) => PROGRAM_BYTES_PER_TURN,
                    None => 0.0,
                };
                let programs = n * turns * per_turn;
                // Turns per session vary too: a quarter more, and eight sessions of the most turns.
                let requests = match &w.sessions {
                    Some(s) => 1.25 * n * turns + 8.0 * s.max_of(|c| c.turns.max()) as f64,
                    None => n,
                };
                (requests, margin(out), margin(chunks), programs)
            }
        };
        // A preempted request recomputes its prompt and what it generated — in prefill chunks — up to
        // max_preemptions times (three counted: more is vanishingly rare and ends in failure).
        let retries = self.pools.iter().map(|p| p.engine.max_preemptions).max().unwrap_or(0).min(3) as f64;
        let steps = output + prompt_chunks + retries * (prompt_chunks + output / chunk);
        let itl_bytes = (8.0 * (steps + output) * 2.0).min(ITL_MAX_BYTES);
        Estimate {
            requests,
            output_tokens: output,
            steps,
            memory_bytes: requests * BYTES_PER_REQUEST + itl_bytes + trace_bytes,
        }
    }

    /// Arrivals a duration allows (infinite without one). A closed loop's client issues its next request a
    /// think time after its last completes, and a request takes at least its output's steps of the cheapest
    /// step (a lone decode) after its serving overhead: its gap was the think time alone, and with none a
    /// closed loop bounded by its duration counted 50 million requests (20 GB) at any duration.
    fn arrivals_within_duration(&self) -> f64 {
        let w = &self.workload;
        if w.end_ns == u64::MAX {
            return f64::INFINITY;
        }
        match w.arrival {
            Arrival::ClosedLoop { clients, think_ns } => {
                let pool = self.front_pool();
                let lone = pool.cost.step(&crate::cost::StepWork { decode_seqs: 1, ..Default::default() }).total_ns;
                let fewest = match &w.sessions {
                    Some(s) => s.classes.iter().map(|c| c.output.min()).min().unwrap_or(1),
                    None => w.classes.iter().map(|c| c.output.min()).min().unwrap_or(1),
                };
                let per_request =
                    think_ns + pool.engine.request_overhead_ns as f64 + (fewest.max(1) as u64 * lone) as f64;
                clients as f64 * (w.end_ns as f64 / per_request).ceil()
            }
            _ => w.end_ns as f64 / w.mean_gap_ns(),
        }
    }

    /// A timed session trace runs its sessions as recorded (at most `workload.requests` of them): its turns,
    /// output tokens and prefill chunks are counted exactly, each turn re-sending its history, the session
    /// ending where a turn would pass the model's context or one worker's KV. (The trace's sessions were
    /// counted as the cap × the most turns: 2 sessions of 10,000 turns read as 10,480 GB.)
    fn timed_trace_load(&self, chunk: f64) -> (f64, f64, f64, f64) {
        let w = &self.workload;
        let t = w.sessions.as_ref().and_then(|s| s.trace.as_ref()).expect("a timed session trace");
        let cap = self.turn_cap_tokens() as f64;
        let n = (t.programs.len() as u64).min(w.max_requests) as usize;
        let (mut turns, mut out, mut chunks) = (0.0, 0.0, 0.0);
        for p in &t.programs[..n] {
            let (mut prompt, mut output) = (0u64, 0u32);
            for k in 0..p.new_tokens.len() {
                let next = p.prompt(k, prompt.min(u32::MAX as u64) as u32, output);
                if (next + p.output_tokens[k] as u64) as f64 > cap {
                    break;
                }
                (prompt, output) = (next, p.output_tokens[k]);
                turns += 1.0;
                out += output as f64;
                chunks += (prompt as f64 / chunk).ceil() + 1.0;
            }
        }
        let turns_total: usize = t.programs[..n].iter().map(|p| p.new_tokens.len()).sum();
        (turns, out, chunks, turns_total as f64 * PROGRAM_BYTES_PER_TURN)
    }

    /// One session's expected turns, output tokens and prefill chunks, and the most a session may take
    /// (steps): turn k re-sends the history, until it would pass the model's context or one worker's KV,
    /// where the session ends.
    /// Sessions of several classes: the means over sessions, and the worst class's worst.
    fn session_load(&self, s: &crate::workload::Sessions, chunk: f64) -> (f64, f64, f64, f64) {
        let cap = self.turn_cap_tokens() as f64;
        let load = |c: &crate::workload::SessionClass| {
            let (turns, per_turn) = (c.turns.mean(), c.new.mean() + c.output.mean());
            let prompt_sum: f64 = match &s.workflow {
                // A workflow's steps carry no history: each is its role's prefix and its own tokens.
                Some(wf) => (wf.prefix_tokens as f64 * turns + c.first.mean() + (turns - 1.0).max(0.0) * c.new.mean())
                    .min(cap * turns),
                None => (0..turns.ceil() as u32).map(|k| (c.first.mean() + k as f64 * per_turn).min(cap)).sum(),
            };
            let worst = c.turns.max() as f64 * (c.output.max() as f64 + (cap / chunk).ceil() + 1.0);
            (turns, turns * c.output.mean(), prompt_sum / chunk + turns, worst)
        };
        let worst = s.classes.iter().map(|c| load(c).3).fold(0.0, f64::max);
        (s.mean_of(|c| load(c).0), s.mean_of(|c| load(c).1), s.mean_of(|c| load(c).2), worst)
    }

    /// Refuse a run (or `runs` of them at once, as a study's threads do) that would exceed `budget`; the
    /// error gives the estimate, the limit, and what to change.
    pub fn check_budget(&self, budget: &Budget, runs: u32) -> Result<(), ScenarioError> {
        let raise = budget.raise;
        let est = self.estimate();
        let runs = runs.max(1) as f64;
        let who = if runs > 1.0 { format!("{runs} runs at once") } else { "this run".to_string() };
        let mut errors = Vec::new();
        if est.memory_bytes * runs > budget.memory_bytes {
            errors.push(FieldError {
                path: at!("workload", WorkloadSpec::requests),
                message: format!(
                    "{who} would need about {} GB of memory ({:.3e} requests, {:.3e} output tokens{}), over the budget of {} GB: fewer requests or a shorter workload.duration_s{raise}",
                    gb(est.memory_bytes * runs),
                    est.requests,
                    est.output_tokens,
                    if runs > 1.0 { " a run" } else { "" },
                    gb(budget.memory_bytes)
                ),
            });
        }
        if est.steps * runs > budget.steps {
            errors.push(FieldError {
                path: at!("workload", WorkloadSpec::requests),
                message: format!(
                    "{who} could take up to {:.3e} steps (one per output token and prefill chunk), over the budget of {:.0e} steps: fewer requests or shorter outputs{raise}",
                    est.steps * runs,
                    budget.steps
                ),
            });
        }
        if errors.is_empty() { Ok(()) } else { Err(ScenarioError { errors }) }
    }
}

/// Bytes as gigabytes, to three significant digits.
fn gb(bytes: f64) -> f64 {
    let g = bytes / 1e9;
    let digits = (2 - libm::floor(libm::log10(g.max(1e-9))) as i32).max(0);
    let f = libm::pow(10.0, digits as f64);
    libm::round(g * f) / f
}
