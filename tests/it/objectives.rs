//! Figures that do not mislead: offered vs achieved rate, the steady-state window (a short and a long run
//! agree), objectives on percentiles with a configurable attainment target, and a diagnosis that names what
//! was missed and never calls a system that does not keep up "healthy".

use inferscale::scenario::{self, ArrivalSpec, LatencyMetric, PercentileObjectiveSpec, SchedulerSpec, Spec};

use super::{shipped, valid};

/// The issue's example: Llama-3-70B on H100 TP4 with 2 replicas (the chat scenario's classes).
fn chat_70b(replicas: u32, arrival: ArrivalSpec, requests: u64) -> Spec {
    let mut s = shipped("chat-70b-h100-tp4.json");
    s.cluster.replicas = replicas;
    s.workload.arrival = arrival;
    s.workload.requests = Some(requests);
    s
}

fn steady_throughput(spec: &Spec) -> (f64, f64, f64) {
    let r = inferscale::simulate(&valid(spec));
    (r.steady.throughput_rps, r.summary.throughput_rps, r.summary.offered_rate_rps)
}

#[test]
fn a_short_and_a_long_run_report_the_same_steady_throughput() {
    // Overloaded (30 req/s offered to what sustains ~7): the whole-run figure of the short run understates the
    // capacity because it divides by the drain; the steady window does not.
    let over = |n| {
        let mut s = chat_70b(2, ArrivalSpec::Poisson { rate_rps: 30.0 }, n);
        s.scheduler = SchedulerSpec::Fcfs;
        s
    };
    // Below capacity, evenly spaced arrivals (so the offered rate itself does not vary with the run's length).
    let under = |n| chat_70b(2, ArrivalSpec::Constant { rate_rps: 4.0 }, n);
    // The short runs are as short as the report accepts as steady (a run whose 3 × median in-batch time exceeds
    // its arrival span is said to be too short, and is).
    for (name, make, short_n) in
        [("overloaded", &over as &dyn Fn(u64) -> Spec, 4_000), ("below capacity", &under, 1_000)]
    {
        let (short, short_whole, short_offered) = steady_throughput(&make(short_n));
        let (long, long_whole, _) = steady_throughput(&make(20_000));
        let steady_gap = (short / long - 1.0).abs();
        let whole_gap = (short_whole / long_whole - 1.0).abs();
        println!(
            "{name}: steady {short:.3} vs {long:.3} req/s ({:.2} %); whole run {short_whole:.3} vs {long_whole:.3} ({:.2} %); offered {short_offered:.2}",
            steady_gap * 100.0,
            whole_gap * 100.0
        );
        assert!(steady_gap <= 0.02, "{name}: steady throughput {short} ({short_n} requests) vs {long} (20,000)");
        assert!(
            whole_gap > 0.05,
            "{name}: the whole-run figure is the one that misleads ({short_whole} vs {long_whole})"
        );
        assert!(short_offered > 0.0);
    }
}

#[test]
fn offered_and_achieved_are_both_reported_and_overload_is_flagged() {
    let r = inferscale::simulate(&valid(&chat_70b(2, ArrivalSpec::Constant { rate_rps: 30.0 }, 4_000)));
    assert!(
        (r.summary.offered_rate_rps - 30.0).abs() < 1e-6,
        "constant arrivals: offered {}",
        r.summary.offered_rate_rps
    );
    assert!((r.steady.offered_rate_rps - 30.0).abs() < 0.1);
    assert!(r.steady.overloaded, "{:?}", r.steady);
    assert!(r.steady.throughput_rps < 0.6 * r.steady.offered_rate_rps);
    assert!(r.steady.in_system_end > r.steady.in_system_start);
    assert!(r.steady.warnings.iter().any(|w| w.starts_with("overloaded")), "{:?}", r.steady.warnings);
    // The window leaves out the warm-up (at least 3 median in-batch times) and the drain.
    assert!(r.steady.start_s >= 3.0 * r.steady.median_service_s - 1e-9);
    assert!(r.steady.end_s < r.summary.duration_s);
    // Too short a run is said to be.
    let mut small = super::small();
    small.workload.requests = Some(150);
    let r = inferscale::simulate(&valid(&small));
    assert!(r.steady.warnings.iter().any(|w| w.starts_with("too short")), "{:?}", r.steady.warnings);
    // A burst has no window, and says so instead of dividing by zero.
    let mut burst = super::small();
    burst.workload.arrival = ArrivalSpec::Constant { rate_rps: 1e7 };
    burst.workload.requests = Some(1);
    let r = inferscale::simulate(&valid(&burst));
    assert_eq!(r.steady.window_s, 0.0, "{:?}", r.steady);
    assert_eq!(r.summary.offered_rate_rps, 0.0);
    assert!(r.steady.warnings[0].starts_with("no steady-state window"), "{:?}", r.steady.warnings);
}

