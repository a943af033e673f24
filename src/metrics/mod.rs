//! Metrics: read-only observers of the engine. The engine calls the hooks; nothing here changes what the
//! simulation does. Definitions follow vLLM's benchmark where vLLM has the metric (docs/metrics.md).
//!
//! Every gauge is time-weighted (integer area in value·ns), so time averages are exact and Little's law can
//! be audited against per-request records.

pub mod diagnose;
mod report;
mod session_report;
mod sessions;
mod stats;
pub mod steady;
mod summary;
mod workflow;

pub use diagnose::{Change, Diagnosis, Finding, LengthCheck, Reading, Tested, diagnose};
pub use report::*;
pub use session_report::*;
pub use sessions::{SessionMetrics, ToolGap};
pub use stats::{CDF_POINTS, Cdf, LatencyCdfs, Stats, mean_ci, mean_ci_nonnegative, percentile, t95};
pub use summary::*;
pub use workflow::{Decision, RoleSeen, WorkflowMetrics};

use crate::cost::{StepCost, StepWork};
use crate::scenario::{Arrival, Scenario};
/// Seconds as every report, verdict and the lab show them: ms below 10 s (whole ms from 100 ms up, one decimal
/// below, three below 1 ms), s with one decimal above.
pub fn secs(x: f64) -> String {
    if x < 0.0 {
        // A difference: the same rule on its size ("-5.1 s", never "-5060.114 ms").
        return format!("-{}", secs(-x));
    }
    if x >= 10.0 {
        format!("{x:.1} s")
    } else if x >= 0.1 {
        format!("{:.0} ms", x * 1e3)
    } else if x >= 0.001 {
        format!("{:.1} ms", x * 1e3)
    } else {
        format!("{:.3} ms", x * 1e3)
    }
}

/// A share as the answers write it: whole percent, "37 %".
pub fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

pub use crate::request::{Outcome, RequestRecord};

/// a × b exactly. wasm32 has no 64×64→128 multiply (it is a library call); when both fit in 32 bits — nearly
/// always for a gauge value and a gap — the product fits in 64 bits. The wide product is out of line: inlined,
/// LLVM sees that both arms agree and keeps only the library call. Elsewhere the wide multiply is one
/// instruction, and the test and branch only cost (four per event, in `advance`).
#[cfg(target_arch = "wasm32")]
#[inline(always)]
fn mul_wide(a: u64, b: u64) -> u128 {
    if (a | b) >> 32 == 0 { (a * b) as u128 } else { mul_wide_slow(a, b) }
}

#[cfg(target_arch = "wasm32")]
#[cold]
#[inline(never)]
fn mul_wide_slow(a: u64, b: u64) -> u128 {
    a as u128 * b as u128
}

#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
fn mul_wide(a: u64, b: u64) -> u128 {
    a as u128 * b as u128
}

/// Low bits of a packed ITL entry that hold the count.
pub const ITL_COUNT_BITS: u32 = 20;
const ITL_MAX_NS: u64 = (1 << (64 - ITL_COUNT_BITS)) - 1;

/// `count` inter-token latencies of `ns` each, packed into one word. Counts are ≤ max_num_seqs (≤ 65,536 < 2^20);
/// latencies < 2^44 ns (4.8 hours) are exact, longer saturate. Sorting packed words sorts by latency.
#[inline(always)]
pub fn pack_itl(ns: u64, count: u64) -> u64 {
    ns.min(ITL_MAX_NS) << ITL_COUNT_BITS | count
}

pub(crate) use crate::scenario::ITL_CAP;

/// A short ITL entry, `ns << SHORT_COUNT_BITS | count` in half a word, holds a latency below 2^26 ns (67 ms)
/// and a count below 64: nearly every step's entry (a step's tokens at that step's time). A run's record —
/// one entry a step — then takes half the memory, and half the page faults a fresh run pays for it.
const SHORT_COUNT_BITS: u32 = 6;
const SHORT_MAX_NS: u64 = (1 << (32 - SHORT_COUNT_BITS)) - 1;

/// `count` latencies of `ns` each as a short entry, if they fit in one.
#[inline(always)]
pub(crate) fn short_itl(ns: u64, count: u64) -> Option<u32> {
    (ns <= SHORT_MAX_NS && count < 1 << SHORT_COUNT_BITS).then_some((ns as u32) << SHORT_COUNT_BITS | count as u32)
}

