//! The findings report: docs/results.md is `inferscale report`'s output byte for byte; a prediction left
//! unanswered, or an answer without a prediction, refuses to render, naming it; every figure the JSON holds
//! is shown in the text as the JSON shows it; verdicts follow the interval.

use inferscale::findings::{self, Findings, Line, Test, Unit, Verdict};

/// docs/results.md and docs/results.json are the report as `inferscale report --out docs/results.md` (and
/// `--format json --out docs/results.json`) write it now: a stale report is a failing test. (The lab's
/// Findings panel is held to these two files byte for byte: tests/e2e/findings.test.mjs.)
#[test]
fn docs_results_md_is_the_report_byte_for_byte() {
    let report = findings::report(findings::Config::default());
    // Every section of the report but the bookkeeping and the trust sections names its scenario.
    for s in &report.sections {
        assert_eq!(s.scenario.is_some(), !["little", "trust", "diagnosis"].contains(&s.id.as_str()), "{}", s.id);
        if let Some(x) = &s.scenario {
            assert!(super::root().join(&x.file).is_file(), "{}", x.file);
        }
    }
    let md = report.markdown().unwrap();
    let committed = std::fs::read_to_string(super::root().join("docs/results.md")).unwrap();
    assert!(
        committed == md,
        "docs/results.md is stale: run `cargo run --release -- report --out docs/results.md`\n--- now ---\n{md}"
    );
    let json_text = report.json().unwrap();
    let committed = std::fs::read_to_string(super::root().join("docs/results.json")).unwrap();
    assert!(
        committed == json_text,
        "docs/results.json is stale: run `cargo run --release -- report --format json --out docs/results.json`"
    );
    // Every figure in the JSON is in the text exactly as the JSON shows it, and its value reads back.
    let json: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    let figures = json["figures"].as_array().unwrap();
    assert!(figures.len() >= 20, "{} figures", figures.len());
    for f in figures {
        let shown = f["shown"].as_str().unwrap();
        assert!(md.contains(shown), "figure {} ({shown}) is not in the text", f["id"]);
        assert!(f["value"].is_number(), "{f}");
    }
    // Each verdict is in the text beside its claim, and each claim states before its run what decides it (a
    // prediction) or why it is not counted (an audit).
    let claims = json["predictions"].as_array().unwrap();
    for p in claims {
        let id = p["id"].as_str().unwrap();
        let heading = match p["kind"].as_str() {
            Some("prediction") => format!("**Registered prediction** (`{id}`)"),
            Some("audit") => format!("**Audit** (`{id}`)"),
            k => panic!("{id}: kind {k:?}"),
        };
        assert!(md.contains(&heading), "{id}");
        assert!(p["verdict"].is_string(), "{p}");
        assert!(p["tolerance"].as_str().is_some_and(|t| t.len() > 20), "{id}: no tolerance stated: {p}");
    }
    // The tally counts the predictions and only them; the identity, the claim whose answer was known and the
    // halves whose knob cannot act are audits, listed apart.
    let kind_of = |id: &str| claims.iter().find(|p| p["id"] == id).map(|p| p["kind"].as_str().unwrap().to_string());
    for audit in ["little", "trust", "drr.throughput", "oversub.batch", "tail.tokens"] {
        assert_eq!(kind_of(audit).as_deref(), Some("audit"), "{audit}");
    }
    // Experiments 1–6 predict the seed's own figures, each within the report's one band, and their verdicts
    // are their tests' (rendering refuses any other).
    let seeds: Vec<(&str, f64)> = (claims.iter())
        .flat_map(|p| p["tests"].as_array().into_iter().flatten().map(move |t| (p["id"].as_str().unwrap(), t)))
        .filter_map(|(id, t)| Some((id, t["seed"].as_f64()?)))
        .collect();
    for (id, x) in [
        ("textbook", 0.27),
        ("tail", 42.0),
        ("channels", 0.158),
        ("drr", 2.7),
        ("fleet", 0.33),
        ("fleet", 0.0),
        ("deadline", 0.25),
        ("deadline", 0.715),
    ] {
        assert!(seeds.contains(&(id, x)), "{id} predicts the seed's {x}: {seeds:?}");
    }
    // Every experiment with a counted claim is rerun over three setups or more: its robustness table's first
    // row is the experiment as run (the claim's own verdict), and its summary says a verdict depends on the
    // setup exactly when the setups disagree.
    for s in json["sections"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let counted: Vec<&serde_json::Value> =
            claims.iter().filter(|p| p["section"] == id && p["kind"] == "prediction").collect();
        if counted.is_empty() {
            assert!(s.get("robustness").is_none(), "{id}");
            continue;
        }
        let r = &s["robustness"];
        assert!(r["rows"].as_array().is_some_and(|rows| rows.len() >= 3), "{id}: {r}");
        assert!(md.contains(&format!("{}\n", r["summary"].as_str().unwrap())), "{id}");
        for (claim, pair) in counted.iter().zip(r["verdicts"].as_array().unwrap()) {
            assert_eq!(pair[0], claim["id"]);
            let vs = pair[1].as_array().unwrap();
            assert_eq!(vs[0], claim["verdict"], "{id}: the first row is the experiment as run");
            let flips = vs.iter().any(|v| *v != vs[0]);
            let says = r["summary"]
                .as_str()
                .unwrap()
                .contains(&format!("`{}` depends on the setup", pair[0].as_str().unwrap()));
            assert_eq!(says, flips, "{id}: {}", r["summary"]);
        }
    }
    let counted = claims.iter().filter(|p| p["kind"] == "prediction").count();
    assert!(counted >= 10, "{counted} predictions");
    let tally = &md[md.find("## Tally").unwrap()..];
    assert!(tally.contains(&format!("Registered predictions: {counted}.")), "{tally}");
    let audits = &tally[tally.find("Audits, reported and not counted:").expect("the audits, apart")..];
    assert!(audits.contains("`little` (") && audits.contains("`trust` ("), "{audits}");
    assert!(!tally[..tally.find("Audits, reported").unwrap()].contains("`little`"), "{tally}");
    // The tally says how many intervals the report shows and how many would miss by chance, counted from the
    // figures themselves: a figure every seed gave alike is deterministic, not an interval.
    let spans: Vec<(f64, f64)> = (figures.iter())
        .filter(|f| f.get("seeds").is_none())
        .filter_map(|f| Some((f["interval"][0].as_f64()?, f["interval"][1].as_f64()?)))
        .collect();
    let alike = spans.iter().filter(|(lo, hi)| lo == hi).count();
    let n = spans.len() - alike;
    assert!(n >= 20 && alike >= 1, "{n} intervals, {alike} alike");
    // Figures whose seeds split (one ≥ 10× another) are shown seed by seed, their median between the lowest and
    // the highest seed — experiment 10 at a tenth of its budget among them — and counted apart.
    let split: Vec<&serde_json::Value> = figures.iter().filter(|f| f.get("seeds").is_some()).collect();
    assert!(split.iter().any(|f| f["id"] == "retention.smallest_budget_excess"), "{split:?}");
    for f in &split {
        let seeds: Vec<f64> = f["seeds"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let (lo, hi) =
            (seeds.iter().copied().fold(f64::INFINITY, f64::min), seeds.iter().copied().fold(f64::MIN, f64::max));
        assert_eq!((f["interval"][0].as_f64(), f["interval"][1].as_f64()), (Some(lo), Some(hi)), "{f}");
        assert!(
            f["shown"].as_str().unwrap().contains(&format!("(median of {} seeds that split: ", seeds.len())),
            "{f}"
        );
    }
    let split_words = match split.len() {
        0 => String::new(),
        k => format!(" {k} figures whose seeds split too far for a mean"),
    };
    let said = format!(
        "This report shows {n} 95 % intervals, and {alike} figures that every seed gave alike (deterministic: no interval).{split_words}"
    );
    assert!(tally.contains(&said), "{tally}");
    let said = format!(
        "Each interval misses its true mean one time in twenty, so about {:.0} of them may miss by chance alone",
        n as f64 / 20.0
    );
    assert!(tally.contains(&said), "{tally}");
    assert!(json["multiplicity"].as_str().is_some_and(|m| m.contains(&said)));
    // The experiments whose conclusions set prefill against decode (experiment 15 names them) are rerun with
    // the cost model off by its held-out error.
    for id in ["textbook", "pd", "prefix", "retention", "formation"] {
        let s = json["sections"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap();
        let rows = s["robustness"]["rows"].as_array().unwrap();
        assert!(
            rows.iter().any(|r| r[0].as_str().unwrap().starts_with("the cost model off by its held-out error")),
            "{id}"
        );
    }
}

#[test]
fn an_unanswered_prediction_or_an_unpredicted_answer_refuses_to_render() {
    let mut f = Findings::new("t", String::new());
    f.expect("a", "x rises", "the interval of x's change above 0");
    f.expect("b", "y falls", "the interval of y's change below 0");
    f.found("a", "it rose".into(), Verdict::Held);
    let e = f.markdown().unwrap_err();
    assert_eq!(e, findings::FindingsError::Unanswered("b".into()));
    assert!(e.to_string().contains("`b`"), "{e}");
    assert!(f.json().is_err());
    f.found("b", "it fell".into(), Verdict::Held);
    assert!(f.markdown().is_ok());
    f.found("c", "z".into(), Verdict::Contradicted);
    let e = f.markdown().unwrap_err();
    assert_eq!(e, findings::FindingsError::NoPrediction("c".into()));
    assert!(e.to_string().contains("`c`"), "{e}");
    // A prediction registered without what decides it does not render either.
    let mut g = Findings::new("t", String::new());
    g.expect("d", "w rises", " ");
    g.found("d", "it rose".into(), Verdict::Held);
    assert_eq!(g.markdown().unwrap_err(), findings::FindingsError::NoTolerance("d".into()));
    assert!(g.json().is_err());
}

/// A claim stated as tests: its tolerance is their text, its verdict theirs (the seed's band by one rule), a
/// section's several claims are each named on their outcome and verdict, and a verdict other than the
/// tests' refuses to render.
#[test]
fn a_claim_on_tests_is_decided_by_them_and_a_seed_figure_by_one_band() {
    let mut f = Findings::new("t", String::new());
    f.expect_on("a", "x is the seed's 2×", vec![Test::seed("a.x", "x", 2.0, Unit::Times)]);
    let both = vec![Test::seed("a.y", "y", 0.30, Unit::Percent), Test::new("a.z", "z", Line::Above(0.0), Unit::Points)];
    f.expect_on("a.more", "y is the seed's 30 % and z positive", both);
    f.audit_on("a.nil", "w is nil", "it cannot move", vec![Test::seed("a.w", "w", 0.0, Unit::Points)]);
    let tolerance = |id: &str| f.predictions.iter().find(|p| p.id == id).unwrap().tolerance.clone();
    assert!(tolerance("a").contains("lies within 1.00× – 4.00× (the seed's 2.00×)"), "{}", tolerance("a"));
    assert!(tolerance("a.more").contains("within 20.0 % – 40.0 % (the seed's 30.0 %)"), "{}", tolerance("a.more"));
    assert!(tolerance("a.more").contains("lies wholly above 0.0 points"), "{}", tolerance("a.more"));
    assert_eq!(f.predictions.iter().find(|p| p.id == "a.nil").unwrap().tolerance, "it cannot move");
    f.mean_ci("a.x", &[3.0, 3.5, 3.2], Unit::Times);
    f.mean_ci("a.y", &[0.35, 0.45, 0.40], Unit::Percent);
    f.mean_ci("a.z", &[0.1, 0.2, 0.15], Unit::Points);
    f.figure("a.w", 0.02, Unit::Points);
    assert_eq!(f.decide("a"), Verdict::Held);
    assert_eq!(f.decide("a.more"), Verdict::Inconclusive, "y's interval reaches past 40 %");
    assert_eq!(f.decide("a.nil"), Verdict::Contradicted, "2 points is not nil");
    assert_eq!(Line::Within(1.0, 2.0).verdict(2.5, 3.0), Verdict::Contradicted);
    assert_eq!(Line::Within(1.0, 2.0).verdict(0.5, 1.5), Verdict::Inconclusive);
    for id in ["a", "a.more", "a.nil"] {
        let v = f.decide(id);
        f.found(id, format!("{id} found"), v);
    }
    f.section("a", "A", "?");
    // A section with a counted claim renders only with its robustness table, over three setups or more.
    assert_eq!(f.markdown().unwrap_err(), findings::FindingsError::NoRobustness("a".into()));
    let table = findings::Robustness { rows: vec![vec![]; 2], ..Default::default() };
    f.sections[0].robustness = Some(table.clone());
    assert_eq!(f.markdown().unwrap_err(), findings::FindingsError::NoRobustness("a".into()));
    f.sections[0].robustness = Some(findings::Robustness { rows: vec![vec![]; 3], ..table });
    let md = f.markdown().unwrap();
    assert!(
        md.contains("**Outcome** (`a.more`). a.more found") && md.contains("**Verdict (`a.nil`): contradicted.**"),
        "{md}"
    );
    f.found("a", "overruled".into(), Verdict::Contradicted);
    assert_eq!(f.markdown().unwrap_err(), findings::FindingsError::NotItsTests("a".into()));
}

#[test]
fn a_verdict_is_held_or_contradicted_only_when_the_interval_says_so() {
    assert_eq!(Verdict::of(1.1, 2.0, 1.0, true), Verdict::Held);
    assert_eq!(Verdict::of(0.2, 0.9, 1.0, true), Verdict::Contradicted);
    assert_eq!(Verdict::of(0.9, 1.1, 1.0, true), Verdict::Inconclusive);
    assert_eq!(Verdict::of(0.2, 0.9, 1.0, false), Verdict::Held);
    assert_eq!(Verdict::Held.and(Verdict::Inconclusive), Verdict::Inconclusive);
    assert_eq!(Verdict::Inconclusive.and(Verdict::Contradicted), Verdict::Contradicted);
    // A figure with an interval is shown with it; the same value on every seed says so.
    let mut f = Findings::new("t", String::new());
    let (shown, (m, lo, hi)) = f.mean_ci("x", &[1.0, 2.0, 3.0], Unit::Times);
    assert_eq!((m, shown.starts_with("2.00× (95 % CI ")), (2.0, true));
    assert!(lo < 1.0 && hi > 3.0, "t interval of three values: {lo} – {hi}");
    assert_eq!(f.mean_ci("y", &[5.0; 4], Unit::Rps).0, "5.00 req/s (the same on all 4 seeds)");
}

#[test]
fn an_interval_stays_where_its_figure_can_be() {
    let mut f = Findings::new("t", String::new());
    // Shares near 0: a t interval would reach below 0 %.
    let (shown, (_, lo, hi)) = f.mean_ci("share", &[0.0, 0.0, 0.03], Unit::Share);
    assert_eq!(lo, 0.0, "{shown}");
    assert!(hi > 0.03 && hi <= 1.0, "{shown}");
    assert!(f.mean_ci("full", &[1.0, 1.0, 0.97], Unit::Share).1.2 <= 1.0);
    // Times and counts cannot be negative; a gap in percent or points can.
    assert_eq!(f.mean_ci("t", &[0.01, 0.02, 0.09], Unit::Seconds).1.1, 0.0);
    // Latencies whose seeds split (one ≥ 10× another) get no t interval: each seed, the median, and the lowest
    // and highest seed as its interval (75 % for the median of 3 seeds).
    let (shown, (m, lo, hi)) = f.mean_ci("split", &[0.5, 30.0, 0.6], Unit::Seconds);
    assert_eq!((m, lo, hi), (0.6, 0.5, 30.0), "{shown}");
    assert_eq!(shown, "600 ms (median of 3 seeds that split: 500 ms, 30.0 s, 600 ms)");
    assert_eq!(f.figure_named("split").unwrap().seeds.as_deref(), Some(&[0.5, 30.0, 0.6][..]));
    assert!(f.mean_ci("gap", &[-0.5, 0.0, 0.1], Unit::Percent).1.1 < -0.5);
    assert!(f.mean_ci("pts", &[-0.5, 0.0, 0.1], Unit::Points).1.1 < -0.5);
}

#[test]
fn a_scenario_excerpt_holds_only_what_an_arm_changes() {
    let base = inferscale::scenario::parse(
        &std::fs::read_to_string(super::root().join("scenarios/peer-llama3-8b-h100.json")).unwrap(),
    )
    .unwrap();
    let mut arm = base.clone();
    arm.cluster.replicas = 2;
    arm.workload.classes[0].slo.e2e_ms = Some(15000.0);
    arm.admission = inferscale::spec::AdmissionSpec::RandomDrop { probability: 0.25 };
    let x = findings::Excerpt::of("f.json", &base, &[("a".into(), arm), ("same".into(), base.clone())]);
    assert_eq!(
        x.arms[0].1,
        serde_json::json!({
            "workload": { "classes": [{ "slo": { "e2e_ms": 15000.0 } }] },
            "cluster": { "replicas": 2 },
            // A variant of another kind is shown whole, not merged field by field with the old one.
            "admission": { "kind": "random_drop", "probability": 0.25 },
        })
    );
    assert_eq!(x.arms[1].1, serde_json::json!({}));
    // That every section names its scenario is checked on the published report (docs_results_md_is_the_report_
    // byte_for_byte): a second report, even a small one, costs four CPU-minutes.
}

#[test]
fn every_experiment_reruns_on_another_scenario_or_says_why_not() {
    let ids = findings::experiment_ids();
    assert_eq!(ids.len(), 15);
    let small = |base: Option<inferscale::scenario::Spec>, only: &str| findings::Config {
        repetitions: 2,
        requests: 300,
        base,
        only: Some(only.into()),
        setup: None,
        budget: None,
    };
    let e = findings::report_with(&small(None, "nope"), &mut |_, _| {}).unwrap_err();
    assert!(e[0].contains("no experiment `nope`") && e[0].contains("textbook"), "{e:?}");
    for file in ["default.json", "agent-sessions.json", "bursty-multitenant.json", "pd-llama3-8b-h100.json"] {
        let text = std::fs::read_to_string(super::root().join("scenarios").join(file)).unwrap();
        let spec = inferscale::scenario::parse(&text).unwrap();
        for id in &ids {
            let mut calls = 0;
            match findings::report_with(&small(Some(spec.clone()), id), &mut |_, _| calls += 1) {
                Ok(_) if (file, *id) == ("default.json", "prefix") => panic!("prefix reuse answered without prefixes"),
                Ok(f) => {
                    assert_eq!(f.sections.len(), 1, "{file} {id}");
                    assert!(calls >= 2, "{file} {id}: progress told {calls} times");
                    assert_eq!(f.sections[0].id, *id);
                    let md = f.markdown().unwrap();
                    if !["little", "trust", "diagnosis"].contains(id) {
                        assert!(md.contains("the Serving Lab's scenario"), "{file} {id}: the excerpt names the base");
                    }
                }
                Err(why) => {
                    assert!(
                        !why.is_empty() && why.iter().all(|w| w.contains(&format!("experiment `{id}`: "))),
                        "{file} {id}: {why:?}"
                    );
                    // A scenario without what an experiment is about gets no verdict: it says so.
                    if (file, *id) == ("default.json", "prefix") {
                        assert!(why[0].contains("does not apply: needs shared prompt prefixes"), "{why:?}");
                    }
                    // Each refusal is a cause: none comes of a rate derived from a run already refused.
                    assert!(!why.iter().any(|w| w.contains("NaN")), "{file} {id}: {why:?}");
                    println!("{file} {id}: refused: {}", why[0]);
                }
            }
        }
    }
    // A scenario that does not validate is refused before anything runs.
    let mut bad =
        inferscale::scenario::parse(&std::fs::read_to_string(super::root().join("scenarios/default.json")).unwrap())
            .unwrap();
    bad.engine.max_num_seqs = 0;
    let e = findings::report_with(&small(Some(bad), "tail"), &mut |_, _| {}).unwrap_err();
    assert!(e[0].starts_with("the scenario: ") && e[0].contains("max_num_seqs"), "{e:?}");
}

/// Experiment 15 reads the public series from files embedded in the core: every file the manifest names is
/// embedded (a series added to the manifest alone once gave an empty table of "inf %"), and one that is not is
/// named.
#[test]
fn the_trust_experiment_embeds_every_series_the_manifest_names() {
    assert_eq!(inferscale::findings::missing_files().unwrap(), Vec::<String>::new());
}
