//! Workflows: role sequences learned only from what arrived, the transition estimates by hand, the
//! clairvoyant bounds, prefetches that only help what they reach, the sample trace, and bad fields at their
//! path.

use inferscale::scenario::*;
use serde_json::{Value, json};

fn spec_of(v: Value) -> Spec {
    serde_json::from_value(v).unwrap()
}

/// The shipped workflow scenario as JSON with `edits` (pointer, value) applied.
fn workflows(edits: &[(&str, Value)]) -> Spec {
    let mut v = serde_json::to_value(super::shipped("agent-workflows.json")).unwrap();
    for (p, x) in edits {
        let (parent, key) = p.rsplit_once('/').unwrap();
        let o = v.pointer_mut(parent).unwrap_or_else(|| panic!("{p}")).as_object_mut().unwrap();
        o.insert(key.into(), x.clone());
    }
    spec_of(v)
}

fn predictor(kind: Value) -> (&'static str, Value) {
    ("/workload/sessions/workflow/predictor", kind)
}

fn summary(s: &Spec) -> (inferscale::metrics::WorkflowSummary, inferscale::Report) {
    let r = inferscale::simulate(&super::valid(s));
    assert!(r.audits.ok, "{:?}", r.audits);
    (r.sessions.as_ref().unwrap().workflow.clone().expect("a workflow section"), r)
}

/// A traced workflow of `roles` (one letter each: a planner, c coder), its steps a second apart.
fn traced(roles: &str, decay: f64) -> Spec {
    let turns: Vec<Value> = roles
        .chars()
        .map(|c| json!({"role": if c == 'p' { "planner" } else { "coder" }, "new_tokens": 100, "output_tokens": 5, "tool": "t", "tool_s": 1.0}))
        .collect();
    let line = json!({"id": "w", "turns": turns}).to_string();
    workflows(&[
        ("/workload/requests", json!(1)),
        (
            "/workload/sessions",
            json!({
                "trace": {"data": line},
                "workflow": {
                    "roles": ["planner", "coder"],
                    "prefix_tokens": 512,
                    "transitions": {"planner": {"coder": 1}, "coder": {"planner": 1}},
                    "predictor": {"kind": "decayed", "decay": decay},
                    "prefetch": {"kind": "threshold", "threshold": 0.5, "horizon": 1}
                }
            }),
        ),
    ])
}

/// The transitions seen in order p→c, c→p, p→p, p→c, c→p: with decay ½, the planner's row is (0.5, 1.25)
/// — (0,1), then (1, 0.5), then (0.5, 1.25) — so 2/7 planner, 5/7 coder; the coder's always went to the
/// planner. Top-1: no forecast for the first transition out of each role (2 misses), then p→p forecast
/// coder from (0, 1) (miss), p→c forecast planner from (1, 0.5) (miss), c→p hit: 1 of 5.
#[test]
fn the_learned_transitions_match_a_hand_computation() {
    let (w, _) = summary(&traced("pcppcp", 0.5));
    assert_eq!(w.transitions, 5);
    assert_eq!(w.learned[0], vec![(0.5f64 / 1.75 * 1e6).round() / 1e6, (1.25f64 / 1.75 * 1e6).round() / 1e6]);
    assert_eq!(w.learned[1], vec![1.0, 0.0]);
    assert_eq!(w.top1, Some(0.2));
    // Counts (decay 1): planner row (1 p, 2 c).
    let (c, _) = summary(&traced("pcppcp", 1.0));
    assert_eq!(c.learned[0], vec![(1e6f64 / 3.0).round() / 1e6, (2e6f64 / 3.0).round() / 1e6]);
}

