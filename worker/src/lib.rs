//! The simulator in a Web Worker.
//!
//! The page sends [`Input::Run`] with the scenario as JSON text; the worker answers with [`Output::Progress`]
//! messages while it runs and one [`Output::Done`] or [`Output::Invalid`]. Cancel is done by the page: it drops
//! the bridge (which terminates the worker) and spawns a fresh one, so a long run stops at once.
//!
//! These message types are the wire format, separate from the core's types: plain structs and enums that
//! gloo-worker's bincode codec can carry (no serde `tag`, `untagged` or `flatten`); a native test round-trips
//! them through serde_json as a stand-in for any self-describing codec.

use serde::{Deserialize, Serialize};

/// Page → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Input {
    Run {
        run_id: u32,
        scenario_json: String,
    },
    /// One run of a study: answered with [`Output::JobDone`] (its `study::RunSummary` as JSON); with
    /// `progress`, [`Output::Progress`] on the way (a study of one long run).
    Job {
        run_id: u32,
        job: u32,
        label: String,
        scenario_json: String,
        progress: bool,
    },
    /// Read benchmark result files, (name, text) each: answered with [`Output::Imported`].
    Import {
        run_id: u32,
        files: Vec<(String, String)>,
    },
    /// Calibrate the scenario on a bundle's cases, training on the named ones: progress, then
    /// [`Output::Calibrated`] or [`Output::Invalid`].
    Calibrate {
        run_id: u32,
        bundle_json: String,
        scenario_json: String,
        train: Vec<String>,
        fit: Vec<String>,
        /// The gate's tolerance in percent (None: the default).
        tolerance_pct: Option<f64>,
    },
    /// A step of the findings report (`inferscale report`), or of one experiment (`only`) on a scenario in
    /// place of the shipped ones (`base_json`): the page asks one worker for the plan, then shares the runs
    /// among its workers ([`FindingsStep`]), and one worker assembles the report from their parts.
    Findings {
        run_id: u32,
        base_json: Option<String>,
        only: Option<String>,
        step: FindingsStep,
    },
    /// For the tests: panic inside the worker, to prove the page recovers.
    Crash {
        run_id: u32,
    },
}

/// What a worker does towards a findings report ([`inferscale::findings::Plan`]): each answered with its own
/// [`Output`], or [`Output::Invalid`] naming why the report cannot run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FindingsStep {
    /// The plan: answered with [`Output::FindingsPlanned`].
    Plan,
    /// Experiment 1 as run and the capacity it measures: [`Output::FindingsPart`] with no job.
    First,
    /// Job `job`, given the first part's capacity when it reads it (none: not a number, as when the first
    /// part measured none): [`Output::FindingsPart`].
    Job { job: u32, capacity: Option<f64> },
    /// The report from the first part and every job's, in order: [`Output::Findings`].
    Assemble { first: Vec<u8>, parts: Vec<Vec<u8>> },
}

/// Worker → page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Output {
    Progress {
        run_id: u32,
        done: u64,
        expected: u64,
    },
    /// A run's diagnosis now tests `change` on the same requests (its progress follows, from 0).
    Testing {
        run_id: u32,
        change: String,
    },
    Done {
        run_id: u32,
        results: Results,
    },
    JobDone {
        run_id: u32,
        job: u32,
        summary_json: String,
    },
    Imported {
        run_id: u32,
        imported: Imported,
    },
    Calibrated {
        run_id: u32,
        calibrated: Calibrated,
    },
    /// A findings report's plan: for each job after the first part, whether it needs that part's capacity.
    FindingsPlanned {
        run_id: u32,
        needs_capacity: Vec<bool>,
    },
    /// A part of a findings report, encoded for its assembly: the first part (no `job`, with the capacity it
    /// measured, none when not a number) or job `job`'s.
    FindingsPart {
        run_id: u32,
        job: Option<u32>,
        capacity: Option<f64>,
        part: Vec<u8>,
    },
    /// The findings: the Markdown `inferscale report` writes, and the JSON (`--format json`), byte for byte.
    Findings {
        run_id: u32,
        markdown: String,
        json: String,
    },
    /// The scenario was refused: (field path, message) pairs.
    Invalid {
        run_id: u32,
        errors: Vec<(String, String)>,
    },
    /// The worker panicked (a bug); it is dead and the page must spawn a new one.
    Failed {
        run_id: u32,
        message: String,
    },
}

