//! Sharding a study over machines, and merging the parts into the report one run gives, byte for byte.
//!
//! A study's jobs fall into *lanes* ([`Study::lanes`]): a lane's next jobs depend only on its own results.
//! Shard i of n simulates the lanes l ≡ i (mod n) and drives the study as one run would; a job of another
//! lane gets a stand-in result (a failing run that is never simulated) so that the driver moves on — that
//! lane's later jobs are then wrong, but they are another shard's, and never kept. A part records its runs by
//! the job's key (a SHA-256 of its label and scenario), so merge replays the driver, looks every job up, and
//! the report is the driver's own. A study of one batch has a lane per job; an adaptive one (the capacity
//! planner's bisection, whose repetitions must all pass before it moves) has one, and runs whole in shard 0;
//! the fleet planner has a lane per candidate.
//!
//! Pure: parts in and out as values; the CLI reads and writes the files.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

use super::{BatchRunner, Job, RunSummary, Study, StudyError, StudyReport};
use crate::scenario::Spec;

/// The part format's version (2: each run carries its hash).
pub const PART_FORMAT: u32 = 2;

/// The most shards a study is cut into (`--shard i/n`).
pub const MOST_SHARDS: u32 = 10_000;

/// One shard's runs, with what they belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub inferscale_part: u32,
    pub inferscale_version: String,
    pub study: String,
    /// This part's shard, 0 … shards − 1.
    pub shard: u32,
    pub shards: u32,
    /// SHA-256 of the version, the study, the scenario and the options: parts that belong together share it.
    pub fingerprint: String,
    pub scenario: Spec,
    pub options: serde_json::Value,
    pub runs: Vec<KeyedRun>,
}

impl Part {
    /// This part with its fingerprint and every run's hash computed afresh from what it holds: what anyone can
    /// do to an edited part (the hashes catch accidents and mix-ups, not intent), so [`merge`] must hold a part
    /// so made as it holds any input — the fuzz test's hostile parts are made this way.
    pub fn resealed(mut self) -> Part {
        self.fingerprint = fingerprint(&self.study, &self.scenario, &self.options);
        for k in &mut self.runs {
            k.hash = run_hash(&self.fingerprint, &k.job, &k.run);
        }
        self
    }
}

/// A run and the key of the job it answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedRun {
    pub job: String,
    pub run: RunSummary,
    /// SHA-256 of the part's fingerprint, the job's key and the run: a run edited, or carried over from
    /// another study run's part, does not match it.
    pub hash: String,
}

impl KeyedRun {
    fn new(fingerprint: &str, job: String, run: RunSummary) -> Self {
        let hash = run_hash(fingerprint, &job, &run);
        KeyedRun { job, run, hash }
    }
}

fn run_hash(fingerprint: &str, job: &str, run: &RunSummary) -> String {
    let run = serde_json::to_vec(run).expect("a run serialises");
    sha256(&[fingerprint.as_bytes(), job.as_bytes(), &run])
}

/// Why parts could not be merged, or a shard not cut.
#[derive(Debug, PartialEq)]
pub enum ShardError {
    /// The parts do not make one whole (missing, duplicated, foreign, damaged); the message names the part.
    Parts(String),
    Study(StudyError),
}

impl std::fmt::Display for ShardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardError::Parts(m) => f.write_str(m),
            ShardError::Study(StudyError::Invalid(e)) => write!(f, "{e}"),
            ShardError::Study(StudyError::Cancelled) => f.write_str("cancelled"),
        }
    }
}

/// Hex SHA-256 of `parts`, each length-prefixed so that no two lists hash alike.
fn sha256(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The key of a job: its label and its whole scenario (a job is determined by them).
pub fn job_key(job: &Job) -> String {
    let spec = serde_json::to_vec(&job.spec).expect("a spec serialises");
    sha256(&[job.label.as_bytes(), &spec])
}

/// What a run of `study` on `spec` with `options` is: parts with another fingerprint belong to another run.
pub fn fingerprint(study: &str, spec: &Spec, options: &serde_json::Value) -> String {
    let spec = serde_json::to_vec(spec).expect("a spec serialises");
    let options = serde_json::to_vec(options).expect("JSON serialises");
    sha256(&[env!("CARGO_PKG_VERSION").as_bytes(), study.as_bytes(), &spec, &options])
}

/// "i/n" → (i, n), with 0 ≤ i < n ≤ [`MOST_SHARDS`].
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--shard: expected i/n with 0 ≤ i < n ≤ {MOST_SHARDS}, e.g. 0/4 (got `{s}`)");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || i >= n || n > MOST_SHARDS {
        return Err(bad());
    }
    Ok((i, n))
}

