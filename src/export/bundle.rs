//! A bundle of measured runs as a table: one row per case (CSV), or the table and every case's notes
//! (Markdown).

use super::{csv_field, md_cell};
use crate::truth::{Bundle, Calibration, Case, LatencyMs, Rate};

/// The columns: (header, the cell of a case).
type Column = (&'static str, fn(&Case) -> String);

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{}", (v * 1e4).round() / 1e4)).unwrap_or_default()
}

fn lat(l: &LatencyMs, f: fn(&LatencyMs) -> Option<f64>) -> String {
    num(f(l))
}

const COLUMNS: [Column; 16] = [
    ("case", |c| c.id.clone()),
    ("engine", |c| c.engine.clone()),
    ("model", |c| c.model_id.clone().unwrap_or_default()),
    ("request_rate_rps", |c| match c.workload.request_rate {
        Some(Rate::PerSecond(r)) => num(Some(r)),
        Some(Rate::Infinite) => "inf".into(),
        None => String::new(),
    }),
    ("max_concurrency", |c| c.workload.max_concurrency.map(|n| n.to_string()).unwrap_or_default()),
    ("num_prompts", |c| c.workload.num_prompts.map(|n| n.to_string()).unwrap_or_default()),
    ("mean_input_tokens", |c| num(c.workload.mean_input_tokens)),
    ("mean_output_tokens", |c| num(c.workload.mean_output_tokens)),
    ("ttft_median_ms", |c| lat(&c.measured.ttft_ms, |l| l.median)),
    ("ttft_p99_ms", |c| lat(&c.measured.ttft_ms, |l| l.p99)),
    ("tpot_median_ms", |c| lat(&c.measured.tpot_ms, |l| l.median)),
    ("itl_median_ms", |c| lat(&c.measured.itl_ms, |l| l.median)),
    ("e2e_median_ms", |c| lat(&c.measured.e2e_ms, |l| l.median)),
    ("e2e_p99_ms", |c| lat(&c.measured.e2e_ms, |l| l.p99)),
    ("request_throughput_rps", |c| num(c.measured.request_throughput_rps)),
    ("notes", |c| c.notes.join("; ")),
];

pub fn bundle_csv(b: &Bundle) -> String {
    let mut out = COLUMNS.map(|c| c.0).join(",") + "\n";
    for case in &b.cases {
        out += &COLUMNS.map(|c| csv_field(&(c.1)(case))).join(",");
        out.push('\n');
    }
    out
}

pub fn bundle_markdown(b: &Bundle) -> String {
    let cols = &COLUMNS[..COLUMNS.len() - 1];
    let mut out = format!(
        "# Measured runs\n\n{} case(s).\n\n| {} |\n|{}\n",
        b.cases.len(),
        cols.iter().map(|c| c.0).collect::<Vec<_>>().join(" | "),
        "---|".repeat(cols.len())
    );
    for case in &b.cases {
        out += &format!("| {} |\n", cols.iter().map(|c| md_cell(&(c.1)(case))).collect::<Vec<_>>().join(" | "));
    }
    let noted: Vec<&Case> = b.cases.iter().filter(|c| !c.notes.is_empty()).collect();
    if !noted.is_empty() {
        out += "\n## Notes\n\n";
        for c in noted {
            out += &format!("- **{}**: {}\n", md_cell(&c.id), md_cell(&c.notes.join("; ")));
        }
    }
    out
}

/// A calibration as JSON (what `inferscale calibrate` prints and the lab's Calibration panel exports).
pub fn calibration_json(c: &Calibration) -> String {
    serde_json::to_string_pretty(c).expect("a calibration serialises") + "\n"
}

/// A calibration's table: one row per case and metric.
pub fn calibration_csv(c: &Calibration) -> String {
    let mut out = String::from(
        "case,set,saturated,metric,measured_ms,baseline_ms,calibrated_ms,baseline_ape,calibrated_ape,leave_one_out_ms,leave_one_out_ape\n",
    );
    for r in &c.rows {
        let set = if r.training { "training" } else { "held-out" };
        out += &format!(
            "{},{set},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&r.case),
            r.saturated,
            r.metric,
            num(Some(r.measured_ms)),
            num(Some(r.baseline_ms)),
            num(Some(r.calibrated_ms)),
            num(Some(r.baseline_ape)),
            num(Some(r.calibrated_ape)),
            num(r.leave_one_out_ms),
            num(r.leave_one_out_ape)
        );
    }
    out
}

