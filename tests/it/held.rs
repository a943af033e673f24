//! Every input held (issue 22): each case was found by trying it — an input the validator accepted that
//! never ended, a figure out of its range, an estimate that did not follow what runs, a message at the wrong
//! field — and each is held here.

use inferscale::scenario;
use serde_json::{Value, json};

use super::cli::{bin, scenario as scenario_path};

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

/// A request inside its serving overhead (`engine.request_overhead_ms`) is in the system but not waiting for
/// the engine: 1e6 ms of overhead at a third of the device's time is not "does not keep up".
#[test]
fn requests_inside_their_serving_overhead_are_not_a_backlog() {
    let mut spec = super::shipped("default.json");
    spec.engine.request_overhead_ms = 1e6;
    let r = inferscale::simulate(&super::valid(&spec));
    let st = &r.steady;
    assert!(st.in_system_end > st.in_system_start + 1000, "they are in the system: {st:?}");
    assert_eq!((st.waiting_start, st.waiting_end), (0, 0), "none of them is waiting for the engine");
    assert!(!st.overloaded && st.warnings.iter().all(|w| !w.contains("overloaded")), "{:?}", st.warnings);
    assert!(r.engine.busy_fraction < 0.5);
    // Without the overhead the same requests queue as before: the rule counts queued requests only.
    let mut hot = super::shipped("default.json");
    hot.workload.arrival = scenario::ArrivalSpec::Poisson { rate_rps: 60.0 };
    let st = inferscale::simulate(&super::valid(&hot)).steady;
    assert!(st.overloaded && st.waiting_end > st.waiting_start, "{st:?}");
}

/// Tensor parallelism at its extremes (TP 64 over a 0.01 GB/s link at 0.1 % all-reduce efficiency, 1 s of
/// latency) made steps of about 2e6 s: the run's clock overflowed and the loop spun. No step may take over
/// 10^6 s; the refusal names the figure that takes most of it.
#[test]
fn a_step_longer_than_a_million_seconds_is_refused_at_the_figure_that_makes_it() {
    let mut v = json_of("chat-70b-h100-tp4.json");
    v["hardware"]["tp"] = json!(64);
    v["hardware"]["interconnect_gbps"] = json!(0.01);
    v["hardware"]["allreduce_bw_efficiency"] = json!(0.001);
    v["hardware"]["allreduce_latency_us"] = json!(1e6);
    v["hardware"]["allreduce_large_bw_efficiency"] = json!(0.001);
    v["hardware"]["allreduce_large_latency_us"] = json!(1e6);
    let why = refusal(&v);
    assert!(why.starts_with("hardware.interconnect_gbps: a step would take up to"), "{why}");
    assert!(why.contains("over the 1000000 s a step may take") && why.contains("all-reduce's bandwidth"), "{why}");
    // The latency alone: 2 × 80 layers × 1 s a step, long but runnable.
    v["hardware"]["interconnect_gbps"] = json!(900.0);
    v["hardware"]["allreduce_bw_efficiency"] = json!(0.5);
    v["hardware"]["allreduce_large_bw_efficiency"] = json!(0.5);
    v["workload"]["requests"] = json!(20);
    assert_eq!(refusal(&v), "accepted");
    // A linear cost model's slow step is the cost block's.
    let mut lin = json_of("mmc-central-queue.json");
    lin["cost"] = json!({"kind": "linear", "per_prefill_token_ms": 1.0});
    assert_eq!(refusal(&lin), "accepted", "a full budget of 4,194,304 prompt tokens at 1 ms each: 70 minutes");
    lin["cost"] = json!({"kind": "linear", "per_prefill_token_ms": 300.0});
    let why = refusal(&lin);
    assert!(why.starts_with("cost: a step would take up to 1.258e6 s") && why.contains("linear cost"), "{why}");
}

