//! Mutation fuzzing (seeded, reproducible): every shipped scenario, every trace shape, every study's options,
//! study parts (`merge`) and result bundles (`calibrate`), mutated as an attacker would — 0, negatives, 1e-300,
//! 1e308, huge counts, wrong types, deep nesting, removed and unknown fields, broken trace text. Each case must
//! end, in bounded time and memory, either with a sane report (no null or NaN, fractions in [0, 1], every request
//! accounted for, audits ok) or with a refusal naming a field — never a panic, a hang or a wrong report. A tenth
//! of the scenario cases also go through the CLI, whose exit code must be 0 or 2 (an abort or a panic is 134
//! or 1).

use inferscale::rng::{self, Rng64, Stream};
use inferscale::scenario::{self, Budget};
use inferscale::study::Kind;
use serde_json::{Value, json};

/// Small enough that every accepted case runs in milliseconds.
const BUDGET: Budget = Budget { memory_bytes: 2e8, steps: 3e6, ..Budget::NATIVE };

/// Values an attacker tries in a field.
fn attack(r: &mut Rng64) -> Value {
    let deep = (0..200).fold(json!(1), |v, _| json!([v]));
    let choices = [
        json!(0),
        json!(-1),
        json!(1e-300),
        json!(-1e-300),
        json!(1e308),
        json!(-1e308),
        json!(1e18),
        json!(18446744073709551615u64),
        json!(4294967296u64),
        json!(0.5),
        json!(1),
        json!(2),
        json!(65536),
        json!(""),
        json!("x"),
        json!("\u{0}<img src=x onerror=alert(1)>|\n=cmd"),
        json!(null),
        json!(true),
        json!([]),
        json!({}),
        deep,
        json!("a".repeat(10_000)),
    ];
    choices[r.below(choices.len() as u64) as usize].clone()
}

/// Every path to a leaf (and to every container) of a JSON value.
fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| paths(x, format!("{at}/{k}"), out)),
        Value::Array(a) if a.len() <= 64 => a.iter().enumerate().for_each(|(i, x)| paths(x, format!("{at}/{i}"), out)),
        _ => {}
    }
}

/// One to three mutations: replace a value, remove a key, or add an unknown one.
fn mutate(mut v: Value, r: &mut Rng64) -> Value {
    for _ in 0..1 + r.below(3) {
        let mut ps = Vec::new();
        paths(&v, String::new(), &mut ps);
        let p = ps[r.below(ps.len() as u64) as usize].clone();
        let Some((parent, key)) = p.rsplit_once('/') else { continue };
        // Half the time a plausible change (so that many cases run), half an attack.
        let x = match (r.below(2), v.pointer(&p)) {
            (0, Some(Value::Number(n))) => {
                let f = [0.5, 2.0, 1.5, 0.9, 10.0][r.below(5) as usize];
                match n.as_u64() {
                    Some(k) => json!(((k as f64 * f).round() as u64).max(1)),
                    None => json!(n.as_f64().unwrap_or(1.0) * f),
                }
            }
            (0, Some(Value::Bool(b))) => json!(!b),
            _ => attack(r),
        };
        match (r.below(6), v.pointer_mut(parent)) {
            (0, Some(Value::Object(m))) => {
                m.shift_remove(key);
            }
            (1, Some(Value::Object(m))) => {
                m.insert("unknown_field".into(), x);
            }
            (_, Some(Value::Object(m))) => {
                m.insert(key.into(), x);
            }
            (_, Some(Value::Array(a))) => {
                if let Ok(i) = key.parse::<usize>() {
                    a[i] = x;
                }
            }
            _ => {}
        }
    }
    v
}

/// Up to three times, a few characters of `t` replaced by one of `words`.
fn splice(t: &mut String, words: &[&str], r: &mut Rng64) {
    for _ in 0..r.below(4) {
        let w = words[r.below(words.len() as u64) as usize];
        let cut: Vec<usize> = t.char_indices().map(|(i, _)| i).collect();
        let at = cut[r.below(cut.len() as u64) as usize];
        let len = r.below(6) as usize;
        let end = t[at..].char_indices().nth(len).map_or(t.len(), |(i, _)| at + i);
        t.replace_range(at..end, w);
    }
}