/// A short entry as a packed word with `bits` count bits.
#[inline(always)]
pub(crate) fn widen_itl(s: u32, bits: u32) -> u64 {
    ((s >> SHORT_COUNT_BITS) as u64) << bits | (s & ((1 << SHORT_COUNT_BITS) - 1)) as u64
}

/// Bound the ITL record: each gap keeps its 11 leading significant bits (relative error ≤ 2^-11, 0.05 %),
/// and equal gaps merge into one entry with their counts summed. At most 44 × 2^11 distinct gaps remain, so
/// the record stays under `ITL_CAP` entries whatever the run's length (a 10M-token output used to grow it
/// per token). Integer arithmetic only: native and wasm32 agree.
pub(crate) fn compact_itl(v: &mut Vec<u64>) {
    let mask = (1u64 << ITL_COUNT_BITS) - 1;
    let coarse = |ns: u64| {
        let bits = 64 - ns.leading_zeros();
        if bits <= 11 {
            return ns;
        }
        let shift = bits - 11;
        (((ns >> (shift - 1)) + 1) >> 1 << shift).min(ITL_MAX_NS)
    };
    for x in v.iter_mut() {
        *x = pack_itl(coarse(*x >> ITL_COUNT_BITS), *x & mask);
    }
    v.sort_unstable();
    let mut out: Vec<u64> = Vec::with_capacity(v.len().min(1 << 20));
    for &x in v.iter() {
        match out.last_mut() {
            Some(last) if *last >> ITL_COUNT_BITS == x >> ITL_COUNT_BITS && (*last & mask) + (x & mask) <= mask => {
                *last += x & mask
            }
            _ => out.push(x),
        }
    }
    *v = out;
}

/// What stopped a step's admission loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// Nothing was waiting: the step is as large as the load.
    QueueEmpty,
    /// The batch had max_num_seqs sequences.
    MaxSeqs,
    /// The step's token budget was spent.
    TokenBudget,
    /// Σ KV reservations reached the over-subscription limit.
    KvReservation,
    /// Not enough free KV blocks for the next prefill chunk.
    KvFree,
    /// A running request was preempted for memory; nothing was admitted.
    Preemption,
}

impl Limiter {
    /// In declaration order: `ALL[l as usize] == l`.
    pub const ALL: [Limiter; 6] = [
        Limiter::QueueEmpty,
        Limiter::MaxSeqs,
        Limiter::TokenBudget,
        Limiter::KvReservation,
        Limiter::KvFree,
        Limiter::Preemption,
    ];
}

const _: () = {
    let mut i = 0;
    while i < Limiter::ALL.len() {
        assert!(Limiter::ALL[i] as usize == i, "Limiter::ALL is in declaration order");
        i += 1;
    }
};

/// What the engine knows only when a run ends, handed to [`Recorder::finish`].
pub struct RunEnd {
    pub end_ns: u64,
    /// The busiest front end's share of the run spent serving; None without a front end.
    pub frontend_busy: Option<f64>,
    /// Evictions from the workers' prefix caches, of sessions' retained history under pressure, and from
    /// their host tiers.
    pub prefix_evictions: u64,
    pub pressure_evictions: u64,
    pub host_evictions: u64,
    pub session_ends: crate::workload::SessionEnds,
    /// Each session's program, for the sessions section.
    pub programs: Vec<crate::workload::Program>,
    /// Workflows: idle role prefixes evicted to keep the prefix budget, prefetched copies a step then shared
    /// and those evicted unshared, and the transitions learned (normalised rows).
    pub budget_evictions: u64,
    pub prefetch_used: u64,
    pub prefetch_unused: u64,
    pub learned: Vec<Vec<f64>>,
}

/// Per-replica counters.
#[derive(Clone, Debug, Default)]
pub struct ReplicaCounters {
    pub steps: u64,
    /// Time its steps took, each whole (a step in flight at the end included).
    pub busy_ns: u64,
    /// When its last step ends, and (set at the end of the run) how much of it lies past the run's end.
    pub busy_until_ns: u64,
    pub past_end_ns: u64,
    pub running: u64,
    pub kv_used_blocks: u64,
    pub kv_peak_blocks: u64,
    /// Blocks its prefix cache held when last told (see [`Recorder::on_prefix_held`]).
    pub prefix_held_blocks: u64,
}

