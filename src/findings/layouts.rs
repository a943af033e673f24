//! Experiments 8 and 9: how the same four GPUs are laid out — prefill and decode apart or together — and what
//! reusing shared prefixes' KV is worth.

use super::runs::{Config, Runs, Shipped, capacity, excerpt, mean, offer, run, shipped, shipped_scenario};
use super::{Findings, Line, Test, Unit};
use crate::scenario::Spec;

const PD: Shipped = shipped_scenario!("scenarios/pd-llama3-8b-h100.json");

/// The prefill:decode splits of the four GPUs experiment 8 tries.
const SPLITS: [(u32, u32); 3] = [(1, 3), (2, 2), (3, 1)];

/// The P/D scenario on seed k: colocated (`split` None) on all its workers, or disaggregated as `split`, with
/// the prefix cache on or off.
fn layout(cfg: &Config, k: u64, split: Option<(u32, u32)>, caching: bool) -> Spec {
    let mut s = shipped(PD, cfg, k);
    match split {
        // The same four GPUs (on another base than the shipped one, its replica count is set to four).
        None => (s.cluster.disaggregation, s.cluster.replicas) = (None, 4),
        Some((p, d)) => {
            let default = crate::study::pd::default_disaggregation(&s);
            let dis = s.cluster.disaggregation.get_or_insert(default);
            (dis.prefill.replicas, dis.decode.replicas) = (p, d);
        }
    }
    if let Some(x) = &mut s.prefix {
        x.caching = caching;
    }
    s
}

/// One run's goodput per GPU, SLO attainment, p99 TTFT and p95 TPOT.
type Outcome = [f64; 4];

fn at_rate(mut s: Spec, rate: f64, littles: &mut Runs) -> Outcome {
    offer(&mut s, rate);
    let r = run(&s, littles).summary;
    [r.goodput_per_gpu_rps, r.slo_attainment, r.ttft_s.p99, r.tpot_s.p95]
}

/// A table row of `outs` under `id`: the arm's name, then each figure of `Outcome`.
fn row(f: &mut Findings, id: &str, name: String, outs: &[Outcome]) -> Vec<String> {
    let units = [
        ("goodput_per_gpu", Unit::Rps),
        ("attainment", Unit::Share),
        ("ttft_p99", Unit::Seconds),
        ("tpot_p95", Unit::Seconds),
    ];
    let mut cells = vec![name];
    for (i, (what, unit)) in units.into_iter().enumerate() {
        cells.push(f.mean_ci(&format!("{id}.{what}"), &outs.iter().map(|o| o[i]).collect::<Vec<_>>(), unit).0);
    }
    cells
}

const COLUMNS: [&str; 5] = ["Layout", "Goodput per GPU", "SLO attainment", "p99 TTFT", "p95 TPOT"];

/// SLO attainment a rate must reach to count as served.
const TARGET: f64 = 0.9;
/// Halvings of the bracket [0, sustained capacity] in the capacity search: the rate found is within 1/128 of it.
const HALVINGS: u32 = 7;

/// The highest offered rate at which `spec` keeps SLO attainment at `TARGET` or more, found by halving the
/// bracket from 0 to its sustained capacity, and that run's p99 TTFT and p95 TPOT.
fn slo_capacity(spec: &Spec, littles: &mut Runs) -> [f64; 4] {
    let sat = capacity(spec, littles);
    let (mut lo, mut hi, mut at_lo) = (0.0, sat, [0.0; 4]);
    for _ in 0..HALVINGS {
        let mid = (lo + hi) / 2.0;
        let o = at_rate(spec.clone(), mid, littles);
        if o[1] >= TARGET {
            (lo, at_lo) = (mid, o);
        } else {
            hi = mid;
        }
    }
    [sat, lo, at_lo[2], at_lo[3]]
}

