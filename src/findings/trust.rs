//! Experiment 15: how far to trust the experiments above — the uncalibrated cost model they all use, held to
//! public measured runs it was never fitted to (docs/validation.md's series and split).

use super::{Findings, Unit, Verdict};
use crate::truth::{Bundle, calibrate, validation::Manifest};

const MANIFEST: &str = include_str!("../../tests/data/public/validation.json");
/// The manifest's files by their names in it (the core reads no files).
const FILES: [(&str, &str); 20] = [
    ("llama-2-7b.json", include_str!("../../tests/data/public/llama-2-7b.json")),
    ("llama-2-7b.bundle.json", include_str!("../../tests/data/public/llama-2-7b.bundle.json")),
    ("llama-2-70b.json", include_str!("../../tests/data/public/llama-2-70b.json")),
    ("llama-2-70b.bundle.json", include_str!("../../tests/data/public/llama-2-70b.bundle.json")),
    ("codellama-34b.json", include_str!("../../tests/data/public/codellama-34b.json")),
    ("codellama-34b.bundle.json", include_str!("../../tests/data/public/codellama-34b.bundle.json")),
    ("mixtral-8x7b.json", include_str!("../../tests/data/public/mixtral-8x7b.json")),
    ("mixtral-8x7b.bundle.json", include_str!("../../tests/data/public/mixtral-8x7b.bundle.json")),
    ("inferencex/dsr1-fp8-h200.json", include_str!("../../tests/data/public/inferencex/dsr1-fp8-h200.json")),
    ("inferencex/h200.bundle.json", include_str!("../../tests/data/public/inferencex/h200.bundle.json")),
    ("inferencex/dsr1-fp8-mi300x.json", include_str!("../../tests/data/public/inferencex/dsr1-fp8-mi300x.json")),
    ("inferencex/mi300x.bundle.json", include_str!("../../tests/data/public/inferencex/mi300x.bundle.json")),
    ("inferencex/dsr1-fp8-mi325x.json", include_str!("../../tests/data/public/inferencex/dsr1-fp8-mi325x.json")),
    ("inferencex/mi325x.bundle.json", include_str!("../../tests/data/public/inferencex/mi325x.bundle.json")),
    ("inferencex/dsr1-fp8-mi355x.json", include_str!("../../tests/data/public/inferencex/dsr1-fp8-mi355x.json")),
    ("inferencex/mi355x.bundle.json", include_str!("../../tests/data/public/inferencex/mi355x.bundle.json")),
    (
        "inferencex-blackwell/dsr1-fp8-b300.json",
        include_str!("../../tests/data/public/inferencex-blackwell/dsr1-fp8-b300.json"),
    ),
    (
        "inferencex-blackwell/b300.bundle.json",
        include_str!("../../tests/data/public/inferencex-blackwell/b300.bundle.json"),
    ),
    (
        "inferencex-blackwell/dsr1-fp8-b200.json",
        include_str!("../../tests/data/public/inferencex-blackwell/dsr1-fp8-b200.json"),
    ),
    (
        "inferencex-blackwell/b200.bundle.json",
        include_str!("../../tests/data/public/inferencex-blackwell/b200.bundle.json"),
    ),
];

/// The embedded text of the manifest's file `name`; a file the manifest names but `FILES` lacks is an error
/// naming it (read as empty, a new series once came out as an empty table of "inf %").
fn file(name: &str) -> Result<&'static str, String> {
    (FILES.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)).ok_or_else(|| {
        format!("{name}: named by tests/data/public/validation.json but not embedded in findings/trust.rs's FILES")
    })
}

/// The files the manifest names that `FILES` does not embed (none, or experiment 15 fails).
pub fn missing_files() -> Result<Vec<String>, String> {
    let m: Manifest = serde_json::from_str(MANIFEST).map_err(|e| e.to_string())?;
    let names = m.series.iter().flat_map(|s| [&s.scenario, &s.bundle]);
    Ok(names.filter(|n| file(n).is_err()).cloned().collect())
}

/// One series' uncalibrated held-out error: its name, the figures, the median APE and the mean APE of TTFT
/// and of E2E (each over the median and mean figures).
struct SeriesError {
    name: String,
    figures: usize,
    median: f64,
    ttft: f64,
    e2e: f64,
}

fn series_errors() -> Result<Vec<SeriesError>, String> {
    let m: Manifest = serde_json::from_str(MANIFEST).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for s in &m.series {
        let base = crate::scenario::parse(file(&s.scenario)?).map_err(|e| format!("{}: {e}", s.scenario))?;
        let bundle = Bundle::parse(file(&s.bundle)?)?;
        let (headline, metrics) = calibrate::uncalibrated_held_out(&base, &bundle.cases, &s.train)?;
        let mean_of = |prefix: &str| {
            let xs: Vec<f64> =
                metrics.iter().filter(|e| e.metric.starts_with(prefix)).filter_map(|e| e.baseline).collect();
            xs.iter().sum::<f64>() / xs.len().max(1) as f64
        };
        out.push(SeriesError {
            name: s.name.clone(),
            figures: headline.figures,
            median: headline.baseline.unwrap_or(f64::NAN),
            ttft: mean_of("TTFT"),
            e2e: mean_of("E2E"),
        });
    }
    Ok(out)
}

