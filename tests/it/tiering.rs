//! Adaptive tiering: the gap oracle's bound, learned estimates that see only the calls that returned, per-tool
//! estimates against one over all tools, recovery after a tool's shift, and the options refused at their field.

use super::engine::one_session;
use inferscale::metrics::ToolGap;
use inferscale::scenario::*;
use inferscale::tiering::Tier;

/// Sessions with a fast and a slow tool on two sticky replicas, with a host tier.
fn agents(retention: RetentionSpec, shift: Option<ToolShiftSpec>) -> Spec {
    let mut s = one_session(8);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 2.0 };
    s.workload.requests = Some(60);
    s.cluster.replicas = 2;
    s.cluster.router = RouterSpec::Sticky;
    s.engine.host_kv = Some(HostKvSpec { capacity_gb: 100.0, bandwidth_gbps: 25.0, latency_ms: 0.05 });
    let x = s.workload.sessions.as_mut().unwrap();
    x.turns = Some(LengthSpec::Uniform { min: 2, max: 12 });
    x.new_tokens = Some(LengthSpec::Lognormal { mean: 300.0, cv: 1.0, max: 4000 });
    x.output_tokens = Some(LengthSpec::Geometric { mean: 40.0, max: 400 });
    x.tools = vec![
        ToolSpec { name: "read".into(), weight: 3.0, mean_s: 0.2, cv: 0.5 },
        ToolSpec { name: "build".into(), weight: 1.0, mean_s: 30.0, cv: 0.3 },
    ];
    x.retention = retention;
    x.shift = shift;
    s
}

fn slows(factor: f64) -> Option<ToolShiftSpec> {
    Some(ToolShiftSpec { tool: "build".into(), at_s: 20.0, factor })
}

fn gaps(s: &Spec) -> Vec<ToolGap> {
    inferscale::engine::run(&super::valid(s)).sess.gaps
}

fn tiering(s: &Spec) -> inferscale::metrics::TieringSummary {
    let r = inferscale::simulate(&super::valid(s));
    assert!(r.audits.ok, "{:?}", r.audits);
    r.sessions.unwrap().tiering.expect("priced gaps")
}

const POLICIES: [RetentionSpec; 7] = [
    RetentionSpec::Stateless,
    RetentionSpec::Retain,
    RetentionSpec::Ttl { ttl_s: Some(5.0) },
    RetentionSpec::HostOffload,
    RetentionSpec::Adaptive { alpha: 0.2 },
    RetentionSpec::AdaptivePerTool { alpha: 0.2 },
    RetentionSpec::GapOracle,
];

/// The gap oracle takes the cheapest tier for each realised gap: within every run no choice costs less than
/// it, and — the gaps being the same in every run when no shift moves them (a factor of 1 prices them) —
/// no policy's gap cost is below the oracle's run's, which agrees with itself on every call.
#[test]
fn no_policy_pays_less_gap_cost_than_the_gap_oracle() {
    let runs: Vec<_> = POLICIES.iter().map(|p| tiering(&agents(*p, slows(1.0)))).collect();
    let oracle = runs.last().unwrap();
    assert_eq!((oracle.oracle_agreement, oracle.gap_cost_s), (1.0, oracle.oracle_gap_cost_s));
    for (p, t) in POLICIES.iter().zip(&runs) {
        assert!(t.calls > 100, "{p:?}: {}", t.calls);
        assert!(t.gap_cost_s >= t.oracle_gap_cost_s - 1e-9, "{p:?}: {} < {}", t.gap_cost_s, t.oracle_gap_cost_s);
        assert!((t.oracle_gap_cost_s - oracle.gap_cost_s).abs() < 1e-9, "{p:?}: the same gaps, the same bound");
        assert!(t.gap_cost_s >= oracle.gap_cost_s - 1e-9, "{p:?}");
    }
    // The learned per-tool policy comes closer to the bound than stateless, and mostly agrees with it.
    let (stateless, per_tool) = (&runs[0], &runs[5]);
    assert!(per_tool.gap_cost_s < stateless.gap_cost_s, "{} vs {}", per_tool.gap_cost_s, stateless.gap_cost_s);
    assert!(per_tool.oracle_agreement > 0.8, "{}", per_tool.oracle_agreement);
    // Per call, by hand: a choice's price is never below the cheapest's.
    for g in gaps(&agents(RetentionSpec::AdaptivePerTool { alpha: 0.2 }, slows(3.0))) {
        assert!(g.cost_ns >= g.oracle_cost_ns && (g.agrees == (g.cost_ns == g.oracle_cost_ns) || g.agrees), "{g:?}");
    }
}