/// A failing run, never simulated: what another shard's job is answered with here.
fn stand_in(job: &Job) -> RunSummary {
    RunSummary {
        label: job.label.clone(),
        overloaded: true,
        sessions: Some(Default::default()),
        diagnosis_kind: "stand-in".into(),
        ..Default::default()
    }
}

/// Shard `shard` of `shards` of `study` (built from `spec` and `options`, named `name`): its lanes' runs.
pub fn run_shard(
    name: &str,
    spec: &Spec,
    options: &serde_json::Value,
    study: &mut dyn Study,
    (shard, shards): (u32, u32),
    run_batch: &mut BatchRunner<'_>,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Part, StudyError> {
    let mut runs = Vec::new();
    let print = fingerprint(name, spec, options);
    loop {
        let jobs = study.next();
        let lanes = study.lanes(&jobs);
        let mine: Vec<usize> = (0..jobs.len()).filter(|&j| lanes[j] % shards as u64 == shard as u64).collect();
        // A batch without this shard's lanes: they are all finished (`Study::lanes`).
        if mine.is_empty() {
            break;
        }
        let (done, total) = study.progress();
        if !progress(done, total) {
            return Err(StudyError::Cancelled);
        }
        let ran = run_batch(&mine.iter().map(|&j| jobs[j].clone()).collect::<Vec<_>>())?;
        let mut results: Vec<RunSummary> = jobs.iter().map(stand_in).collect();
        for (&j, r) in mine.iter().zip(ran) {
            runs.push(KeyedRun::new(&print, job_key(&jobs[j]), r.clone()));
            results[j] = r;
        }
        study.feed(results);
    }
    Ok(Part {
        inferscale_part: PART_FORMAT,
        inferscale_version: env!("CARGO_PKG_VERSION").into(),
        study: name.into(),
        shard,
        shards,
        fingerprint: print,
        scenario: spec.clone(),
        options: options.clone(),
        runs,
    })
}

/// Fold named parts (file name, part) into the report one unsharded run gives. Refuses an empty list, a part
/// of another format, version or run, a damaged part (its fingerprint, or a run's hash), a shard given twice, a
/// missing shard, and a job answered twice or by another shard's part — naming it.
pub fn merge(parts: &[(String, Part)]) -> Result<StudyReport, ShardError> {
    let bad = |m: String| Err(ShardError::Parts(m));
    let Some((first_name, first)) = parts.first() else { return bad("no parts to merge".into()) };
    for (name, p) in parts {
        if p.inferscale_part != PART_FORMAT {
            return bad(format!("{name}: part format {} (this inferscale reads {PART_FORMAT})", p.inferscale_part));
        }
        // Before anything is sized by it: `shards` is not in the fingerprint.
        if !(1..=MOST_SHARDS).contains(&p.shards) || p.shard >= p.shards {
            return bad(format!("{name}: shard {}/{} is not one of 1 … {MOST_SHARDS} shards", p.shard, p.shards));
        }
        if p.fingerprint != fingerprint(&p.study, &p.scenario, &p.options) {
            return bad(format!(
                "{name}: its fingerprint does not match its scenario and options (made by inferscale {}, this is {}, or edited)",
                p.inferscale_version,
                env!("CARGO_PKG_VERSION")
            ));
        }
        if p.fingerprint != first.fingerprint || p.shards != first.shards {
            return bad(format!("{name} does not belong with {first_name}: {}", foreign_why(first, p)));
        }
        if let Some(k) = p.runs.iter().find(|k| k.hash != run_hash(&p.fingerprint, &k.job, &k.run)) {
            return bad(format!(
                "{name}: the run \"{}\" does not match its hash (edited, or taken from another study run's part)",
                k.run.label
            ));
        }
        for k in &p.runs {
            if let Err(e) = figures_held(&serde_json::to_value(&k.run).unwrap_or_default(), "") {
                return bad(format!("{name}: the run \"{}\": {e}", k.run.label));
            }
        }
    }
    let mut by_shard: Vec<Option<&str>> = vec![None; first.shards as usize];
    for (name, p) in parts {
        match by_shard.get_mut(p.shard as usize) {
            None => return bad(format!("{name}: shard {} of {} does not exist", p.shard, p.shards)),
            Some(Some(other)) => {
                return bad(format!("shard {}/{} is given twice: {other} and {name}", p.shard, p.shards));
            }
            Some(slot) => *slot = Some(name),
        }
    }
    if let Some(i) = by_shard.iter().position(Option::is_none) {
        return bad(format!(
            "shard {i}/{n} is missing (run `inferscale study {} … --shard {i}/{n}`); {} of {n} parts given",
            first.study,
            parts.len(),
            n = first.shards
        ));
    }
    replay(first, parts)
}

