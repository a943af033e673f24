//! Experiments 7 and 10: over-subscribing the KV cache at admission, where memory binds and where the batch cap
//! does; and where an agent session's KV waits between turns.

use super::runs::{Config, KV_PRESSURE, Runs, Shipped, capacity, excerpt, offer, run, shipped, shipped_scenario};
use super::{Findings, Line, Test, Unit, Verdict};
use crate::scenario::{self, PredictorSpec, RetentionSpec, SchedulerSpec, Spec};

/// Each request reserves this share of its predicted KV: admission lets reservations reach 1 ÷ it of the cache.
const RESERVE_SHARE: f64 = 0.85;
/// The batch cap of the regime where it binds before memory does (the mean request holds about 1200 tokens
/// of a 40000-token cache).
const SMALL_BATCH: u32 = 12;

/// kv-pressure with exact reservations, FCFS, the batch cap `seqs`, over-subscribed by `over`, on seed k.
fn kv_spec(cfg: &Config, k: u64, seqs: u32, over: f64) -> Spec {
    let mut s = shipped(KV_PRESSURE, cfg, k);
    s.scheduler = SchedulerSpec::Fcfs;
    (s.estimator.order, s.estimator.reserve) = (PredictorSpec::Oracle, PredictorSpec::Oracle);
    s.engine.max_num_seqs = seqs;
    s.engine.kv_oversubscription = over;
    // Over-subscription is vLLM's admission rule (SGLang's formations reserve by their own).
    s.engine.batch_formation = Default::default();
    s
}

/// One run's SLO attainment, output tokens per second, preemptions, KV peak (a share of the cache) and mean
/// batch: the last two show which limit binds, on whatever scenario the experiment runs.
type Outcome = (f64, f64, f64, f64, f64);