/// Experiment 8, prefill/decode disaggregation against colocated serving on the same four GPUs.
pub(super) fn disaggregation(f: &mut Findings, cfg: &Config, littles: &mut Runs) {
    f.expect_on(
        "pd",
        "On the same four GPUs, the best prefill:decode split sustains a higher rate at 90 % SLO attainment than colocated serving: decode freed from prefill's interference meets its TPOT objective at a load colocated serving cannot.",
        vec![Test::new("pd.best_split_gain", "the best split's gain in rate at the objectives over colocated serving", Line::Above(0.0), Unit::Percent)],
    );
    let arms: Vec<Option<(u32, u32)>> = std::iter::once(None).chain(SPLITS.map(Some)).collect();
    let found: Vec<Vec<[f64; 4]>> = (arms.iter())
        .map(|a| (0..cfg.repetitions).map(|k| slo_capacity(&layout(cfg, k, *a, true), littles)).collect())
        .collect();
    let name = |a: &Option<(u32, u32)>| {
        a.map_or("Colocated, 4 workers".into(), |(p, d)| format!("P/D {p} prefill : {d} decode"))
    };
    let mut rows = Vec::new();
    for (a, runs) in arms.iter().zip(&found) {
        let id = a.map_or("pd.colocated".into(), |(p, d)| format!("pd.split_{p}_{d}"));
        let mut cells = vec![name(a)];
        for (i, (what, unit)) in [
            ("capacity_rps", Unit::Rps),
            ("slo_capacity_rps", Unit::Rps),
            ("ttft_p99", Unit::Seconds),
            ("tpot_p95", Unit::Seconds),
        ]
        .into_iter()
        .enumerate()
        {
            cells.push(f.mean_ci(&format!("{id}.{what}"), &runs.iter().map(|o| o[i]).collect::<Vec<_>>(), unit).0);
        }
        rows.push(cells);
    }
    let capacity = |i: usize| found[i].iter().map(|o| o[1]).collect::<Vec<f64>>();
    let best = (1..arms.len()).max_by(|a, b| mean(&capacity(*a)).total_cmp(&mean(&capacity(*b)))).unwrap_or(1);
    let gain: Vec<f64> = capacity(best).iter().zip(&capacity(0)).map(|(p, c)| p / c - 1.0).collect();
    let (gain_shown, (_, lo, hi)) = f.mean_ci("pd.best_split_gain", &gain, Unit::Percent);
    let target = f.figure("pd.target", TARGET, Unit::Percent);
    let chart = f.bars(
        "Highest rate at the objectives",
        "req/s",
        (arms.iter())
            .map(|a| {
                (name(a), a.map_or("pd.colocated".into(), |(p, d)| format!("pd.split_{p}_{d}")) + ".slo_capacity_rps")
            })
            .collect(),
    );
    let s = f.section(
        "pd",
        "8. Prefill/decode disaggregation against colocated serving",
        "At equal cost — the same four GPUs — does splitting prefill from decode serve more requests within their objectives?",
    );
    s.setup = format!(
        "`scenarios/pd-llama3-8b-h100.json`: Llama-3-8B on four H100s, RAG-style prompts of 3000 tokens on average (60 % open with one of 8 shared 1024-token prefixes, cached) and outputs of 200, objectives TTFT 1 s and TPOT 40 ms. Colocated: four workers, least outstanding requests. P/D: each split of the four, 50 GB/s per prefill→decode pair. For each layout and seed: its sustained capacity (the highest Poisson rate it serves stably), then the highest Poisson rate at which SLO attainment stays at {target} or more, by halving the bracket from 0 to that capacity {HALVINGS} times; p99 TTFT and p95 TPOT are those of the run at the rate found."
    );
    s.regime =
        format!("Each layout at its own capacity under the objectives ({target} attainment), measured, never derived.");
    s.scenario = excerpt(PD, cfg, arms.iter().map(|a| (name(a), layout(cfg, 0, *a, true))).collect());
    s.columns = ["Layout", "Sustained capacity", "Rate at the objectives", "p99 TTFT there", "p95 TPOT there"]
        .map(String::from)
        .to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    f.found(
        "pd",
        format!(
            "Against colocated serving at {target} SLO attainment on the same four GPUs, the best split ({}) sustains a rate that differs by {gain_shown}. {}",
            name(&arms[best]),
            if hi < 0.0 {
                "A fixed split of four GPUs leaves one phase short — here the prompts are long, so the prefill workers cap the rate while the decode workers idle — whereas colocated workers lend every GPU to whichever phase is waiting. P/D's TPOT is lower, but a 40 ms TPOT objective is met colocated too."
            } else if lo > 0.0 {
                "Decode freed from prefill meets the TPOT objective at a load where colocated batches, slowed by prefill chunks, do not."
            } else {
                "The interval straddles zero."
            }
        ),
        f.decide("pd"),
    );
}