/// The most a run's figure can be: the engine's clock, in integer nanoseconds, ends before 1.9e10 s, and no
/// rate or count it reports comes near.
const MOST_FIGURE: f64 = 1e15;

/// Whether a run's figures (`v`, its JSON; `key`, the field it is under) are ones a run can have: every number
/// within 0 … [`MOST_FIGURE`], and every share within 0 … 1. A part's hashes catch an edit, not a part
/// resealed after one; without this, 750 % attainment or a 1e308 s latency merged into a report, and a mean
/// over such figures was not a number.
fn figures_held(v: &serde_json::Value, key: &str) -> Result<(), String> {
    use serde_json::Value;
    const SHARES: [&str; 6] =
        ["slo_attainment", "prefix_hit_rate", "hbm_hit_rate", "host_hit_rate", "route_locality", "reuse"];
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let most = if key.ends_with("_fraction") || SHARES.contains(&key) { 1.0 } else { MOST_FIGURE };
            // Large and tiny figures in scientific notation: 1e308, not its 309 digits.
            let show =
                |x: f64| if x != 0.0 && !(1e-4..1e6).contains(&x.abs()) { format!("{x:e}") } else { format!("{x}") };
            if (0.0..=most).contains(&x) {
                Ok(())
            } else {
                Err(format!("{key} is {}, outside 0 … {}", show(x), show(most)))
            }
        }
        Value::Object(m) => m.iter().try_for_each(|(k, x)| figures_held(x, k)),
        Value::Array(a) => a.iter().try_for_each(|x| figures_held(x, key)),
        _ => Ok(()),
    }
}

/// Why two parts are not of one run.
fn foreign_why(a: &Part, b: &Part) -> String {
    if a.study != b.study {
        format!("it is of study {}, not {}", b.study, a.study)
    } else if a.shards != b.shards {
        format!("it is one of {} shards, not {}", b.shards, a.shards)
    } else if a.inferscale_version != b.inferscale_version {
        format!("it was made by inferscale {}, not {}", b.inferscale_version, a.inferscale_version)
    } else if a.scenario != b.scenario {
        format!(
            "its scenario differs (`{}`, seed {} vs `{}`, seed {})",
            b.scenario.name, b.scenario.seed, a.scenario.name, a.scenario.seed
        )
    } else {
        format!("its study options differ ({} vs {})", b.options, a.options)
    }
}

/// Drive the study as one run would, answering each job from the parts.
fn replay(first: &Part, parts: &[(String, Part)]) -> Result<StudyReport, ShardError> {
    // Each job is answered once, by the part of its lane's shard.
    let mut runs: HashMap<&str, (&RunSummary, &str, u32)> = HashMap::new();
    for (name, p) in parts {
        for k in &p.runs {
            if let Some((r, other, _)) = runs.insert(&k.job, (&k.run, name, p.shard)) {
                return Err(ShardError::Parts(format!(
                    "the run \"{}\" is given twice: in {other} and {name}",
                    r.label
                )));
            }
        }
    }
    let mut study = super::build(&first.study, &first.scenario, &first.options)
        .map_err(|e| ShardError::Study(StudyError::Invalid(e)))?;
    loop {
        let jobs = study.next();
        if jobs.is_empty() {
            return Ok(study.report());
        }
        let lanes = study.lanes(&jobs);
        let mut results = Vec::with_capacity(jobs.len());
        for (job, lane) in jobs.iter().zip(lanes) {
            let Some(&(r, name, shard)) = runs.get(job_key(job).as_str()) else {
                return Err(ShardError::Parts(format!(
                    "shard {}/{} has no run for the job \"{}\": the parts were not cut from one study run",
                    lane % first.shards as u64,
                    first.shards,
                    job.label
                )));
            };
            if u64::from(shard) != lane % first.shards as u64 {
                return Err(ShardError::Parts(format!(
                    "{name} (shard {shard}/{}) answers the job \"{}\" of shard {}/{}: the parts were not cut from one study run",
                    first.shards,
                    job.label,
                    lane % first.shards as u64,
                    first.shards
                )));
            }
            results.push(r.clone());
        }
        study.feed(results);
    }
}