/// Nothing reaches the clock's end in a run validation accepts, yet the engine never overflows it: an event
/// past it never happens, the run ends with the requests it would have finished unfinished, and the report
/// says so. Here one request of 3 million tokens at 2,000 s a step needs 6e18 ns.
#[test]
fn the_clock_ends_a_run_that_would_pass_it_with_a_true_report() {
    let mut v = json_of("mmc-central-queue.json");
    v["cost"] = json!({"kind": "linear", "base_ms": 1e6, "per_seq_ms": 1e6});
    v["workload"] = json!({
        "arrival": {"kind": "burst"},
        "requests": 1,
        "classes": [{"name": "long", "prompt_tokens": {"kind": "fixed", "tokens": 10},
                     "output_tokens": {"kind": "fixed", "tokens": 3000000}}]
    });
    let sc = scenario::load(&v.to_string()).unwrap();
    let r = inferscale::simulate(&sc);
    assert_eq!((r.summary.completed, r.summary.unfinished), (0, 1));
    assert!(r.audits.ok, "{:?}", r.audits);
    assert!(
        r.steady.warnings.iter().any(|w| w.contains("the simulated clock reached its end")),
        "{:?}",
        r.steady.warnings
    );
    let end_s = r.summary.duration_s;
    assert!(end_s <= 4e9 && end_s > 3.9e9, "the run ends at the clock's end: {end_s}");
    assert!((0.0..=1.0).contains(&r.engine.busy_fraction));
}

/// A name a user typed (a session class's, a request class's, the scenario's) reaches a study's or a run's
/// Markdown as text: no raw HTML, no line break that starts a heading or a list.
#[test]
fn names_reach_markdown_as_text() {
    let evil = "<img src=x onerror=alert(1)>\n# injected | cell";
    let mut spec = super::shipped("agent-mix.json");
    spec.name = evil.into();
    spec.workload.sessions.as_mut().unwrap().classes[0].name = evil.into();
    spec.workload.classes[0].name = format!("{evil} 2");
    spec.workload.requests = Some(12);
    let check = |what: &str, md: &str| {
        assert!(!md.contains("<img"), "{what}: raw HTML in\n{md}");
        assert!(!md.lines().any(|l| l.starts_with("# injected")), "{what}: a newline started a heading");
        assert!(md.contains("&lt;img src=x onerror=alert(1)&gt; # injected"), "{what}: the name, as text");
    };
    let r = inferscale::simulate(&super::valid(&spec));
    check("run", &inferscale::export::markdown(&r));
    let mut st = inferscale::study::build("agent-sessions", &spec, &json!({})).unwrap();
    let rep = inferscale::study::run_native(st.as_mut(), 2, &mut |_, _| true).unwrap();
    check("agent-sessions study", &rep.markdown());
}

/// A session's first turn is held to the model's context as its later turns are (a turn past it ends the
/// session; a first turn past it would be a session that never starts), and a session trace's turn that does
/// not fit is named by its line; a key given twice on a trace line is refused, not read as the last.
#[test]
fn first_turns_fit_the_context_and_trace_refusals_name_their_line() {
    let mut v = json_of("agent-sessions.json");
    v["model"] = json!({"preset": "llama-3.1-8b", "context_tokens": 16384});
    let why = refusal(&v);
    assert!(why.starts_with("workload.sessions: a session's first turn of 16000 prompt + 2000 output tokens exceeds the model's context (model.context_tokens: 16384)"), "{why}");
    v["model"]["context_tokens"] = json!(18000);
    assert_eq!(refusal(&v), "accepted");
    let trace = |lines: &[&str]| {
        let mut v = json_of("agent-sessions.json");
        v["workload"]["sessions"]["trace"] = json!({"data": lines.join("\n")});
        for k in ["turns", "first_tokens", "new_tokens", "output_tokens", "tools"] {
            v["workload"]["sessions"].as_object_mut().unwrap().shift_remove(k);
        }
        refusal(&v)
    };
    let small = r#"{"turns": [{"new_tokens": 100, "output_tokens": 10}]}"#;
    let huge = r#"{"turns": [{"new_tokens": 10000000, "output_tokens": 10}]}"#;
    let long = r#"{"turns": [{"new_tokens": 200000, "output_tokens": 10}]}"#;
    assert_eq!(trace(&[small, small]), "accepted");
    let why = trace(&[small, "", small, huge]);
    assert!(why.starts_with("workload.sessions.trace (line 4): a request of 10000000 prompt"), "the KV: {why}");
    let why = trace(&[small, long, small]);
    assert!(
        why.starts_with("workload.sessions.trace (line 2): a session's first turn of 200000"),
        "the context: {why}"
    );
    let twice =
        r#"{"turns": [{"new_tokens": 100, "output_tokens": 10}], "turns": [{"new_tokens": 1, "output_tokens": 1}]}"#;
    let why = trace(&[small, twice]);
    assert!(why.contains("line 2: duplicate key `turns`"), "{why}");
    let inner = r#"{"turns": [{"new_tokens": 100, "output_tokens": 10, "new_tokens": 5}]}"#;
    assert!(trace(&[inner]).contains("line 1: duplicate key `new_tokens`"), "{}", trace(&[inner]));
}