/// Experiment 7, reserving 0.85 of each request's KV against all of it, in both regimes.
pub(super) fn oversubscription(f: &mut Findings, cfg: &Config, littles: &mut Runs) {
    f.expect_on(
        "oversub",
        "Reserving 0.85 of each request's KV at admission instead of all of it gains more than 5 points of SLO attainment where the KV cache binds, as the seed found it wins there.",
        vec![Test::new("oversub.kv.gain", "the gain where the KV cache binds", Line::Above(0.05), Unit::Points)],
    );
    f.audit_on(
        "oversub.batch",
        "Where the batch cap binds first, reserving 0.85 of each request's KV changes SLO attainment by less than 1 point.",
        "the knob cannot act there — where the batch cap fills before the KV cache, no request waits for KV, so both arms admit and run the same requests; the seed's \"pure loss\" there would need over-subscription to preempt, which this setup cannot make it do",
        vec![Test::new("oversub.batch.gain", "the change where the batch cap binds", Line::Within(-0.01, 0.01), Unit::Points)],
    );
    let regimes = [("KV binds", "the KV cache binds", 256), ("Batch cap binds", "the batch cap binds", SMALL_BATCH)];
    let mut rows = Vec::new();
    let (mut gains, mut sats_shown, mut arms, mut bars) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, (name, phrase, seqs)) in regimes.into_iter().enumerate() {
        let id = format!("oversub.{}", if i == 0 { "kv" } else { "batch" });
        let sats: Vec<f64> = (0..cfg.repetitions).map(|k| capacity(&kv_spec(cfg, k, seqs, 1.0), littles)).collect();
        let (sat_shown, (sat, ..)) = f.mean_ci(&format!("{id}.capacity_rps"), &sats, Unit::Rps);
        let arm = |over: f64, littles: &mut Runs| -> Vec<Outcome> {
            (0..cfg.repetitions)
                .map(|k| {
                    let mut s = kv_spec(cfg, k, seqs, over);
                    offer(&mut s, 0.9 * sat);
                    let r = run(&s, littles).summary;
                    (
                        r.slo_attainment,
                        r.output_tokens_per_s,
                        r.preemptions as f64,
                        r.kv_peak_fraction,
                        r.mean_batch_size,
                    )
                })
                .collect()
        };
        let (full, share) = (arm(1.0, littles), arm(1.0 / RESERVE_SHARE, littles));
        for (reserve, over) in [(1.0, 1.0), (RESERVE_SHARE, 1.0 / RESERVE_SHARE)] {
            let mut s = kv_spec(cfg, 0, seqs, over);
            offer(&mut s, 0.9 * sat);
            arms.push((format!("{name}, reserving {}", Unit::Percent.show(reserve)), s));
        }
        for (reserve, outs) in [(1.0, &full), (RESERVE_SHARE, &share)] {
            let id = format!("{id}.reserve_{reserve}");
            bars.push((format!("{name}, {}", Unit::Percent.show(reserve)), format!("{id}.attainment")));
            let col = |f: &mut Findings, what: &str, unit: Unit, x: fn(&Outcome) -> f64| {
                f.mean_ci(&format!("{id}.{what}"), &outs.iter().map(x).collect::<Vec<_>>(), unit).0
            };
            rows.push(vec![
                format!("{name} (batch cap {seqs})"),
                f.figure(&format!("{id}.share"), reserve, Unit::Percent),
                col(f, "attainment", Unit::Share, |o| o.0),
                col(f, "output_tokens_per_s", Unit::Count, |o| o.1),
                col(f, "preemptions", Unit::Count, |o| o.2),
                col(f, "kv_peak", Unit::Share, |o| o.3),
                col(f, "mean_batch", Unit::Count, |o| o.4),
            ]);
        }
        sats_shown.push(format!("{sat_shown} where {phrase}"));
        let gain: Vec<f64> = share.iter().zip(&full).map(|(a, b)| a.0 - b.0).collect();
        gains.push(f.mean_ci(&format!("{id}.gain"), &gain, Unit::Points).0);
    }
    let chart = f.bars("SLO attainment by the share of KV reserved", "%", bars);
    let s = f.section(
        "oversub",
        "7. Over-subscribing the KV cache",
        "Does admitting more requests than the KV cache can hold at their full length pay, and where?",
    );
    s.setup = format!(
        "`scenarios/kv-pressure.json` (a 40000-token cache; prompts and outputs of 600 tokens on average, up to 4096) with FCFS and every request's KV reserved at admission on its true length — all of it, or {} of it (`engine.kv_oversubscription` = 1 ÷ {}): blocks are taken as tokens come, and a request that finds none preempts the newest. Where the batch cap binds, it is {SMALL_BATCH} sequences, which hold about a third of the cache on average.",
        Unit::Percent.show(RESERVE_SHARE),
        RESERVE_SHARE
    );
    s.regime = format!(
        "ρ = 0.9 of the sustained capacity measured in each regime with full reservations: {}.",
        sats_shown.join("; ")
    );
    s.scenario = excerpt(KV_PRESSURE, cfg, arms);
    s.columns =
        ["Regime", "Share of KV reserved", "SLO attainment", "Output tokens/s", "Preemptions", "KV peak", "Mean batch"]
            .map(String::from)
            .to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    let (kv, batch) = (gains[0].clone(), gains[1].clone());
    let verdict = f.decide("oversub");
    f.found(
        "oversub",
        format!(
            "Reserving {} of each request's KV changes SLO attainment by {kv} where the KV cache binds.",
            Unit::Percent.show(RESERVE_SHARE)
        ),
        verdict,
    );
    let verdict = f.decide("oversub.batch");
    f.found("oversub.batch", format!("Where the batch cap binds, it changes it by {batch}."), verdict);
}

const AGENTS: Shipped = shipped_scenario!("scenarios/agent-sessions.json");

/// The HBM budgets for retained history of experiment 10, × the reference working set.
const BUDGETS: [f64; 4] = [1.0, 0.5, 0.25, 0.1];