/// A calibration: the verdict, the fit, the held-out errors, the cases past saturation, the table, warnings
/// and notes.
pub fn calibration_markdown(c: &Calibration) -> String {
    let pct = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{:.1} %", v * 100.0));
    let mut out = format!(
        "# Calibration\n\n**Use the {} model.** {}\n\nFitted on the training cases: {}. Objective ({}): {:.4} before, {:.4} after.\n",
        c.recommended,
        md_cell(&c.verdict),
        c.fitted.sentence(),
        c.objective,
        c.train_error_baseline,
        c.train_error_calibrated
    );
    if !c.unidentified.is_empty() {
        out += &format!(
            "\nNot identifiable from these cases (left neutral, not fitted): {}.\n",
            c.unidentified.join(", ")
        );
    }
    out += "\n## Error (median APE over latency figures)\n\n| | figures | uncalibrated | calibrated |\n|---|---|---|---|\n";
    let mut headlines = vec![("held out", &c.held_out)];
    if c.heavy_load.figures > 0 {
        headlines.push(("held out at heavy load (above the training loads)", &c.heavy_load));
    }
    headlines.push(("leave-one-out (training)", &c.leave_one_out));
    for (name, h) in headlines {
        out += &format!("| {name} | {} | {} | {} |\n", h.figures, pct(h.baseline), pct(h.calibrated));
    }
    if let Some(n) = c.noise_floor {
        out += &format!("| repeated runs' spread | {} runs | {} | |\n", n.runs, pct(Some(n.spread)));
    }
    let g = &c.gate;
    out += &format!(
        "| gate: {} model, {} | tolerance {} | | {} |\n",
        g.model,
        g.over,
        pct(Some(g.tolerance)),
        match g.pass {
            Some(true) => format!("{}: pass", pct(g.error)),
            Some(false) => format!("{}: fail", pct(g.error)),
            None => "—".into(),
        }
    );
    out += &knob_table(c);
    out += "\n## Error per metric (MAPE)\n\n| metric | held out: baseline | held out: calibrated | training: baseline | training: left out |\n|---|---|---|---|---|\n";
    for (m, l) in c.held_out_mape.iter().zip(&c.leave_one_out_mape) {
        if m.baseline.is_some() || l.baseline.is_some() {
            out += &format!(
                "| {} | {} | {} | {} | {} |\n",
                m.metric,
                pct(m.baseline),
                pct(m.calibrated),
                pct(l.baseline),
                pct(l.calibrated)
            );
        }
    }
    if !c.saturated.is_empty() {
        out += "\n## Past saturation (fitted on throughput only)\n\n| case | set | offered (req/s) | measured (req/s) | baseline pred. | calibrated pred. | why |\n|---|---|---|---|---|---|---|\n";
        for s in &c.saturated {
            let set = if s.training { "training" } else { "held-out" };
            out += &format!(
                "| {} | {set} | {} | {} | {:.2} | {:.2} | {} |\n",
                md_cell(&s.case),
                s.offered_rps,
                s.measured_rps.map_or("—".into(), |x| format!("{x:.2}")),
                s.baseline_rps,
                s.calibrated_rps,
                md_cell(&s.why)
            );
        }
    }
    out += "\n## Every case\n\n| case | set | metric | measured (ms) | baseline pred. (ms) | calibrated pred. (ms) | baseline APE | calibrated APE | leave-one-out APE |\n|---|---|---|---|---|---|---|---|---|\n";
    for r in &c.rows {
        let set = match (r.training, r.saturated) {
            (true, false) => "training",
            (false, false) => "held-out",
            (true, true) => "training (saturated)",
            (false, true) => "held-out (saturated)",
        };
        out += &format!(
            "| {} | {set} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} |\n",
            md_cell(&r.case),
            r.metric,
            r.measured_ms,
            r.baseline_ms,
            r.calibrated_ms,
            pct(Some(r.baseline_ape)),
            pct(Some(r.calibrated_ape)),
            pct(r.leave_one_out_ape)
        );
    }
    for (title, list) in [("Warnings", &c.warnings), ("Notes", &c.notes)] {
        if !list.is_empty() {
            out += &format!("\n## {title}\n\n");
            for w in list.iter() {
                out += &format!("- {}\n", md_cell(w));
            }
        }
    }
    out
}

/// The knob sets `--fit auto` tried, as a Markdown section (empty when the knobs were given).
fn knob_table(c: &Calibration) -> String {
    let pct = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{:.1} %", v * 100.0));
    let mut out = String::new();
    if !c.knob_choice.is_empty() {
        out += "\n## Knobs chosen by leave-one-out (training cases only)\n\nThe held-out columns are shown, never consulted: the choice is made before them.\n\n| knobs | leave-one-out median APE | chosen | held out | held out, heavy load |\n|---|---|---|---|---|\n";
        for t in &c.knob_choice {
            let chosen = t.chosen_word();
            out += &format!(
                "| {} | {} | {chosen} | {} | {} |\n",
                t.knobs,
                pct(t.leave_one_out),
                pct(t.held_out),
                pct(t.heavy)
            );
        }
    }
    out
}
