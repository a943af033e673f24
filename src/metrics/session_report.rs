//! The report's `sessions` section: turns and sessions, where later turns found their history, what retention
//! held, the session audits, and a block per session class.

use serde::Serialize;

use super::summary::LITTLE_TOLERANCE;
use super::{Outcome, Recorder, RequestRecord, Stats};
use crate::scenario::Scenario;

/// A session workload's figures. Turn latencies are per turn (a request); a session's E2E runs from its first
/// turn's arrival to its last turn's completion, over sessions that completed every turn.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionsSummary {
    pub sessions: u64,
    /// Every turn completed.
    pub completed: u64,
    /// Ended early: the next turn would have passed the model's context.
    pub ended_by_context: u64,
    /// Ended early: a turn was refused or failed.
    pub ended_by_failure: u64,
    /// Still running when the run ended (a horizon).
    pub unfinished: u64,
    /// sessions = completed + ended early (context, failure) + unfinished.
    pub conservation_ok: bool,
    pub turns: u64,
    pub turns_completed: u64,
    pub mean_turns_per_session: f64,
    pub turn_ttft_s: Stats,
    pub turn_e2e_s: Stats,
    pub session_e2e_s: Stats,
    /// TTFT by turn index (1 = the first), up to turn 64: (turn, completed turns, p50, p95).
    pub ttft_by_turn: Vec<TurnLatency>,
    /// Σ over later turns of the history their prompt re-sends, and of it the tokens prefilled again.
    pub history_tokens: u64,
    pub recomputed_history_tokens: u64,
    /// Share of the history not prefilled again (found retained in HBM, or restored from host memory).
    pub reuse: f64,
    /// Turns refused or failed (each ends its session).
    pub failed_turns: u64,
    /// Sessions that ended meeting `workload.sessions.slo` (every turn's TTFT and the session's span), of
    /// those that ended; absent without a session objective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_attainment: Option<f64>,
    pub kv: SessionKvSummary,
    /// The tool calls' gaps and the tiers chosen for them, when the scenario prices them (the gap oracle, an
    /// adaptive policy, or a tool shift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiering: Option<TieringSummary>,
    /// Workflows: the role forecasts, the prefetches and the role prefixes' cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowSummary>,
    pub audit: SessionAudit,
    /// By session class, when the scenario names them (`workload.sessions.classes`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<SessionClassSummary>,
}

/// One session class's figures: as the section's, over its sessions and their turns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionClassSummary {
    pub name: String,
    pub sessions: u64,
    /// Sessions whose every turn completed.
    pub completed: u64,
    pub turns: u64,
    pub mean_turns_per_session: f64,
    pub turn_ttft_s: Stats,
    pub session_e2e_s: Stats,
    pub history_tokens: u64,
    pub recomputed_history_tokens: u64,
    pub reuse: f64,
    /// Against the class's objective (its own, or the sessions'); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_attainment: Option<f64>,
}

/// Where later turns found their history, and what retention held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionKvSummary {
    /// Turns after a session's first, admitted.
    pub later_turns: u64,
    /// Of them: history found in HBM (kept there), restored from host memory, or recomputed.
    pub hbm_hit_rate: f64,
    pub host_hit_rate: f64,
    pub miss_rate: f64,
    /// Of them, those served by the worker of their previous turn.
    pub route_locality: f64,
    /// Idle session history in HBM (all workers), GB: time mean and peak; and its integral, GB·s.
    pub hbm_mean_gb: f64,
    pub hbm_peak_gb: f64,
    pub hbm_gb_s: f64,
    /// The most idle history one worker held at once, GB (the per-worker budget that would never bind).
    pub hbm_worker_peak_gb: f64,
    /// History in host memory (all workers), GB: time mean and peak.
    pub host_mean_gb: f64,
    pub host_peak_gb: f64,
    /// Histories moved out of HBM by a TTL, and by pressure (HBM full, or the retention budget); histories
    /// dropped from host memory for room.
    pub ttl_evictions: u64,
    pub pressure_evictions: u64,
    pub host_evictions: u64,
    /// Restores from host memory: how many, the GB moved, and each one's wait (link queue, transfer, latency).
    pub restores: u64,
    pub restore_gb: f64,
    pub restore_s: Stats,
    /// Retained KV over time (window means), GB.
    pub series: Vec<SessionKvPoint>,
}

