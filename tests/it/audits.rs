//! Little's law within 1 %, conservation, and KV free + used == total after every step, on every shipped scenario.

use super::{shipped, shipped_names, valid};

#[test]
fn every_shipped_scenario_passes_its_audits() {
    let names = shipped_names();
    assert!(names.len() >= 6, "ship several scenarios: {names:?}");
    for name in names {
        let mut spec = shipped(&name);
        // The benchmark scenario is large; a tenth of it exercises the same paths.
        if name.starts_with("peer") {
            spec.workload.requests = Some(10_000);
        }
        let r = inferscale::simulate(&valid(&spec));
        let a = &r.audits;
        println!(
            "{name}: Little rel.err {:.2e}, {} KV checks, {} arrived",
            a.little.relative_error, a.kv.checks, a.conservation.arrived
        );
        assert!(a.little.relative_error <= 0.01, "{name}: Little's law off by {}", a.little.relative_error);
        assert!(a.conservation.ok, "{name}: conservation {:?}", a.conservation);
        assert_eq!(a.kv.violations, 0, "{name}: KV invariant broken");
        assert_eq!(a.kv.checks, r.engine.steps, "{name}: a KV check after every step");
        assert!(a.ok);
        assert!(r.summary.completed > 0, "{name}: nothing completed");
        assert!(r.summary.requests > 0);
    }
}

#[test]
fn little_audit_detects_a_wrong_counter() {
    // The audit compares two independent bookkeepings; break one and it must notice.
    let sc = valid(&super::small());
    let mut rec = inferscale::engine::run(&sc);
    rec.area[3] = rec.area[3] / 10 * 9;
    let r = inferscale::Report::build(&sc, rec);
    assert!(r.audits.little.relative_error > 0.05);
    assert!(!r.audits.ok);
}

#[test]
fn horizon_reports_unfinished_and_still_conserves() {
    let mut spec = super::small();
    spec.workload.arrival = inferscale::scenario::ArrivalSpec::Poisson { rate_rps: 40.0 };
    spec.engine.horizon_s = Some(20.0);
    let r = inferscale::simulate(&valid(&spec));
    assert!(r.summary.unfinished > 0, "an overloaded run cut at 20 s leaves work in flight");
    assert!(r.audits.conservation.ok);
    assert!(r.audits.little.relative_error <= 0.01, "{}", r.audits.little.relative_error);
    assert!((r.summary.duration_s - 20.0).abs() < 1.0);
}

/// The resource estimate is an upper bound: no shipped or random scenario takes more steps, or holds more
/// requests, than its estimate says (the budget refuses on the estimate, so it must never be below).
#[test]
fn the_resource_estimate_bounds_every_run() {
    let mut checked = 0;
    let specs = super::shipped_names()
        .into_iter()
        .map(|n| super::shipped(&n))
        .chain((0..150).map(super::property::random_spec));
    for spec in specs {
        let Ok(sc) = inferscale::scenario::validate(&spec) else { continue };
        let est = sc.estimate();
        let r = inferscale::simulate(&sc);
        assert!(
            r.engine.steps as f64 <= est.steps,
            "{}: {} steps, estimated at most {}",
            spec.name,
            r.engine.steps,
            est.steps
        );
        assert!(
            r.summary.requests as f64 <= est.requests,
            "{}: {} requests, estimated {}",
            spec.name,
            r.summary.requests,
            est.requests
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked} runs checked");
}

/// 10M-token outputs used to grow the ITL record per token: now its bound caps the memory a run can need at
/// a few hundred MB whatever the outputs' length, so two thousand of them are refused only for their steps
/// (with the estimate), and a few run within the memory of a small run.
#[test]
fn ten_million_token_outputs_are_bounded_in_memory_and_refused_for_time() {
    let mut s = super::shipped("default.json");
    s.engine.kv_capacity_tokens = Some(1 << 30);
    s.engine.block_size_tokens = 4096;
    for c in &mut s.workload.classes {
        c.output_tokens = inferscale::scenario::LengthSpec::Fixed { tokens: 10_000_000 };
    }
    s.workload.requests = Some(2000);
    let sc = super::valid(&s);
    let est = sc.estimate();
    assert!(est.memory_bytes < 0.3e9, "memory estimated at {} GB", est.memory_bytes / 1e9);
    let err = sc.check_budget(&inferscale::scenario::Budget::NATIVE, 1).unwrap_err();
    assert!(err.errors.len() == 1 && err.errors[0].message.contains("steps"), "{err}");
    s.workload.requests = Some(3);
    let few = super::valid(&s);
    assert!(few.check_budget(&inferscale::scenario::Budget::NATIVE, 1).is_ok());
    assert!(few.estimate().memory_bytes < 0.3e9);
}