/// A learned policy's decisions up to time t are unchanged when every tool call returning after t (in its own
/// run) takes 100× as long; the gap oracle's are not (it sees the gap it decides for), so the check has
/// teeth.
#[test]
fn learned_policies_decide_only_from_calls_that_have_returned() {
    let t_ns = 25_000_000_000;
    // A build of 5 s: its estimate is learned early, and past the break-even (a host restore is cheaper).
    let mut spec = agents(RetentionSpec::Stateless, None);
    spec.workload.sessions.as_mut().unwrap().tools[1].mean_s = 5.0;
    let base = inferscale::engine::run(&super::valid(&spec));
    // The base run's sessions as a trace, each call's latency through `gap(session, turn, drawn)`.
    let trace = |gap: &dyn Fn(usize, usize, u64) -> u64| {
        let names = ["read", "build"];
        let mut text = String::new();
        for (i, p) in base.programs.iter().enumerate() {
            let rows: Vec<serde_json::Value> = (0..p.new_tokens.len())
                .map(|k| match p.tools.get(k) {
                    Some(&tool) => serde_json::json!({"new_tokens": p.new_tokens[k], "output_tokens": p.output_tokens[k], "tool": names[tool as usize], "tool_s": gap(i, k, p.gaps_ns[k]) as f64 / 1e9}),
                    None => serde_json::json!({"new_tokens": p.new_tokens[k], "output_tokens": p.output_tokens[k]}),
                })
                .collect();
            let t0 = base.requests.iter().find(|r| r.session == i as u32).unwrap().arrival_ns as f64 / 1e9;
            text += &format!("{}\n", serde_json::json!({"id": i, "arrival_s": t0, "turns": rows}));
        }
        text
    };
    let traced = |retention: RetentionSpec, text: &str| {
        let mut s = agents(retention, None);
        let x = s.workload.sessions.as_mut().unwrap();
        (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, vec![]);
        x.trace = Some(SessionTraceSpec { path: None, data: Some(text.into()), format: SessionTraceFormat::Auto });
        inferscale::engine::run(&super::valid(&s))
    };
    let decisions = |rec: &inferscale::metrics::Recorder| {
        let mut d: Vec<(u64, u16, Option<f64>, Tier)> = (rec.sess.gaps.iter())
            .filter(|g| g.start_ns < t_ns)
            .map(|g| (g.start_ns, g.tool, g.estimate_ns, g.tier))
            .collect();
        d.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        d
    };
    let same = trace(&|_, _, g| g);
    let learned = [RetentionSpec::AdaptivePerTool { alpha: 0.3 }, RetentionSpec::Adaptive { alpha: 0.3 }];
    for retention in learned.into_iter().chain([RetentionSpec::GapOracle]) {
        let run = traced(retention, &same);
        // Turn k + 1 of session i ended when its call k started.
        let started = |i: usize, k: usize| {
            (run.requests.iter())
                .find(|r| r.session == i as u32 && r.turn as usize == k + 1)
                .map_or(u64::MAX, |r| r.done_ns)
        };
        let altered = trace(&|i, k, g| if started(i, k).saturating_add(g) > t_ns { g * 100 } else { g });
        assert_ne!(same, altered);
        let flying = run.sess.gaps.iter().filter(|g| g.start_ns < t_ns && g.start_ns + g.gap_ns > t_ns).count();
        assert!(flying > 5, "{retention:?}: {flying} calls in flight at t");
        let (a, b) = (decisions(&run), decisions(&traced(retention, &altered)));
        assert!(a.len() > 50 && a.iter().filter(|x| x.3 != Tier::Hbm).count() > 5, "{retention:?}: {}", a.len());
        if retention == RetentionSpec::GapOracle {
            assert_ne!(a, b, "the oracle sees the future");
        } else {
            assert_eq!(a, b, "{retention:?}");
        }
    }
}

/// With a fast and a slow tool, one estimate per tool errs far less than one over both; after the slow tool
/// slows 4×, both catch up: the relative error of its last calls is well below that of its first calls after
/// the shift.
#[test]
fn per_tool_estimates_beat_global_ones_and_recover_after_a_shift() {
    let per_tool = tiering(&agents(RetentionSpec::AdaptivePerTool { alpha: 0.3 }, slows(4.0)));
    let global = tiering(&agents(RetentionSpec::Adaptive { alpha: 0.3 }, slows(4.0)));
    let (p, g) = (per_tool.mae_s.unwrap(), global.mae_s.unwrap());
    assert!(p < 0.5 * g, "per tool {p} vs global {g}");
    assert!(per_tool.oracle_agreement > global.oracle_agreement);
    let post = per_tool.post_shift_mae_s.unwrap();
    assert!(post > per_tool.pre_shift_mae_s.unwrap(), "the shift costs accuracy first");
    for retention in [RetentionSpec::AdaptivePerTool { alpha: 0.3 }, RetentionSpec::Adaptive { alpha: 0.3 }] {
        let slow: Vec<f64> = (gaps(&agents(retention, slows(4.0))).iter())
            .filter(|g| g.tool == 1 && g.start_ns >= 20_000_000_000)
            .map(|g| (g.estimate_ns.unwrap() - g.gap_ns as f64).abs() / g.gap_ns as f64)
            .collect();
        let k = slow.len() / 3;
        assert!(k >= 3, "{retention:?}: {} slow calls after the shift", slow.len());
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        let (first, last) = (mean(&slow[..k]), mean(&slow[slow.len() - k..]));
        assert!(last < 0.6 * first, "{retention:?}: relative error first {first}, last {last}");
    }
}