impl ReplicaCounters {
    /// Busy time within the run (what a step in flight at its end took past it left out).
    pub fn busy_in_run_ns(&self) -> u64 {
        self.busy_ns - self.past_end_ns
    }
}

/// Time-weighted series, one point per window.
#[derive(Clone, Debug, Default)]
pub struct SeriesRecorder {
    pub window_ns: u64,
    max_points: usize,
    start_ns: u64,
    /// The run's areas when the current window opened.
    area_before: [u128; 4],
    completions: u64,
    tokens: u64,
    /// Closed windows: (start, waiting, running, kv blocks, in system, completions, tokens).
    pub points: Vec<(u64, f64, f64, f64, f64, u64, u64)>,
}

/// The observer: what the engine reports through its hooks, and the gauges they keep current. The requests'
/// records are the engine's during a run; [`Recorder::finish`] takes them for the report.
pub struct Recorder {
    /// Empty until the run ends.
    pub requests: Vec<RequestRecord>,
    /// Sessions: how they ended and each one's program (set when the run ends; empty without sessions).
    pub session_ends: crate::workload::SessionEnds,
    /// History tokens session turns found retained (not prefilled again).
    pub session_reused_tokens: u64,
    pub programs: Vec<crate::workload::Program>,
    /// Sessions in the system, retained KV, turns' cache outcomes and restores.
    pub sess: SessionMetrics,
    /// Gauges the engine keeps current (changes take effect at the instant of the event).
    pub in_system: u64,
    pub waiting: u64,
    pub preemptions: u64,
    /// Inter-token latencies: one entry per step for the tokens whose ITL was exactly that step, one per token
    /// otherwise (after a skipped step or a preemption). A step's entry goes into `itl_short` in half a word
    /// when it fits ([`short_itl`]: nearly always), else here packed `ns << ITL_COUNT_BITS | count`, as every
    /// irregular one the step end writes ([`Recorder::itl_sink`]). The two parts are one sample; a step's few
    /// bytes keep a million-request run small, and sorting the packed words sorts by latency.
    pub itl_packed: Vec<u64>,
    pub itl_short: Vec<u32>,
    /// The record's length (both parts) at which it is next compacted ([`compact_itl`]); set once it was, so a report
    /// can say its ITL percentiles are to 0.05 %.
    itl_compact_at: usize,
    pub itl_coarsened: bool,
    /// An event fell past the simulated clock's end (`engine::CLOCK_END_NS`) and never happened.
    pub clock_ended: bool,
    pub replicas: Vec<ReplicaCounters>,
    pub steps: u64,
    /// Step ends the engine made without the pass over the batch (every request lazy; not reported: tests
    /// check that the comparison with the general path covers them).
    pub coasted_steps: u64,
    pub limiter_steps: [u64; 6],
    pub compute_bound_steps: u64,
    /// Σ seqs × step duration, for the time-weighted batch size.
    pub batch_area: u128,
    pub prefill_tokens: u64,
    pub decode_tokens: u64,
    /// Σ of each breakdown part over steps (ns): prefill compute, decode compute, weights, KV read, comm, overhead.
    pub cost_parts_ns: [f64; 6],
    pub kv_checks: u64,
    pub kv_violations: u64,
    pub kv_peak_blocks_total: u64,
    running_total: u64,
    kv_used_total: u64,
    last_ns: u64,
    /// Integrals over the run of (waiting, running, kv used blocks, in system), value·ns.
    pub area: [u128; 4],
    pub series: SeriesRecorder,
    pub end_ns: u64,
    expected: u64,
    /// Disaggregated: busy time of each link, and the bytes sent.
    pub link_busy_ns: Vec<u64>,
    /// When each link's last send ends.
    link_until_ns: Vec<u64>,
    pub transfer_bytes: u64,
    /// Prefix caching: lookups at admission, hits, and the prompt tokens hits did not prefill.
    pub prefix_lookups: u64,
    pub prefix_hits: u64,
    pub prefix_saved_tokens: u64,
    /// Peak blocks held by cached prefixes (all workers together, each counted once), and the time integral
    /// of the blocks held (value·ns) with the value and instant it was last set.
    pub prefix_peak_blocks: u64,
    pub prefix_evictions: u64,
    /// [`RunEnd::frontend_busy`].
    pub frontend_busy: Option<f64>,
    pub prefix_area: u128,
    prefix_held: (u64, u64),
    /// Workflows: transitions scored, decisions, prefetches (and, at the end, the engine's counts).
    pub wf: WorkflowMetrics,
}