/// What each tool call's history cost where it waited, against the cheapest place for the gap it turned out
/// to be (docs/model.md, "Gap price"), and how well the gaps were foreseen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TieringSummary {
    /// Tool calls that returned.
    pub calls: u64,
    /// Of them, the share whose tier (a TTL's as it played out) was the cheapest for the realised gap.
    pub oracle_agreement: f64,
    /// Σ gap price of the tiers chosen, and of the cheapest tier for each realised gap — the gap oracle's
    /// choice, which no policy pays less than — in seconds of a whole worker.
    pub gap_cost_s: f64,
    pub oracle_gap_cost_s: f64,
    /// Calls decided on an estimate of their gap (adaptive policies), and its mean absolute error, s: over
    /// all of them, over those started before the tool shift and those at or after it (absent without
    /// estimates; the last without a shift).
    pub estimated_calls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mae_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_shift_mae_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_shift_mae_s: Option<f64>,
    /// The shifted tool's calls (every tool's without a shift) by the window they started in: mean gap and
    /// mean estimate.
    pub series: Vec<GapPoint>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GapPoint {
    pub t_s: f64,
    pub calls: u64,
    pub gap_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate_s: Option<f64>,
}

/// A workflow's forecasts and prefetches (docs/metrics.md, "sessions.workflow"). Shares are absent when
/// nothing was there to share: no transition, no forecast, no prefetch.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct WorkflowSummary {
    pub roles: Vec<String>,
    /// Steps admitted (each looks its role's prefix up once), and those that found it in HBM; the prompt
    /// tokens those hits did not prefill.
    pub steps: u64,
    pub prefix_hit_rate: f64,
    pub saved_prefill_tokens: u64,
    /// Transitions seen (a step after the first arrived), of them those of workflows that started after the
    /// shift.
    pub transitions: u64,
    pub post_shift_transitions: u64,
    /// The share of transitions whose most probable forecast role came (none forecast: a miss), overall and
    /// before / after the shift.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_shift_top1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_shift_top1: Option<f64>,
    /// Expected calibration error of the next-role probabilities (ten bins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ece: Option<f64>,
    /// Of the roles a step's end wanted in HBM, the share that was the next role; of the transitions, the
    /// share whose role was wanted; of the distinct roles of the next K steps, the share wanted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    pub recall_k: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
    /// Prefetches started and their bytes; those that landed into the cache, found it there, a step then
    /// shared (of those landed: utilization), and were evicted unshared; fetched roles that were not the
    /// next role.
    pub prefetches: u64,
    pub prefetch_bytes: u64,
    pub landed: u64,
    pub redundant: u64,
    pub used: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    pub unused: u64,
    pub wrong: u64,
    /// Idle role prefixes evicted: to keep the prefix budget, and to make an allocation succeed.
    pub budget_evictions: u64,
    pub pressure_evictions: u64,
    /// Mean and peak HBM the role prefixes held, all workers together, GB.
    pub mean_prefix_hbm_gb: f64,
    pub peak_prefix_hbm_gb: f64,
    /// The transitions learned by the run's end (rows in role order; a role never left: 0). Absent without a
    /// predictor (and read back as empty: a study's run crosses from a Web Worker as JSON).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learned: Vec<Vec<f64>>,
}