/// The trace shapes, and text mutations of them.
fn trace_text(r: &mut Rng64) -> String {
    let shapes = [
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,100,10\n0.5,200,20\n1.25,50,5\n",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,400,10\n2023-11-16 18:15:50.9951690,318,8\n",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n",
        "{\"timestamp\": 0, \"input_length\": 695, \"output_length\": 52, \"hash_ids\": [0, 1]}\n{\"timestamp\": 27, \"input_length\": 647, \"output_length\": 26}\n",
    ];
    let mut t = shapes[r.below(shapes.len() as u64) as usize].to_string();
    let words = [
        "0",
        "-1",
        "1e-300",
        "1e308",
        "9999-12-31 23:59:59",
        "0001-01-01 00:00:00",
        "\"",
        ",,,",
        "\u{feff}",
        "x",
        "NaN",
        "4294967296",
        "10000001",
        "\r\n",
        "{",
        "",
    ];
    splice(&mut t, &words, r);
    t
}

const OPTIONAL: [&str; 15] = [
    // A study table's empty cell (a NaN cell would be null too: the Markdown is checked for it).
    "rows",
    "transfer",
    "pools",
    "prefix",
    "class",
    "best_row",
    "target",
    "transfer_p95_s",
    "link_busy_max_fraction",
    "prefill_busy_fraction",
    "decode_busy_fraction",
    "decode_kv_peak_fraction",
    "prefix_hit_rate",
    "prefill_tokens_saved",
    "prefill_saved_fraction",
];

/// Every number in a report is a number (serde writes NaN and infinities as null), and every fraction is in
/// [0, 1].
fn sane(v: &Value, key: &str, at: &str) -> Result<(), String> {
    match v {
        // Absent by design: the P/D and prefix sections of a colocated run without them, an objective for all
        // classes, a study's optional columns.
        Value::Null if !OPTIONAL.contains(&key) => Err(format!("{at}: null")),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let fraction = key.ends_with("_fraction")
                || ["slo_attainment", "hit_rate", "attainment", "attainment_target"].contains(&key);
            if fraction && !(0.0..=1.0 + 1e-9).contains(&x) {
                Err(format!("{at}: {x} is not a fraction"))
            } else {
                Ok(())
            }
        }
        Value::Object(m) => m.iter().try_for_each(|(k, x)| sane(x, k, &format!("{at}.{k}"))),
        Value::Array(a) => a.iter().try_for_each(|x| sane(x, key, at)),
        _ => Ok(()),
    }
}

/// What one scenario case came to: ran (with a sane report), or was refused.
fn check_scenario(text: &str) -> Result<bool, String> {
    let sc = match scenario::load(text).and_then(|sc| sc.check_budget(&BUDGET, 1).map(|()| sc)) {
        Ok(sc) => sc,
        Err(e) if !e.errors.is_empty() && e.errors.iter().all(|f| !f.path.is_empty() && !f.message.is_empty()) => {
            if std::env::var("FUZZ_WHY").is_ok() {
                eprintln!("refused: {}", e.errors[0]);
            }
            return Ok(false);
        }
        Err(e) => return Err(format!("a refusal without a field: {e:?}")),
    };
    let r = inferscale::simulate(&sc);
    let s = &r.summary;
    if s.completed + s.rejected + s.failed + s.unfinished != s.requests {
        return Err(format!("requests unaccounted for: {s:?}"));
    }
    let a = &r.audits;
    if !a.conservation.ok || a.kv.violations > 0 || a.little.relative_error > 0.01 {
        return Err(format!("audits: {a:?}"));
    }
    let v: Value = serde_json::from_str(&inferscale::export::json(&r)).map_err(|e| e.to_string())?;
    sane(&v, "", "report")?;
    // The other exports render too.
    let _ = (
        inferscale::export::requests_csv(&r, &sc),
        inferscale::export::markdown(&r),
        inferscale::export::summary_csv(&r),
    );
    Ok(true)
}

/// Bases no shipped scenario is: the arrival kinds none uses (a closed loop, one bounded only by its duration,
/// a burst), the engine profiles (SGLang's batch formations, a serving overhead, a horizon, max_model_len),
/// and a session trace.
fn unshipped_bases() -> Vec<Value> {
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = small_shipped("default.json");
        f(&mut v);
        v
    };
    vec![
        with(&|v| v["workload"]["arrival"] = json!({"kind": "closed_loop", "clients": 8, "think_s": 0.5})),
        with(&|v| {
            v["workload"]["arrival"] = json!({"kind": "closed_loop", "clients": 4, "think_s": 0.0});
            v["workload"].as_object_mut().unwrap().shift_remove("requests");
            v["workload"]["duration_s"] = json!(2.0);
        }),
        with(&|v| v["workload"]["arrival"] = json!({"kind": "burst"})),
        with(&|v| v["engine"]["batch_formation"] = json!("sglang")),
        with(&|v| v["engine"]["batch_formation"] = json!("sglang_mixed")),
        with(&|v| {
            v["engine"]["request_overhead_ms"] = json!(5.0);
            v["engine"]["horizon_s"] = json!(3.0);
            v["engine"]["max_model_len"] = json!(2048);
        }),
        session_trace_base(SESSION_LINES),
    ]
}