impl Recorder {
    pub fn new(sc: &Scenario) -> Self {
        let w = &sc.workload;
        let expected = match &w.arrival {
            Arrival::Trace { rows } => (rows.len() as u64).min(w.max_requests),
            _ if w.end_ns == u64::MAX => w.max_requests,
            _ => w.max_requests.min((w.end_ns as f64 / w.mean_gap_ns()) as u64),
        };
        // A session is its turns.
        let expected = w
            .sessions
            .as_ref()
            .map_or(expected, |s| (expected as f64 * s.mean_of(|c| c.turns.mean().max(1.0))).round() as u64);
        Recorder {
            requests: Vec::new(),
            session_ends: Default::default(),
            session_reused_tokens: 0,
            programs: Vec::new(),
            sess: SessionMetrics::new(sc.series_window_ns, 4 * sc.series_points as usize),
            in_system: 0,
            waiting: 0,
            preemptions: 0,
            itl_packed: Vec::new(),
            itl_short: Vec::new(),
            itl_compact_at: ITL_CAP,
            itl_coarsened: false,
            clock_ended: false,
            replicas: vec![ReplicaCounters::default(); sc.worker_count() as usize],
            steps: 0,
            coasted_steps: 0,
            limiter_steps: [0; 6],
            compute_bound_steps: 0,
            batch_area: 0,
            prefill_tokens: 0,
            decode_tokens: 0,
            cost_parts_ns: [0.0; 6],
            kv_checks: 0,
            kv_violations: 0,
            kv_peak_blocks_total: 0,
            running_total: 0,
            kv_used_total: 0,
            last_ns: 0,
            area: [0; 4],
            series: SeriesRecorder {
                window_ns: sc.series_window_ns.max(1),
                max_points: 4 * sc.series_points as usize,
                ..Default::default()
            },
            end_ns: 0,
            expected,
            link_busy_ns: vec![0; sc.link_count()],
            link_until_ns: vec![0; sc.link_count()],
            transfer_bytes: 0,
            prefix_lookups: 0,
            prefix_hits: 0,
            prefix_saved_tokens: 0,
            prefix_peak_blocks: 0,
            prefix_evictions: 0,
            frontend_busy: None,
            prefix_area: 0,
            prefix_held: (0, 0),
            wf: WorkflowMetrics::default(),
        }
    }

    /// Record `count` inter-token latencies of `ns` each.
    #[inline(always)]
    pub fn push_itl(&mut self, ns: u64, count: u64) {
        match short_itl(ns, count) {
            Some(s) => self.itl_short.push(s),
            None => self.itl_packed.push(pack_itl(ns, count)),
        }
    }

    /// Of `created` requests so far, those that reached a final outcome.
    pub fn n_final(&self, created: u64) -> u64 {
        created - self.in_system
    }

    /// Requests the run is expected to create, for progress and for sizing the engine's table (when unknown,
    /// duration-bounded: those created so far and those in the system).
    pub fn expected_requests(&self, created: u64) -> u64 {
        if self.expected > 0 { self.expected } else { created + self.in_system }
    }

    /// An arrival was admitted into the system.
    pub fn on_admitted(&mut self) {
        self.in_system += 1;
    }

    /// A request joined a waiting queue.
    pub fn on_queued(&mut self) {
        self.waiting += 1;
    }

    /// The engine dropped an event past the simulated clock's end.
    pub fn on_clock_end(&mut self) {
        self.clock_ended = true;
    }

    /// A request left its waiting queue for a batch.
    pub fn on_dequeued(&mut self) {
        self.waiting -= 1;
    }

    /// A running request was preempted; `failed`: past its cap, it leaves the system.
    pub fn on_preempted(&mut self, failed: bool) {
        self.preemptions += 1;
        if failed {
            self.in_system -= 1;
        }
    }