/// Everything the page shows and exports, as text and small arrays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The full report: byte-identical to `inferscale run` on the same scenario and seed.
    pub report_json: String,
    pub requests_csv: String,
    pub summary_csv: String,
    pub markdown: String,
    /// What was run, in words (the report's `setup`, as the Markdown report says it).
    pub setup: String,
    /// (seconds, cumulative fraction), at most `CDF_POINTS` points.
    pub ttft_cdf: Vec<(f64, f64)>,
    pub tpot_cdf: Vec<(f64, f64)>,
    pub e2e_cdf: Vec<(f64, f64)>,
    /// Wall time of simulating and rendering every export inside the worker, ms.
    pub compute_ms: f64,
    /// Of which simulating, ms.
    pub simulate_ms: f64,
}

/// Result files read: the bundle of every run that could be read (none if no run could), and one message per
/// run or file that could not, naming the file, the line and the key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    pub bundle_json: Option<String>,
    pub errors: Vec<String>,
}

/// A calibration in every export format; the JSON is `inferscale calibrate`'s byte for byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    pub json: String,
    pub csv: String,
    pub markdown: String,
}

/// Read result files (`inferscale import`'s parser): one bad run never loses the others.
pub fn import_files(files: &[(String, String)]) -> Imported {
    let mut importer = inferscale::truth::Importer::default();
    for (name, text) in files {
        importer.add(name, text);
    }
    let (cases, errors) = importer.finish();
    let errors = errors.iter().map(|e| e.to_string()).collect();
    let bundle_json = (!cases.is_empty()).then(|| inferscale::truth::Bundle::new(cases).json());
    Imported { bundle_json, errors }
}

