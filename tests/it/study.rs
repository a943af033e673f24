//! Studies: determinism whatever the parallelism, common random numbers, the tables' contracts.

use inferscale::scenario;
use inferscale::study::{self, Cell};

use super::{root, shipped};

fn run(name: &str, spec: &scenario::Spec, params: serde_json::Value, threads: usize) -> study::StudyReport {
    let mut st = study::build(name, spec, &params).unwrap_or_else(|e| panic!("{name}: {e}"));
    study::run_native(st.as_mut(), threads, &mut |_, _| true).unwrap()
}

#[test]
fn pd_study_is_identical_on_one_or_many_threads_and_its_runs_see_the_same_requests() {
    let spec = shipped("pd-llama3-8b-h100.json");
    let one = run("pd", &spec, serde_json::json!({}), 1);
    let four = run("pd", &spec, serde_json::json!({}), 4);
    assert_eq!(one.json(), four.json());
    assert_eq!(one.rows.len(), 4);
    let labels: Vec<&str> = one.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["colocated", "colocated + prefix cache", "P/D", "P/D + prefix cache"]);
    // GPU accounting: the colocated runs use cluster.replicas × tp, P/D both pools.
    assert_eq!(one.runs[0].gpus, 4);
    assert_eq!(one.runs[2].gpus, 4);
    // The same requests in every variant (common random numbers): same count, and the prefix cache saves
    // tokens only where it is on.
    assert!(one.runs.iter().all(|r| r.requests == 4000));
    assert!(one.runs[1].prefill_tokens_saved.unwrap() > 0 && one.runs[0].prefill_tokens_saved == Some(0));
    // The answer names the best row, and the best row has the most goodput per GPU.
    let best = one.best_row.unwrap();
    let gpg: Vec<f64> = one.runs.iter().map(|r| r.goodput_per_gpu_rps).collect();
    assert!(gpg.iter().all(|g| *g <= gpg[best]));
    assert!(one.answer.contains(&one.runs[best].label));
    // Every row has a diagnosis sentence; P/D rows have transfer latency, colocated ones do not.
    for (i, row) in one.rows.iter().enumerate() {
        assert!(matches!(&row[10], Cell::Text(t) if t.len() > 20), "row {i}: {:?}", row[10]);
        assert_eq!(matches!(row[7], Cell::Num(_)), i >= 2);
    }
    // CSV and Markdown carry the same table.
    assert_eq!(one.csv().lines().count(), 5);
    assert!(one.markdown().contains("| Scenario | GPU instances |"));
}

#[test]
fn pd_study_diagnoses_a_slow_link() {
    let mut spec = shipped("pd-llama3-8b-h100.json");
    spec.cluster.disaggregation.as_mut().unwrap().link = scenario::LinkSpec { bandwidth_gbps: 1.0, latency_ms: 0.05, topology: scenario::LinkTopology::Shared };
    let r = run("pd", &spec, serde_json::json!({}), 2);
    let diag = |i: usize| match &r.rows[i][10] {
        Cell::Text(t) => t.clone(),
        _ => String::new(),
    };
    assert!(diag(2).starts_with("transfer link busy"), "{}", diag(2));
    assert!(diag(2).contains("TTFT dominated by KV transfer"));
}

#[test]
fn pd_study_derives_a_split_and_a_prefix_when_the_scenario_has_none() {
    let spec = shipped("default.json");
    let r = run("pd", &spec, serde_json::json!({"prefix_tokens": 512, "reuse_fraction": 0.3}), 2);
    assert_eq!(r.runs[2].gpus, 2, "one prefill + one decode worker");
    assert!(r.notes.iter().any(|n| n.contains("512 tokens")));
    let bad = study::build("pd", &spec, &serde_json::json!({"reuse": 0.3}));
    assert!(bad.is_err_and(|e| e.errors[0].path == "study.pd"));
    let bad = study::build("pd", &spec, &serde_json::json!({"prefix_tokens": 90000}));
    assert!(bad.is_err_and(|e| e.errors[0].path == "prefix.prefix_tokens"));
}

#[test]
fn cli_study_pd_prints_the_same_report() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale"))
        .args(["study", "pd", "scenarios/pd-llama3-8b-h100.json", "--threads", "3"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spec = shipped("pd-llama3-8b-h100.json");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), run("pd", &spec, serde_json::json!({}), 1).json());
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_inferscale")).args(["study", "pd", "scenarios/default.json", "--reuse", "2"]).current_dir(root()).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("prefix.reuse_fraction"));
}