fn objective(metric: LatencyMetric, percentile: f64, max_ms: f64, class: Option<&str>) -> PercentileObjectiveSpec {
    PercentileObjectiveSpec { metric, percentile, max_ms, class: class.map(str::to_string) }
}

#[test]
fn percentile_objectives_are_measured_as_the_summary_measures_them() {
    let base = inferscale::simulate(&valid(&shipped("default.json")));
    let p95 = base.summary.ttft_s.p95;
    let mut s = shipped("default.json");
    s.objectives.percentiles = vec![
        objective(LatencyMetric::Ttft, 95.0, p95 * 1e3 * 1.01, None),
        objective(LatencyMetric::Ttft, 95.0, p95 * 1e3 * 0.99, None),
        objective(LatencyMetric::E2e, 99.0, 1e9, Some("summarize")),
        objective(LatencyMetric::Tpot, 50.0, 1e-3, Some("chat")),
    ];
    let r = inferscale::simulate(&valid(&s));
    let o = &r.objectives;
    assert_eq!(o.percentiles[0].value_s, p95, "the same interpolation as the summary's p95");
    assert!(o.percentiles[0].met && !o.percentiles[1].met);
    assert!(o.percentiles[2].met);
    assert_eq!(o.percentiles[2].class.as_deref(), Some("summarize"));
    assert_eq!(o.percentiles[2].value_s, r.classes.iter().find(|c| c.name == "summarize").unwrap().e2e_s.p99);
    assert!(!o.percentiles[3].met);
    assert!(!o.met);
    // The objectives change no other figure.
    assert_eq!(r.summary, base.summary);
    // The diagnosis says which objective was missed and by how much.
    assert!(r.diagnosis.verdict.contains("p95 TTFT ≤"), "{}", r.diagnosis.verdict);
    assert!(r.diagnosis.verdict.contains("p50 TPOT of chat ≤"), "{}", r.diagnosis.verdict);
}

#[test]
fn the_attainment_target_is_the_scenarios() {
    let mut s = shipped("chat-70b-h100-tp4.json");
    let r = inferscale::simulate(&valid(&s));
    assert_eq!(r.objectives.attainment_target, 0.99);
    assert!(r.objectives.met);
    assert_eq!(r.diagnosis.kind, "healthy");
    // A target above what was attained turns the same run into a miss, named in the verdict.
    s.objectives.attainment_target = 1.0;
    let r2 = inferscale::simulate(&valid(&s));
    assert_eq!(r2.summary, r.summary);
    if r.summary.slo_attainment < 1.0 {
        assert!(!r2.objectives.met && r2.diagnosis.kind != "healthy", "{}", r2.diagnosis.verdict);
        assert!(r2.diagnosis.verdict.contains("Missed:"), "{}", r2.diagnosis.verdict);
    }
    // A lower target makes a run that misses 99 % healthy.
    let mut d = shipped("default.json");
    let before = inferscale::simulate(&valid(&d));
    assert!(!before.objectives.met);
    d.objectives.attainment_target = before.summary.slo_attainment - 1e-9;
    let after = inferscale::simulate(&valid(&d));
    assert!(after.objectives.attainment_met);
}

#[test]
fn the_diagnosis_names_the_missed_objective_class_and_share() {
    let r = inferscale::simulate(&valid(&shipped("default.json")));
    let chat_ttft =
        r.diagnosis.missed.iter().find(|m| m.class == "chat" && m.objective == "ttft").expect("chat misses TTFT");
    assert_eq!(chat_ttft.max_s, 1.0);
    assert!(chat_ttft.missed_fraction > 0.0 && chat_ttft.missed_fraction < 0.1);
    assert!(r.diagnosis.verdict.contains("Missed: TTFT ≤ 1000 ms for chat ("), "{}", r.diagnosis.verdict);
    assert!(r.diagnosis.findings.iter().any(|f| f.label.starts_with("device time-busy")));
}

#[test]
fn a_cluster_that_does_not_keep_up_is_never_called_healthy() {
    // 400 requests at 30 req/s on what sustains ~12: every objective is loose enough to be met over so short a
    // run, but the queue grows.
    let mut s = chat_70b(2, ArrivalSpec::Constant { rate_rps: 30.0 }, 400);
    for c in &mut s.workload.classes {
        c.slo = Default::default();
    }
    let r = inferscale::simulate(&valid(&s));
    assert!(r.objectives.met);
    assert!(r.steady.overloaded);
    assert_eq!(r.diagnosis.kind, "capacity", "{}", r.diagnosis.verdict);
    assert_eq!(r.diagnosis.regime, "overloaded");
    assert!(r.diagnosis.verdict.contains("a longer run would miss them"), "{}", r.diagnosis.verdict);
}

