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
        println!("{name}: Little rel.err {:.2e}, {} KV checks, {} arrived", a.little.relative_error, a.kv.checks, a.conservation.arrived);
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
