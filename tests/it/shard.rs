//! Sharded studies: every study cut into 1, 3 and 7 parts merges into the report one run gives, byte for byte;
//! a missing, duplicated, foreign or damaged part is refused, naming it.

use inferscale::scenario::Spec;
use inferscale::study::shard::{self, Part};
use inferscale::study::{self, Kind};
use serde_json::{Value, json};

use super::shipped;

/// A small scenario and options for `kind` that run in a moment.
pub(super) fn case(kind: Kind) -> (Spec, Value) {
    let (mut plain, mut agents, mut workflows) =
        (shipped("default.json"), shipped("agent-sessions.json"), shipped("agent-workflows.json"));
    (plain.workload.requests, agents.workload.requests, workflows.workload.requests) = (Some(80), Some(12), Some(12));
    let spec = match kind.about().group {
        _ if study::agents::WORKFLOW_STUDIES.contains(&kind.name()) => workflows,
        study::Group::Agents => agents,
        _ => plain,
    };
    let mut options = kind.default_options();
    match kind {
        Kind::Paired | Kind::Sensitivity => options["treatment"] = json!({"/engine/prefill_chunk_tokens": 512}),
        Kind::Capacity => options = json!({"repetitions": 2, "precision": 0.2}),
        Kind::Fleet => {
            options = json!({"target_rps": 6, "repetitions": 2, "devices": ["a100-80g", "h100-sxm", "l40s"],
                             "layouts": [{"kind": "colocated"}, {"kind": "pd", "prefill": 1, "decode": 1}]})
        }
        _ => {}
    }
    (spec, options)
}

fn whole(kind: Kind, spec: &Spec, options: &Value) -> String {
    let mut st = kind.build(spec, options).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
    study::run_native(st.as_mut(), 2, &mut |_, _| true).unwrap().json()
}

/// Shard i of n, through its JSON (as the files carry it).
pub(super) fn part(kind: Kind, spec: &Spec, options: &Value, i: u32, n: u32) -> Part {
    let mut st = kind.build(spec, options).unwrap();
    let runner = &mut |jobs: &[study::Job]| study::run_parallel(jobs, 2);
    let p = shard::run_shard(kind.name(), spec, options, st.as_mut(), (i, n), runner, &mut |_, _| true).unwrap();
    serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap()
}

fn named(parts: Vec<Part>) -> Vec<(String, Part)> {
    parts.into_iter().map(|p| (format!("part-{}.json", p.shard), p)).collect()
}

#[test]
fn every_study_sharded_into_1_3_and_7_parts_merges_into_the_unsharded_report() {
    for &kind in Kind::ALL {
        let (spec, options) = case(kind);
        let want = whole(kind, &spec, &options);
        for n in [1, 3, 7] {
            let parts: Vec<Part> = (0..n).map(|i| part(kind, &spec, &options, i, n)).collect();
            let runs: Vec<usize> = parts.iter().map(|p| p.runs.len()).collect();
            let merged = shard::merge(&named(parts)).unwrap_or_else(|e| panic!("{} in {n}: {e}", kind.name()));
            assert_eq!(merged.json(), want, "{} in {n} parts", kind.name());
            println!("{}: {n} parts of {runs:?} runs", kind.name());
            if n == 3 && kind == Kind::Fleet {
                assert!(runs.iter().all(|&r| r > 0), "the fleet's candidates spread over the shards: {runs:?}");
            }
        }
    }
}

/// A study with `repetitions` (R copies driven in step) shards by its copies' lanes: the copies of a one-batch
/// study spread over every shard, and the merge is the unsharded report.
#[test]
fn a_repeated_study_shards_over_its_copies_lanes() {
    for (kind, options) in [(Kind::Explorer, json!({"repetitions": 3})), (Kind::TieredKv, json!({"repetitions": 2}))] {
        let spec = case(kind).0;
        let want = whole(kind, &spec, &options);
        let parts: Vec<Part> = (0..3).map(|i| part(kind, &spec, &options, i, 3)).collect();
        let runs: Vec<usize> = parts.iter().map(|p| p.runs.len()).collect();
        assert_eq!(shard::merge(&named(parts)).unwrap().json(), want, "{}", kind.name());
        println!("{} × repetitions: {runs:?} runs per part", kind.name());
        if kind == Kind::Explorer {
            assert!(runs.iter().all(|&r| r > 0), "{runs:?}");
        }
    }
}

