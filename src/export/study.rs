//! A study report's writers: JSON, CSV (full precision, units in the headers) and Markdown (numbers as the lab
//! shows them, by `study::show`, the one rule for how a cell reads).

use super::{csv_field, md_cell, md_text};
use crate::study::{Cell, Column, Format, StudyReport, show};

impl StudyReport {
    /// Pretty JSON with a final newline (the CLI's and the lab's JSON export).
    pub fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a study report serialises");
        s.push('\n');
        s
    }

    /// The table as CSV, numbers in full precision, headers with units; each further table after a blank
    /// line and a line with its title.
    pub fn csv(&self) -> String {
        let mut out = csv_table(&self.columns, &self.rows);
        for t in &self.tables {
            out.push_str(&format!("\n{}\n", csv_field(&t.title)));
            out.push_str(&csv_table(&t.columns, &t.rows));
        }
        out
    }

    /// The study as Markdown: question, answer, table (numbers as shown in the lab), notes.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# InferScale study: {} — {}\n\nScenario `{}`, seed {}.\n\n",
            self.study,
            self.question,
            md_text(&self.scenario).replace('`', "'"),
            self.seed
        );
        out.push_str(&format!("**Answer:** {}\n\n", md_text(&self.answer)));
        out.push_str(&md_table(&self.columns, &self.rows, self.best_row));
        for t in &self.tables {
            out.push_str(&format!("\n### {}\n\n", md_text(&t.title)));
            out.push_str(&md_table(&t.columns, &t.rows, None));
        }
        if !self.notes.is_empty() {
            out.push_str("\nNotes:\n\n");
            for n in &self.notes {
                out.push_str(&format!("- {}\n", md_text(n)));
            }
        }
        out
    }
}

/// Columns and rows as CSV: headers with units, numbers in full precision (in the column's own unit); a
/// column of figures over repetitions is followed by its 95 % interval's ends.
fn csv_table(columns: &[Column], rows: &[Vec<Cell>]) -> String {
    let spans: Vec<bool> =
        (0..columns.len()).map(|j| rows.iter().any(|r| matches!(r.get(j), Some(Cell::Interval { .. })))).collect();
    let mut head = Vec::new();
    for (c, &span) in columns.iter().zip(&spans) {
        let name = if c.unit.is_empty() { c.label.clone() } else { format!("{} ({})", c.label, c.unit) };
        head.push(csv_field(&name));
        if span {
            head.extend([csv_field(&format!("{} 95 % low", c.label)), csv_field(&format!("{} 95 % high", c.label))]);
        }
    }
    let mut out = head.join(",");
    out.push('\n');
    for row in rows {
        let mut cells = Vec::new();
        for (c, &span) in row.iter().zip(&spans) {
            match c {
                Cell::Interval { mean, lo, hi } => cells.extend([format!("{mean}"), format!("{lo}"), format!("{hi}")]),
                Cell::Num(x) => cells.push(format!("{x}")),
                Cell::Text(t) => cells.push(csv_field(t)),
                Cell::Bool(b) => cells.push(b.to_string()),
                Cell::Empty => cells.push(String::new()),
            }
            if span && !matches!(c, Cell::Interval { .. }) {
                cells.extend([String::new(), String::new()]);
            }
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Columns and rows as a Markdown table, numbers as the lab shows them, the best row marked.
fn md_table(columns: &[Column], rows: &[Vec<Cell>], best_row: Option<usize>) -> String {
    let head: Vec<String> = columns.iter().map(header).collect();
    let mut out = format!("| {} |\n", head.join(" | "));
    out.push_str(&format!(
        "|{}\n",
        columns.iter().map(|c| if c.format == Format::Text { "---|" } else { "---:|" }).collect::<String>()
    ));
    for (i, row) in rows.iter().enumerate() {
        let mut cells: Vec<String> = row.iter().zip(columns).map(|(c, col)| md_cell(&show(c, col.format))).collect();
        if Some(i) == best_row
            && let Some(first) = cells.first_mut()
        {
            *first = format!("**{first}** (best)");
        }
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn header(c: &Column) -> String {
    match display_unit(c) {
        "" => c.label.clone(),
        unit => format!("{} ({unit})", c.label),
    }
}

/// A column's unit as a shown table heads it: a seconds column's cells carry their own unit (ms or s), so
/// its header drops the "s" and keeps any qualifier ("s, mean" → "mean"). The CSV, which writes seconds,
/// keeps the unit whole.
pub fn display_unit(c: &Column) -> &str {
    if c.format != Format::Seconds {
        return &c.unit;
    }
    c.unit.strip_prefix("s, ").or_else(|| c.unit.strip_prefix('s')).unwrap_or(&c.unit).trim()
}