fn workflow(sc: &Scenario, rec: &Recorder) -> Option<WorkflowSummary> {
    let wf = sc.workload.sessions.as_ref()?.workflow.as_ref()?;
    let m = &rec.wf;
    let share = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
    let n = m.transitions[0] + m.transitions[1];
    let gb = sc.kv_block_bytes() / 1e9;
    let span = rec.end_ns.max(1) as f64;
    Some(WorkflowSummary {
        roles: wf.roles.clone(),
        steps: rec.prefix_lookups,
        prefix_hit_rate: share(rec.prefix_hits, rec.prefix_lookups).unwrap_or(0.0),
        saved_prefill_tokens: rec.prefix_saved_tokens,
        transitions: n,
        post_shift_transitions: m.transitions[1],
        top1: share(m.top1[0] + m.top1[1], n),
        pre_shift_top1: share(m.top1[0], m.transitions[0]),
        post_shift_top1: share(m.top1[1], m.transitions[1]),
        ece: m.calibration.ece(),
        precision: share(m.covered, m.wanted),
        coverage: share(m.covered, n),
        recall_k: wf.recall_k,
        recall_at_k: share(m.future_hit, m.future),
        prefetches: m.prefetches,
        prefetch_bytes: m.prefetch_bytes,
        landed: m.landed,
        redundant: m.redundant,
        used: m.used,
        utilization: share(m.used, m.landed),
        unused: m.unused,
        wrong: m.wrong,
        budget_evictions: m.budget_evictions,
        pressure_evictions: rec.prefix_evictions,
        mean_prefix_hbm_gb: rec.prefix_area as f64 / span * gb,
        peak_prefix_hbm_gb: rec.prefix_peak_blocks as f64 * gb,
        learned: m.learned.iter().map(|r| r.iter().map(|p| (p * 1e6).round() / 1e6).collect()).collect(),
    })
}

/// Windows of the tiering series over the run.
const GAP_WINDOWS: u64 = 40;

fn tiering(sc: &Scenario, rec: &Recorder) -> Option<TieringSummary> {
    let s = sc.workload.sessions.as_ref().filter(|s| s.prices_gaps())?;
    let g = &rec.sess.gaps;
    let shift_ns = s.shift.as_ref().map(|x| x.at_ns);
    let mae = |keep: &dyn Fn(u64) -> bool| {
        let (n, sum) = (g.iter().filter(|x| keep(x.start_ns)))
            .filter_map(|x| x.estimate_ns.map(|e| (e - x.gap_ns as f64).abs()))
            .fold((0u64, 0.0), |(n, s), d| (n + 1, s + d));
        (n > 0).then(|| sum / n as f64 / 1e9)
    };
    let estimated_calls = g.iter().filter(|x| x.estimate_ns.is_some()).count() as u64;
    Some(TieringSummary {
        calls: g.len() as u64,
        oracle_agreement: if g.is_empty() {
            0.0
        } else {
            g.iter().filter(|x| x.agrees).count() as f64 / g.len() as f64
        },
        gap_cost_s: g.iter().map(|x| x.cost_ns).sum::<f64>() / 1e9,
        oracle_gap_cost_s: g.iter().map(|x| x.oracle_cost_ns).sum::<f64>() / 1e9,
        estimated_calls,
        mae_s: mae(&|_| true),
        pre_shift_mae_s: shift_ns.and_then(|at| mae(&|t| t < at)),
        post_shift_mae_s: shift_ns.and_then(|at| mae(&|t| t >= at)),
        series: gap_series(g, s.shift.as_ref().map(|x| &x.tools[..]), rec.end_ns),
    })
}

