//! Every input held (issue 22): each case was found by trying it — an input the validator accepted that
//! never ended, a figure out of its range, an estimate that did not follow what runs, a message at the wrong
//! field — and each is held here.

use std::process::Command;

use inferscale::scenario;
use serde_json::{Value, json};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_inferscale"))
}

fn scenario_path(name: &str) -> String {
    super::root().join("scenarios").join(name).to_string_lossy().into_owned()
}

/// A spec as JSON, to change as a user's file would.
fn json_of(name: &str) -> Value {
    serde_json::to_value(super::shipped(name)).unwrap()
}

/// The first refusal of `v`, as "path: message".
fn refusal(v: &Value) -> String {
    match scenario::load(&v.to_string()) {
        Ok(_) => "accepted".into(),
        Err(e) => format!("{}: {}", e.errors[0].path, e.errors[0].message),
    }
}

/// A thread count past 32 bits is a thread count, not its low 32 bits: the budget counts the runs held at
/// once as the study will hold them (at most its jobs), so 2^32 threads is refused as 20 are.
#[test]
fn a_thread_count_past_32_bits_is_counted_as_itself() {
    let study = |threads: &str| {
        bin()
            .args(["study", "ranking", &scenario_path("peer-llama3-8b-h100.json"), "--budget-gb", "1"])
            .args(["--threads", threads])
            .output()
            .unwrap()
    };
    // Its 35 runs (7 policies × 5 seeds) at once are over 1 GB; 20 at once are too, and so are 2^32, counted
    // as the 35 they hold (before, 2^32 was cast to 0 threads: one run was counted, and 35 started at once).
    let (all, huge) = (study("35"), study("4294967296"));
    assert_eq!(all.status.code(), Some(2), "{}", String::from_utf8_lossy(&all.stderr));
    assert_eq!(all.stderr, huge.stderr, "2^32 threads hold the study's 35 jobs at once");
    assert!(String::from_utf8_lossy(&huge.stderr).contains("35 runs at once"));
    assert_eq!(study("20").status.code(), Some(2));
    assert_eq!(study("1").status.code(), Some(0), "one run at a time fits");
    let zero = study("0");
    assert_eq!(zero.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--threads: must be at least 1"));
}

/// A horizon shorter than a step: the step crossing it counts only up to it, so every busy fraction is a share
/// of the run (it was 4.4e7, "4443214700 % time-busy").
#[test]
fn a_step_crossing_the_horizon_counts_only_up_to_it() {
    for (name, horizon_s) in [("default.json", 0.5), ("default.json", 2.0), ("pd-llama3-8b-h100.json", 1.0)] {
        let mut spec = super::shipped(name);
        spec.engine.horizon_s = Some(horizon_s);
        let r = inferscale::simulate(&super::valid(&spec));
        let e = &r.engine;
        assert!(
            e.busy_fraction > 0.0 && e.busy_fraction <= 1.0 && e.steps > 0,
            "{name} at {horizon_s} s: {}",
            e.busy_fraction
        );
        for x in &r.replicas {
            assert!((0.0..=1.0).contains(&x.busy_fraction), "{name}: replica {}", x.busy_fraction);
        }
        for p in r.pools.iter().flatten() {
            assert!((0.0..=1.0).contains(&p.busy_fraction), "{name}: pool {}", p.busy_fraction);
        }
        if let Some(t) = &r.transfer {
            assert!((0.0..=1.0).contains(&t.link_busy_max_fraction), "{name}: link {}", t.link_busy_max_fraction);
        }
        assert!(!inferscale::export::markdown(&r).contains("00 % time-busy"), "{name}");
    }
    // 100 µs after the first arrival, inside the first step (milliseconds long): busy from that arrival on.
    let spec = super::shipped("default.json");
    let first_ns = inferscale::simulate(&super::valid(&spec)).requests[0].arrival_ns;
    let mut cut = spec.clone();
    cut.engine.horizon_s = Some((first_ns + 100_000) as f64 / 1e9);
    let r = inferscale::simulate(&super::valid(&cut));
    let end_ns = (first_ns + 100_000) as f64;
    let expected = 100_000.0 / end_ns;
    assert_eq!(r.engine.steps, 1);
    assert!((r.engine.busy_fraction - expected).abs() < 1e-9, "{} vs {expected}", r.engine.busy_fraction);
}
