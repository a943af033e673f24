//! Session classes: a mix of kinds of session, each with its own turns, lengths, tools, objectives and
//! request class; what a class leaves out it takes from the sessions' fields.

use super::engine::one_session;
use inferscale::scenario::*;
use inferscale::simulate;
use serde_json::json;

/// `one_session(3)` (1000-token first prompt, 200 new, 5 out, a 1 s tool; linear cost), 200 sessions at 2/s,
/// with these classes.
fn classed(classes: serde_json::Value) -> Spec {
    let mut s = one_session(3);
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 2.0 };
    s.workload.requests = Some(200);
    s.workload.sessions.as_mut().unwrap().classes = serde_json::from_value(classes).unwrap();
    s
}

fn json_without_classes(r: &inferscale::Report) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&inferscale::export::json(r)).unwrap();
    v["sessions"].as_object_mut().unwrap().remove("classes");
    v["scenario"] = json!(null);
    v
}

/// One class that gives nothing of its own is the sessions' fields: the report is the classless one, byte
/// for byte, but for its one-row `classes` block, which agrees with the section.
#[test]
fn one_class_that_inherits_everything_is_the_classless_run() {
    let plain = simulate(&super::valid(&classed(json!([]))));
    let one = simulate(&super::valid(&classed(json!([{"name": "agent"}]))));
    assert!(plain.sessions.as_ref().unwrap().classes.is_empty());
    assert_eq!(json_without_classes(&plain), json_without_classes(&one));
    let (s, c) = (one.sessions.as_ref().unwrap(), &one.sessions.as_ref().unwrap().classes[0]);
    assert_eq!((c.name.as_str(), c.sessions, c.turns, c.completed), ("agent", s.sessions, s.turns, s.completed));
    assert_eq!(
        (c.turn_ttft_s, c.session_e2e_s, c.history_tokens, c.reuse),
        (s.turn_ttft_s, s.session_e2e_s, s.history_tokens, s.reuse)
    );
}

/// Two classes, each with its own turns, first prompt and tools: each class's sessions do exactly what its
/// settings say, the mix follows the weights, and every class's figures add up to the section's.
#[test]
fn each_class_draws_its_own_programs_in_its_share() {
    let sc = super::valid(&classed(json!([
        {"name": "quick", "weight": 3, "turns": {"kind": "fixed", "tokens": 2}, "tools": []},
        {"name": "long", "turns": {"kind": "fixed", "tokens": 6}, "first_tokens": {"kind": "fixed", "tokens": 3000}}
    ])));
    let rec = inferscale::engine::run(&sc);
    for p in &rec.programs {
        let (turns, first) = if p.class == 0 { (2, 1000) } else { (6, 3000) };
        assert_eq!((p.new_tokens.len(), p.new_tokens[0], p.tools.len()), (turns, first, turns - 1), "{p:?}");
        assert!(p.class == 0 || p.gaps_ns.iter().all(|&g| g == 1_000_000_000), "the sessions' tool: exactly 1 s");
        assert!(p.class == 1 || p.gaps_ns == [0], "no tools: the next turn follows at once");
    }
    let r = inferscale::Report::build(&sc, rec);
    let s = r.sessions.as_ref().unwrap();
    let [quick, long] = &s.classes[..] else { panic!("two classes: {:?}", s.classes) };
    assert_eq!((quick.name.as_str(), long.name.as_str()), ("quick", "long"));
    assert_eq!(quick.sessions + long.sessions, s.sessions);
    assert_eq!(quick.turns + long.turns, s.turns);
    assert!((130..=170).contains(&quick.sessions), "a 3:1 mix of 200 sessions: {} quick", quick.sessions);
    assert_eq!((quick.mean_turns_per_session, long.mean_turns_per_session), (2.0, 6.0));
    // Stateless: turn k re-sends 1000 + (k−1)·205 (or 3000 + …) tokens, so the long class waits longer.
    assert!(long.turn_ttft_s.p50 > quick.turn_ttft_s.p50);
    assert_eq!(quick.history_tokens, quick.sessions * 1005);
    assert_eq!(long.history_tokens, long.sessions * (1..6).map(|k| 3000 + 5 + (k - 1) * 205).sum::<u64>());
    assert_eq!(quick.history_tokens + long.history_tokens, s.history_tokens);
}