/// The shipped scenario's audits hold and its figures are consistent: coverage ≤ 1, the transitions and
/// steps add up, the landed prefetches are used, unused or still waiting.
#[test]
fn a_workflow_run_adds_up() {
    let (w, r) = summary(&super::shipped("agent-workflows.json"));
    let s = r.sessions.as_ref().unwrap();
    assert_eq!(w.steps, s.turns);
    assert_eq!(w.transitions, s.turns - s.sessions);
    assert!(w.post_shift_transitions > 0 && w.post_shift_transitions < w.transitions);
    assert!(w.prefetches > 0 && w.landed + w.redundant <= w.prefetches);
    assert!(w.used + w.unused <= w.landed, "{w:?}");
    assert!(w.budget_evictions > 0, "the budget binds: {w:?}");
    assert!(w.prefix_hit_rate > 0.0 && w.prefix_hit_rate < 1.0);
    assert!(w.mean_prefix_hbm_gb > 0.0 && w.mean_prefix_hbm_gb <= w.peak_prefix_hbm_gb);
    assert_eq!(w.saved_prefill_tokens, r.prefix.as_ref().unwrap().prefill_tokens_saved);
}

/// A clairvoyant predictor knows the coming roles: nothing learned beats its top-1 (1), its precision and
/// coverage at horizon 1 (1), or — planning as far as K — its recall@K (1); and certain forecasts that come
/// true are perfectly calibrated (ECE 0).
#[test]
fn no_learned_predictor_beats_the_clairvoyant_bounds() {
    let k = ("/workload/sessions/workflow/recall_k", json!(2));
    let far = ("/workload/sessions/workflow/prefetch", json!({"kind": "threshold", "threshold": 0.2, "horizon": 2}));
    let (c1, _) = summary(&workflows(&[predictor(json!({"kind": "clairvoyant"}))]));
    let (c2, _) = summary(&workflows(&[predictor(json!({"kind": "clairvoyant"})), k.clone(), far.clone()]));
    assert_eq!((c1.top1, c1.precision, c1.coverage, c1.ece, c1.wrong), (Some(1.0), Some(1.0), Some(1.0), Some(0.0), 0));
    assert_eq!(c2.recall_at_k, Some(1.0));
    for p in [json!({"kind": "counts"}), json!({"kind": "decayed", "decay": 0.9})] {
        let (l1, _) = summary(&workflows(&[predictor(p.clone())]));
        let (l2, _) = summary(&workflows(&[predictor(p.clone()), k.clone(), far.clone()]));
        assert!(l1.top1 < c1.top1 && l1.precision < c1.precision && l1.coverage <= c1.coverage, "{p}: {l1:?}");
        assert!(l2.recall_at_k <= c2.recall_at_k, "{p}");
        assert!(l1.ece.unwrap() > 0.0);
    }
}

/// Decayed counts forget the old chain: after the shift their top-1 is above cumulative counts'.
#[test]
fn decayed_counts_follow_the_shift_better_than_cumulative_counts() {
    let (counts, _) = summary(&workflows(&[predictor(json!({"kind": "counts"}))]));
    let (decayed, _) = summary(&workflows(&[predictor(json!({"kind": "decayed", "decay": 0.9}))]));
    assert!(decayed.post_shift_top1.unwrap() > counts.post_shift_top1.unwrap() + 0.03, "{decayed:?} {counts:?}");
}

