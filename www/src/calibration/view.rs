//! The Calibration panel's views, computed from the core's bundle and calibration (no DOM, so its tests run
//! natively): the imported cases with their training marks, the answer, the held-out error table, every
//! case's rows with a verdict each, and the measured-vs-predicted charts.

use inferscale::study::{Chart, ChartSeries};
use inferscale::truth::{Case, Multipliers, Rate};
use serde_json::Value;

use crate::components::table::esc;

/// What the page says before anything is imported: how to produce the files it reads.
pub const HOW_TO: &str = "Nothing imported yet. The lab ships no measurements of its own: drop the files your benchmarks wrote — \
`vllm bench serve … --save-result --result-dir DIR` (or the older `benchmarks/benchmark_serving.py --save-result`) writes one JSON per run, \
SGLang's `python -m sglang.bench_serving … --output-file runs.jsonl` appends one line per run; \
inference-perf writes `stage_N_lifecycle_metrics.json` with its `config.yaml` (drop both), InferenceX `agg_*.json`, MLPerf LoadGen `mlperf_log_summary.txt` — or a bundle from `inferscale import`. \
Each run becomes a case; calibration fits the cost model's prefill and decode scales on the cases marked for training and shows the error on the others.";

/// A case's offered load in words.
pub fn load(c: &Case) -> String {
    let w = &c.workload;
    match (w.request_rate, w.max_concurrency) {
        (Some(Rate::PerSecond(r)), _) => match w.burstiness {
            Some(b) if (b - 1.0).abs() > 1e-9 => format!("{} req/s, burstiness {}", num(r), num(b)),
            _ => format!("{} req/s", num(r)),
        },
        (Some(Rate::Infinite), Some(n)) => format!("{n} clients, closed loop"),
        (Some(Rate::Infinite), None) => "burst at t = 0".into(),
        (None, _) => "unknown".into(),
    }
}

/// A number with as few decimals as it needs (at most 3).
fn num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn ms(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") })
}

fn pct(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{:.1} %", v * 100.0))
}

/// The imported cases as a table, each with its training checkbox (named for its case).
pub fn cases_table(cases: &[Case], train: &[bool]) -> String {
    let head = [
        "Train",
        "Case",
        "Engine · model",
        "Load",
        "Prompts",
        "In / out tokens (mean)",
        "TTFT median (ms)",
        "TPOT median (ms)",
        "E2E median (ms)",
    ];
    let th: String = head
        .iter()
        .enumerate()
        .map(|(k, h)| format!("<th{}>{}</th>", if matches!(k, 1..=3) { " class=\"text\"" } else { "" }, esc(h)))
        .collect();
    let rows: String = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let on = if train.get(i).copied().unwrap_or(false) { " checked" } else { "" };
            let w = &c.workload;
            let prompts = w.num_prompts.or(c.measured.completed).map_or("—".into(), |n| n.to_string());
            let mean = |x: Option<f64>| x.map_or("—".into(), |v| format!("{v:.0}"));
            let engine = match &c.model_id {
                Some(m) => format!("{} · {m}", c.engine),
                None => c.engine.clone(),
            };
            let cells = [
                esc(&c.id),
                esc(&engine),
                esc(&load(c)),
                prompts,
                format!("{} / {}", mean(w.mean_input_tokens), mean(w.mean_output_tokens)),
                ms(c.measured.ttft_ms.median),
                ms(c.measured.tpot_ms.median),
                ms(c.measured.e2e_ms.median),
            ];
            let cells: String = cells.iter().enumerate().map(|(k, x)| format!("<td{}>{x}</td>", if k < 3 { " class=\"text\"" } else { "" })).collect();
            // Notes get a row of their own under the case, the width of the table.
            let notes = if c.notes.is_empty() { String::new() } else { format!("<tr class=\"case-notes\"><td></td><td colspan=\"{}\" class=\"text\">{}</td></tr>", head.len() - 1, esc(&c.notes.join("; "))) };
            format!(
                "<tr data-set=\"{}\"><td><input type=\"checkbox\" data-case=\"{i}\" aria-label=\"Train on {}\"{on}></td>{cells}</tr>{notes}",
                if on.is_empty() { "held-out" } else { "training" },
                esc(&c.id)
            )
        })
        .collect();
    format!(
        "<div class=\"table-wrap\"><table id=\"cal-cases-table\"><caption>{} case(s); checked cases train the fit, the others are held out</caption><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table></div>",
        cases.len()
    )
}