/// The EWMA by hand in the engine: one session whose calls of one tool last 1, 2 and 4 s; with α = 0.5 the
/// second call is decided on 1 s, the third on 1.5 s, and a call before any returned on nothing.
#[test]
fn the_engine_estimates_the_gap_as_computed_by_hand() {
    let text = r#"{"id": 1, "turns": [{"new_tokens": 1000, "output_tokens": 5, "tool": "t", "tool_s": 1}, {"new_tokens": 100, "output_tokens": 5, "tool": "t", "tool_s": 2}, {"new_tokens": 100, "output_tokens": 5, "tool": "t", "tool_s": 4}, {"new_tokens": 100, "output_tokens": 5}]}"#;
    let mut s = agents(RetentionSpec::Adaptive { alpha: 0.5 }, None);
    s.workload.requests = Some(1);
    let x = s.workload.sessions.as_mut().unwrap();
    (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, vec![]);
    x.trace = Some(SessionTraceSpec { path: None, data: Some(text.into()), format: SessionTraceFormat::Auto });
    let g = gaps(&s);
    let est: Vec<Option<f64>> = g.iter().map(|x| x.estimate_ns).collect();
    assert_eq!(est, [None, Some(1e9), Some(1.5e9)]);
    assert_eq!(g.iter().map(|x| x.gap_ns).collect::<Vec<_>>(), [1_000_000_000, 2_000_000_000, 4_000_000_000]);
}

/// The new fields refuse bad input at their field, with the range.
#[test]
fn tiering_fields_refuse_bad_input_at_their_field() {
    let errs = |s: &Spec| {
        inferscale::scenario::validate(s).err().map(|e| e.errors.iter().map(|x| x.path.clone()).collect::<Vec<_>>())
    };
    for alpha in [0.0, -1.0, 1.5, f64::NAN] {
        let s = agents(RetentionSpec::Adaptive { alpha }, None);
        assert_eq!(errs(&s), Some(vec!["workload.sessions.retention.alpha".to_string()]), "{alpha}");
    }
    let bad = [
        (ToolShiftSpec { tool: "nope".into(), at_s: 1.0, factor: 2.0 }, "workload.sessions.shift.tool"),
        (ToolShiftSpec { tool: "build".into(), at_s: -1.0, factor: 2.0 }, "workload.sessions.shift.at_s"),
        (ToolShiftSpec { tool: "build".into(), at_s: 1.0, factor: 0.0 }, "workload.sessions.shift.factor"),
        (ToolShiftSpec { tool: "build".into(), at_s: 1.0, factor: 1e308 }, "workload.sessions.shift.factor"),
    ];
    for (shift, at) in bad {
        assert_eq!(errs(&agents(RetentionSpec::Retain, Some(shift.clone()))), Some(vec![at.to_string()]), "{shift:?}");
    }
    let study = |options: serde_json::Value| {
        inferscale::study::Kind::AdaptiveTiering
            .build(&agents(RetentionSpec::Retain, None), &options)
            .err()
            .map(|e| e.errors.iter().map(|x| x.path.clone()).collect::<Vec<_>>())
    };
    assert_eq!(study(serde_json::json!({})), None);
    assert_eq!(study(serde_json::json!({"alpha": 0})), Some(vec!["study.adaptive-tiering.alpha".to_string()]));
    assert_eq!(
        study(serde_json::json!({"alphas": [0.5, 2]})),
        Some(vec!["study.adaptive-tiering.alphas[1]".to_string()])
    );
    assert_eq!(
        study(serde_json::json!({"shift": {"tool": "nope", "at_s": 1, "factor": 2}})),
        Some(vec!["study.adaptive-tiering.shift.tool".to_string()])
    );
    assert_eq!(
        study(serde_json::json!({"shift": {"tool": "build", "at_s": 1, "factor": -2}})),
        Some(vec!["study.adaptive-tiering.shift.factor".to_string()])
    );
}