/// The sample trace with its roles replayed, and the same trace with every step that arrives after t given
/// another role and a tool call 10× as long: the learned policy's decisions up to t are identical (it learns
/// only from steps that arrived), the clairvoyant's are not (it reads the future), and the runs differ after t.
#[test]
fn a_learned_policy_decides_the_same_until_the_future_changes() {
    let text = std::fs::read_to_string(super::root().join("scenarios/traces/sample-workflows.jsonl")).unwrap();
    let on = |text: &str, p: Value| {
        let mut s = workflows(&[predictor(p), ("/workload/arrival", json!({"kind": "poisson", "rate_rps": 1}))]);
        let x = s.workload.sessions.as_mut().unwrap();
        (x.turns, x.first_tokens, x.new_tokens, x.output_tokens, x.tools) = (None, None, None, None, Vec::new());
        x.slo = Default::default();
        x.trace = Some(SessionTraceSpec { path: None, data: Some(text.into()), format: Default::default() });
        x.workflow.as_mut().unwrap().shift = None;
        inferscale::engine::run(&super::valid(&s))
    };
    let learned = json!({"kind": "decayed", "decay": 0.9});
    let base = on(&text, learned.clone());
    let t_ns = 120_000_000_000;
    // Every step arriving after t, by (session, turn), in the baseline run.
    let late: std::collections::BTreeSet<(u32, u16)> =
        base.requests.iter().filter(|r| r.arrival_ns > t_ns).map(|r| (r.session, r.turn)).collect();
    let altered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(s, line)| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            for (k, turn) in v["turns"].as_array_mut().unwrap().iter_mut().enumerate() {
                if late.contains(&(s as u32, k as u16 + 1)) {
                    let role = turn["role"].as_str().unwrap();
                    turn["role"] = json!(if role == "reviewer" { "planner" } else { "reviewer" });
                }
                if late.contains(&(s as u32, k as u16 + 2)) {
                    turn["tool_s"] = json!(turn["tool_s"].as_f64().unwrap_or(0.0) * 10.0);
                }
            }
            v.to_string()
        })
        .collect();
    let altered = altered.join("\n");
    assert!(late.len() > 50, "{} steps after t", late.len());
    let before = |r: &inferscale::metrics::Recorder| -> Vec<_> {
        r.wf.decisions.iter().filter(|d| d.at_ns <= t_ns).copied().collect()
    };
    let after = |r: &inferscale::metrics::Recorder| -> Vec<_> {
        r.wf.decisions.iter().filter(|d| d.at_ns > t_ns).copied().collect()
    };
    let changed = on(&altered, learned);
    assert!(before(&base).len() > 50);
    assert_eq!(before(&base), before(&changed), "a learned decision before t saw the future");
    assert_ne!(after(&base), after(&changed), "the alteration changed nothing after t");
    let seer = json!({"kind": "clairvoyant"});
    assert_ne!(before(&on(&text, seer.clone())), before(&on(&altered, seer)), "the clairvoyant's teeth");
}

/// Bad workflow fields are refused at their path, with the allowed range or the reason.
#[test]
fn bad_workflow_fields_are_refused_at_their_field() {
    let at = "workload.sessions.workflow";
    let cases: Vec<(&str, Value, String, &str)> = vec![
        ("/transitions/coder/wizard", json!(1), format!("{at}.transitions.coder.wizard"), "no role is named"),
        ("/transitions/coder/tester", json!(-1), format!("{at}.transitions.coder.tester"), "from 0 to 1e9"),
        ("/transitions/planner", json!({"coder": 0}), format!("{at}.transitions.planner"), "must not all be 0"),
        ("/first", json!("boss"), format!("{at}.first"), "no role is named"),
        ("/roles", json!(["a", "a"]), format!("{at}.roles[1]"), "taken by an earlier role"),
        ("/roles", json!([]), format!("{at}.roles"), "at least one role"),
        ("/prefix_tokens", json!(0), format!("{at}.prefix_tokens"), "1"),
        ("/prefix_tokens", json!(8), format!("{at}.prefix_tokens"), "at least a KV block"),
        ("/prefix_budget", json!(-0.5), format!("{at}.prefix_budget"), "0"),
        ("/prefix_budget", json!(1e308), format!("{at}.prefix_budget"), "1000"),
        ("/recall_k", json!(0), format!("{at}.recall_k"), "1"),
        ("/predictor", json!({"kind": "decayed", "decay": 0}), format!("{at}.predictor.decay"), "0"),
        (
            "/prefetch",
            json!({"kind": "threshold", "threshold": 2, "horizon": 1}),
            format!("{at}.prefetch.threshold"),
            "1",
        ),
        ("/prefetch", json!({"kind": "utility", "horizon": 0}), format!("{at}.prefetch.horizon"), "16"),
        ("/shift/at_s", json!(1e300), format!("{at}.shift.at_s"), "10000000"),
        (
            "/shift/transitions/nobody",
            json!({"coder": 1}),
            format!("{at}.shift.transitions.nobody"),
            "no role is named",
        ),
    ];
    for (p, x, path, words) in cases {
        let s = workflows(&[(&format!("/workload/sessions/workflow{p}"), x.clone())]);
        let e = inferscale::scenario::validate(&s).expect_err(&format!("{p} = {x} accepted"));
        assert!(e.errors.iter().any(|f| f.path == path && f.message.contains(words)), "{p} = {x}: {e}");
        // Said once, at the field: a row the shift inherits is not refused again at a path the file lacks.
        let given = s.workload.sessions.as_ref().unwrap().workflow.as_ref().unwrap().shift.as_ref().unwrap();
        let shifted = format!("{at}.shift.transitions.");
        for f in e.errors.iter().filter(|f| f.path.starts_with(&shifted)) {
            let from = f.path[shifted.len()..].split('.').next().unwrap();
            assert!(given.transitions.contains_key(from), "{p} = {x}: {} is not in the file", f.path);
        }
    }
    let cross: Vec<(&str, Value, &str, &str)> = vec![
        ("/engine/host_kv", Value::Null, "workload.sessions.workflow.predictor", "engine.host_kv"),
        ("/workload/sessions/retention", json!({"kind": "retain"}), "workload.sessions.retention", "stateless"),
        ("/prefix", json!({"prefix_tokens": 100, "reuse_fraction": 1}), "prefix", "role prefixes"),
    ];
    for (p, x, path, words) in cross {
        let e = inferscale::scenario::validate(&workflows(&[(p, x)])).expect_err(p);
        assert!(e.errors.iter().any(|f| f.path == path && f.message.contains(words)), "{p}: {e}");
    }
}