    /// A request's first admission looked its shared prefix up; `saved_tokens` > 0: a hit that spared
    /// prefilling them.
    pub fn on_prefix_lookup(&mut self, saved_tokens: u32) {
        self.prefix_lookups += 1;
        if saved_tokens > 0 {
            self.prefix_hits += 1;
            self.prefix_saved_tokens += saved_tokens as u64;
        }
    }

    /// Worker `r`'s prefix cache holds `held` blocks (told at every step's start and end; only a change
    /// moves the gauge, which is the sum over workers).
    #[inline]
    pub fn on_prefix_held(&mut self, now: u64, r: usize, held: u64) {
        let was = std::mem::replace(&mut self.replicas[r].prefix_held_blocks, held);
        if held != was {
            self.set_prefix_held(now, self.prefix_held.0 + held - was);
        }
    }

    /// The blocks all workers' prefix caches hold changed to `total`.
    fn set_prefix_held(&mut self, now: u64, total: u64) {
        self.prefix_peak_blocks = self.prefix_peak_blocks.max(total);
        let (held, since) = std::mem::replace(&mut self.prefix_held, (total, now));
        self.prefix_area += mul_wide(held, now - since);
    }

    /// A workflow's step arrived: its transition scored against what the previous step's end planned.
    pub fn on_role_seen(&mut self, s: &RoleSeen) {
        self.wf.on_role_seen(s);
    }

    /// A step's end decided what to prefetch for its workflow.
    pub fn on_prefetch_decision(&mut self, d: Decision) {
        self.wf.decisions.push(d);
    }

    /// A prefetch of `bytes` started.
    pub fn on_prefetch(&mut self, bytes: u64) {
        self.wf.prefetches += 1;
        self.wf.prefetch_bytes += bytes;
    }

    /// A prefetch landed: into the cache, or finding it there already.
    pub fn on_prefetch_landed(&mut self, joined: bool) {
        self.wf.landed += joined as u64;
        self.wf.redundant += !joined as u64;
    }

    /// A session started / ended (session `s`).
    pub fn on_session_start(&mut self, now: u64) {
        self.sess.on_start(now);
    }
    pub fn on_session_end(&mut self, s: u32, now: u64) {
        self.sess.on_end(s, now);
    }

    /// A turn waits `wait_ns` for its history's `bytes` to come back from host memory.
    pub fn on_restore(&mut self, wait_ns: u64, bytes: u64) {
        self.sess.restore_ns.push(wait_ns);
        self.sess.restore_bytes += bytes;
    }

    /// A later turn of `session` was first admitted: `reused_tokens` of its prompt found in HBM, on its previous
    /// turn's worker (`local`), finding its history there (`hit`), brought by a restore (`host_hit`).
    pub fn on_turn_admitted(&mut self, session: u32, reused_tokens: u32, local: bool, hit: bool, host_hit: bool) {
        self.session_reused_tokens += reused_tokens as u64;
        let s = &mut self.sess;
        s.reused_tokens[session as usize] += reused_tokens as u64;
        s.later_turns += 1;
        s.local_turns += local as u64;
        s.hits += hit as u64;
        s.host_hits += host_hit as u64;
    }

    /// A session's tool call returned: its gap, what the turn's end chose and the cheapest choice for it.
    pub fn on_tool_gap(&mut self, gap: ToolGap) {
        self.sess.gaps.push(gap);
    }

    /// Sessions' retained blocks changed by these amounts (idle history in HBM, history in host memory).
    pub fn on_retained(&mut self, now: u64, hbm: i64, host: i64, worker_hbm: u64) {
        self.sess.on_retained(now, hbm, host, worker_hbm);
    }

    /// A prompt's KV went onto link `link` for `send_ns`, until `until_ns`, `bytes` of it.
    pub fn on_transfer(&mut self, link: usize, send_ns: u64, until_ns: u64, bytes: u64) {
        self.link_busy_ns[link] += send_ns;
        self.link_until_ns[link] = until_ns;
        self.transfer_bytes += bytes;
    }

    /// Where a step end writes its irregular inter-token latencies (packed, see [`pack_itl`]).
    pub fn itl_sink(&mut self) -> &mut Vec<u64> {
        &mut self.itl_packed
    }

    /// Requests in the system now.
    pub fn in_system(&self) -> u64 {
        self.in_system
    }

    fn values(&self) -> [u64; 4] {
        [self.waiting, self.running_total, self.kv_used_total, self.in_system]
    }