/// Common random numbers: a session's class comes from a stream of its own, so the sessions that are of a
/// class in a mix have, index for index, the programs they have when every session is of that class.
#[test]
fn a_mix_replays_each_class_s_programs_as_that_class_alone_draws_them() {
    let mut a = json!({"turns": {"kind": "geometric", "mean": 4, "max": 30}, "first_tokens": {"kind": "lognormal", "mean": 800, "cv": 1, "max": 4000}, "tools": [{"name": "read", "mean_s": 0.2, "cv": 2}, {"name": "build", "weight": 0.5, "mean_s": 20, "cv": 1}]});
    a["name"] = json!("a");
    let mut b = json!({"name": "b", "output_tokens": {"kind": "uniform", "min": 1, "max": 50}});
    let programs = |classes: serde_json::Value| inferscale::engine::run(&super::valid(&classed(classes))).programs;
    let mixed = programs(json!([a.clone(), b.clone()]));
    let alone_a = programs(json!([a, {"name": "b", "weight": 0}]));
    b["weight"] = json!(1);
    let alone_b = programs(json!([{"name": "a", "weight": 0}, b]));
    let (mut seen_a, mut seen_b) = (0, 0);
    for (i, p) in mixed.iter().enumerate() {
        let alone = if p.class == 0 { &alone_a } else { &alone_b };
        if let Some(q) = alone.get(i) {
            assert_eq!(
                (&p.new_tokens, &p.output_tokens, &p.tools, &p.gaps_ns),
                (&q.new_tokens, &q.output_tokens, &q.tools, &q.gaps_ns),
                "session {i}"
            );
            *(if p.class == 0 { &mut seen_a } else { &mut seen_b }) += 1;
        }
    }
    assert!(seen_a > 50 && seen_b > 50, "{seen_a} and {seen_b} sessions compared");
}

/// Objectives by class: a class's own objective replaces the sessions' one field by field; the section's
/// attainment is over every judged session, each against its class's objective.
#[test]
fn each_class_is_judged_by_its_own_objective() {
    let mut s = classed(json!([
        {"name": "strict", "slo": {"turn_ttft_ms": 0.001}},
        {"name": "lenient", "slo": {"turn_ttft_ms": 1e6}},
        {"name": "inherits"}
    ]));
    s.workload.sessions.as_mut().unwrap().slo = SessionSloSpec { turn_ttft_ms: None, session_s: Some(1e6) };
    let r = simulate(&super::valid(&s));
    let x = r.sessions.as_ref().unwrap();
    let att: Vec<Option<f64>> = x.classes.iter().map(|c| c.slo_attainment).collect();
    assert_eq!(att, [Some(0.0), Some(1.0), Some(1.0)]);
    let judged = x.classes.iter().map(|c| c.sessions).sum::<u64>() as f64;
    let want = (x.classes[1].sessions + x.classes[2].sessions) as f64 / judged;
    assert!((x.slo_attainment.unwrap() - want).abs() < 1e-12, "{:?} vs {want}", x.slo_attainment);
    // A class without any objective is not judged, nor counted in the section's share.
    let r =
        simulate(&super::valid(&classed(json!([{"name": "judged", "slo": {"turn_ttft_ms": 1e6}}, {"name": "free"}]))));
    let x = r.sessions.as_ref().unwrap();
    assert_eq!(
        (x.classes[0].slo_attainment, x.classes[1].slo_attainment, x.slo_attainment),
        (Some(1.0), None, Some(1.0))
    );
}

/// A class's `request_class` makes its turns that request class: the priority scheduler serves them first,
/// and the report's request classes count them.
#[test]
fn a_class_s_turns_are_its_request_class() {
    let mut s = classed(json!([
        {"name": "interactive", "request_class": "urgent"},
        {"name": "background", "request_class": "batch"}
    ]));
    s.workload.classes = vec![
        ClassSpec { name: "urgent".into(), priority: 0, ..ClassSpec::default() },
        ClassSpec { name: "batch".into(), priority: 5, ..ClassSpec::default() },
    ];
    s.workload.arrival = ArrivalSpec::Poisson { rate_rps: 40.0 };
    s.scheduler = serde_json::from_value(json!({"kind": "priority"})).unwrap();
    let r = simulate(&super::valid(&s));
    let x = r.sessions.as_ref().unwrap();
    let by_name = |n: &str| r.classes.iter().find(|c| c.name == n).unwrap();
    assert_eq!(by_name("urgent").requests, x.classes[0].turns);
    assert_eq!(by_name("batch").requests, x.classes[1].turns);
    assert!(
        by_name("urgent").ttft_s.p95 < by_name("batch").ttft_s.p95,
        "priority serves the interactive turns first: {} vs {}",
        by_name("urgent").ttft_s.p95,
        by_name("batch").ttft_s.p95
    );
}

