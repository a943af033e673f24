//! The fleet planner: Erlang C sizing, its interval, exact cost arithmetic, the cheapest passing row, pruning,
//! and its options' refusals.

use inferscale::cost::presets;
use inferscale::queueing::{mmc_wq, queue_spec};
use inferscale::scenario::{self, LengthSpec};
use inferscale::study::{self, Cell, StudyReport};
use serde_json::json;

use super::shipped;

fn run(spec: &scenario::Spec, params: serde_json::Value) -> StudyReport {
    let mut st = study::build("fleet", spec, &params).unwrap_or_else(|e| panic!("fleet: {e}"));
    study::run_native(st.as_mut(), 2, &mut |_, _| true).unwrap()
}

/// The column called `label`'s cell in row `i`.
fn cell<'a>(rep: &'a StudyReport, i: usize, label: &str) -> &'a Cell {
    let j = rep.columns.iter().position(|c| c.label == label).unwrap_or_else(|| panic!("no column {label}"));
    &rep.rows[i][j]
}

fn num(c: &Cell) -> Option<f64> {
    match c {
        Cell::Num(x) => Some(*x),
        Cell::Interval { mean, .. } => Some(*mean),
        _ => None,
    }
}

fn text(c: &Cell) -> String {
    match c {
        Cell::Text(t) => t.clone(),
        _ => String::new(),
    }
}

#[test]
fn fleet_replicas_match_erlang_c_and_the_interval_covers_the_true_count() {
    // M/M/c: Poisson at 8 req/s, exponential service of mean 1 s, c replicas behind the central queue.
    // Erlang C: Wq(10) = 205 ms, Wq(11) = 82 ms, Wq(12) = 35 ms, Wq(13) = 15 ms. Each objective sits between
    // two counts' waits (their geometric mean), so the true count is clear of the boundary.
    let lambda = 8.0;
    for want in [11u32, 12] {
        let max_wait_ms = (mmc_wq(want - 1, lambda, 1.0) * mmc_wq(want, lambda, 1.0)).sqrt() * 1e3;
        let erlang = (1..64).find(|&c| c as f64 > lambda && mmc_wq(c, lambda, 1.0) * 1e3 <= max_wait_ms).unwrap();
        assert_eq!(erlang, want);
        let spec = queue_spec(lambda, 1, LengthSpec::Geometric { mean: 1000.0, max: 1_000_000 }, 20_000, 3);
        let params = json!({"target_rps": lambda, "headroom": 0.0, "max_mean_wait_ms": max_wait_ms, "repetitions": 3});
        let rep = run(&spec, params);
        println!("Wq ≤ {max_wait_ms:.1} ms: {}", rep.answer);
        let chosen = num(cell(&rep, 0, "Replicas")).unwrap() as u32;
        assert!(chosen.abs_diff(erlang) <= 1, "chose {chosen}, Erlang C {erlang}: {}", rep.answer);
        let interval = text(cell(&rep, 0, "Replicas, 95 % interval"));
        let (lo, hi) = interval.split_once(" – ").unwrap();
        let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
        assert!(lo <= erlang && erlang <= hi, "the interval {interval} covers Erlang C's {erlang}");
        // The chosen fleet, run on unseen seeds, meets the objective (Erlang C's count has 1.5× to spare).
        assert_eq!(num(cell(&rep, 0, "P(objectives met)")), Some(1.0), "{}", rep.answer);
        assert_eq!(rep.best_row, Some(0));
    }
}

fn small(requests: u64) -> scenario::Spec {
    let mut s = shipped("default.json");
    s.workload.requests = Some(requests);
    s
}

