//! The command-line contract: formats, keys, exit codes.

use std::process::Command;

/// The CLI, to run as a user would.
pub(super) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_inferscale"))
}

/// A shipped scenario's path.
pub(super) fn scenario(name: &str) -> String {
    super::root().join("scenarios").join(name).to_string_lossy().into_owned()
}

#[test]
fn run_json_has_the_contract_keys() {
    let out = bin().args(["run", &scenario("default.json")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["summary"];
    for k in [
        "completed",
        "rejected",
        "unfinished",
        "throughput_rps",
        "output_tokens_per_s",
        "goodput_rps",
        "slo_attainment",
        "kv_peak_fraction",
        "preemptions",
        "little_relative_error",
    ] {
        assert!(s[k].is_number(), "summary.{k} missing");
    }
    for m in ["ttft_s", "tpot_s", "itl_s", "e2e_s"] {
        for k in ["mean", "p50", "p90", "p95", "p99", "max"] {
            assert!(s[m][k].is_number(), "summary.{m}.{k} missing");
        }
    }
    assert!(v["classes"].as_array().unwrap().len() == 2);
    assert!(v["tenants"].is_array());
    assert!(v["series"]["t_s"].as_array().unwrap().len() > 10);
    // The CLI's JSON is the library's tested run's JSON, byte for byte.
    let spec = super::shipped("default.json");
    let budget = inferscale::scenario::Budget::NATIVE;
    let tested = inferscale::simulate_tested(&spec, &super::valid(&spec), &budget, &mut |_, _, _| true).unwrap();
    assert!(!tested.diagnosis.tested.is_empty());
    let lib = inferscale::export::json(&tested);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), lib);
}