#[test]
fn bad_objectives_name_their_field() {
    type Edit = Box<dyn Fn(&mut Spec)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("objectives.attainment_target", Box::new(|s| s.objectives.attainment_target = 0.0)),
        ("objectives.attainment_target", Box::new(|s| s.objectives.attainment_target = 1.5)),
        ("objectives.attainment_target", Box::new(|s| s.objectives.attainment_target = f64::NAN)),
        (
            "objectives.percentiles[0].percentile",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 0.0, 100.0, None)]),
        ),
        (
            "objectives.percentiles[0].percentile",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 101.0, 100.0, None)]),
        ),
        (
            "objectives.percentiles[0].max_ms",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 95.0, -1.0, None)]),
        ),
        (
            "objectives.percentiles[0].max_ms",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 95.0, 1e308, None)]),
        ),
        (
            "objectives.percentiles[0].class",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 95.0, 100.0, Some("chta"))]),
        ),
        (
            "objectives.percentiles",
            Box::new(|s| s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 95.0, 100.0, None); 65]),
        ),
        ("metrics.warmup_fraction", Box::new(|s| s.metrics.warmup_fraction = 0.95)),
        ("metrics.warmup_fraction", Box::new(|s| s.metrics.warmup_fraction = -1e-300)),
    ];
    for (path, edit) in cases {
        let mut s = shipped("default.json");
        edit(&mut s);
        let e = scenario::validate(&s).expect_err(path);
        assert!(e.errors.iter().any(|f| f.path == path), "{path}: {e}");
    }
    let mut s = shipped("default.json");
    s.objectives.percentiles = vec![objective(LatencyMetric::Ttft, 95.0, 100.0, Some("chta"))];
    let e = scenario::validate(&s).unwrap_err();
    assert!(e.to_string().contains("did you mean \"chat\""), "{e}");
    // From JSON: a misspelt metric and an unknown key are named too.
    let text = r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 10}, "objectives": {"percentiles": [{"metric": "ttf", "percentile": 95, "max_ms": 1}]}}"#;
    let e = scenario::parse(text).unwrap_err();
    assert!(e.to_string().contains("objectives.percentiles[0].metric"), "{e}");
}

#[test]
fn type_errors_are_said_in_the_users_words() {
    let text = r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 10, "classes": [{"slo": {"tpot_ms": ""}}]}}"#;
    let e = scenario::parse(text).unwrap_err();
    let f = &e.errors[0];
    assert_eq!(f.path, "workload.classes[0].slo.tpot_ms");
    assert!(f.message.starts_with("expected a number, got an empty text \"\" (line 1, column"), "{}", f.message);
    let text = r#"{"workload": {"arrival": {"kind": "poisson", "rate_rps": 1}, "requests": 2.5}}"#;
    let e = scenario::parse(text).unwrap_err();
    // A whole-number field given 2.5 is refused at the field with its range (validation's).
    assert_eq!(e.errors[0].path, "workload.requests");
    assert_eq!(e.errors[0].message, "must be a whole number from 1 to 50000000 (got 2.5)");
}

#[test]
fn the_missed_column_is_the_attainments_rule_per_request() {
    // Loaded past its objectives (kv-pressure), so rows miss TTFT, TPOT, both, or were not completed.
    for name in ["default.json", "kv-pressure.json"] {
        let sc = valid(&shipped(name));
        let r = inferscale::simulate(&sc);
        let csv = inferscale::export::requests_csv(&r, &sc);
        let mut lines = csv.lines();
        assert!(lines.next().unwrap().ends_with(",preemptions,missed"));
        let missed: Vec<&str> = lines.map(|l| l.rsplit(',').next().unwrap()).collect();
        let met = missed.iter().filter(|m| m.is_empty()).count();
        assert_eq!(missed.len() as u64, r.summary.requests);
        assert!((met as f64 / missed.len() as f64 - r.summary.slo_attainment).abs() < 1e-12, "{name}");
        let allowed =
            ["", "not_completed", "ttft", "tpot", "e2e", "ttft+tpot", "ttft+e2e", "tpot+e2e", "ttft+tpot+e2e"];
        assert!(missed.iter().all(|m| allowed.contains(m)), "{name}: {missed:?}");
        for (q, m) in r.requests.iter().zip(&missed) {
            let slo = &sc.workload.classes[q.class as usize].slo;
            let ttft_ns = q.first_token_ns.wrapping_sub(q.arrival_ns);
            if q.outcome == inferscale::metrics::Outcome::Completed && slo.ttft_ns.is_some_and(|b| ttft_ns > b) {
                assert!(m.contains("ttft"), "{name}: request {} missed its TTFT", q.id);
            }
        }
        if name == "kv-pressure.json" {
            assert!(missed.iter().any(|m| !m.is_empty()), "an overloaded run misses objectives");
        }
    }
}