/// Three sessions in InferScale's shape (timed), and one in inference-lab's, as text to mutate.
const SESSION_LINES: &str = concat!(
    r#"{"id": "a", "arrival_s": 0, "turns": [{"new_tokens": 900, "output_tokens": 40, "tool": "grep", "tool_s": 0.2}, {"new_tokens": 60, "output_tokens": 30}]}"#,
    "\n",
    r#"{"id": "b", "arrival_s": 0.5, "turns": [{"new_tokens": 400, "output_tokens": 20, "tool": "read", "tool_s": 1.5}, {"new_tokens": 10, "output_tokens": 9}]}"#,
    "\n",
    r#"{"id": "c", "arrival_s": 2, "turns": [{"new_tokens": 1200, "output_tokens": 80}]}"#,
    "\n",
);

/// The agent scenario replaying `trace` (its drawn-session fields removed, a dozen sessions at most).
fn session_trace_base(trace: &str) -> Value {
    let mut v = small_shipped("agent-sessions.json");
    v["workload"]["requests"] = json!(12);
    let s = v["workload"]["sessions"].as_object_mut().unwrap();
    for k in ["turns", "first_tokens", "new_tokens", "output_tokens", "tools"] {
        s.shift_remove(k);
    }
    s.insert("trace".into(), json!({"data": trace}));
    v
}

/// The session lines, or inference-lab's shape, with text mutations.
fn session_trace_text(r: &mut Rng64) -> String {
    let lab =
        r#"{"steps": [{"input": 500, "output": 20, "tool": "bash", "tool_s": 0.3}, {"input": 700, "output": 10}]}"#;
    let mut t = if r.below(4) == 0 { format!("{lab}\n{lab}\n") } else { SESSION_LINES.to_string() };
    let words = [
        "0",
        "-1",
        "1e-300",
        "1e308",
        "4294967296",
        "2.5",
        "\"",
        "{",
        "}",
        "[]",
        "null",
        ", \"turns\": []",
        ", \"new_tokens\": 5",
        "\"arrival_s\": 1e300",
        "NaN",
        "\u{feff}",
        "\r\n",
        "",
    ];
    splice(&mut t, &words, r);
    t
}

/// A shipped scenario at most a few hundred requests long (mutations may lengthen it; the budget bounds it).
fn small_shipped(name: &str) -> Value {
    let mut v: Value = serde_json::to_value(super::shipped(name)).unwrap();
    if let Some(n) = v["workload"]["requests"].as_u64() {
        v["workload"]["requests"] = json!(n.min(300));
    }
    v
}