#[test]
fn fleet_costs_are_exact_and_the_cheapest_passing_row_is_the_minimum() {
    let spec = small(400);
    let pd = json!({"kind": "pd", "prefill": 1, "decode": 2, "prefill_device": "h100-sxm", "decode_device": "l40s"});
    let params = json!({
        "target_rps": 12, "repetitions": 2,
        "devices": ["a100-80g", "h100-sxm", "l40s"],
        "layouts": [{"kind": "colocated"}, pd],
        "prices": {"l40s": 1.5},
    });
    let rep = run(&spec, params);
    println!("{}", rep.markdown());
    assert_eq!(rep.rows.len(), 6);
    let price = |d: &str| if d == "l40s" { 1.5 } else { presets::device(d).unwrap().usd_per_gpu_hour.unwrap() };
    let sc = scenario::validate(&spec).unwrap();
    let (prompt, output) = inferscale::bench::mean_tokens(&sc);
    let mut passing = Vec::new();
    for i in 0..rep.rows.len() {
        let Some(n) = num(cell(&rep, i, "Replicas")) else { continue };
        let devices = text(cell(&rep, i, "Device(s)"));
        let layout = text(cell(&rep, i, "Layout"));
        // $/h = units × Σ over the unit's GPUs of their price, exactly as written.
        let unit_usd = match (layout.as_str(), devices.split_once(" → ")) {
            ("colocated", None) => price(&devices),
            ("P/D 1:2", Some((p, d))) => price(p) + 2.0 * price(d),
            ("P/D 1:2", None) => 3.0 * price(&devices),
            other => panic!("{other:?}"),
        };
        let usd = num(cell(&rep, i, "$/h")).unwrap();
        assert_eq!(usd, n * unit_usd, "row {i}: {devices} {layout}");
        let gpus = num(cell(&rep, i, "GPUs")).unwrap();
        assert_eq!(gpus, n * if layout == "colocated" { 1.0 } else { 3.0 });
        // The split conserves the hour: Σ price per token × tokens per hour = $/h.
        let per_hour = 12.0 * 3600.0;
        let split = num(cell(&rep, i, "$/M input tokens")).unwrap() * per_hour * prompt / 1e6
            + num(cell(&rep, i, "$/M output tokens")).unwrap() * per_hour * output / 1e6;
        assert!((split - usd).abs() <= 1e-9 * usd, "row {i}: split {split} vs {usd}");
        assert_eq!(*cell(&rep, i, "$/M cached input tokens"), Cell::Empty, "no prefix: nothing cached");
        passing.push((i, usd));
    }
    assert!(passing.len() >= 3, "{}", rep.markdown());
    let b = rep.best_row.unwrap();
    let least = passing.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert_eq!(num(cell(&rep, b, "$/h")), Some(least), "the marked row is the cheapest passing");
    assert_eq!(text(cell(&rep, b, "Status")), "cheapest passing");
    assert!(rep.answer.starts_with(&text(cell(&rep, b, "Candidate"))), "{}", rep.answer);
    assert!(rep.notes.iter().any(|n| n.contains(presets::PRICE_SOURCE) && n.contains(presets::PRICE_READ_ON)));
    // The chart: every row with a fleet, and a frontier whose points are among them.
    let c = &rep.charts[0];
    assert_eq!(c.series[0].points.len(), passing.len());
    assert!(c.series[1].points.iter().all(|p| c.series[0].points.contains(p)));
}

#[test]
fn fleet_prunes_a_candidate_whose_ceiling_cannot_reach_the_rate_and_says_so() {
    let spec = small(200);
    let params = json!({"target_rps": 400, "devices": ["l4", "h100-sxm"], "max_replicas": 4, "repetitions": 1});
    let mut st = study::build("fleet", &spec, &params).unwrap();
    let jobs = st.next();
    let rep = study::run_native(st.as_mut(), 2, &mut |_, _| true).unwrap();
    assert!(jobs.is_empty(), "no simulation when no candidate can reach the rate: {} jobs", jobs.len());
    for i in 0..2 {
        assert!(text(cell(&rep, i, "Status")).starts_with("pruned: its ceiling"), "{:?}", rep.rows[i]);
    }
    assert_eq!(rep.best_row, None);
    assert!(rep.answer.starts_with("no candidate carries 400 req/s"), "{}", rep.answer);
    assert!(rep.notes.iter().any(|n| n.starts_with("Pruned without a run (2)")), "{:?}", rep.notes);
}

#[test]
fn fleet_model_error_widens_the_interval_and_says_which_dominates() {
    let spec = small(300);
    let base = json!({"target_rps": 10, "repetitions": 2, "devices": ["h100-sxm"]});
    let mut with = base.clone();
    with["model_error"] = json!(0.3);
    let (a, b) = (run(&spec, base), run(&spec, with));
    let iv = |r: &StudyReport| text(cell(r, 0, "Replicas, 95 % interval"));
    assert_eq!(num(cell(&a, 0, "Replicas")), num(cell(&b, 0, "Replicas")), "the error does not move the count");
    assert_ne!(iv(&a), iv(&b), "the error widens the interval");
    assert!(b.notes.iter().any(|n| n.contains("held-out error (30.0 %)") && n.contains("dominates")), "{:?}", b.notes);
}