/// The calibration's answer in one paragraph: which model to use and why, then the fit.
pub fn answer(c: &Value) -> String {
    let n_train = c["rows"].as_array().map_or(0, |r| distinct(r, true));
    // The core's own words for what was fitted (the CLI's verdict says the same).
    let fit = serde_json::from_value::<Multipliers>(c["fitted"].clone()).unwrap_or(Multipliers::ONE).sentence();
    let unidentified: Vec<&str> =
        c["unidentified"].as_array().into_iter().flatten().filter_map(|u| u.as_str()).collect();
    let not = if unidentified.is_empty() {
        String::new()
    } else {
        format!(" Not identifiable from these cases (left neutral): {}.", unidentified.join(", "))
    };
    format!(
        "Use the {} model. {} Fitted {fit} on {n_train} training case(s).{not}",
        c["recommended"].as_str().unwrap_or("uncalibrated"),
        c["verdict"].as_str().unwrap_or("")
    )
}

/// The headline errors: held out (overall, and at heavy load when some held-out case is above every training
/// load) and left out one at a time (median APE, before → after), and the repeated runs' spread beside them.
pub fn headline_table(c: &Value) -> String {
    let row = |name: &str, h: &Value| {
        format!(
            "<tr><td class=\"text\">{name}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            h["figures"].as_u64().unwrap_or(0),
            pct(h["baseline"].as_f64()),
            pct(h["calibrated"].as_f64())
        )
    };
    let mut rows = row("Held out", &c["held_out"]);
    // Held out above every training load: where a capacity is decided, and a fit worse there is not recommended.
    if c["heavy_load"]["figures"].as_u64().unwrap_or(0) > 0 {
        rows += &row("Held out at heavy load (above the training loads)", &c["heavy_load"]);
    }
    rows += &row("Leave-one-out (training cases)", &c["leave_one_out"]);
    let g = &c["gate"];
    if let Some(tolerance) = g["tolerance"].as_f64() {
        let verdict = match g["pass"].as_bool() {
            Some(true) => format!("{}: pass", pct(g["error"].as_f64())),
            Some(false) => format!("{}: fail", pct(g["error"].as_f64())),
            None => "—".into(),
        };
        // The verdict sits in the column of the model it judges.
        let model = g["model"].as_str().unwrap_or("");
        let (un, cal) = if model == "calibrated" { (String::new(), verdict) } else { (verdict, String::new()) };
        rows += &format!(
            "<tr class=\"gate\"><td class=\"text\">Gate: the {model} model, {}, within {}</td><td></td><td>{un}</td><td>{cal}</td></tr>",
            g["over"].as_str().unwrap_or(""),
            pct(Some(tolerance))
        );
    }
    for t in c["knob_choice"].as_array().into_iter().flatten() {
        // The held-out figure is shown beside the choice, which never saw it.
        let held = t["held_out"].as_f64().map_or(String::new(), |h| format!("; held out {}", pct(Some(h))));
        rows += &format!(
            "<tr><td class=\"text\">Knobs tried: {}{}{held}</td><td></td><td></td><td>{}</td></tr>",
            t["knobs"].as_str().unwrap_or(""),
            if t["chosen"].as_bool() == Some(true) { " (chosen)" } else { "" },
            pct(t["leave_one_out"].as_f64())
        );
    }
    if let Some(n) = c["noise_floor"].as_object() {
        rows += &format!(
            "<tr><td class=\"text\">Repeated runs' spread ({} runs of {} configuration(s))</td><td></td><td>{}</td><td></td></tr>",
            n["runs"].as_u64().unwrap_or(0),
            n["groups"].as_u64().unwrap_or(0),
            pct(n["spread"].as_f64())
        );
    }
    format!(
        "<div class=\"table-wrap\"><table id=\"cal-headline\"><caption>Error over latency figures (median absolute percentage error; cases past saturation left out)</caption><thead><tr><th class=\"text\">Cases</th><th>Figures</th><th>Uncalibrated</th><th>Calibrated</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

/// The cases past saturation, fitted on their throughput only.
pub fn saturated_table(c: &Value) -> String {
    let list = c["saturated"].as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return String::new();
    }
    let rps = |v: &Value| v.as_f64().map_or("—".into(), |x| format!("{x:.2}"));
    let rows: String = list
        .iter()
        .map(|s| {
            format!(
                "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                esc(s["case"].as_str().unwrap_or("")),
                if s["training"].as_bool() == Some(true) { "training" } else { "held-out" },
                rps(&s["offered_rps"]),
                rps(&s["measured_rps"]),
                rps(&s["baseline_rps"]),
                rps(&s["calibrated_rps"]),
                esc(s["why"].as_str().unwrap_or(""))
            )
        })
        .collect();
    format!(
        "<div class=\"table-wrap\"><table id=\"cal-saturated\"><caption>Past saturation: their latencies grow with a run's length, so they count by throughput only</caption><thead><tr><th class=\"text\">Case</th><th class=\"text\">Set</th><th>Offered <span class=\"unit\">req/s</span></th><th>Measured <span class=\"unit\">req/s</span></th><th>Uncalibrated <span class=\"unit\">req/s</span></th><th>Calibrated <span class=\"unit\">req/s</span></th><th class=\"text\">Why</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

fn distinct(rows: &[Value], training: bool) -> usize {
    let mut ids: Vec<&str> =
        rows.iter().filter(|r| r["training"].as_bool() == Some(training)).filter_map(|r| r["case"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

/// Held-out MAPE per metric, baseline and calibrated.
pub fn mape_table(c: &Value) -> String {
    let none = Vec::new();
    let held = c["held_out_mape"].as_array().unwrap_or(&none);
    let left = c["leave_one_out_mape"].as_array().unwrap_or(&none);
    // Uncalibrated, calibrated and the change, for one set; a set without the metric shows dashes.
    let cells = |m: Option<&Value>| {
        let (b, a) = m.map_or((None, None), |m| (m["baseline"].as_f64(), m["calibrated"].as_f64()));
        let change = match (b, a) {
            (Some(b), Some(a)) => format!("{:+.1} points", (a - b) * 100.0),
            _ => "—".into(),
        };
        (b.is_some() || a.is_some(), format!("<td>{}</td><td>{}</td><td>{change}</td>", pct(b), pct(a)))
    };
    let rows: String = (0..held.len().max(left.len()))
        .filter_map(|k| {
            let (h, l) = (cells(held.get(k)), cells(left.get(k)));
            let metric = held.get(k).or(left.get(k))?["metric"].as_str().unwrap_or("");
            (h.0 || l.0).then(|| format!("<tr><td class=\"text\">{}</td>{}{}</tr>", esc(metric), h.1, l.1))
        })
        .collect();
    format!(
        "<div class=\"table-wrap\"><table id=\"cal-mape\"><caption>Error per metric (mean absolute percentage error): the held-out cases, and the training cases left out one at a time</caption><thead><tr><th class=\"text\">Metric</th><th>Held out: uncalibrated</th><th>Held out: calibrated</th><th>Change</th><th>Left out: uncalibrated</th><th>Left out: calibrated</th><th>Change</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

/// The columns of the every-case table: (label, unit, the row's field).
pub const COLUMNS: &[(&str, &str, &str)] = &[
    ("Case", "", "case"),
    ("Set", "", "training"),
    ("Metric", "", "metric"),
    ("Measured", "ms", "measured_ms"),
    ("Baseline pred.", "ms", "baseline_ms"),
    ("Calibrated pred.", "ms", "calibrated_ms"),
    ("Baseline APE", "", "baseline_ape"),
    ("Calibrated APE", "", "calibrated_ape"),
    ("Leave-one-out APE", "", "leave_one_out_ape"),
    ("Verdict", "", "verdict"),
];

/// A row's verdict, from its numbers: what calibration did to it, and whether it was an extrapolation.
pub fn verdict(row: &Value, warnings: &[String]) -> String {
    let (b, a) = (row["baseline_ape"].as_f64().unwrap_or(0.0), row["calibrated_ape"].as_f64().unwrap_or(0.0));
    let id = row["case"].as_str().unwrap_or("");
    let mut v = if row["saturated"].as_bool() == Some(true) {
        "past saturation: shown, not fitted nor counted".to_string()
    } else if row["training"].as_bool() == Some(true) {
        "fitted on".to_string()
    } else if a <= 0.1 {
        "held out: within 10 %".to_string()
    } else if a < b {
        "held out: better, still off (a cost or scheduler the model lacks?)".to_string()
    } else {
        "held out: worse (not a global scale error)".to_string()
    };
    if warnings.iter().any(|w| w.starts_with(&format!("{id}: its load"))) {
        v.push_str(" · outside the training load range");
    }
    v
}

/// A row's set: training or held out, and past saturation.
fn set(row: &Value) -> &'static str {
    match (row["training"].as_bool() == Some(true), row["saturated"].as_bool() == Some(true)) {
        (true, false) => "training",
        (false, false) => "held-out",
        (true, true) => "training, saturated",
        (false, true) => "held-out, saturated",
    }
}

/// A cell of the every-case table as shown.
pub fn cell(row: &Value, field: &str, warnings: &[String]) -> String {
    match field {
        "training" => set(row).into(),
        "case" | "metric" => row[field].as_str().unwrap_or("").into(),
        "verdict" => verdict(row, warnings),
        f if f.ends_with("_ape") => pct(row[f].as_f64()),
        f => ms(row[f].as_f64()),
    }
}

/// The every-case table in `order`, sortable by its headers.
pub fn rows_table(c: &Value, order: &[usize], sort: &crate::components::sort::Sort) -> String {
    let warnings = warnings(c);
    let rows = c["rows"].as_array().cloned().unwrap_or_default();
    let th: String = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, (label, unit, _))| {
            let unit = if unit.is_empty() { String::new() } else { format!(" <span class=\"unit\">{unit}</span>") };
            sort.th("data-ccol", i, &format!("{}{unit}", esc(label)), label)
        })
        .collect::<String>();
    // The text columns' headers align with their cells.
    let th = [0, 1, 2, 9].iter().fold(th, |h, i| {
        h.replace(&format!("<th data-ccol=\"{i}\""), &format!("<th class=\"text\" data-ccol=\"{i}\""))
    });
    let body: String = order
        .iter()
        .filter_map(|&i| rows.get(i))
        .map(|r| {
            let cells: String = COLUMNS
                .iter()
                .map(|(_, _, f)| {
                    format!(
                        "<td{}>{}</td>",
                        if matches!(*f, "case" | "training" | "metric" | "verdict") { " class=\"text\"" } else { "" },
                        esc(&cell(r, f, &warnings))
                    )
                })
                .collect();
            let set = if r["training"].as_bool() == Some(true) { "training" } else { "held-out" };
            format!("<tr data-set=\"{set}\">{cells}</tr>")
        })
        .collect();
    format!(
        "<div class=\"table-wrap\"><table id=\"cal-rows\"><caption>Every case and metric: measured, predicted before and after calibration</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"
    )
}

/// Row positions sorted by column `col` (numbers by value, text by its text).
pub fn sorted(c: &Value, col: usize, desc: bool) -> Vec<usize> {
    let rows = c["rows"].as_array().cloned().unwrap_or_default();
    let warnings = warnings(c);
    let field = COLUMNS.get(col).map_or("case", |c| c.2);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&rows[a][field], &rows[b][field]);
        let ord = match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => cell(&rows[a], field, &warnings).cmp(&cell(&rows[b], field, &warnings)),
        };
        if desc { ord.reverse() } else { ord }
    });
    order
}

pub fn warnings(c: &Value) -> Vec<String> {
    c["warnings"].as_array().into_iter().flatten().filter_map(|w| w.as_str().map(str::to_string)).collect()
}

/// One chart per metric: each case's prediction against its measurement, before and after calibration, and
/// the y = x line a perfect model would sit on (drawn on log axes with ±10 % about it: predictions off by
/// orders of magnitude stay on the chart). Milliseconds on both axes; a case past saturation is labelled so.
pub fn charts(c: &Value) -> Vec<Chart> {
    let rows = c["rows"].as_array().cloned().unwrap_or_default();
    let mut metrics: Vec<String> = Vec::new();
    for r in &rows {
        if let Some(m) = r["metric"].as_str()
            && !metrics.iter().any(|x| x == m)
        {
            metrics.push(m.to_string());
        }
    }
    metrics
        .iter()
        .map(|m| {
            let of: Vec<&Value> = rows.iter().filter(|r| r["metric"].as_str() == Some(m)).collect();
            let s = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
            let label = |r: &Value| {
                let id = r["case"].as_str().unwrap_or("");
                if r["saturated"].as_bool() == Some(true) { format!("{id} (saturated)") } else { id.to_string() }
            };
            let series = |name: &str, k: &str, labels: bool| ChartSeries {
                name: name.into(),
                points: of.iter().map(|r| (s(r, "measured_ms"), s(r, k))).collect(),
                band: Vec::new(),
                labels: if labels { of.iter().map(|r| label(r)).collect() } else { Vec::new() },
                line: false,
            };
            let values = || of.iter().flat_map(|r| [s(r, "measured_ms"), s(r, "baseline_ms"), s(r, "calibrated_ms")]);
            let top = values().fold(0.0f64, f64::max);
            let low = values().filter(|v| *v > 0.0).fold(top, f64::min);
            Chart {
                kind: "scatter".into(),
                title: format!("{m}: predicted against measured"),
                x_label: "measured (ms)".into(),
                y_label: "predicted (ms)".into(),
                categories: Vec::new(),
                series: vec![
                    series("uncalibrated", "baseline_ms", false),
                    series("calibrated", "calibrated_ms", true),
                    ChartSeries {
                        name: "y = x (exact)".into(),
                        points: vec![(low, low), (top, top)],
                        band: Vec::new(),
                        labels: Vec::new(),
                        line: true,
                    },
                ],
                target: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration() -> Value {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/results/");
        let mut cases = Vec::new();
        for f in ["vllm-runs-jsonl.json", "vllm-current.json", "vllm-legacy.json", "sglang-bench-serving.jsonl"] {
            cases.extend(inferscale::truth::import(f, &std::fs::read_to_string(format!("{dir}{f}")).unwrap()).0);
        }
        let base = inferscale::scenario::parse(include_str!("../../../scenarios/default.json")).unwrap();
        let c = inferscale::truth::calibrate(&base, &cases, &[]).unwrap();
        serde_json::from_str(&inferscale::export::calibration_json(&c)).unwrap()
    }

    #[test]
    fn the_views_say_what_the_calibration_found() {
        let c = calibration();
        let a = answer(&c);
        assert!(a.starts_with("Use the ") && a.contains("Held out (") && a.contains("Fitted prefill × "), "{a}");
        // The fit in the core's words, every knob it fitted read back from the JSON.
        let mut knobs = c.clone();
        knobs["fitted"]["seq_overhead_us"] = serde_json::json!(189.6);
        knobs["fitted"]["request_overhead_ms"] = serde_json::json!(104.0);
        let said = answer(&knobs);
        assert!(said.contains(", request overhead + 104.0 ms, per-sequence step time + 189.6 µs on "), "{said}");
        assert!(headline_table(&c).contains("Leave-one-out (training cases)"));
        assert!(headline_table(&c).contains("Gate: the "), "{}", headline_table(&c));
        // The heavy-load row is shown exactly when some held-out case is above every training load.
        let heavy = c["heavy_load"]["figures"].as_u64().unwrap();
        assert_eq!(headline_table(&c).contains("Held out at heavy load"), heavy > 0);
        let mut other = c.clone();
        other["heavy_load"] =
            serde_json::json!({"figures": if heavy > 0 { 0 } else { 3 }, "baseline": 0.2, "calibrated": 0.3});
        assert_eq!(headline_table(&other).contains("Held out at heavy load"), heavy == 0);
        let mape = mape_table(&c);
        assert!(mape.contains("Left out: calibrated") && mape.matches("<tr><td").count() >= 4, "{mape}");
        let rows = c["rows"].as_array().unwrap();
        let html = rows_table(&c, &(0..rows.len()).collect::<Vec<_>>(), &Default::default());
        assert_eq!(html.matches("<tr data-set=").count(), rows.len());
        assert!(html.contains("held out") && html.contains("fitted on"));
        // The extrapolated case is said in its verdict.
        assert!(html.contains("outside the training load range"), "the sample has a held-out case at 32 clients");
        assert!(mape_table(&c).contains("points"));
        let charts = charts(&c);
        let metrics: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["metric"].as_str()).collect();
        assert_eq!(charts.len(), metrics.len(), "one chart per metric");
        for ch in &charts {
            let line = &ch.series[2];
            assert!(line.line && line.points[1].0 == line.points[1].1);
            assert!(
                ch.series[..2]
                    .iter()
                    .all(|s| s.points.iter().all(|p| p.0 <= line.points[1].0 && p.1 <= line.points[1].1)),
                "y = x spans every point"
            );
        }
        // Sorting by calibrated APE descending puts the worst first.
        let order = sorted(&c, 7, true);
        assert!(line_spans_from_the_smallest(&charts));
        let ape = |i: usize| rows[i]["calibrated_ape"].as_f64().unwrap();
        assert!(order.windows(2).all(|w| ape(w[0]) >= ape(w[1])));
    }

    /// The y = x line starts at the smallest positive value (a log axis has no 0).
    fn line_spans_from_the_smallest(charts: &[Chart]) -> bool {
        charts.iter().all(|ch| {
            let low = ch.series[..2]
                .iter()
                .flat_map(|s| s.points.iter().flat_map(|p| [p.0, p.1]))
                .fold(f64::INFINITY, f64::min);
            ch.series[2].points[0].0 == low && low > 0.0
        })
    }

    #[test]
    fn the_cases_table_names_each_checkbox_and_says_the_load() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/results/");
        let (cases, _) = inferscale::truth::import(
            "s.jsonl",
            &std::fs::read_to_string(format!("{dir}sglang-bench-serving.jsonl")).unwrap(),
        );
        let train = inferscale::truth::default_training(&cases);
        let html = cases_table(&cases, &train);
        assert!(html.contains("aria-label=\"Train on s.jsonl:1\" checked"), "{html}");
        assert!(html.contains("32 clients, closed loop") && html.contains("4 req/s"));
        let mut all_held = train.clone();
        all_held.iter_mut().for_each(|t| *t = false);
        assert!(!cases_table(&cases, &all_held).contains(" checked>"));
    }
}