/// The agent-sessions scenario on seed k with `retention` and a per-worker budget (blocks) for retained
/// history: sessions enough for about the report's requests in turns (10 a session on average).
fn agents_spec(cfg: &Config, k: u64, retention: RetentionSpec, budget_blocks: Option<u64>) -> Spec {
    let mut s = shipped(AGENTS, cfg, k);
    s.workload.requests = Some((cfg.requests / 10).max(1));
    if let Some(x) = &mut s.workload.sessions {
        x.retention = retention;
    }
    s.engine.retention_budget_blocks = budget_blocks;
    s
}

/// One agent run's p95 turn TTFT and the share of history not prefilled again.
fn agent_run(s: &Spec, littles: &mut Runs) -> (f64, f64) {
    let r = run(s, littles);
    r.sessions.as_ref().map_or((f64::NAN, f64::NAN), |x| (x.turn_ttft_s.p95, x.reuse))
}

/// Experiment 10's claim, registered before it runs.
fn register_retention(f: &mut Findings) {
    f.expect_on(
        "retention",
        "With the whole working set as its HBM budget, keeping a session's history in HBM between turns gives a p95 turn TTFT more than 20 % below moving it to host memory at once; at a tenth of that budget it loses the lead: host offload or a 10 s TTL does at least as well.",
        vec![
            Test::new("retention.full_budget_lead", "HBM retention's lead in p95 turn TTFT at the full budget", Line::Above(0.20), Unit::Percent),
            Test::new("retention.smallest_budget_excess", "its p95 excess over the better of host offload and the TTL at a tenth of it", Line::Above(0.0), Unit::Percent),
        ],
    );
}