/// Experiment 15, the model's held-out error beside the conclusions it could overturn.
pub(super) fn trust(f: &mut Findings) {
    f.audit(
        "trust",
        "The uncalibrated cost model every experiment above runs on predicts the latency of measured runs it was never fitted to within 10 % (median absolute percentage error over TTFT and E2E) on every public series.",
        "its answer was known — docs/validation.md published the uncalibrated model's held-out errors before this was registered",
    );
    let series = match series_errors() {
        Ok(series) if !series.is_empty() => series,
        Ok(_) => return unread(f, "the manifest lists no series".into()),
        Err(e) => return unread(f, e),
    };
    let mut rows = Vec::new();
    for (i, e) in series.iter().enumerate() {
        let id = format!("trust.{i}");
        rows.push(vec![
            e.name.clone(),
            f.figure(&format!("{id}.figures"), e.figures as f64, Unit::Count),
            f.figure(&format!("{id}.median_ape"), e.median, Unit::Percent),
            f.figure(&format!("{id}.ttft_ape"), e.ttft, Unit::Percent),
            f.figure(&format!("{id}.e2e_ape"), e.e2e, Unit::Percent),
        ]);
    }
    let fold = |init: f64, pick: fn(f64, f64) -> f64, x: fn(&SeriesError) -> f64| series.iter().map(x).fold(init, pick);
    let (lo, hi) = (fold(f64::INFINITY, f64::min, |e| e.median), fold(0.0, f64::max, |e| e.median));
    let ttft = (fold(f64::INFINITY, f64::min, |e| e.ttft), fold(0.0, f64::max, |e| e.ttft));
    let e2e = (fold(f64::INFINITY, f64::min, |e| e.e2e), fold(0.0, f64::max, |e| e.e2e));
    let range = |f: &mut Findings, id: &str, (a, b): (f64, f64)| {
        format!(
            "{} – {}",
            f.figure(&format!("{id}_min"), a, Unit::Percent),
            f.figure(&format!("{id}_max"), b, Unit::Percent)
        )
    };
    let (median_shown, ttft_shown, e2e_shown) =
        (range(f, "trust.median_ape", (lo, hi)), range(f, "trust.ttft_ape", ttft), range(f, "trust.e2e_ape", e2e));
    let chart = f.bars(
        "Held-out median APE of the uncalibrated model",
        "%",
        series.iter().enumerate().map(|(i, e)| (e.name.clone(), format!("trust.{i}.median_ape"))).collect(),
    );
    let s = section(f);
    s.rows = rows;
    s.chart = Some(chart);
    let verdict = Verdict::of(lo, hi, 0.10, false);
    let closer = series.iter().filter(|e| e.e2e < e.ttft).count();
    f.found(
        "trust",
        format!(
            "Held out, the uncalibrated model is off by {median_shown} (median APE per series): by {ttft_shown} on TTFT and by {e2e_shown} on E2E, E2E the closer of the two on {closer} of {} series. On the light-load vLLM series the error is mostly in the time to first token — prefill and the serving stack's work before it, which docs/validation.md's calibration fits; on the heavy-load SGLang series every figure is off, the time per token too, and docs/validation.md shows how much of it calibration recovers. So a conclusion that sets prefill time against decode time rests on the figure the model gets most wrong: experiment 1's gap, 8's split of prefill and decode workers, 9's saved prefill, 10's recomputed history against a restore, 11's prefill-only steps. Each of those five is rerun with the model as far off as this (its robustness row \"the cost model off by its held-out error\": prefill 1.5× and decode 1.3× slower, capacity measured again), so its table says whether its verdict survives the error; still, calibrate on your own measured runs (docs/truth.md) before acting on its size. A comparison whose arms do the same work — 3, 4, 5, 6, 7, 12 — shares the error between its arms, and its direction is safer than its size; 13 runs the corpus as shipped; 14 is bookkeeping and holds whatever the model.",
            series.len()
        ),
        verdict,
    );
}

/// The experiment when the public series cannot be read: said, with nothing measured (never a table of
/// "inf %").
fn unread(f: &mut Findings, why: String) {
    section(f);
    f.found(
        "trust",
        format!("The public series could not be read ({why}): nothing is held out, so no conclusion above can be weighed against the model's error."),
        Verdict::Inconclusive,
    );
}

/// The experiment's section: its question, setup, regime and columns.
fn section(f: &mut Findings) -> &mut super::Section {
    let s = f.section(
        "trust",
        "15. How far to trust the above",
        "How close is the model every experiment above runs on to real measured serving — and which of the conclusions could its error overturn?",
    );
    s.setup = "The public measured series of docs/validation.md — four of vLLM v0.15.1 on H100 at light load, measured with inference-perf, and eight of SGLang serving DeepSeek-R1 FP8 on H200, MI300X, MI325X, MI355X, B300 and B200 at 1 to 64 concurrent clients, measured by InferenceX (the last two a set frozen before any fit) — and their splits: each series' held-out runs, which a calibration would not see, predicted by the uncalibrated roofline cost model, the one every shipped scenario and every experiment above uses. Held-out runs past saturation count in no latency error, as in docs/validation.md; the median APE is over every latency figure a run has (TTFT and E2E, and TPOT and ITL where they are per token), median and mean.".into();
    s.regime =
        "Each measured run at its own offered rate or concurrency; runs the measured server could not keep up with are left out."
            .into();
    s.columns =
        ["Series", "Held-out figures", "Median APE", "TTFT mean APE", "E2E mean APE"].map(String::from).to_vec();
    s
}