/// A change to a scenario's JSON.
type Change = dyn Fn(&mut Value);

/// A whole number given as 2.5, 1e9 (a JSON float) or past 32 bits is refused at its field — inside a tagged
/// block too — with the field's own range; a session's turns are stated to their limit (10,000), not the
/// tokens' (10,000,000).
#[test]
fn whole_numbers_are_refused_at_their_field_with_its_range() {
    let at = |f: &Change| {
        let mut v = json_of("agent-sessions.json");
        f(&mut v);
        refusal(&v)
    };
    let cases: [(&Change, &str); 6] = [
        (
            &|v| v["engine"]["max_num_seqs"] = json!(2.5),
            "engine.max_num_seqs: must be a whole number from 1 to 65536 (got 2.5)",
        ),
        (
            &|v| v["engine"]["max_num_seqs"] = json!(4294967296u64),
            "engine.max_num_seqs: must be a whole number from 1 to 65536 (got 4294967296)",
        ),
        (
            &|v| v["workload"]["requests"] = json!(1e9),
            "workload.requests: must be a whole number from 1 to 50000000 (got 1000000000.0)",
        ),
        (
            &|v| v["workload"]["sessions"]["first_tokens"]["max"] = json!(2.5),
            "workload.sessions.first_tokens.max: must be a whole number from 1 to 10000000 (got 2.5)",
        ),
        (
            &|v| v["workload"]["sessions"]["first_tokens"]["max"] = json!(4294967296u64),
            "workload.sessions.first_tokens.max: must be a whole number from 1 to 10000000 (got 4294967296)",
        ),
        (
            &|v| v["workload"]["sessions"]["turns"] = json!({"kind": "fixed", "tokens": 20_000_000}),
            "workload.sessions.turns.tokens: must be an integer from 1 to 10000 (got 20000000)",
        ),
    ];
    for (change, want) in cases {
        assert_eq!(at(change), want);
    }
    // In a length's list (a `sequence`'s or `empirical`'s values) too: at the element, with the lengths' range.
    for kind in ["sequence", "empirical"] {
        for (bad, shown) in [(json!(-3), "-3"), (json!(2.5), "2.5"), (json!(4294967296u64), "4294967296")] {
            let mut v = json_of("default.json");
            v["workload"]["classes"][0]["prompt_tokens"] = json!({"kind": kind, "values": [100, bad, 7, bad]});
            let want = format!(
                "workload.classes[0].prompt_tokens.values[1]: must be a whole number from 1 to 10000000 (got {shown})"
            );
            assert_eq!(refusal(&v), want, "{kind}");
        }
    }
    assert_eq!(
        at(&|v| v["workload"]["sessions"]["turns"] = json!({"kind": "lognormal", "mean": 20000, "cv": 1, "max": 100})),
        "workload.sessions.turns.mean: must be between 1 and 10000 (got 20000)"
    );
}