/// Experiment 10, where an agent session's KV waits between turns — HBM, HBM for a while, or host memory — as the
/// HBM budget for it shrinks.
pub(super) fn retention(f: &mut Findings, cfg: &Config, littles: &mut Runs) {
    register_retention(f);
    if shipped(AGENTS, cfg, 0).workload.sessions.is_none() {
        return littles.refuse("does not apply: needs agent sessions (workload.sessions)");
    }
    let policies = [
        ("Retain", RetentionSpec::Retain),
        ("TTL 10 s", RetentionSpec::Ttl { ttl_s: Some(10.0) }),
        ("Host offload", RetentionSpec::HostOffload),
    ];
    let block_gb = scenario::validate(&agents_spec(cfg, 0, RetentionSpec::Retain, None))
        .map_or(f64::NAN, |sc| sc.kv_block_bytes() / 1e9);
    // The budget at which retention never yields: the most idle history a worker held, retaining without one.
    let reference: Vec<f64> = (0..cfg.repetitions)
        .map(|k| {
            let r = run(&agents_spec(cfg, k, RetentionSpec::Retain, None), littles);
            r.sessions.as_ref().map_or(0.0, |x| x.kv.hbm_worker_peak_gb) / block_gb
        })
        .collect();
    let (reference_shown, _) = f.mean_ci("retention.reference_blocks", &reference, Unit::Count);
    let mut rows = Vec::new();
    let mut ttft = vec![vec![]; BUDGETS.len()];
    for (b, budget) in BUDGETS.iter().enumerate() {
        for (p, (name, retention)) in policies.iter().enumerate() {
            let runs: Vec<(f64, f64)> = (0..cfg.repetitions)
                .map(|k| {
                    let blocks = (budget * reference[k as usize]).round().max(1.0) as u64;
                    agent_run(&agents_spec(cfg, k, *retention, Some(blocks)), littles)
                })
                .collect();
            let id = format!("retention.x{budget}.{p}");
            rows.push(vec![
                f.figure(&format!("{id}.budget"), *budget, Unit::Times),
                name.to_string(),
                f.mean_ci(&format!("{id}.turn_ttft_p95"), &runs.iter().map(|r| r.0).collect::<Vec<_>>(), Unit::Seconds)
                    .0,
                f.mean_ci(&format!("{id}.reuse"), &runs.iter().map(|r| r.1).collect::<Vec<_>>(), Unit::Share).0,
            ]);
            ttft[b].push(runs.iter().map(|r| r.0).collect::<Vec<f64>>());
        }
    }
    let (first, last) = (&ttft[0], &ttft[BUDGETS.len() - 1]);
    let lead: Vec<f64> = first[0].iter().zip(&first[2]).map(|(retain, host)| 1.0 - retain / host).collect();
    // At the smallest budget: retain's p95 over the better of TTL and host offload, seed by seed.
    let after: Vec<f64> = (0..last[0].len()).map(|k| last[0][k] / last[1][k].min(last[2][k]) - 1.0).collect();
    let (lead_shown, _) = f.mean_ci("retention.full_budget_lead", &lead, Unit::Percent);
    // Where the runs split (past saturation on some seeds), the excess is shown seed by seed.
    let after_shown = if super::split(&last.concat()) {
        f.per_seed("retention.smallest_budget_excess", &after, Unit::Percent)
    } else {
        f.mean_ci("retention.smallest_budget_excess", &after, Unit::Percent).0
    };
    let line = |p: usize| BUDGETS.map(|b| (b, format!("retention.x{b}.{p}.turn_ttft_p95"))).to_vec();
    let chart = f.chart(
        "lines",
        "p95 turn TTFT as the HBM budget shrinks",
        ("HBM budget (× the reference working set)", "ms"),
        vec![],
        policies.iter().enumerate().map(|(p, (name, _))| (name.to_string(), line(p))).collect(),
    );
    let s = f.section(
        "retention",
        "10. Agent sessions: where history waits between turns",
        "Between an agent's turns, should its history stay in HBM, stay for a while, or move to host memory — and does the answer survive a smaller HBM budget?",
    );
    s.setup = format!(
        "`scenarios/agent-sessions.json`: a coding agent on Llama-3.1-8B, two H100s with sticky routing and a 256 GB host tier per worker over a 25 GB/s link; {} sessions a run of about 10 turns, each turn re-sending its growing history, tool calls between them from 0.15 s file reads to 45 s builds. Each policy under a per-worker HBM budget for idle history of the reference working set ({reference_shown} blocks: the most idle history one worker held retaining without a budget) times the factor shown; past it the least recently used history moves to the host tier, and a history larger than the budget is not kept. Reuse is the share of re-sent history not prefilled again.",
        (cfg.requests / 10).max(1)
    );
    s.regime =
        "The shipped arrival rate (0.5 sessions/s): the GPUs are lightly loaded until recomputed history adds prefill."
            .into();
    let full = (reference[0].round().max(1.0)) as u64;
    s.scenario = excerpt(
        AGENTS,
        cfg,
        policies.iter().map(|(name, r)| (format!("{name} at 1×"), agents_spec(cfg, 0, *r, Some(full)))).collect(),
    );
    s.columns = ["HBM budget", "Retention", "p95 turn TTFT", "History reused"].map(String::from).to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    let verdict = f.decide("retention");
    let fold = |init: f64, pick: fn(f64, f64) -> f64| last.iter().flatten().copied().fold(init, pick);
    let (low, high) = (
        f.figure("retention.smallest_budget_ttft_min", fold(f64::INFINITY, f64::min), Unit::Seconds),
        f.figure("retention.smallest_budget_ttft_max", fold(0.0, f64::max), Unit::Seconds),
    );
    f.found(
        "retention",
        format!(
            "With the whole working set as budget, retaining cuts p95 turn TTFT by {lead_shown} against host offload; at a tenth of it, retain's p95 is {after_shown} above the better of the other two. {}",
            match verdict {
                Verdict::Held => "Once the budget binds, keeping idle history in HBM is no better than a TTL or an offload.".to_string(),
                _ => format!("At a tenth of the working set the runs split: history recomputed for want of room pushes the workers past saturation on some seeds and not on others, and every policy's p95 turn TTFT ranges from {low} to {high} over the seeds — the order of the three depends on the seed, not on the policy."),
            }
        ),
        verdict,
    );
}