/// Calibrate the scenario on a bundle (`inferscale calibrate BUNDLE --scenario SCENARIO --train …`),
/// reporting progress as (simulations done, expected). Errors name the bundle, the scenario's fields, or
/// what calibration lacks.
pub fn run_calibration(
    bundle_json: &str,
    scenario_json: &str,
    train: &[String],
    fit: &[String],
    tolerance_pct: Option<f64>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Calibrated, Vec<(String, String)>> {
    let bundle = inferscale::truth::Bundle::parse(bundle_json).map_err(|e| vec![("bundle".to_string(), e)])?;
    let base = inferscale::scenario::parse(scenario_json)
        .map_err(|e| e.errors.into_iter().map(|f| (f.path, f.message)).collect::<Vec<_>>())?;
    let opts = inferscale::truth::Options::parse(fit, tolerance_pct)
        .map_err(|(field, why)| vec![(format!("calibration.{field}"), why)])?;
    // Each case's run within what a worker may hold.
    let opts = inferscale::truth::Options { budget: inferscale::scenario::Budget::BROWSER, ..opts };
    let c = inferscale::truth::calibrate_with(&base, &bundle.cases, train, &opts, progress)
        .map_err(|e| vec![("calibration".to_string(), e)])?;
    Ok(Calibrated {
        json: inferscale::export::calibration_json(&c),
        csv: inferscale::export::calibration_csv(&c),
        markdown: inferscale::export::calibration_markdown(&c),
    })
}

/// A step of the findings report, or of experiment `only` on the scenario `base_json` (within the lab's
/// budget), answered as the page expects it. Parts cross between workers as CBOR: self-describing, so the
/// report types' optional fields survive, and exact for every float, not-a-number included.
pub fn findings_step(run_id: u32, base_json: Option<&str>, only: Option<String>, step: FindingsStep) -> Output {
    use inferscale::findings;
    let invalid = |errors: Vec<(String, String)>| Output::Invalid { run_id, errors };
    let refused = |why: Vec<String>| invalid(why.into_iter().map(|w| ("findings".to_string(), w)).collect());
    let base = match base_json.map(inferscale::scenario::parse).transpose() {
        Ok(base) => base,
        Err(e) => return invalid(e.errors.into_iter().map(|f| (f.path, f.message)).collect()),
    };
    // The Serving Lab's scenario, and the variants the experiments make of it, within the lab's budget.
    let budget = base.is_some().then_some(inferscale::scenario::Budget::BROWSER);
    let plan = match findings::plan(&findings::Config { base, only, budget, ..findings::Config::default() }) {
        Ok(plan) => plan,
        Err(why) => return refused(why),
    };
    match step {
        FindingsStep::Plan => Output::FindingsPlanned {
            run_id,
            needs_capacity: (0..plan.jobs()).map(|k| plan.needs_capacity(k)).collect(),
        },
        FindingsStep::First => {
            let first = plan.first();
            let capacity = (!first.capacity.is_nan()).then_some(first.capacity);
            Output::FindingsPart { run_id, job: None, capacity, part: encode(&first) }
        }
        FindingsStep::Job { job, capacity } if (job as usize) < plan.jobs() => {
            let part = plan.job(job as usize, capacity.unwrap_or(f64::NAN));
            Output::FindingsPart { run_id, job: Some(job), capacity, part: encode(&part) }
        }
        FindingsStep::Job { job, .. } => refused(vec![format!("no job {job} in a report of {}", plan.jobs())]),
        FindingsStep::Assemble { first, parts } => {
            let first = decode::<findings::First>(&first);
            let parts: Result<Vec<findings::Part>, String> = parts.iter().map(|p| decode(p)).collect();
            let (first, parts) = match (first, parts) {
                (Ok(first), Ok(parts)) => (first, parts),
                (Err(e), _) | (_, Err(e)) => {
                    return refused(vec![format!("a part of the report could not be read: {e}")]);
                }
            };
            let f = match plan.assemble(first, parts) {
                Ok(f) => f,
                Err(why) => return refused(why),
            };
            match (f.markdown(), f.json()) {
                (Ok(markdown), Ok(json)) => Output::Findings { run_id, markdown, json },
                (Err(e), _) | (_, Err(e)) => refused(vec![e.to_string()]),
            }
        }
    }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).expect("a report's part encodes");
    out
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    ciborium::from_reader(bytes).map_err(|e| e.to_string())
}

/// Points per CDF sent to the page.
pub use inferscale::export::CDF_POINTS;

/// Validate and run a scenario, reporting progress as (the change under test, "" for the scenario itself;
/// requests final, requests expected). `clock_ms` reads a wall clock for the timing fields (the core reads
/// none).
pub fn run_scenario(
    scenario_json: &str,
    progress: &mut dyn FnMut(&str, u64, u64),
    clock_ms: &dyn Fn() -> f64,
) -> Result<Results, Vec<(String, String)>> {
    let t0 = clock_ms();
    let (spec, sc) = inferscale::scenario::load_spec_for_browser(scenario_json)
        .map_err(|e| e.errors.into_iter().map(|f| (f.path, f.message)).collect::<Vec<_>>())?;
    // The run, then the diagnosis's tested changes on the same requests: the bar restarts for each, named.
    let report = inferscale::simulate_tested(&spec, &sc, &inferscale::scenario::Budget::BROWSER, &mut |_, w, p| {
        progress(w, p.done, p.expected);
        true
    })
    .expect("a run is only cancelled by terminating the worker");
    let simulate_ms = clock_ms() - t0;
    let inferscale::export::LatencyCdfs { ttft: ttft_cdf, tpot: tpot_cdf, e2e: e2e_cdf } =
        inferscale::export::latency_cdfs(&report);
    let mut results = Results {
        report_json: inferscale::export::json(&report),
        requests_csv: inferscale::export::requests_csv(&report, &sc),
        summary_csv: inferscale::export::summary_csv(&report),
        markdown: inferscale::export::markdown(&report),
        setup: report.setup.sentence(),
        ttft_cdf,
        tpot_cdf,
        e2e_cdf,
        compute_ms: 0.0,
        simulate_ms,
    };
    results.compute_ms = clock_ms() - t0;
    Ok(results)
}

