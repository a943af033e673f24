//! deploy/: the container builds as CI does, the Slurm scripts and the Kubernetes Indexed Job cut and merge
//! shards the way the CLI takes them. (The manifests' schema check and the real Slurm run are in
//! scripts/test.sh: `kubernetes-validate` and tests/slurm/run.sh.)

use serde::Deserialize;

use super::root;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_container_builds_the_cli_with_the_step_ci_runs() {
    let containerfile = read("deploy/Containerfile");
    let build = containerfile.lines().find_map(|l| l.strip_prefix("RUN cargo build")).expect("a cargo build step");
    let step = format!("cargo build{build}");
    assert!(read("scripts/test.sh").lines().any(|l| l.trim() == step), "scripts/test.sh runs `{step}`");
    assert!(containerfile.contains("COPY --from=build /src/target/release/inferscale"), "the image holds the CLI");
}

#[test]
fn the_slurm_scripts_shard_by_array_task_and_merge_after_every_task() {
    let shard = read("deploy/slurm/shard.sbatch");
    assert!(shard.contains(r#"--shard "$i/$n""#) && shard.contains(r#"i="${SLURM_ARRAY_TASK_ID:"#), "{shard}");
    let submit = read("deploy/slurm/submit.sh");
    assert!(submit.contains(r#"--array="0-$((n - 1))""#), "one task per shard, indexed from 0");
    assert!(submit.contains(r#"--dependency="afterok:$array""#), "the merge waits for every shard to succeed");
    let merge = read("deploy/slurm/merge.sbatch");
    assert!(merge.contains(r#"exec "$INFERSCALE" merge "${parts[@]}""#), "{merge}");
    for f in ["deploy/slurm/shard.sbatch", "deploy/slurm/merge.sbatch", "deploy/slurm/submit.sh", "tests/slurm/run.sh"]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root().join(f)).unwrap().permissions().mode();
        assert!(mode & 0o111 != 0, "{f} is executable");
    }
}

/// submit.sh reads N in decimal whatever its leading zeros (bash's arithmetic took 010 for octal 8 and refused
/// 08) and refuses what is out of 1 … 10000 with exit 2 before submitting, however long the number. `sbatch`
/// here is a stand-in that records its arguments and the shard count it was given.
#[test]
fn the_slurm_submission_reads_n_in_decimal_and_refuses_what_is_out_of_range() {
    let dir = std::env::temp_dir().join(format!("inferscale-submit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sbatch = dir.join("sbatch");
    std::fs::write(&sbatch, "#!/usr/bin/env bash\necho \"$SHARDS $*\" >>\"$LOG\"\necho 42\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    let submit = |n: &str| {
        let log = dir.join("log");
        let _ = std::fs::remove_file(&log);
        let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
        let out = std::process::Command::new("bash")
            .arg(root().join("deploy/slurm/submit.sh"))
            .args([n, "fleet", "scenarios/default.json"])
            .arg(dir.join("out"))
            .current_dir(root())
            .env("PATH", path)
            .env("LOG", &log)
            .env("INFERSCALE", "true")
            .output()
            .unwrap();
        (
            out.status.code(),
            std::fs::read_to_string(&log).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (n, shards) in [("010", 10), ("08", 8), ("1", 1), ("0010000", 10000)] {
        let (code, log, err) = submit(n);
        assert_eq!(code, Some(0), "N = {n}: {err}");
        let array = format!("{shards} --parsable --chdir={} --array=0-{} ", dir.join("out").display(), shards - 1);
        assert!(log.starts_with(&array), "N = {n}: {log}");
        assert!(log.lines().nth(1).unwrap().starts_with(&format!("{shards} --parsable")), "the merge is told {shards}");
    }
    for n in ["0", "000", "10001", "99999999999999999999999", "-3", "2.5", "1e3", ""] {
        let (code, log, err) = submit(n);
        assert_eq!(code, Some(2), "N = {n:?}: {err}");
        assert!(err.starts_with("N: ") && log.is_empty(), "N = {n:?} names N and submits nothing: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[derive(Deserialize)]
struct Manifest {
    kind: String,
    #[serde(default)]
    spec: serde_json::Value,
}

fn manifests(path: &str) -> Vec<Manifest> {
    let text = read(path);
    serde_norway::Deserializer::from_str(&text).map(|d| Manifest::deserialize(d).unwrap()).collect()
}

#[test]
fn the_indexed_job_runs_one_shard_per_index_and_the_merge_job_reads_them_all() {
    let docs = manifests("deploy/k8s/shards.yaml");
    let job = docs.iter().find(|m| m.kind == "Job").expect("a Job");
    let s = &job.spec;
    assert_eq!(s["completionMode"], "Indexed");
    assert_eq!(s["completions"], s["parallelism"], "every shard at once");
    let container = &s["template"]["spec"]["containers"][0];
    let env_shards = |c: &serde_json::Value| {
        c["env"].as_array().unwrap().iter().find(|e| e["name"] == "SHARDS").unwrap()["value"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(env_shards(container), s["completions"].to_string(), "SHARDS = completions");
    let args = container["args"][0].as_str().unwrap();
    assert!(args.contains(r#"--shard "${JOB_COMPLETION_INDEX}/${SHARDS}""#), "{args}");
    assert!(args.contains("/parts/part-${JOB_COMPLETION_INDEX}.json"), "{args}");
    let merge = manifests("deploy/k8s/merge.yaml");
    let m = &merge[0].spec["template"]["spec"]["containers"][0];
    assert_eq!(env_shards(m), env_shards(container), "the merge reads as many parts as there are shards");
    assert!(
        m["args"][0].as_str().unwrap().contains("inferscale merge $$(seq -f '/parts/part-%g.json' 0 $$((SHARDS - 1)))")
    );
}