/// Experiment 9, the prefix cache on and off on the colocated fleet.
pub(super) fn prefix_reuse(f: &mut Findings, cfg: &Config, littles: &mut Runs) {
    f.expect_on(
        "prefix",
        "When 60 % of requests open with one of 8 shared 1024-token prefixes, caching the prefixes' KV raises the colocated fleet's sustained capacity by more than 10 % and cuts p99 TTFT at ρ = 0.9 (of the uncached capacity) by more than a fifth.",
        vec![
            Test::new("prefix.capacity_gain", "the capacity gain", Line::Above(0.10), Unit::Percent),
            Test::new("prefix.ttft_p99_cut", "the cut in p99 TTFT", Line::Above(0.20), Unit::Percent),
        ],
    );
    // Without shared prefixes the cache has nothing to keep: on and off run the same requests alike, and a
    // "contradicted" would be about a scenario the prediction is not about.
    if shipped(PD, cfg, 0).prefix.is_none_or(|p| p.reuse_fraction == 0.0 || p.prefix_tokens == 0) {
        return littles.refuse("does not apply: needs shared prompt prefixes (prefix, with reuse_fraction > 0)");
    }
    let seeds = 0..cfg.repetitions;
    let mut sat = |caching: bool| -> Vec<f64> {
        seeds.clone().map(|k| capacity(&layout(cfg, k, None, caching), littles)).collect()
    };
    let (off, on) = (sat(false), sat(true));
    let (off_shown, (off_mean, ..)) = f.mean_ci("prefix.capacity_off_rps", &off, Unit::Rps);
    let (on_shown, _) = f.mean_ci("prefix.capacity_on_rps", &on, Unit::Rps);
    let gain: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b - 1.0).collect();
    let (gain_shown, _) = f.mean_ci("prefix.capacity_gain", &gain, Unit::Percent);
    let rate = 0.9 * off_mean;
    let outs = |caching: bool, littles: &mut Runs| -> Vec<Outcome> {
        seeds.clone().map(|k| at_rate(layout(cfg, k, None, caching), rate, littles)).collect()
    };
    let (plain, cached) = (outs(false, littles), outs(true, littles));
    let cut: Vec<f64> = cached.iter().zip(&plain).map(|(c, p)| 1.0 - c[2] / p[2]).collect();
    let (cut_shown, _) = f.mean_ci("prefix.ttft_p99_cut", &cut, Unit::Percent);
    let rows = vec![
        row(f, "prefix.off", "Prefix cache off".into(), &plain),
        row(f, "prefix.on", "Prefix cache on".into(), &cached),
    ];
    let rate_shown = f.figure("prefix.rate_rps", rate, Unit::Rps);
    let chart = f.bars(
        "p99 TTFT at the same rate",
        "ms",
        vec![("Cache off".into(), "prefix.off.ttft_p99".into()), ("Cache on".into(), "prefix.on.ttft_p99".into())],
    );
    let s = f.section(
        "prefix",
        "9. Prefix reuse",
        "What is caching shared prompt prefixes worth, in capacity and in the tail?",
    );
    s.setup = format!(
        "Experiment 8's scenario, colocated on four workers, on the same requests (the same prefixes drawn) with the prefix cache off and on: its sustained capacity ({off_shown} off, {on_shown} on) and a Poisson run at {rate_shown}."
    );
    s.regime =
        "ρ = 0.9 of the sustained capacity measured with the cache off; with it on, the same rate is a lighter load."
            .into();
    s.scenario = excerpt(
        PD,
        cfg,
        [("cache off", false), ("cache on", true)]
            .map(|(label, caching)| {
                let mut s = layout(cfg, 0, None, caching);
                offer(&mut s, rate);
                (label.to_string(), s)
            })
            .to_vec(),
    );
    s.columns = COLUMNS.map(String::from).to_vec();
    s.rows = rows;
    s.chart = Some(chart);
    f.found(
        "prefix",
        format!("Caching the shared prefixes raises sustained capacity by {gain_shown} and cuts p99 TTFT at that load by {cut_shown}: every cached prefix is prefill the GPU does not redo."),
        f.decide("prefix"),
    );
}