/// The calls of `tools` (every call when None) by start window: mean gap and mean estimate.
fn gap_series(gaps: &[super::ToolGap], tools: Option<&[u16]>, end_ns: u64) -> Vec<GapPoint> {
    let width = (end_ns / GAP_WINDOWS).max(1);
    let mut w = vec![(0u64, 0.0, 0u64, 0.0); GAP_WINDOWS as usize + 1];
    for x in gaps.iter().filter(|x| tools.is_none_or(|t| t.contains(&x.tool))) {
        let b = &mut w[((x.start_ns / width) as usize).min(GAP_WINDOWS as usize)];
        b.0 += 1;
        b.1 += x.gap_ns as f64;
        if let Some(e) = x.estimate_ns {
            b.2 += 1;
            b.3 += e;
        }
    }
    (w.iter().enumerate().filter(|(_, b)| b.0 > 0))
        .map(|(i, b)| GapPoint {
            t_s: (i as u64 * width) as f64 / 1e9,
            calls: b.0,
            gap_s: b.1 / b.0 as f64 / 1e9,
            estimate_s: (b.2 > 0).then(|| b.3 / b.2 as f64 / 1e9),
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionKvPoint {
    pub t_s: f64,
    pub hbm_gb: f64,
    pub host_gb: f64,
}

/// Little's law over sessions (time-mean sessions in the system vs rate × mean span), turns conserved (each
/// session's turns no more than its program's, a completed session's all completed), host memory within its
/// capacity (checked with the KV audit at every step).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionAudit {
    pub little_relative_error: f64,
    pub turns_conserved: bool,
    pub ok: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnLatency {
    pub turn: u32,
    pub count: u64,
    pub ttft_p50_s: f64,
    pub ttft_p95_s: f64,
}

/// Completed turns, their TTFT and their E2E: the overall figures when every request is a turn (the same
/// samples, and a mean does not depend on their order; sorting them again was a tenth of the report), else the
/// turns' own.
fn turn_latencies(
    turns: &[&RequestRecord],
    requests: usize,
    overall: &super::summary::GroupSummary,
) -> (u64, Stats, Stats) {
    if turns.len() == requests {
        return (overall.completed, overall.ttft_s, overall.e2e_s);
    }
    let done = |r: &&&RequestRecord| r.outcome == Outcome::Completed;
    let mut ttft: Vec<u64> = turns.iter().filter(done).map(|r| r.first_token_ns - r.arrival_ns).collect();
    let mut e2e: Vec<u64> = turns.iter().filter(done).map(|r| r.done_ns - r.arrival_ns).collect();
    (ttft.len() as u64, Stats::from_ns(&mut ttft), Stats::from_ns(&mut e2e))
}

/// TTFT percentiles of completed turns by turn index, up to the first index (≤ 64) none completed at — one
/// pass over the turns, not one per index.
fn ttft_by_turn(turns: &[&RequestRecord]) -> Vec<TurnLatency> {
    let mut by: Vec<Vec<f64>> = vec![Vec::new(); 65];
    for r in turns.iter().filter(|r| r.outcome == Outcome::Completed && (1..=64).contains(&r.turn)) {
        by[r.turn as usize].push((r.first_token_ns - r.arrival_ns) as f64 / 1e9);
    }
    (by.into_iter().enumerate().skip(1))
        .map_while(|(k, mut v)| {
            super::stats::sort_f64(&mut v);
            (!v.is_empty()).then(|| TurnLatency {
                turn: k as u32,
                count: v.len() as u64,
                ttft_p50_s: super::percentile(&v, 50.0),
                ttft_p95_s: super::percentile(&v, 95.0),
            })
        })
        .collect()
}

pub(super) fn sessions_summary(
    sc: &Scenario,
    rec: &Recorder,
    overall: &super::summary::GroupSummary,
) -> Option<SessionsSummary> {
    sc.workload.sessions.as_ref()?;
    let reqs = &rec.requests;
    let e = rec.session_ends;
    let turns: Vec<&RequestRecord> = reqs.iter().filter(|r| r.session != crate::workload::NO_SESSION).collect();
    let (turns_completed, turn_ttft_s, turn_e2e_s) = turn_latencies(&turns, reqs.len(), overall);
    // A session's span: its first turn's arrival to its last turn's end, for sessions whose every turn completed.
    // Sessions that arrived (the generator may have drawn the next one's program when a horizon stopped the run).
    let arrived = rec.sess.ended_ns.len();
    let mut span: Vec<(u64, u64, u32, bool)> = vec![(u64::MAX, 0, 0, true); arrived];
    for r in &turns {
        let s = &mut span[r.session as usize];
        s.0 = s.0.min(r.arrival_ns);
        s.1 = s.1.max(r.done_ns);
        s.2 += 1;
        s.3 &= r.outcome == Outcome::Completed;
    }
    let mut session_e2e: Vec<u64> =
        (0..arrived).filter(|&i| whole(rec, &span, i)).map(|i| span[i].1 - span[i].0).collect();
    let by_turn = ttft_by_turn(&turns);
    // Over the turns that arrived (a horizon may stop the next one's).
    let (history_tokens, history_prefilled) = history_of(rec, turns.iter().copied());
    let recomputed = history_prefilled.saturating_sub(rec.session_reused_tokens);
    let ended = e.completed + e.context + e.failed;
    let met = slo_met(sc, rec, &span);
    Some(SessionsSummary {
        sessions: arrived as u64,
        completed: e.completed,
        ended_by_context: e.context,
        ended_by_failure: e.failed,
        unfinished: (arrived as u64).saturating_sub(ended),
        conservation_ok: ended <= arrived as u64,
        turns: turns.len() as u64,
        turns_completed,
        mean_turns_per_session: if arrived == 0 { 0.0 } else { turns.len() as f64 / arrived as f64 },
        turn_ttft_s,
        turn_e2e_s,
        session_e2e_s: Stats::from_ns(&mut session_e2e),
        ttft_by_turn: by_turn,
        history_tokens,
        recomputed_history_tokens: recomputed,
        reuse: reuse(history_tokens, recomputed),
        failed_turns: turns.iter().filter(|r| matches!(r.outcome, Outcome::Failed | Outcome::Rejected(_))).count()
            as u64,
        slo_attainment: attainment(met.iter().copied(), sc.workload.sessions.as_ref().is_some_and(|s| s.has_slo())),
        classes: class_summaries(sc, rec, &turns, &span, &met),
        kv: session_kv(sc, rec),
        tiering: tiering(sc, rec),
        workflow: workflow(sc, rec),
        audit: session_audit(rec, &span),
    })
}

/// Per arrived session, whether it met its class's objective (every turn completed within the turn TTFT
/// objective, and its span within the session objective); None while it runs or when its class has none.
/// `span`: per session (first arrival, last end, turns, all completed).
fn slo_met(sc: &Scenario, rec: &Recorder, span: &[(u64, u64, u32, bool)]) -> Vec<Option<bool>> {
    let Some(s) = sc.workload.sessions.as_ref().filter(|s| s.has_slo()) else { return vec![None; span.len()] };
    let class = |i: usize| &s.classes[rec.programs[i].class as usize];
    let mut ttft_ok = vec![true; span.len()];
    for r in rec.requests.iter().filter(|r| r.session != crate::workload::NO_SESSION) {
        if let Some(t) = class(r.session as usize).turn_ttft_ns {
            ttft_ok[r.session as usize] &= r.outcome == Outcome::Completed && r.first_token_ns - r.arrival_ns <= t;
        }
    }
    (0..span.len())
        .map(|i| {
            let c = class(i);
            let judged = rec.sess.ended_ns[i] != u64::MAX && c.has_slo();
            judged.then(|| ttft_ok[i] && span[i].3 && c.session_ns.is_none_or(|d| span[i].1 - span[i].0 <= d))
        })
        .collect()
}

/// The share of judged sessions that met their objective (0 when none is judged yet); None when `judged` is
/// false (no objective applies).
fn attainment(met: impl Iterator<Item = Option<bool>>, judged: bool) -> Option<f64> {
    let (n, ok) = met.flatten().fold((0u64, 0u64), |(n, ok), m| (n + 1, ok + m as u64));
    judged.then(|| if n == 0 { 0.0 } else { ok as f64 / n as f64 })
}

fn session_kv(sc: &Scenario, rec: &Recorder) -> SessionKvSummary {
    let m = &rec.sess;
    let gb = sc.kv_block_bytes() / 1e9;
    let t = rec.end_ns.max(1) as f64;
    let share = |x: u64| if m.later_turns == 0 { 0.0 } else { x as f64 / m.later_turns as f64 };
    let mut restore = m.restore_ns.clone();
    SessionKvSummary {
        later_turns: m.later_turns,
        hbm_hit_rate: share(m.hits - m.host_hits),
        host_hit_rate: share(m.host_hits),
        miss_rate: share(m.later_turns - m.hits),
        route_locality: share(m.local_turns),
        hbm_mean_gb: m.area[1] as f64 / t * gb,
        hbm_peak_gb: m.peak[1] as f64 * gb,
        hbm_worker_peak_gb: m.worker_hbm_peak as f64 * gb,
        hbm_gb_s: m.area[1] as f64 / 1e9 * gb,
        host_mean_gb: m.area[2] as f64 / t * gb,
        host_peak_gb: m.peak[2] as f64 * gb,
        ttl_evictions: m.ttl_evictions,
        pressure_evictions: m.pressure_evictions,
        host_evictions: m.host_evictions,
        restores: m.restore_ns.len() as u64,
        restore_gb: m.restore_bytes as f64 / 1e9,
        restore_s: Stats::from_ns(&mut restore),
        series: m
            .points
            .iter()
            .map(|p| SessionKvPoint { t_s: p.0 as f64 / 1e9, hbm_gb: p.1 * gb, host_gb: p.2 * gb })
            .collect(),
    }
}

fn session_audit(rec: &Recorder, span: &[(u64, u64, u32, bool)]) -> SessionAudit {
    let (m, end) = (&rec.sess, rec.end_ns);
    let t = end.max(1) as f64;
    let time_in: u128 = (span.iter().zip(&m.ended_ns)).map(|(s, &e)| (e.min(end) - s.0.min(end)) as u128).sum();
    let (l, lw) = (m.area[0] as f64 / t, time_in as f64 / t);
    let little_relative_error = if lw > 0.0 { (l - lw).abs() / lw } else { l };
    let turns_conserved = span.len() <= rec.programs.len()
        && (span.iter().zip(&rec.programs)).all(|(s, p)| s.2 >= 1 && s.2 as usize <= p.new_tokens.len());
    SessionAudit {
        little_relative_error,
        turns_conserved,
        ok: turns_conserved && little_relative_error <= LITTLE_TOLERANCE,
    }
}

/// The named session classes' blocks (none without names). `met`: per session, as `slo_met` gives it.
fn class_summaries(
    sc: &Scenario,
    rec: &Recorder,
    turns: &[&RequestRecord],
    span: &[(u64, u64, u32, bool)],
    met: &[Option<bool>],
) -> Vec<SessionClassSummary> {
    let Some(s) = sc.workload.sessions.as_ref().filter(|s| s.named_classes) else { return Vec::new() };
    let class_of = |i: usize| rec.programs[i].class as usize;
    (s.classes.iter().enumerate())
        .map(|(k, c)| {
            let mine: Vec<usize> = (0..span.len()).filter(|&i| class_of(i) == k).collect();
            let its_turns = || turns.iter().filter(|r| class_of(r.session as usize) == k);
            let mut ttft: Vec<u64> = its_turns()
                .filter(|r| r.outcome == Outcome::Completed)
                .map(|r| r.first_token_ns - r.arrival_ns)
                .collect();
            let done = |i: &&usize| whole(rec, span, **i);
            let mut e2e: Vec<u64> = mine.iter().filter(done).map(|&i| span[i].1 - span[i].0).collect();
            let (history_tokens, prefilled) = history_of(rec, its_turns().copied());
            let recomputed = prefilled.saturating_sub(mine.iter().map(|&i| rec.sess.reused_tokens[i]).sum());
            let n_turns = its_turns().count() as u64;
            SessionClassSummary {
                name: c.name.clone(),
                sessions: mine.len() as u64,
                completed: mine.iter().filter(done).count() as u64,
                turns: n_turns,
                mean_turns_per_session: if mine.is_empty() { 0.0 } else { n_turns as f64 / mine.len() as f64 },
                turn_ttft_s: Stats::from_ns(&mut ttft),
                session_e2e_s: Stats::from_ns(&mut e2e),
                history_tokens,
                recomputed_history_tokens: recomputed,
                reuse: reuse(history_tokens, recomputed),
                slo_attainment: attainment(mine.iter().map(|&i| met[i]), c.has_slo()),
            }
        })
        .collect()
}

/// Whether session `i` is over and whole: every turn of its program arrived and completed (`span` as
/// `sessions_summary` makes it).
fn whole(rec: &Recorder, span: &[(u64, u64, u32, bool)], i: usize) -> bool {
    span[i].3 && rec.programs.get(i).is_some_and(|p| span[i].2 as usize == p.new_tokens.len())
}

/// The share of re-sent history not recomputed (0 when none was re-sent).
fn reuse(history_tokens: u64, recomputed: u64) -> f64 {
    if history_tokens == 0 { 0.0 } else { 1.0 - recomputed as f64 / history_tokens as f64 }
}

/// Of `turns`, the history the later ones re-send, and of it what was prefilled (turns never admitted
/// prefilled nothing).
fn history_of<'a>(rec: &Recorder, turns: impl Iterator<Item = &'a RequestRecord>) -> (u64, u64) {
    let (mut sent, mut prefilled) = (0, 0);
    for r in turns.filter(|r| r.turn > 1) {
        let h = rec.programs[r.session as usize].history(r.turn as usize - 1, r.prompt_tokens);
        sent += h;
        if r.first_scheduled_ns != u64::MAX {
            prefilled += h;
        }
    }
    (sent, prefilled)
}