/// Study options are named (a list was read by position: `[false, 7, 3]` ran), a key given twice is refused,
/// and a bad option is refused at the option — the scenario field it sets is said in the message.
#[test]
fn study_options_are_named_once_and_refused_at_the_option() {
    let spec = super::shipped("default.json");
    let refused = |name: &str, params: Value| match inferscale::study::build(name, &spec, &params) {
        Ok(_) => "accepted".to_string(),
        Err(e) => format!("{}: {}", e.errors[0].path, e.errors[0].message),
    };
    assert!(refused("capacity", json!([false, 7, 3])).starts_with("study.capacity: options are a JSON object"));
    assert!(refused("capacity", json!("x")).ends_with("got text"));
    assert_eq!(
        refused("explorer", json!({"candidates": [{"name": "a", "set": {"/hardware/tp": 3}}]})),
        "study.explorer.candidates[0].set: it sets hardware.tp: must be a power of two (1, 2, 4, 8, …) (got 3)"
    );
    assert_eq!(
        refused("sensitivity", json!({"treatment": {"/engine/max_num_seqs": 0}})),
        "study.sensitivity.treatment: it sets engine.max_num_seqs: must be an integer from 1 to 65536 (got 0)"
    );
    assert!(refused("pd", json!({"prefix_tokens": -1})).starts_with("study.pd.prefix_tokens: expected a whole number"));
    // Options in range for their type but not for what they set (issue 45, defect 27): said at the option.
    assert_eq!(
        refused("pd", json!({"prefix_tokens": 4_294_967_295u64})),
        "study.pd.prefix_tokens: must be an integer from 0 to 10000000 (got 4294967295)"
    );
    assert_eq!(
        refused("pd", json!({"reuse_fraction": 1e308})),
        "study.pd.reuse_fraction: must be between 0 and 1 (got 1e308)"
    );
    assert!(
        refused("pd", json!({"prefix_tokens": 9_000_000})).starts_with(
            "study.pd.prefix_tokens: it sets prefix.prefix_tokens: must be shorter than the longest prompt"
        ),
        "{}",
        refused("pd", json!({"prefix_tokens": 9_000_000}))
    );
    // A start rate so low its run passes the clock (defect 26): said at the start rate, not at workload.requests.
    assert!(
        refused("capacity", json!({"start_rps": 1e-300}))
            .starts_with("study.capacity.start_rps: it sets workload.requests: "),
        "{}",
        refused("capacity", json!({"start_rps": 1e-300}))
    );
    // A fleet layout with no fields of its own takes none (defect 20): serde let a unit variant's extra keys pass.
    assert_eq!(
        refused("fleet", json!({"layouts": [{"kind": "colocated", "tp": 1}]})),
        "study.fleet.layouts[0]: unknown field `tp`, there are no fields"
    );
    // The P/D study on sessions (defect 19): refused at the block the scenario has, not at cluster.disaggregation.
    let sessions = super::shipped("agent-sessions.json");
    let e = inferscale::study::build("pd", &sessions, &json!({})).err().expect("refused");
    assert_eq!(e.errors[0].path, "workload.sessions", "{e}");
    let out = bin()
        .args(["study", "capacity", &scenario_path("default.json"), "--params", r#"{"target": 0.9, "target": 0.5}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("duplicate key `target`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Estimates follow what will run: a closed loop bounded only by its duration counts the requests its clients
/// can issue in it (it was 50 million, 20 GB, at any duration), and a timed session trace counts its own
/// sessions' turns (2 sessions of 10,000 turns read as 10,480 GB).
#[test]
fn estimates_follow_what_will_run() {
    let closed = |duration_s: f64| {
        let mut spec = super::shipped("default.json");
        spec.workload.arrival = scenario::ArrivalSpec::ClosedLoop { clients: 8, think_s: 0.0 };
        spec.workload.requests = None;
        spec.workload.duration_s = Some(duration_s);
        super::valid(&spec)
    };
    let (short, long) = (closed(20.0).estimate(), closed(3600.0).estimate());
    assert!(short.memory_bytes < 0.2e9 && long.memory_bytes < 2e9, "{short:?} {long:?}");
    assert!(long.requests > 100.0 * short.requests, "the bound grows with the duration: {short:?} {long:?}");
    let ran = inferscale::simulate(&closed(20.0));
    assert!((ran.summary.requests as f64) <= short.requests, "{} ran, {short:?}", ran.summary.requests);

    let mut v = json_of("agent-sessions.json");
    let turns: Vec<Value> =
        (0..10_000).map(|_| json!({"new_tokens": 50, "output_tokens": 5, "tool": "t", "tool_s": 0.01})).collect();
    let lines =
        [json!({"id": "a", "arrival_s": 0, "turns": turns}), json!({"id": "b", "arrival_s": 1, "turns": turns})];
    let sessions = v["workload"]["sessions"].as_object_mut().unwrap();
    for k in ["turns", "first_tokens", "new_tokens", "output_tokens", "tools"] {
        sessions.shift_remove(k);
    }
    sessions.insert("trace".into(), json!({"data": lines.map(|l| l.to_string()).join("\n")}));
    v["model"] = json!({"preset": "llama-3.1-8b", "context_tokens": 20_000});
    let sc = scenario::load(&v.to_string()).unwrap();
    let est = sc.estimate();
    assert!(est.memory_bytes < 0.1e9, "{est:?}");
    // Each turn adds 55 tokens to the history: a session ends at the 20,000-token context after 363 turns.
    assert_eq!(est.requests, 2.0 * 363.0, "{est:?}");
    let r = inferscale::simulate(&sc);
    assert_eq!(r.summary.requests as f64, est.requests, "the estimate counts the turns that run");
}

/// A front end slower than the load (issue 45, defect 9: 500 ms a request at 4 req/s read "overloaded, limit
/// memory bandwidth", then "queueing under capacity, ρ = 0.06" once capacity was measured — the requests it held
/// were in no queue the stability test saw). Its closed form: one request at a time, 2 req/s per worker. The run
/// is overloaded and limited by the front end, its sustained capacity is within 5 % of 2 req/s, the change that
/// raises the limit is a faster front end, and at 1.6 req/s (ρ = 0.8) the same configuration is stable.
#[test]
fn a_front_end_slower_than_the_load_is_the_limit_and_sets_the_capacity() {
    let mut spec = super::shipped("default.json");
    spec.engine.frontend = Some(scenario::FrontendSpec { per_request_ms: 500.0, per_prompt_token_us: 0.0 });
    spec.workload.arrival = scenario::ArrivalSpec::Poisson { rate_rps: 4.0 };
    let sc = super::valid(&spec);
    let report = inferscale::simulate_tested(&spec, &sc, &scenario::Budget::NATIVE, &mut |_, _, _| true).unwrap();
    let d = &report.diagnosis;
    assert_eq!((d.regime, d.limit), ("overloaded", "frontend"), "{}", d.verdict);
    let busy = report.engine.frontend_busy_max_fraction.unwrap();
    assert!(busy > 0.95, "the front end is busy all along: {busy}");
    let c = report.capacity.as_ref().expect("an open-loop run measures its capacity");
    assert!((c.mean_rps - 2.0).abs() <= 0.1, "sustained capacity {} req/s, closed form 2", c.mean_rps);
    assert!(d.tested.iter().any(|t| t.change.starts_with("a front end 2× faster (250 ms a request")), "{:?}", d.tested);
    spec.workload.arrival = scenario::ArrivalSpec::Poisson { rate_rps: 1.6 };
    let under = inferscale::simulate(&super::valid(&spec));
    assert!(under.steady.stable && !under.steady.overloaded, "{:?}", under.steady);
    // Stable but near the front end's capacity, the queue is the front end's: the queueing verdict names it,
    // not the device (time-busy all along, as decodes keep it stepping, yet with room for many times the load),
    // and tries a faster front end first.
    spec.workload.arrival = scenario::ArrivalSpec::Poisson { rate_rps: 1.8 };
    let near = inferscale::simulate_tested(&spec, &super::valid(&spec), &scenario::Budget::NATIVE, &mut |_, _, _| true)
        .unwrap();
    let d = &near.diagnosis;
    assert_eq!((d.regime, d.kind), ("under_capacity", "queueing"), "{}", d.verdict);
    assert!(d.verdict.contains("so the queue is that of a nearly saturated front end"), "{}", d.verdict);
    assert!(d.tested[0].change.starts_with("a front end 2× faster"), "{:?}", d.tested);
    // Without a front end the report has no such figure, and its JSON no such key.
    let plain = inferscale::simulate(&super::valid(&super::shipped("default.json")));
    assert_eq!(plain.engine.frontend_busy_max_fraction, None);
}

/// The fleet planner keeps what it reads off each candidate, not the candidate's validated scenario (issue 45,
/// defect 4: each held its own copy of a replayed trace's rows, and 1,024 candidates of a 250,000-row trace grew
/// past 2.8 GB with nothing refused). 256 candidates of a 25,000-row trace, every one pruned (no count can carry
/// the target), finish under a 100 MB address-space limit; the scenarios held whole needed over 100 MB and
/// aborted on allocation.
#[test]
fn fleet_candidates_of_a_long_trace_hold_no_copy_of_it() {
    let dir = std::env::temp_dir().join(format!("inferscale-fleet-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("arrived_at,num_prefill_tokens,num_decode_tokens\n");
    for i in 0..25_000u32 {
        csv += &format!("{:.3},{},{}\n", f64::from(i) * 0.2, 100 + i % 800, 50 + i % 350);
    }
    let mut spec = json_of("trace-replay.json");
    spec["workload"]["arrival"]["data"] = json!(csv);
    std::fs::write(dir.join("s.json"), spec.to_string()).unwrap();
    let params = json!({"max_num_seqs": (1..=256).collect::<Vec<u32>>(), "max_replicas": 1, "target_rps": 1e5});
    let out = std::process::Command::new("bash")
        .args(["-c", "ulimit -v 100000 && exec \"$0\" study fleet \"$1\" --threads 1 --params \"$2\""])
        .arg(env!("CARGO_BIN_EXE_inferscale"))
        .arg(dir.join("s.json"))
        .arg(params.to_string())
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 256);
    assert!(rows.iter().all(|r| r.to_string().contains("pruned: its ceiling")), "{}", rows[0]);
}

/// The fleet planner's replica search stays within a pool's bound (issue 45, defect 14: n units of P/D 1:64 are
/// a decode pool of 64·n workers, and the search passed 4,096 and stopped the study with an error at
/// cluster.disaggregation.decode.replicas, which the user never wrote). Every run it hands out — driven here
/// with runs that never pass, so each search climbs as far as it may — is a valid scenario, and the row says how
/// far it went.
#[test]
fn the_fleet_replica_search_stays_within_a_pools_bound() {
    let spec = super::shipped("default.json");
    let params =
        json!({"layouts": [{"kind": "pd", "prefill": 1, "decode": 64}], "max_replicas": 4096, "repetitions": 1});
    let mut st = inferscale::study::build("fleet", &spec, &params).unwrap();
    let (mut jobs_seen, mut most_units) = (0, 0u32);
    loop {
        let jobs = st.next();
        if jobs.is_empty() {
            break;
        }
        for j in &jobs {
            scenario::validate(&j.spec).unwrap_or_else(|e| panic!("{}: {e}", j.label));
            let d = j.spec.cluster.disaggregation.as_ref().unwrap();
            most_units = most_units.max(d.prefill.replicas);
        }
        jobs_seen += jobs.len();
        assert!(jobs_seen < 1000, "the search ends");
        st.feed(vec![Default::default(); jobs.len()]);
    }
    assert_eq!(most_units, 64, "4096 decode workers ÷ 64 a unit");
    let report = st.report();
    assert!(
        report.rows[0].iter().any(|c| format!("{c:?}").contains("no count up to 64 units")),
        "{:?}",
        report.rows[0]
    );
}