#[test]
fn merge_refuses_missing_duplicate_foreign_and_damaged_parts_naming_them() {
    let kind = Kind::Explorer;
    let (spec, options) = case(kind);
    let parts: Vec<Part> = (0..3).map(|i| part(kind, &spec, &options, i, 3)).collect();
    let err = |ps: Vec<(String, Part)>| shard::merge(&ps).unwrap_err().to_string();
    let mut missing = named(parts.clone());
    missing.remove(1);
    assert!(err(missing).starts_with("shard 1/3 is missing"), "missing");
    let mut twice = named(parts.clone());
    twice.push(("copy.json".into(), parts[2].clone()));
    assert_eq!(err(twice), "shard 2/3 is given twice: part-2.json and copy.json");
    let mut other = spec.clone();
    other.seed += 1;
    let mut foreign = named(parts.clone());
    foreign[2] = ("other.json".into(), part(kind, &other, &options, 2, 3));
    let e = err(foreign);
    assert!(e.starts_with("other.json does not belong with part-0.json: its scenario differs"), "{e}");
    let mut options2 = options.clone();
    options2["target"] = json!(0.5);
    let mut foreign = named(parts.clone());
    foreign[1] = ("opts.json".into(), part(kind, &spec, &options2, 1, 3));
    assert!(err(foreign).contains("its study options differ"));
    let mut foreign = named(parts.clone());
    foreign[1] = ("n4.json".into(), part(kind, &spec, &options, 1, 4));
    assert!(err(foreign).contains("it is one of 4 shards, not 3"));
    let mut edited = named(parts.clone());
    edited[0].1.scenario.workload.requests = Some(81);
    assert!(err(edited).starts_with("part-0.json: its fingerprint does not match"), "an edited part");
    let mut gutted = named(parts.clone());
    gutted[0].1.runs.pop();
    assert!(err(gutted).contains("has no run for the job"), "a part missing a run");
    // `shards` is not in the fingerprint: bounded before anything is sized by it (4294967295 alone asked for
    // 68 GB).
    let mut huge = named(vec![parts[0].clone()]);
    huge[0].1.shards = u32::MAX;
    assert_eq!(err(huge), "part-0.json: shard 0/4294967295 is not one of 1 … 10000 shards");
    // A run's figures edited (negative times, 750 % attainment) no longer match its hash.
    let mut figures = named(parts.clone());
    figures[1].1.runs[0].run.slo_attainment = 7.5;
    figures[1].1.runs[0].run.ttft_p95_s = -1.0;
    let e = err(figures);
    assert!(e.starts_with("part-1.json: the run \"") && e.contains("does not match its hash"), "{e}");
    // Resealed after the edit, as anyone can: the figures themselves are held, named.
    let mut resealed = named(parts.clone());
    resealed[1].1.runs[0].run.slo_attainment = 7.5;
    resealed[1].1 = resealed[1].1.clone().resealed();
    let e = err(resealed.clone());
    assert!(e.starts_with("part-1.json: the run \"") && e.ends_with("slo_attainment is 7.5, outside 0 … 1"), "{e}");
    resealed[1].1.runs[0].run.slo_attainment = 0.5;
    resealed[1].1.runs[0].run.ttft_p95_s = 1e308;
    resealed[1].1 = resealed[1].1.clone().resealed();
    assert!(err(resealed).ends_with("ttft_p95_s is 1e308, outside 0 … 1e15"));
    // A job answered twice (another shard's run carried along), or by another shard's part: refused, named,
    // whatever the order of the files.
    let mut carried = named(parts.clone());
    let theirs = carried[1].1.runs[0].clone();
    carried[0].1.runs.push(theirs.clone());
    let e = err(carried.clone());
    assert!(e.ends_with("is given twice: in part-0.json and part-1.json"), "{e}");
    carried.reverse();
    assert!(err(carried).ends_with("is given twice: in part-1.json and part-0.json"));
    let mut moved = named(parts.clone());
    moved[1].1.runs.remove(0);
    moved[0].1.runs.push(theirs);
    let e = err(moved);
    assert!(e.starts_with("part-0.json (shard 0/3) answers the job \""), "{e}");
    assert!(e.contains("of shard 1/3"), "{e}");
    assert_eq!(err(Vec::new()), "no parts to merge");
    for bad in ["", "3", "3/3", "-1/3", "0/0", "1/2/3", "a/b", "0/10001"] {
        assert!(shard::parse_shard(bad).is_err(), "{bad}");
    }
    assert_eq!(shard::parse_shard("6/7"), Ok((6, 7)));
}

/// The CLI as a cluster runs it: `study … --shard i/n --out part-i.json`, then `merge`, equal to `study`'s
/// own output in every format; bad shards and parts exit 2 naming what is wrong.
#[test]
fn cli_shards_and_merges_byte_for_byte_and_refuses_bad_parts_with_exit_2() {
    use super::cli::{bin, scenario};
    let dir = std::env::temp_dir().join(format!("inferscale-shard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = r#"{"target_rps": 6, "repetitions": 1, "devices": ["h100-sxm", "l40s"]}"#;
    let sc = scenario("default.json");
    let study = |extra: &[&str]| {
        let out = bin().args(["study", "fleet", &sc, "--params", params]).args(extra).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let parts: Vec<String> =
        (0..3).map(|i| dir.join(format!("part-{i}.json")).to_string_lossy().into_owned()).collect();
    for (i, p) in parts.iter().enumerate() {
        let (code, _, err) = study(&["--shard", &format!("{i}/3"), "--out", p]);
        assert_eq!(code, Some(0), "{err}");
    }
    for format in ["json", "md", "csv"] {
        let (_, whole, _) = study(&["--format", format]);
        let out = bin().arg("merge").args(&parts).args(["--format", format]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), whole, "merged {format}");
    }
    let merge = |files: &[&str]| {
        let out = bin().arg("merge").args(files).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = merge(&[&parts[0], &parts[2]]);
    assert_eq!((code, err.contains("shard 1/3 is missing")), (Some(2), true), "{err}");
    let (code, err) = merge(&[&parts[0], &parts[1], &parts[2], &parts[1]]);
    assert_eq!((code, err.contains("shard 1/3 is given twice")), (Some(2), true), "{err}");
    for bad in [scenario("default.json"), "/dev/null".into(), dir.to_string_lossy().into_owned(), "/nonexistent".into()]
    {
        let (code, err) = merge(&[&bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
    }
    for (shard, want) in [("3/3", "--shard: expected i/n"), ("0/0", "--shard"), ("x", "--shard")] {
        let (code, _, err) = study(&["--shard", shard]);
        assert_eq!(code, Some(2), "{shard}");
        assert!(err.contains(want), "{shard}: {err}");
    }
    let (code, _, err) = study(&["--shard", "0/2", "--format", "md"]);
    assert_eq!(code, Some(2), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