    /// Integrate every gauge up to `now` with its current value. The engine calls this before each event.
    pub fn advance(&mut self, now: u64) {
        let v = self.values();
        while self.last_ns < now {
            let s = &mut self.series;
            let wend = s.start_ns + s.window_ns;
            let seg_end = now.min(wend);
            let dt = seg_end - self.last_ns;
            for (area, value) in self.area.iter_mut().zip(v) {
                *area += mul_wide(value, dt);
            }
            self.last_ns = seg_end;
            if seg_end == wend {
                let len = self.series.window_ns;
                self.close_window(len);
            }
        }
    }

    fn close_window(&mut self, len_ns: u64) {
        let s = &mut self.series;
        // The window's area is what the run's grew by since the window opened.
        let mean = |k: usize| if len_ns == 0 { 0.0 } else { (self.area[k] - s.area_before[k]) as f64 / len_ns as f64 };
        s.points.push((s.start_ns, mean(0), mean(1), mean(2), mean(3), s.completions, s.tokens));
        s.start_ns += s.window_ns;
        s.area_before = self.area;
        s.completions = 0;
        s.tokens = 0;
        if s.points.len() >= s.max_points {
            // Too many points: merge pairs and double the window.
            let merged: Vec<_> = s
                .points
                .chunks(2)
                .map(|c| match c {
                    [a, b] => (
                        a.0,
                        (a.1 + b.1) / 2.0,
                        (a.2 + b.2) / 2.0,
                        (a.3 + b.3) / 2.0,
                        (a.4 + b.4) / 2.0,
                        a.5 + b.5,
                        a.6 + b.6,
                    ),
                    [a] => *a,
                    _ => unreachable!(),
                })
                .collect();
            // max_points is even, so every merged point covers two old windows.
            s.points = merged;
            s.window_ns *= 2;
        }
    }

    /// A step started on replica `r` (after batch formation and its KV allocation).
    pub fn on_step(&mut self, r: usize, w: &StepWork, c: &StepCost, limiter: Limiter, running: u64, kv_used: u64) {
        self.steps += 1;
        self.limiter_steps[limiter as usize] += 1; // ALL lists the variants in declaration order
        self.compute_bound_steps += c.compute_bound as u64;
        self.batch_area += mul_wide(w.seqs() as u64, c.total_ns);
        self.prefill_tokens += w.prefill_tokens as u64;
        self.decode_tokens += w.decode_seqs as u64;
        for (acc, v) in self.cost_parts_ns.iter_mut().zip([
            c.prefill_compute_ns,
            c.decode_compute_ns,
            c.weights_ns,
            c.kv_read_ns,
            c.comm_ns,
            c.overhead_ns,
        ]) {
            *acc += v;
        }
        let rc = &mut self.replicas[r];
        rc.steps += 1;
        rc.busy_ns += c.total_ns;
        rc.busy_until_ns = self.last_ns + c.total_ns;
        self.set_replica(r, running, kv_used);
    }

