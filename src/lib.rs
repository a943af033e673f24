//! # InferScale
//!
//! A deterministic discrete-event simulator of LLM serving. Open-loop requests arrive, queue, are batched
//! iteration by iteration on replicas whose step time comes from a cost model, hold paged KV memory, and
//! leave; the run reports latencies, throughput, goodput, SLO attainment, and the evidence of where the time
//! went.
//!
//! # Layout
//! ```text
//! scenario/  JSON spec → validated Scenario (the only place defaults and validation live)
//! rng        named random streams from one master seed (Pcg64 + libm: bit-identical on native and wasm32)
//! workload/  arrivals, length distributions, trace parsing; requests drawn at creation (common random numbers)
//! cost/      step-time models (roofline, linear) returning a breakdown; pure
//! kv/        paged KV block pool; free + used == total
//! sched/     waiting-queue orders and admission policies (trait + serde enum, `build` is the registry)
//! router/    replica choice from load summaries, O(log N)
//! engine/    the event loop: enum Event, one match; batch formation; preemption
//! metrics/   read-only observers, time-weighted gauges, the Report and its audits
//! export/    JSON / CSV / Markdown writers (the only text output)
//! queueing   closed forms (M/D/1, M/G/1, M/M/c) and the checks that hold the engine to them
//! bench      the benchmark workload (timing lives in the CLI)
//! capacity/  sustained capacity: the highest rate of the scenario's arrivals served stably, searched per seed
//! study/     studies: many runs of the same requests → a table, a chart, a decision (jobs fan out anywhere)
//! tiering/   a session's KV across a tool gap: the gap price of HBM / host / recompute, the online estimate
//! ```
//!
//! Architecture invariant: the core does no IO, reads no clock, has no globals, and never panics on user
//! input; the same scenario and seed produce byte-identical reports on every platform.

#![forbid(unsafe_code)]

pub mod advice;
pub mod bench;
pub mod capacity;
pub mod catalog;
pub mod cost;
pub mod engine;
pub mod export;
pub mod findings;
pub mod kv;
pub mod markdown;
pub mod metrics;
pub mod queueing;
pub mod request;
pub mod rng;
pub mod router;
pub mod scenario;
pub mod sched;
pub mod spec;
pub mod study;
pub mod tiering;
pub mod truth;
pub mod workflow;
pub mod workload;

pub use engine::{Progress, RunError};
pub use metrics::Report;
pub use scenario::{Scenario, ScenarioError, Spec};

/// Run a validated scenario and build its report.
pub fn simulate(sc: &Scenario) -> Report {
    Report::build(sc, engine::run(sc))
}

/// Run with progress reports; the callback returns false to cancel.
pub fn simulate_with_progress(sc: &Scenario, progress: &mut dyn FnMut(Progress) -> bool) -> Result<Report, RunError> {
    engine::run_with_progress(sc, progress).map(|rec| Report::build(sc, rec))
}

/// Run, measure the configuration's sustained capacity (`capacity::of_run`: the diagnosis's ρ), check that the
/// run was long enough to decide its verdict (`capacity::length`), then test the diagnosis's proposed changes
/// on the same requests (`advice`), at the length that decides: the CLI's and the lab's run. `progress` hears
/// the run's progress, the capacity search's and the longer runs', then each tested change's (the index of
/// the run: 0 the scenario's own, 1 the capacity search and the longer runs, 2 on the changes; and its words:
/// "" for the scenario's own, the change as the diagnosis's table words it), and may cancel.
pub fn simulate_tested(
    spec: &Spec,
    sc: &Scenario,
    budget: &scenario::Budget,
    progress: &mut dyn FnMut(usize, &str, Progress) -> bool,
) -> Result<Report, RunError> {
    let mut report = simulate_with_progress(sc, &mut |p| progress(0, "", p))?;
    let mut longer = None;
    if let Some(c) = capacity::of_run(spec, sc, &report, budget, &mut |w, p| progress(1, w, p))? {
        let unit = if sc.workload.sessions.is_some() { "sessions/s" } else { "req/s" };
        let offered = 1e9 / sc.workload.mean_gap_ns();
        report.diagnosis.set_capacity(&c, offered, unit, report.summary.turned_away_share());
        let check = capacity::length::check(spec, sc, &mut report, &c, offered, budget, &mut |w, p| progress(1, w, p));
        if let capacity::length::Outcome::Longer(at) = check? {
            longer = Some(*at);
        }
        report.capacity = Some(c);
    }
    // A longer run that decides the verdict is where its advice is tested.
    let (spec, sc) = longer.as_ref().map_or((spec, sc), |(s, v)| (s, v));
    advice::test(spec, sc, &mut report, budget, &mut |k, w, p| progress(k + 2, w, p))?;
    Ok(report)
}