#[test]
fn fleet_options_are_refused_at_their_field() {
    let spec = small(100);
    let cases = [
        (json!({"target_rps": 0}), "study.fleet.target_rps"),
        (json!({"target_rps": 1e308}), "study.fleet.target_rps"),
        (json!({"target_rps": 5, "headroom": -1}), "study.fleet.headroom"),
        (json!({"target_rps": 5, "repetitions": 0}), "study.fleet.repetitions"),
        (json!({"target_rps": 5, "devices": ["h9000"]}), "study.fleet.devices[0]"),
        (json!({"target_rps": 5, "devices": ["h20"]}), "study.fleet.prices.h20"),
        (json!({"target_rps": 5, "prices": {"b200": 5}}), "study.fleet.prices.b200"),
        (json!({"target_rps": 5, "devices": ["h100-sxm"], "prices": {"h100-sxm": -1}}), "study.fleet.prices.h100-sxm"),
        (
            json!({"target_rps": 5, "layouts": [{"kind": "pd", "prefill": 0, "decode": 1}]}),
            "study.fleet.layouts[0].prefill",
        ),
        (json!({"target_rps": 5, "model_error": 1.5}), "study.fleet.model_error"),
        (json!({"target_rps": 5, "tp": [1, 2, 4, 8], "max_num_seqs": (1..=300).collect::<Vec<u32>>()}), "study.fleet"),
        (json!({"target_rps": 5, "layouts": ["pd"]}), "study.fleet.layouts[0]"),
        (json!({"target_rps": 1e-300}), "study.fleet.target_rps"),
        (json!({"target_rps": 1e6, "headroom": 10}), "study.fleet.headroom"),
        (json!({"max_num_seqs": [8, 0]}), "study.fleet.max_num_seqs[1]"),
        (json!({"max_num_batched_tokens": [1e12]}), "study.fleet.max_num_batched_tokens[0]"),
        (json!({"tp": [1, 65]}), "study.fleet.tp[1]"),
        (json!({"schedulers": [{"kind": "nope"}]}), "study.fleet.schedulers[0].kind"),
        // A value named twice would be a second, identical candidate: refused at the repeat.
        (json!({"target_rps": 5, "devices": ["h100-sxm", "h100-sxm"]}), "study.fleet.devices[1]"),
        (json!({"target_rps": 5, "tp": [2, 1, 2]}), "study.fleet.tp[2]"),
        (
            json!({"target_rps": 5, "layouts": [{"kind": "pd", "prefill": 1, "decode": 2}, {"kind": "colocated"},
                {"kind": "pd", "prefill": 1, "decode": 2}]}),
            "study.fleet.layouts[2]",
        ),
        (json!({"target_rps": 5, "max_num_seqs": [8, 8]}), "study.fleet.max_num_seqs[1]"),
        (json!({"target_rps": 5, "max_num_batched_tokens": [512, 1024, 512]}), "study.fleet.max_num_batched_tokens[2]"),
        (json!({"target_rps": 5, "batch_formations": ["vllm", "vllm"]}), "study.fleet.batch_formations[1]"),
        (json!({"target_rps": 5, "schedulers": [{"kind": "fcfs"}, {"kind": "fcfs"}]}), "study.fleet.schedulers[1]"),
    ];
    for (params, want) in cases {
        let err = match study::build("fleet", &spec, &params) {
            Err(e) => e,
            Ok(_) => panic!("{params} was accepted"),
        };
        assert!(err.errors.iter().any(|f| f.path == want), "{params}: want {want}, got {err}");
    }
    // A candidate whose scenario is invalid stays in the table with the reason.
    let rep = run(&spec, json!({"target_rps": 2, "tp": [1, 3], "repetitions": 1}));
    assert!(text(cell(&rep, 1, "Status")).starts_with("refused: "), "{:?}", rep.rows[1]);
    assert!(num(cell(&rep, 0, "Replicas")).is_some());
}

#[test]
fn the_wilson_interval_of_a_share_matches_its_closed_form() {
    // 3 of 3: (0.4385, 1); 5 of 10: (0.2366, 0.7634); 0 of 5: (0, 0.4345) — Wilson (1927), z = 1.96.
    for (p, n, lo, hi) in [(1.0, 3, 0.4385, 1.0), (0.5, 10, 0.2366, 0.7634), (0.0, 5, 0.0, 0.4345)] {
        let (l, h) = study::wilson95(p, n).unwrap();
        assert!((l - lo).abs() < 5e-4 && (h - hi).abs() < 5e-4, "{p} of {n}: ({l}, {h})");
    }
    assert_eq!(study::wilson95(1.0, 0), None);
}