    /// A step ended on replica `r`; `finished` requests completed; `running` and `kv_used` are after it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn on_step_end(
        &mut self,
        r: usize,
        step_ns: u64,
        bulk_itl: u32,
        emitted: u64,
        finished: u32,
        running: u64,
        kv_used: u64,
        kv_ok: bool,
    ) {
        if bulk_itl > 0 {
            self.push_itl(step_ns, bulk_itl as u64);
        }
        if self.itl_packed.len() + self.itl_short.len() >= self.itl_compact_at {
            self.itl_packed.extend(self.itl_short.drain(..).map(|s| widen_itl(s, ITL_COUNT_BITS)));
            compact_itl(&mut self.itl_packed);
            self.itl_compact_at = ITL_CAP.max(2 * self.itl_packed.len());
            self.itl_coarsened = true;
        }
        self.in_system -= finished as u64;
        self.series.completions += finished as u64;
        self.series.tokens += emitted;
        self.kv_checks += 1;
        self.kv_violations += (!kv_ok) as u64;
        self.set_replica(r, running, kv_used);
    }

    /// KV or the batch of worker `r` changed outside a step (a transfer freed a prompt's blocks).
    pub fn on_kv_change(&mut self, r: usize, running: u64, kv_used: u64) {
        self.set_replica(r, running, kv_used);
    }

    fn set_replica(&mut self, r: usize, running: u64, kv_used: u64) {
        let rc = &mut self.replicas[r];
        self.running_total = self.running_total - rc.running + running;
        self.kv_used_total = self.kv_used_total - rc.kv_used_blocks + kv_used;
        rc.running = running;
        rc.kv_used_blocks = kv_used;
        rc.kv_peak_blocks = rc.kv_peak_blocks.max(kv_used);
        self.kv_peak_blocks_total = self.kv_peak_blocks_total.max(self.kv_used_total);
    }

    /// A step end coasted (every running request lazy, none leaving).
    pub fn on_coasted(&mut self) {
        self.coasted_steps += 1;
    }

    /// A session's retained KV expired (its TTL passed).
    pub fn on_ttl_eviction(&mut self) {
        self.sess.ttl_evictions += 1;
    }

    /// The run ended (`end`) with these requests: close the last window; whatever is still in flight is
    /// unfinished.
    pub fn finish(&mut self, mut end: RunEnd, requests: Vec<RequestRecord>) {
        let (end_ns, evictions) = (end.end_ns, end.prefix_evictions);
        self.sess.pressure_evictions = end.pressure_evictions;
        self.sess.host_evictions = end.host_evictions;
        self.session_ends = end.session_ends;
        self.programs = std::mem::take(&mut end.programs);
        (self.wf.budget_evictions, self.wf.used, self.wf.unused) =
            (end.budget_evictions, end.prefetch_used, end.prefetch_unused);
        self.wf.learned = std::mem::take(&mut end.learned);
        self.requests = requests;
        self.prefix_evictions = evictions;
        self.frontend_busy = end.frontend_busy;
        self.set_prefix_held(end_ns, self.prefix_held.0);
        self.advance(end_ns);
        if !self.programs.is_empty() {
            self.sess.finish(end_ns);
        }
        self.end_ns = end_ns;
        // A run cut by its horizon (or the clock's end) has a step or a send in flight: busy time counts
        // only up to the end, so a busy fraction is a share of the run.
        for rc in &mut self.replicas {
            rc.past_end_ns = rc.busy_until_ns.saturating_sub(end_ns).min(rc.busy_ns);
        }
        for (busy, until) in self.link_busy_ns.iter_mut().zip(&self.link_until_ns) {
            *busy -= until.saturating_sub(end_ns).min(*busy);
        }
        let partial = end_ns - self.series.start_ns;
        if partial > 0 || self.series.points.is_empty() {
            self.close_window(partial);
        }
        for r in self.requests.iter_mut().filter(|r| r.outcome == Outcome::InFlight) {
            r.outcome = Outcome::Unfinished;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;

    /// Compaction keeps every latency's count, moves none by more than 0.05 %, and leaves a bounded record
    /// however many distinct gaps went in.
    #[test]
    fn the_itl_record_compacts_to_a_bounded_size_within_a_twentieth_of_a_percent() {
        let mut r = crate::rng::stream(1, crate::rng::Stream::Study, 0);
        let gaps: Vec<u64> = (0..3_000_000).map(|_| (r.uniform() * 1e10) as u64 + 1).collect();
        let mut exact: Vec<u64> = gaps.iter().map(|&g| pack_itl(g, 1)).collect();
        exact.push(pack_itl(20_000_000, 1000));
        let mut packed = exact.clone();
        compact_itl(&mut packed);
        assert!(packed.len() <= 44 << 11, "{} entries left", packed.len());
        let (a, b) =
            (Stats::from_packed_ns(&exact, &[], ITL_COUNT_BITS), Stats::from_packed_ns(&packed, &[], ITL_COUNT_BITS));
        assert_eq!(a.count, b.count);
        for (x, y) in [(a.mean, b.mean), (a.p50, b.p50), (a.p95, b.p95), (a.p99, b.p99), (a.max, b.max)] {
            assert!((x - y).abs() <= x * (1.0 / 2048.0), "{x} vs {y}");
        }
        // Small gaps stay exact.
        let mut small = vec![pack_itl(5, 1), pack_itl(2047, 3), pack_itl(5, 2)];
        compact_itl(&mut small);
        assert_eq!(small, [pack_itl(5, 3), pack_itl(2047, 3)]);
    }
}