#[test]
fn mutated_scenarios_traces_and_study_options_run_sanely_or_are_refused() {
    let names = super::shipped_names();
    let mut bases: Vec<Value> = names.iter().map(|n| small_shipped(n)).collect();
    bases.extend(unshipped_bases());
    let (mut cases, mut ran, mut refused, mut via_cli, mut session_traces_ran) = (0u32, 0u32, 0u32, 0u32, 0u32);
    let mut failures = Vec::new();
    let dir = std::env::temp_dir().join(format!("inferscale-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // FUZZ_CASES raises the count for a longer hunt; CI runs the default.
    let n: u64 = std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2400);
    for i in 0..n {
        let mut r = rng::stream(0xF022, Stream::Study, i);
        let v = match i % 8 {
            // A trace shape, mutated as text, replayed by a shipped scenario (also mutated half the time).
            3 | 7 => {
                let mut v = bases[r.below(bases.len() as u64) as usize].clone();
                v["workload"]["arrival"] = json!({"kind": "trace", "data": trace_text(&mut r)});
                if r.below(2) == 0 { mutate(v, &mut r) } else { v }
            }
            // A session trace, mutated as text, replayed by the agent scenario (also mutated half the time).
            5 => {
                let v = session_trace_base(&session_trace_text(&mut r));
                if r.below(2) == 0 { mutate(v, &mut r) } else { v }
            }
            _ => mutate(bases[r.below(bases.len() as u64) as usize].clone(), &mut r),
        };
        let text = v.to_string();
        cases += 1;
        match std::panic::catch_unwind(|| check_scenario(&text)) {
            Ok(Ok(true)) => {
                ran += 1;
                session_traces_ran += (i % 8 == 5) as u32;
            }
            Ok(Ok(false)) => refused += 1,
            Ok(Err(why)) => failures.push(format!("case {i}: {why}\n{text}")),
            Err(_) => failures.push(format!("case {i}: panicked\n{text}")),
        }
        if i % 10 == 0 {
            let path = dir.join(format!("case{i}.json"));
            std::fs::write(&path, &text).unwrap();
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
                .args(["run", path.to_str().unwrap(), "--budget-gb", "0.2"])
                .output()
                .unwrap();
            if !matches!(out.status.code(), Some(0) | Some(2)) {
                failures.push(format!(
                    "case {i}: the CLI exited {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            via_cli += 1;
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let (study_cases, studies_ran, study_failures) = fuzz_study_options();
    failures.extend(study_failures);
    println!(
        "fuzz: {cases} scenario cases ({ran} ran with sane reports, {session_traces_ran} of them session traces; {refused} refused naming a field; {via_cli} also through the CLI), {study_cases} study-option cases ({studies_ran} ran to a sane report)"
    );
    assert!(
        session_traces_ran > 20 && studies_ran > 150,
        "{session_traces_ran} session traces ran, {studies_ran} studies"
    );
    assert!(failures.is_empty(), "{} failures, the first: {}", failures.len(), failures[0]);
    assert!(ran > 200 && refused > 300, "the mutations must reach both outcomes ({ran} ran, {refused} refused)");
}

/// Every study's options, mutated: building the study must succeed or refuse naming a field; a study that
/// builds with a few runs is run to its report.
fn fuzz_study_options() -> (u32, u32, Vec<String>) {
    let mut plain = super::shipped("default.json");
    plain.workload.requests = Some(60);
    // The agent studies on the agent scenario (on a scenario without sessions they only refuse).
    let mut agents = super::shipped("agent-sessions.json");
    agents.workload.requests = Some(8);
    // The workflow studies on the workflow example.
    let mut workflows = super::shipped("agent-workflows.json");
    workflows.workload.requests = Some(8);
    let (mut cases, mut failures, mut ran) = (0, Vec::new(), 0);
    for &kind in Kind::ALL {
        let spec = match kind.about().group {
            _ if inferscale::study::agents::WORKFLOW_STUDIES.contains(&kind.name()) => &workflows,
            inferscale::study::Group::Agents => &agents,
            _ => &plain,
        };
        let mut defaults = kind.default_options();
        if matches!(kind, Kind::Paired | Kind::Sensitivity) {
            defaults["treatment"] = json!({"/engine/prefill_chunk_tokens": 512});
        }
        // The fleet planner's layouts given, so that their pool sizes are mutated too (its default is none:
        // every layout the devices allow).
        if matches!(kind, Kind::Fleet) {
            defaults["layouts"] = json!([{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 2}]);
            defaults["target_rps"] = json!(4);
        }
        for i in 0..60u64 {
            let mut r = rng::stream(0xF023, Stream::Study, i * 16 + kind as u64);
            let opts = if i == 0 { defaults.clone() } else { mutate(defaults.clone(), &mut r) };
            cases += 1;
            let outcome = std::panic::catch_unwind(|| -> Result<bool, String> {
                let mut st = match kind.build(spec, &opts) {
                    Ok(st) => st,
                    Err(e) if e.errors.iter().all(|f| !f.path.is_empty()) => return Ok(false),
                    Err(e) => return Err(format!("a refusal without a field: {e:?}")),
                };
                if st.progress().1 > 80 {
                    return Ok(false); // accepted; too many runs for a fuzz case
                }
                match inferscale::study::run_native(st.as_mut(), 2, &mut |_, _| true) {
                    Ok(rep) if rep.markdown().contains("NaN") => Err(format!("NaN in the table: {}", rep.markdown())),
                    Ok(rep) => {
                        sane(&serde_json::from_str(&rep.json()).map_err(|e| e.to_string())?, "", "study").map(|()| true)
                    }
                    Err(inferscale::study::StudyError::Invalid(_)) => Ok(false),
                    Err(e) => Err(format!("{e:?}")),
                }
            });
            match outcome {
                Ok(Ok(done)) => ran += done as u32,
                Ok(Err(why)) => failures.push(format!("{} options {opts}: {why}", kind.name())),
                Err(_) => failures.push(format!("{} options {opts}: panicked", kind.name())),
            }
        }
    }
    (cases, ran, failures)
}

/// Study parts (`merge`'s input) and bundles (`calibrate`'s), mutated as an attacker would — and a part
/// resealed after its edit, as anyone can (its hashes catch accidents, not intent), so that `merge` rebuilds a
/// hostile study and feeds it hostile runs: 1e308 latencies, 750 % attainment, counts past u32, a scenario or
/// options changed. Each must merge into a sane report (no null or NaN, fractions in [0, 1]) or be refused
/// with a message; a bundle must be read and prepared for calibration, or refused with a message. Never a
/// panic.
#[test]
fn hostile_study_parts_and_bundles_merge_or_calibrate_sanely_or_are_refused() {
    use inferscale::study::shard::{self, Part};
    let kinds = [Kind::Explorer, Kind::Capacity, Kind::Fleet, Kind::Ranking, Kind::AgentPolicies];
    let sets: Vec<Vec<Part>> = (kinds.iter())
        .map(|&k| {
            let (spec, options) = super::shard::case(k);
            (0..2).map(|i| super::shard::part(k, &spec, &options, i, 2)).collect()
        })
        .collect();
    let (mut merged, mut refused, mut failures) = (0u32, 0u32, Vec::new());
    for i in 0..1500u64 {
        let mut r = rng::stream(0xF024, Stream::Study, i);
        let set = &sets[r.below(sets.len() as u64) as usize];
        let j = r.below(2) as usize;
        let v = mutate(serde_json::to_value(&set[j]).unwrap(), &mut r);
        let outcome = std::panic::catch_unwind(|| -> Result<bool, String> {
            let Ok(part) = serde_json::from_value::<Part>(v.clone()) else { return Ok(false) };
            let part = if r.clone().below(4) > 0 { part.resealed() } else { part };
            let mut parts: Vec<(String, Part)> =
                set.iter().enumerate().map(|(k, p)| (format!("part-{k}.json"), p.clone())).collect();
            parts[j].1 = part;
            match shard::merge(&parts) {
                Ok(rep) if rep.markdown().contains("NaN") => Err(format!("NaN in the table: {}", rep.markdown())),
                Ok(rep) => {
                    let _ = rep.csv();
                    sane(&serde_json::from_str(&rep.json()).map_err(|e| e.to_string())?, "", "merged").map(|()| true)
                }
                Err(e) if !e.to_string().is_empty() => Ok(false),
                Err(e) => Err(format!("a refusal without a message: {e:?}")),
            }
        });
        match outcome {
            Ok(Ok(true)) => merged += 1,
            Ok(Ok(false)) => refused += 1,
            Ok(Err(why)) => failures.push(format!("part case {i}: {why}")),
            Err(_) => failures.push(format!("part case {i}: panicked")),
        }
    }
    let root = super::root().join("tests/data/public");
    let bundle: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("llama-2-7b.bundle.json")).unwrap()).unwrap();
    let base = scenario::parse(&std::fs::read_to_string(root.join("llama-2-7b.json")).unwrap()).unwrap();
    let (mut prepared, mut bundles_refused) = (0u32, 0u32);
    for i in 0..800u64 {
        let mut r = rng::stream(0xF025, Stream::Study, i);
        let text = mutate(bundle.clone(), &mut r).to_string();
        let outcome = std::panic::catch_unwind(|| -> Result<bool, String> {
            let b = match inferscale::truth::Bundle::parse(&text) {
                Ok(b) => b,
                Err(e) if !e.is_empty() => return Ok(false),
                Err(_) => return Err("a refusal without a message".into()),
            };
            let opts = inferscale::truth::Options::default();
            match inferscale::truth::calibrate::prepare(&base, &b.cases, &[], &opts) {
                Ok(_) => Ok(true),
                Err(e) if !e.is_empty() => Ok(false),
                Err(_) => Err("a refusal without a message".into()),
            }
        });
        match outcome {
            Ok(Ok(true)) => prepared += 1,
            Ok(Ok(false)) => bundles_refused += 1,
            Ok(Err(why)) => failures.push(format!("bundle case {i}: {why}")),
            Err(_) => failures.push(format!("bundle case {i}: panicked")),
        }
    }
    println!(
        "fuzz: 1500 study-part cases ({merged} merged to a sane report, {refused} refused), 800 bundle cases ({prepared} prepared, {bundles_refused} refused)"
    );
    assert!(failures.is_empty(), "{} failures, the first: {}", failures.len(), failures[0]);
    assert!(merged > 50 && refused > 50 && prepared > 50 && bundles_refused > 50, "both outcomes reached");
}