/// What session classes refuse, each at its field.
#[test]
fn session_classes_refuse_bad_input_at_their_field() {
    let paths = |s: &Spec| {
        inferscale::scenario::validate(s)
            .map(|_| vec![])
            .unwrap_or_else(|e| e.errors.into_iter().map(|f| f.path).collect::<Vec<_>>())
    };
    let p = |i: usize, f: &str| format!("workload.sessions.classes[{i}].{f}");
    assert_eq!(paths(&classed(json!([{"name": ""}]))), [p(0, "name")]);
    assert_eq!(paths(&classed(json!([{"name": "a"}, {"name": "a"}]))), [p(1, "name")]);
    assert_eq!(
        paths(&classed(json!([{"name": "a", "weight": 0}, {"name": "b", "weight": 0}]))),
        ["workload.sessions.classes"]
    );
    assert_eq!(paths(&classed(json!([{"name": "a", "weight": -1}, {"name": "b", "weight": 2}]))), [p(0, "weight")]);
    assert_eq!(paths(&classed(json!([{"name": "a", "weight": 1e308}]))), [p(0, "weight")]);
    assert_eq!(
        paths(&classed(
            json!([{"name": "a", "tools": [{"name": "t", "weight": -1, "mean_s": 1}, {"name": "u", "weight": 2, "mean_s": 1}]}])
        )),
        [p(0, "tools[0].weight")]
    );
    assert_eq!(
        paths(&classed(json!([{"name": "a", "turns": {"kind": "fixed", "tokens": 20000}}]))),
        [p(0, "turns.tokens")]
    );
    assert_eq!(
        paths(&classed(json!([{"name": "a", "turns": {"kind": "fixed", "tokens": 0}}]))),
        [p(0, "turns.tokens")]
    );
    assert_eq!(
        paths(&classed(json!([{"name": "a", "tools": [{"name": "t", "mean_s": -1}]}]))),
        [p(0, "tools[0].mean_s")]
    );
    assert_eq!(paths(&classed(json!([{"name": "a", "slo": {"session_s": 0}}]))), [p(0, "slo.session_s")]);
    assert_eq!(paths(&classed(json!([{"name": "a", "request_class": "nope"}]))), [p(0, "request_class")]);
    // A length neither the class nor the sessions give is the class's to give.
    let mut s = classed(json!([{"name": "a", "new_tokens": {"kind": "fixed", "tokens": 5}}, {"name": "b"}]));
    s.workload.sessions.as_mut().unwrap().new_tokens = None;
    assert_eq!(paths(&s), [p(1, "new_tokens")]);
    // A first prompt past the KV of one worker, in one class.
    assert_eq!(
        paths(&classed(
            json!([{"name": "a"}, {"name": "huge", "first_tokens": {"kind": "fixed", "tokens": 9_000_000}}])
        )),
        ["workload.sessions.classes[1]"]
    );
    let too_many: Vec<serde_json::Value> = (0..65).map(|i| json!({"name": format!("c{i}")})).collect();
    let mut v = serde_json::to_value(classed(json!([]))).unwrap();
    v["workload"]["sessions"]["classes"] = json!(too_many);
    assert!(serde_json::from_value::<Spec>(v).unwrap_err().to_string().contains("at most 64"));
    let text = std::fs::read_to_string(super::root().join("tests/data/sessions/inference-lab.jsonl")).unwrap();
    let mut t = classed(json!([{"name": "a"}]));
    let x = t.workload.sessions.as_mut().unwrap();
    (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, vec![]);
    x.trace = Some(SessionTraceSpec { path: None, data: Some(text.into()), format: SessionTraceFormat::Auto });
    assert_eq!(paths(&t), ["workload.sessions.classes"]);
}