/// A workflow trace's roles must be the workflow's, on every turn; roles without a workflow are refused.
#[test]
fn a_workflow_trace_names_a_role_of_the_workflow_on_every_turn() {
    let trace = |line: Value| {
        let mut s = traced("pc", 0.5);
        s.workload.sessions.as_mut().unwrap().trace.as_mut().unwrap().data = Some(line.to_string().into());
        inferscale::scenario::validate(&s)
    };
    let t = |role: Option<&str>| match role {
        Some(r) => json!({"role": r, "new_tokens": 10, "output_tokens": 2}),
        None => json!({"new_tokens": 10, "output_tokens": 2}),
    };
    let e = trace(json!({"turns": [t(Some("planner")), t(Some("boss"))]})).unwrap_err();
    assert!(e.to_string().contains("role \"boss\""), "{e}");
    let e = trace(json!({"turns": [t(Some("planner")), t(None)]})).unwrap_err();
    assert!(e.to_string().contains("`role` on every turn"), "{e}");
    let e = trace(json!({"turns": [t(None), t(None)]})).unwrap_err();
    assert!(e.to_string().contains("names the role of every turn"), "{e}");
    let mut s = traced("pc", 0.5);
    s.workload.sessions.as_mut().unwrap().workflow = None;
    let e = inferscale::scenario::validate(&s).unwrap_err();
    assert!(e.to_string().contains("give `workflow`"), "{e}");
}