#[test]
fn run_csv_md_seed_and_out() {
    let out = bin().args(["run", &scenario("default.json"), "--format", "csv"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2001, "header + one row per request");
    assert!(text.starts_with("id,class,tenant,replica,outcome,arrival_s"));
    let md = bin().args(["run", &scenario("default.json"), "--format", "md"]).output().unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.contains("# InferScale report: default") && md.contains("| TTFT |") && md.contains("Little's law"));
    let a = bin().args(["run", &scenario("default.json"), "--seed", "9", "--format", "summary-csv"]).output().unwrap();
    let b = bin().args(["run", &scenario("default.json"), "--format", "summary-csv"]).output().unwrap();
    assert_ne!(a.stdout, b.stdout, "--seed changes the run");
    let dir = std::env::temp_dir().join(format!("inferscale-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    let st = bin().args(["run", &scenario("trace-replay.json"), "--out", path.to_str().unwrap()]).status().unwrap();
    assert!(st.success());
    assert!(std::fs::read_to_string(&path).unwrap().contains("\"summary\""));
}

#[test]
fn bad_input_exits_2_and_names_the_field() {
    let dir = std::env::temp_dir().join(format!("inferscale-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    let text =
        std::fs::read_to_string(scenario("default.json")).unwrap().replace("\"rate_rps\": 4.0", "\"rate_rps\": -4.0");
    std::fs::write(&path, text).unwrap();
    let out = bin().args(["run", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workload.arrival.rate_rps"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = bin().args(["run", "/nonexistent/scenario.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::write(&path, "{ not json").unwrap();
    let out = bin().args(["check", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin().args(["run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "usage errors are input errors");
    let out = bin().args(["check", &scenario("default.json")]).output().unwrap();
    assert!(out.status.success());
}

#[test]
fn validate_prints_every_check() {
    let out = bin().args(["validate", "--quick", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let v: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.len(), 9);
    for c in &v {
        for k in ["name", "simulated", "analytic", "relative_error", "tolerance", "pass"] {
            assert!(!c[k].is_null(), "{k}");
        }
    }
}

#[test]
fn bench_quick_prints_the_figures() {
    let out = bin().args(["bench", "--quick"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "sustained capacity (Poisson arrivals",
        "95 % interval",
        "drain rate (every request at t = 0",
        "75 % of drain rate",
        "160 % of drain rate",
        "req/wall-s",
        "steps/wall-s",
        "peak memory",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
}

/// Files the CLI reads must be regular files of bounded size: `/dev/zero` as a scenario or as its trace used
/// to grow memory by a gigabyte a second, even in `check`. Each is exit 2 naming the file and why.
#[test]
fn special_and_oversized_files_are_refused_with_exit_2() {
    let dir = std::env::temp_dir().join(format!("inferscale-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut zero_trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scenario("trace-replay.json")).unwrap()).unwrap();
    zero_trace["workload"]["arrival"]["path"] = "/dev/zero".into();
    let zt = dir.join("zero-trace.json");
    std::fs::write(&zt, zero_trace.to_string()).unwrap();
    // A sparse 17 MB options file: over the 16 MB limit without writing 17 MB.
    let big = dir.join("big-params.json");
    std::fs::File::create(&big).unwrap().set_len(17 << 20).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["check".into(), "/dev/zero".into()], "not a regular file"),
        (vec!["run".into(), "/dev/zero".into()], "not a regular file"),
        (
            vec!["check".into(), zt.to_string_lossy().into()],
            "workload.arrival.path: cannot read /dev/zero: not a regular file",
        ),
        (vec!["check".into(), dir.to_string_lossy().into()], "not a regular file"),
        (
            vec![
                "study".into(),
                "paired".into(),
                scenario("default.json"),
                "--params-file".into(),
                big.to_string_lossy().into(),
            ],
            "over the limit of 16 MB",
        ),
        (vec!["check".into(), dir.join("missing.json").to_string_lossy().into()], "cannot read"),
    ];
    for (args, want) in cases {
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run estimated to exceed the memory or step budget is refused before it starts, with the estimate, the
/// limit and the flag that raises it; the flag does raise it.
#[test]
fn runs_over_the_budget_are_refused_with_the_estimate_and_the_flag_raises_it() {
    let dir = std::env::temp_dir().join(format!("inferscale-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scenario("default.json")).unwrap()).unwrap();
    v["workload"]["requests"] = 50_000_000.into();
    let huge = dir.join("50m.json");
    std::fs::write(&huge, v.to_string()).unwrap();
    let out = bin().args(["run", huge.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("workload.requests: this run would need about")
            && err.contains("over the budget of 8 GB")
            && err.contains("--budget-gb"),
        "{err}"
    );
    assert!(err.contains("steps"), "the step budget too: {err}");
    // A small budget refuses a shipped scenario that needs about 0.3 GB; the default runs it.
    let bursty = scenario("peer-llama3-8b-h100.json");
    let small = bin().args(["check", &bursty, "--budget-gb", "0.1"]).output().unwrap();
    assert_eq!(small.status.code(), Some(2), "{}", String::from_utf8_lossy(&small.stderr));
    assert!(bin().args(["check", &bursty]).output().unwrap().status.success());
    // And a study: 1,000 paired repetitions of it are 2,000 runs' steps.
    let study = bin()
        .args([
            "study",
            "paired",
            &bursty,
            "--budget-gb",
            "0.1",
            "--params",
            r#"{"treatment": {"/scheduler": {"kind": "sjf"}}, "repetitions": 1000}"#,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&study.stderr);
    assert_eq!(study.status.code(), Some(2), "{err}");
    for bad in ["0", "-1", "1e-300", "1e308", "nan", "x"] {
        assert_eq!(
            bin().args(["check", &bursty, "--budget-gb", bad]).output().unwrap().status.code(),
            Some(2),
            "--budget-gb {bad}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `inferscale report` writes the core's findings report: its Markdown, and with `--format json` every figure
/// (here of one experiment and its reruns; docs/results.md and .json are the core's whole report, held by
/// `docs_results_md_is_the_report_byte_for_byte` — the CLI ran it twice more here, seven minutes of CI); a
/// bad format exits 2.
#[test]
fn report_writes_the_findings_document() {
    let only = || inferscale::findings::Config { only: Some("textbook".into()), ..Default::default() };
    let out = bin().args(["report", "--only", "textbook"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let core = inferscale::findings::report(only());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), core.markdown().unwrap());
    let out = bin().args(["report", "--only", "textbook", "--format", "json"]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), core.json().unwrap());
    let v: serde_json::Value = serde_json::from_str(&core.json().unwrap()).unwrap();
    assert!(v["figures"].as_array().is_some_and(|f| !f.is_empty()) && v["predictions"].is_array());
    let out = bin().args(["report", "--format", "pdf"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `report --on SCENARIO` holds the scenario, and every variant the experiments make of it, to the run budget
/// as `run` does: a scenario `run` refuses is refused (exit 2, naming the budget) before anything runs, and a
/// variant an experiment makes past the budget is a refused run, named, never a run that does not end.
#[test]
fn report_on_a_scenario_keeps_to_the_run_budget() {
    let dir = std::env::temp_dir().join(format!("inferscale-report-on-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut s = super::shipped("default.json");
    s.workload.requests = Some(50_000_000);
    let path = dir.join("huge.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let run = bin().arg("run").arg(&path).output().unwrap();
    assert_eq!(run.status.code(), Some(2), "run refuses it: {}", String::from_utf8_lossy(&run.stderr));
    let out = bin().args(["report", "--only", "little", "--on"]).arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("over the budget") && err.contains("--budget-gb"), "the refusal says how to raise it: {err}");
    // A base within the budget whose variant is not: two sessions of 10,000 turns, which the textbook
    // experiment's capacity search offers as thousands of sessions. The run is refused, named, at once.
    let mut two = super::shipped("agent-sessions.json");
    two.workload.requests = Some(2);
    let sessions = two.workload.sessions.as_mut().unwrap();
    use inferscale::scenario::LengthSpec::Fixed;
    sessions.turns = Some(Fixed { tokens: 10_000 });
    (sessions.first_tokens, sessions.new_tokens, sessions.output_tokens) =
        (Some(Fixed { tokens: 100 }), Some(Fixed { tokens: 10 }), Some(Fixed { tokens: 10 }));
    std::fs::write(&path, serde_json::to_string(&two).unwrap()).unwrap();
    assert!(bin().arg("check").arg(&path).output().unwrap().status.success(), "the base alone is within the budget");
    let out = bin().args(["report", "--only", "textbook", "--on"]).arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("experiment `textbook`: a run on seed")
            && err.contains("over the budget")
            && err.contains("--budget-gb"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