/// Run one study job; its summary as JSON (f64s round-trip exactly through serde_json).
pub fn run_job(
    label: &str,
    scenario_json: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<String, Vec<(String, String)>> {
    let errors = |e: inferscale::ScenarioError| e.errors.into_iter().map(|f| (f.path, f.message)).collect::<Vec<_>>();
    let spec = inferscale::scenario::parse(scenario_json).map_err(errors)?;
    let job = inferscale::study::Job { label: label.to_string(), spec };
    let summary =
        inferscale::study::run_job_within(&job, &inferscale::scenario::Budget::BROWSER, progress).map_err(errors)?;
    Ok(serde_json::to_string(&summary).expect("a summary serialises"))
}

/// Run a small scenario through every stage (simulate, report, exports) once, when the worker starts. A
/// WebAssembly engine compiles a function when it is first called and swaps in optimised code only later,
/// so without this the user's first run pays for compiling the simulator (a 2,000-request run took ~270 ms
/// cold against ~10 ms warm). It runs in the worker, before the first message, never on the page's thread.
pub fn warm_up() {
    // A failed warm-up only costs the first run its speed; the test below holds that it succeeds.
    let _ = warm_up_run();
}

/// The warm-up's run: the shipped default scenario at 3,000 requests, through simulate, report and exports.
fn warm_up_run() -> Result<Results, Vec<(String, String)>> {
    const SCENARIO: &str = include_str!("../../scenarios/default.json");
    let failed = |e: String| vec![(String::new(), e)];
    let mut spec = inferscale::scenario::parse(SCENARIO).map_err(|e| failed(format!("{e:?}")))?;
    spec.workload.requests = Some(3000);
    let text = serde_json::to_string(&spec).map_err(|e| failed(e.to_string()))?;
    run_scenario(&text, &mut |_, _, _| {}, &|| 0.0)
}

#[cfg(target_arch = "wasm32")]
mod web {
    use super::*;
    use gloo_worker::{HandlerId, Worker, WorkerScope};
    use std::cell::RefCell;

    #[wasm_bindgen::prelude::wasm_bindgen]
    extern "C" {
        /// The worker's monotonic clock, ms (sub-ms resolution, unlike `Date.now()`).
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
    }

    thread_local! {
        /// The run in progress, so a panic can be reported to the page that asked for it.
        static CURRENT: RefCell<Option<(WorkerScope<SimWorker>, HandlerId, u32)>> = const { RefCell::new(None) };
    }

    /// The gloo-worker that runs scenarios.
    pub struct SimWorker;

    impl Worker for SimWorker {
        type Message = ();
        type Input = Input;
        type Output = Output;

        fn create(_scope: &WorkerScope<Self>) -> Self {
            // On wasm32 a panic aborts the instance; before it does, tell the page, which restarts the worker.
            std::panic::set_hook(Box::new(|info| {
                let message = info.to_string();
                CURRENT.with(|c| {
                    if let Ok(c) = c.try_borrow()
                        && let Some((scope, id, run_id)) = c.as_ref()
                    {
                        scope.respond(*id, Output::Failed { run_id: *run_id, message: message.clone() });
                    }
                });
            }));
            warm_up();
            SimWorker
        }

        fn update(&mut self, _scope: &WorkerScope<Self>, _msg: ()) {}

        fn received(&mut self, scope: &WorkerScope<Self>, msg: Input, id: HandlerId) {
            let run_id = match &msg {
                Input::Run { run_id, .. }
                | Input::Job { run_id, .. }
                | Input::Import { run_id, .. }
                | Input::Calibrate { run_id, .. }
                | Input::Findings { run_id, .. }
                | Input::Crash { run_id } => *run_id,
            };
            CURRENT.with(|c| *c.borrow_mut() = Some((scope.clone(), id, run_id)));
            match msg {
                Input::Crash { .. } => panic!("a crash requested by the tests"),
                Input::Import { run_id, files } => {
                    scope.respond(id, Output::Imported { run_id, imported: import_files(&files) })
                }
                Input::Calibrate { run_id, bundle_json, scenario_json, train, fit, tolerance_pct } => {
                    let mut last = 0u64;
                    let out = match run_calibration(
                        &bundle_json,
                        &scenario_json,
                        &train,
                        &fit,
                        tolerance_pct,
                        &mut |done, expected| {
                            if done >= last + (expected / 200).max(1) {
                                last = done;
                                scope.respond(id, Output::Progress { run_id, done, expected });
                            }
                        },
                    ) {
                        Ok(calibrated) => Output::Calibrated { run_id, calibrated },
                        Err(errors) => Output::Invalid { run_id, errors },
                    };
                    scope.respond(id, out);
                }
                Input::Findings { run_id, base_json, only, step } => {
                    scope.respond(id, findings_step(run_id, base_json.as_deref(), only, step))
                }
                Input::Job { run_id, job, label, scenario_json, progress } => {
                    let mut last = 0u64;
                    let out = match run_job(&label, &scenario_json, &mut |done, expected| {
                        if progress && (done >= last + (expected / 200).max(1) || done == expected) {
                            last = done;
                            scope.respond(id, Output::Progress { run_id, done, expected });
                        }
                    }) {
                        Ok(summary_json) => Output::JobDone { run_id, job, summary_json },
                        Err(errors) => Output::Invalid { run_id, errors },
                    };
                    scope.respond(id, out);
                }
                Input::Run { run_id, scenario_json } => {
                    // Report progress at most every half percent, so a million-request run sends ~200 messages;
                    // each tested change starts its own count, said first.
                    let (mut last, mut stage) = (0u64, String::new());
                    let out = match run_scenario(
                        &scenario_json,
                        &mut |change, done, expected| {
                            if change != stage {
                                (stage, last) = (change.to_string(), 0);
                                scope.respond(id, Output::Testing { run_id, change: stage.clone() });
                            }
                            let step = (expected / 200).max(1);
                            if done >= last + step || done == expected {
                                last = done;
                                scope.respond(id, Output::Progress { run_id, done, expected });
                            }
                        },
                        &performance_now,
                    ) {
                        Ok(results) => Output::Done { run_id, results },
                        Err(errors) => Output::Invalid { run_id, errors },
                    };
                    scope.respond(id, out);
                }
            }
            CURRENT.with(|c| *c.borrow_mut() = None);
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use web::SimWorker;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_matches_the_cli_report() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/default.json")).unwrap();
        let mut calls = 0;
        let r = run_scenario(&text, &mut |_, _, _| calls += 1, &|| 0.0).unwrap();
        assert!(calls > 0);
        // The CLI's run: the report with its diagnosis's changes tested (the browser budget holds them here).
        let spec = inferscale::scenario::parse(&text).unwrap();
        let sc = inferscale::scenario::validate(&spec).unwrap();
        let budget = inferscale::scenario::Budget::BROWSER;
        let cli = inferscale::simulate_tested(&spec, &sc, &budget, &mut |_, _, _| true).unwrap();
        assert!(!cli.diagnosis.tested.is_empty(), "default.json's diagnosis proposes a change");
        assert_eq!(r.report_json, inferscale::export::json(&cli));
        assert!(r.ttft_cdf.len() <= CDF_POINTS + 1 && r.ttft_cdf.last().unwrap().1 == 1.0);
        assert!(r.e2e_cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }

    /// docs/ARCHITECTURE.md's "Workers warm up": the run a worker makes when it starts succeeds, through
    /// every stage the user's first run takes (the report, its Markdown and CSVs, the CDFs).
    #[test]
    fn a_worker_warms_up_on_every_stage_of_a_run() {
        let r = warm_up_run().expect("the warm-up scenario runs");
        assert!(r.report_json.contains("\"requests\": 3000"), "the warm-up runs 3,000 requests");
        assert!(
            !r.markdown.is_empty() && !r.requests_csv.is_empty() && !r.summary_csv.is_empty() && !r.ttft_cdf.is_empty()
        );
    }

    #[test]
    fn bad_input_is_an_answer_not_a_crash() {
        let errs = run_scenario(
            "{\"workload\": {\"arrival\": {\"kind\": \"poisson\", \"rate_rps\": -1}, \"requests\": 5}}",
            &mut |_, _, _| {},
            &|| 0.0,
        )
        .unwrap_err();
        assert_eq!(errs[0].0, "workload.arrival.rate_rps");
        assert!(run_scenario("not json", &mut |_, _, _| {}, &|| 0.0).is_err());
    }

    #[test]
    fn a_study_job_summary_round_trips_exactly() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/default.json")).unwrap();
        let json = run_job("x", &text, &mut |_, _| {}).unwrap();
        let back: inferscale::study::RunSummary = serde_json::from_str(&json).unwrap();
        let spec = inferscale::scenario::parse(&text).unwrap();
        let direct = inferscale::study::run_job(&inferscale::study::Job { label: "x".into(), spec }).unwrap();
        assert_eq!(back, direct, "bit-exact through JSON");
    }

    /// The worker's calibration is the CLI's: the same bundle (read by the same parser) and base scenario give
    /// the JSON `inferscale calibrate` prints, and a bad bundle or an unknown training case is an answer.
    #[test]
    fn a_calibration_in_the_worker_is_the_clis() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/results/");
        let files: Vec<(String, String)> = ["vllm-runs-jsonl.json", "vllm-current.json", "broken.jsonl"]
            .iter()
            .map(|f| (f.to_string(), std::fs::read_to_string(format!("{dir}{f}")).unwrap()))
            .collect();
        let imported = import_files(&files);
        assert!(
            !imported.errors.is_empty() && imported.errors.iter().all(|e| e.starts_with("broken.jsonl")),
            "{:?}",
            imported.errors
        );
        let bundle_json = imported.bundle_json.unwrap();
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/default.json")).unwrap();
        let (mut calls, mut last) = (0, (0, 0));
        let c = run_calibration(&bundle_json, &text, &[], &[], None, &mut |d, e| {
            calls += 1;
            last = (d, e);
        })
        .unwrap();
        assert!(calls > 100 && last.0 == last.1, "{calls} progress calls, last {last:?}");
        let bundle = inferscale::truth::Bundle::parse(&bundle_json).unwrap();
        let direct =
            inferscale::truth::calibrate(&inferscale::scenario::parse(&text).unwrap(), &bundle.cases, &[]).unwrap();
        assert_eq!(c.json, inferscale::export::calibration_json(&direct));
        assert_eq!(run_calibration("{", &text, &[], &[], None, &mut |_, _| {}).unwrap_err()[0].0, "bundle");
        assert_eq!(
            run_calibration(&bundle_json, &text, &[], &["warp".into()], None, &mut |_, _| {}).unwrap_err()[0].0,
            "calibration.fit"
        );
        let unknown = run_calibration(&bundle_json, &text, &["nope".into()], &[], None, &mut |_, _| {}).unwrap_err();
        assert!(unknown[0].1.contains("`nope`"), "{unknown:?}");
        assert!(import_files(&[("x.json".into(), "not json".into())]).bundle_json.is_none());
    }

    #[test]
    fn messages_round_trip() {
        let m = Output::Invalid { run_id: 3, errors: vec![("a.b".into(), "bad".into())] };
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Output>(&s).unwrap(), m);
        let i = Input::Run { run_id: 1, scenario_json: "{}".into() };
        assert_eq!(serde_json::from_str::<Input>(&serde_json::to_string(&i).unwrap()).unwrap(), i);
        let steps = [
            FindingsStep::Plan,
            FindingsStep::First,
            FindingsStep::Job { job: 3, capacity: Some(21.5) },
            FindingsStep::Assemble { first: vec![1, 2], parts: vec![vec![3], vec![]] },
        ];
        for step in steps {
            let i = Input::Findings { run_id: 2, base_json: Some("{}".into()), only: Some("tail".into()), step };
            assert_eq!(serde_json::from_str::<Input>(&serde_json::to_string(&i).unwrap()).unwrap(), i);
        }
        let o = Output::Findings { run_id: 2, markdown: "# x\n".into(), json: "{}".into() };
        assert_eq!(serde_json::from_str::<Output>(&serde_json::to_string(&o).unwrap()).unwrap(), o);
    }

    /// A findings report as the page runs it: the plan, the first part, the jobs (here last first, as the
    /// page's workers may finish them), each through the wire, then the assembly.
    fn findings_as_the_page_runs_them(base_json: Option<&str>, only: Option<&str>) -> Output {
        let wire = |o: Output| serde_json::from_str::<Output>(&serde_json::to_string(&o).unwrap()).unwrap();
        let step = |step: FindingsStep| wire(findings_step(7, base_json, only.map(String::from), step));
        let needs = match step(FindingsStep::Plan) {
            Output::FindingsPlanned { run_id: 7, needs_capacity } => needs_capacity,
            other => return other,
        };
        let Output::FindingsPart { run_id: 7, job: None, capacity, part: first } = step(FindingsStep::First) else {
            panic!("the first part")
        };
        let mut parts = vec![Vec::new(); needs.len()];
        for k in (0..needs.len()).rev() {
            let given = if needs[k] { capacity } else { None };
            match step(FindingsStep::Job { job: k as u32, capacity: given }) {
                Output::FindingsPart { run_id: 7, job: Some(j), part, .. } if j as usize == k => parts[k] = part,
                other => panic!("job {k}: {other:?}"),
            }
        }
        step(FindingsStep::Assemble { first, parts })
    }

    /// The worker's findings are the CLI's: the same Markdown and JSON (here of one experiment and its reruns
    /// on its setups, one that measures experiment 1's capacity and one that reads it; the whole report in the
    /// page is held to docs/results.md and .json, which a native test holds to the CLI's, by
    /// tests/e2e/findings.test.mjs); parts that are not the plan's are refused, not a crash; a rerun on a
    /// scenario without sessions of the agent experiment is refused, naming it; a scenario that does not
    /// parse, at its field.
    #[test]
    fn findings_are_the_reports_and_a_rerun_says_why_not() {
        for only in ["textbook", "tail"] {
            let Output::Findings { markdown, json, .. } = findings_as_the_page_runs_them(None, Some(only)) else {
                panic!("{only}: no report")
            };
            let f = inferscale::findings::report(inferscale::findings::Config {
                only: Some(only.into()),
                ..Default::default()
            });
            assert_eq!((markdown, json), (f.markdown().unwrap(), f.json().unwrap()), "{only}");
        }
        let refused = |o: Output| match o {
            Output::Invalid { errors, .. } => errors,
            other => panic!("not refused: {other:?}"),
        };
        let assemble = |first: Vec<u8>, parts: Vec<Vec<u8>>| {
            findings_step(1, None, Some("tail".into()), FindingsStep::Assemble { first, parts })
        };
        let e = refused(assemble(vec![0xff, 0x00], vec![]));
        assert!(e[0].1.contains("could not be read"), "{e:?}");
        let Output::FindingsPart { part: first, .. } =
            findings_step(1, None, Some("textbook".into()), FindingsStep::First)
        else {
            panic!("the first part")
        };
        let e = refused(assemble(first, vec![]));
        assert!(e[0].1.contains("0 parts for a report of"), "{e:?}");
        let e = refused(findings_step(1, None, Some("tail".into()), FindingsStep::Job { job: 99, capacity: None }));
        assert!(e[0].1.contains("no job 99"), "{e:?}");
        let default = include_str!("../../scenarios/default.json");
        let e = refused(findings_as_the_page_runs_them(Some(default), Some("retention")));
        assert!(e[0].1.contains("experiment `retention`: does not apply: needs agent sessions"), "{e:?}");
        let e = refused(findings_as_the_page_runs_them(Some("{\"engine\": {\"max_num_seqs\": -1}}"), Some("tail")));
        assert!(e.iter().any(|(path, _)| path.contains("max_num_seqs")), "{e:?}");
        let e = refused(findings_as_the_page_runs_them(None, Some("nope")));
        assert!(e[0].1.contains("no experiment `nope`"), "{e:?}");
    }
}