fn study(name: &str, spec: &Spec, options: Value, threads: usize) -> inferscale::study::StudyReport {
    let mut st = inferscale::study::build(name, spec, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    inferscale::study::run_native(st.as_mut(), threads, &mut |_, _| true).unwrap()
}

/// Row `row`'s number in column `label`.
fn num(r: &inferscale::study::StudyReport, row: usize, label: &str) -> f64 {
    let c = r.columns.iter().position(|c| c.label == label).unwrap_or_else(|| panic!("{label}"));
    match &r.rows[row][c] {
        inferscale::study::Cell::Num(x) => *x,
        other => panic!("{label}: {other:?}"),
    }
}

/// The execution-learning studies on the shipped workflows: byte-identical on 1 or 3 threads, every run on the
/// same workflows (the same steps), the columns in order, a sentence per row, and the findings: the
/// clairvoyant row is the bound on top-1 and coverage and not the best deployable row; decayed counts beat
/// cumulative after the shift; a higher threshold is more precise and covers less.
#[test]
fn execution_learning_studies_compare_learners_on_the_same_workflows() {
    let spec = super::shipped("agent-workflows.json");
    let labels = |r: &inferscale::study::StudyReport| r.columns.iter().map(|c| c.label.clone()).collect::<Vec<_>>();
    let contracts: [(&str, &[&str]); 6] = [
        (
            "exec-learning",
            &[
                "Policy",
                "p95 TTFT",
                "p95 workflow E2E",
                "Post-shift top-1",
                "Prefix hit",
                "Prefetch precision",
                "Coverage",
                "Mean HBM",
                "Wrong prefetch",
                "Saved prefill",
                "Diagnosis",
            ],
        ),
        (
            "prefetch-threshold",
            &[
                "Threshold",
                "p95 TTFT",
                "Post-shift top-1",
                "Precision",
                "Coverage",
                "Prefix hit",
                "Wrong prefetch",
                "Mean HBM",
            ],
        ),
        (
            "transition-decay",
            &[
                "Decay",
                "Pre-shift top-1",
                "Post-shift top-1",
                "p95 TTFT",
                "Prefix hit",
                "Precision",
                "Coverage",
                "Wrong prefetch",
            ],
        ),
        (
            "forecast",
            &[
                "Policy",
                "p95 TTFT",
                "Future-role recall@K",
                "Prefix hit",
                "Utilization",
                "Next-step precision",
                "Mean HBM",
                "Unused prefetch",
                "Saved prefill",
                "ECE",
                "Diagnosis",
            ],
        ),
        (
            "forecast-horizon",
            &[
                "Horizon",
                "p95 TTFT",
                "Future-role recall@K",
                "Prefix hit",
                "Utilization",
                "Unused prefetch",
                "Mean HBM",
                "Saved prefill",
            ],
        ),
        (
            "prefix-budget",
            &[
                "Budget",
                "Policy",
                "p95 TTFT",
                "Future-role recall@K",
                "Prefix hit",
                "Utilization",
                "Mean HBM",
                "Unused prefetch",
                "Pressure evictions",
            ],
        ),
    ];
    for (name, columns) in contracts {
        let one = study(name, &spec, json!({}), 1);
        assert_eq!(one.json(), study(name, &spec, json!({}), 3).json(), "{name}: 1 vs 3 threads");
        assert_eq!(labels(&one), columns.iter().map(|c| c.to_string()).collect::<Vec<_>>(), "{name}");
        assert!(!one.answer.is_empty() && !one.charts.is_empty() && one.best_row.is_some(), "{name}");
        // A run's summary crosses from a Web Worker as JSON: it reads back whole (a predictor-less run has
        // no learned rows, and once stalled the panel).
        for r in &one.runs {
            let back: inferscale::study::RunSummary = serde_json::from_str(&serde_json::to_string(r).unwrap())
                .unwrap_or_else(|e| panic!("{name}/{}: {e}", r.label));
            assert_eq!(&back, r, "{name}/{}", r.label);
        }
        let steps: Vec<u64> = one.runs.iter().map(|r| r.sessions.as_ref().unwrap().turns).collect();
        assert!(steps.iter().all(|s| *s == steps[0] && *s > 0), "{name}: the same workflows: {steps:?}");
    }
    let x = study("exec-learning", &spec, json!({}), 2);
    let last = x.rows.len() - 1;
    assert!(x.best_row.is_some_and(|b| b < last), "the bound is not a deployable answer");
    assert_eq!((num(&x, last, "Post-shift top-1"), num(&x, last, "Coverage")), (1.0, 1.0));
    assert!(num(&x, 2, "Post-shift top-1") > num(&x, 1, "Post-shift top-1"), "decayed after the shift");
    assert!(num(&x, last, "Prefix hit") > num(&x, 0, "Prefix hit"), "knowing the next role helps the cache");
    let t = study("prefetch-threshold", &spec, json!({"thresholds": [0.1, 0.7]}), 2);
    assert!(num(&t, 1, "Precision") > num(&t, 0, "Precision") && num(&t, 1, "Coverage") < num(&t, 0, "Coverage"));
}

/// The forecast studies' findings on the shipped workflows: the clairvoyant future set recalls every coming
/// role with ECE 0 and is no deployable answer; looking further recalls more and is less precise about the next
/// step; the utility plan uses more of what it lands than the threshold plan over as many steps; a larger
/// prefix budget holds more and hits more, under every plan.
#[test]
fn forecast_studies_trade_recall_for_wasted_prefetches() {
    let spec = super::shipped("agent-workflows.json");
    let f = study("forecast", &spec, json!({}), 2);
    let (one, multi, utility, future) = (1, 2, 3, 4);
    assert_eq!(f.rows.len(), 5);
    assert!(f.best_row.is_some_and(|b| b < future), "the bound is not a deployable answer");
    assert_eq!((num(&f, future, "Future-role recall@K"), num(&f, future, "ECE")), (1.0, 0.0));
    for learned in [one, multi, utility] {
        assert!(num(&f, learned, "Future-role recall@K") <= 1.0 && num(&f, learned, "ECE") > 0.0);
    }
    assert!(num(&f, multi, "Future-role recall@K") > num(&f, one, "Future-role recall@K"));
    assert!(num(&f, multi, "Next-step precision") < num(&f, one, "Next-step precision"));
    assert!(num(&f, utility, "Utilization") > 2.0 * num(&f, multi, "Utilization"));
    assert!(num(&f, utility, "Unused prefetch") < num(&f, multi, "Unused prefetch"));
    let h = study("forecast-horizon", &spec, json!({"horizons": [1, 8]}), 2);
    assert!(num(&h, 1, "Future-role recall@K") > num(&h, 0, "Future-role recall@K"));
    assert!(num(&h, 1, "Unused prefetch") > num(&h, 0, "Unused prefetch"));
    let b = study("prefix-budget", &spec, json!({}), 2);
    assert_eq!(b.rows.len(), 12, "three plans × four budgets");
    for plan in 0..3 {
        let (small, all) = (plan, 9 + plan);
        assert_eq!((num(&b, small, "Budget"), num(&b, all, "Budget")), (0.25, 1.0));
        assert!(num(&b, all, "Prefix hit") > num(&b, small, "Prefix hit"), "plan {plan}");
        assert!(num(&b, all, "Mean HBM") > num(&b, small, "Mean HBM"), "plan {plan}");
        assert!(num(&b, all, "Pressure evictions") < num(&b, small, "Pressure evictions"), "plan {plan}");
    }
}

/// The studies' options are refused at their path, and a scenario without a workflow at the study's.
#[test]
fn execution_learning_options_are_refused_at_their_field() {
    let spec = super::shipped("agent-workflows.json");
    let errs = |name: &str, spec: &Spec, options: Value| {
        inferscale::study::build(name, spec, &options)
            .err()
            .map(|e| e.errors.iter().map(|x| x.path.clone()).collect::<Vec<_>>())
    };
    let cases = [
        ("exec-learning", json!({"threshold": 2}), "study.exec-learning.threshold"),
        ("exec-learning", json!({"decay": 0}), "study.exec-learning.decay"),
        ("exec-learning", json!({"horizon": 17}), "study.exec-learning.horizon"),
        (
            "exec-learning",
            json!({"host_kv": {"capacity_gb": -1, "bandwidth_gbps": 25}}),
            "study.exec-learning.host_kv.capacity_gb",
        ),
        ("prefetch-threshold", json!({"thresholds": [0.5, 1e308]}), "study.prefetch-threshold.thresholds[1]"),
        ("prefetch-threshold", json!({"thresholds": []}), "study.prefetch-threshold.thresholds"),
        ("transition-decay", json!({"decays": [-0.5]}), "study.transition-decay.decays[0]"),
        ("transition-decay", json!({"threshold": -1}), "study.transition-decay.threshold"),
        // One step ahead is the one-step row: a multi-step policy looks further.
        ("forecast", json!({"horizon": 1}), "study.forecast.horizon"),
        ("forecast", json!({"decay": 1e-300, "threshold": 1e-300}), ""),
        ("forecast-horizon", json!({"horizons": [2, 0]}), "study.forecast-horizon.horizons[1]"),
        ("forecast-horizon", json!({"horizons": vec![1; 17]}), "study.forecast-horizon.horizons"),
        ("prefix-budget", json!({"budgets": [0.5, 1e308]}), "study.prefix-budget.budgets[1]"),
        ("prefix-budget", json!({"budgets": [-0.5]}), "study.prefix-budget.budgets[0]"),
        ("prefix-budget", json!({"horizon": 17}), "study.prefix-budget.horizon"),
    ];
    for (name, options, at) in cases {
        let want = (!at.is_empty()).then(|| vec![at.to_string()]);
        assert_eq!(errs(name, &spec, options.clone()), want, "{name} {options}");
    }
    let sessions = super::shipped("agent-sessions.json");
    for name in inferscale::study::agents::WORKFLOW_STUDIES {
        assert_eq!(errs(name, &sessions, json!({})), Some(vec![format!("study.{name}")]), "{name}");
    }
}

/// research-summary on the shipped workflows: byte-identical on 1 and 3 threads; the columns; every
/// policy on every seed and the oracle's grid; no regret below 0 (the oracle's is 0) and the oracle's median
/// no slower than any policy's; every seed won; ranks ascending from 1, an interval wholly below a row's
/// ranking it lower; bad options named at their field.
#[test]
fn the_research_summary_ranks_policies_over_matched_seeds() {
    let spec = super::shipped("agent-workflows.json");
    let options = json!({"seeds": 3, "grid_decays": [0.8], "grid_thresholds": [0.1, 0.5]});
    let r = study("research-summary", &spec, options.clone(), 1);
    assert_eq!(r.json(), study("research-summary", &spec, options, 3).json(), "1 vs 3 threads");
    let columns = [
        "Rank",
        "Policy",
        "Median TTFT",
        "95 % CI of mean",
        "TTFT wins",
        "Pareto stable",
        "Oracle regret",
        "Worst seed",
        "Unused prefetch",
        "Mean HBM",
    ];
    assert_eq!(r.columns.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(), columns);
    assert_eq!(r.runs.len(), 3 * (4 + 3), "three seeds × (four policies + a grid of three)");
    let seeds: Vec<u64> = r.runs.iter().step_by(7).map(|x| x.sessions.as_ref().unwrap().turns).collect();
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2], "each seed draws its own workflows: {seeds:?}");
    let (n, oracle) = (r.rows.len(), r.rows.len() - 1);
    assert_eq!(n, 5);
    assert_eq!(num(&r, oracle, "Oracle regret"), 0.0);
    let mut wins = 0.0;
    for row in 0..oracle {
        assert!(num(&r, row, "Oracle regret") >= 0.0, "row {row}");
        assert!(num(&r, row, "Median TTFT") >= num(&r, oracle, "Median TTFT"), "row {row}");
        assert!(num(&r, row, "Worst seed") >= num(&r, oracle, "Worst seed"), "row {row}");
        wins += num(&r, row, "TTFT wins");
    }
    assert!(wins >= 3.0, "every seed is won: {wins}");
    let ranks: Vec<f64> = (0..oracle).map(|row| num(&r, row, "Rank")).collect();
    assert!(ranks[0] == 1.0 && ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    assert!(r.answer.contains("ranks first") && r.best_row == Some(0));
    for (options, at) in [
        (json!({"seeds": 1}), "study.research-summary.seeds"),
        (json!({"seeds": 65}), "study.research-summary.seeds"),
        (json!({"horizon": 1}), "study.research-summary.horizon"),
        (json!({"grid_decays": [0.9, 0]}), "study.research-summary.grid_decays[1]"),
        (json!({"grid_thresholds": []}), "study.research-summary.grid_thresholds"),
        (json!({"grid_thresholds": [1e308]}), "study.research-summary.grid_thresholds[0]"),
    ] {
        let e = inferscale::study::build("research-summary", &spec, &options).err().map(|e| e.errors[0].path.clone());
        assert_eq!(e.as_deref(), Some(at), "{options}");
    }
}

/// The resource estimate counts what a workflow that predicts its roles records per step end — its role and
/// its prefetch decision — at the size `budget.rs`'s WORKFLOW_BYTES_PER_TURN assumes: a larger decision fails
/// here before it can outgrow the budget's estimate.
#[test]
fn the_memory_estimate_holds_a_prefetch_decisions_size() {
    assert_eq!(std::mem::size_of::<inferscale::metrics::Decision>(), 32, "budget.rs: WORKFLOW_BYTES_PER_TURN");
}
