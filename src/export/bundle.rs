//! A bundle of measured runs as a table: one row per case (CSV), or the table and every case's notes
//! (Markdown).

use super::{csv_field, md_cell};
use crate::truth::{Bundle, Case, LatencyMs, Rate};

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
    let mut out = format!("# Measured runs\n\n{} case(s).\n\n| {} |\n|{}\n", b.cases.len(), cols.iter().map(|c| c.0).collect::<Vec<_>>().join(" | "), "---|".repeat(cols.len()));
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
