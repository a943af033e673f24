//! The per-request table: CSV parsing, sorting, paging; and the order a study table's columns are shown in.
//! Pure, so it is tested natively.

use inferscale::study::{Column, Format};

/// Split one CSV line, honouring double quotes.
pub fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A parsed table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn parse(csv: &str) -> Table {
        let mut lines = csv.lines();
        let header = lines.next().map(split).unwrap_or_default();
        Table { header, rows: lines.filter(|l| !l.is_empty()).map(split).collect() }
    }

    /// Sort by a column: numerically where both cells are numbers (empty cells last), else as text. Stable.
    pub fn sort(&mut self, col: usize, descending: bool) {
        self.rows.sort_by(|a, b| {
            let (x, y) = (a.get(col).map(String::as_str).unwrap_or(""), b.get(col).map(String::as_str).unwrap_or(""));
            let ord = match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(p), Ok(q)) => p.total_cmp(&q),
                (Ok(_), Err(_)) if y.is_empty() => return std::cmp::Ordering::Less,
                (Err(_), Ok(_)) if x.is_empty() => return std::cmp::Ordering::Greater,
                _ => x.cmp(y),
            };
            if descending { ord.reverse() } else { ord }
        });
    }

    /// The rows `keep` selects, in order.
    pub fn view(&self, keep: impl Fn(&[String]) -> bool) -> Vec<&Vec<String>> {
        self.rows.iter().filter(|r| keep(r)).collect()
    }
}

/// Pages of `size` rows that `n` rows fill (at least one, empty).
pub fn pages(n: usize, size: usize) -> usize {
    n.div_ceil(size).max(1)
}

/// Rows of page `page` (0-based; past the end: the last page) of `size`.
pub fn page<T>(rows: &[T], page: usize, size: usize) -> &[T] {
    let start = (page.min(pages(rows.len(), size) - 1) * size).min(rows.len());
    &rows[start..(start + size).min(rows.len())]
}

impl Table {}

/// A CSV column's header as the table shows it: the unit in words, latencies in ms.
pub fn display_header(h: &str) -> String {
    match h {
        "arrival_s" => "arrival (s)".into(),
        "queue_delay_s" => "queue delay (ms)".into(),
        "ttft_s" => "TTFT (ms)".into(),
        "e2e_s" => "E2E (ms)".into(),
        "tpot_s" => "TPOT (ms)".into(),
        other => {
            other.trim_end_matches("_tokens").replace('_', " ")
                + if other.ends_with("_tokens") { " (tokens)" } else { "" }
        }
    }
}

/// A cell as the table shows it, in its header's unit and at a sensible precision: arrivals in s to the
/// millisecond, latencies in ms to a tenth (a hundredth below 1 ms); the CSV export keeps full precision.
pub fn display_cell(h: &str, v: &str) -> String {
    let Ok(x) = v.parse::<f64>() else { return v.to_string() };
    match h {
        "arrival_s" => format!("{x:.3}"),
        "queue_delay_s" | "ttft_s" | "e2e_s" | "tpot_s" => {
            let ms = x * 1e3;
            if ms != 0.0 && ms.abs() < 1.0 { format!("{ms:.2}") } else { format!("{ms:.1}") }
        }
        _ => v.to_string(),
    }
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The order a table's columns are shown in: the row's name (its first column, and the next too when that is
/// the first text column: "Rank", "Scheduler"), then the columns its answer is read from (`decisive`), then
/// the rest, each group in the report's order — so a table wider than the page shows P(met), the status or
/// the comparison with the best without scrolling. The exports keep the report's order.
pub fn shown_order(columns: &[Column]) -> Vec<usize> {
    let named_by_second = columns.len() > 1 && columns[0].format != Format::Text && columns[1].format == Format::Text;
    let lead = if columns.is_empty() { 0 } else { 1 + usize::from(named_by_second) };
    let rest = |decisive: bool| (lead..columns.len()).filter(move |&i| columns[i].decisive == decisive);
    (0..lead).chain(rest(true)).chain(rest(false)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sorts_and_pages() {
        let mut t = Table::parse("id,name,ttft\n1,\"a,b\",0.5\n2,c,\n3,d,0.25\n");
        assert_eq!(t.rows[0][1], "a,b");
        t.sort(2, false);
        let ids: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(ids, vec!["3", "1", "2"], "numbers ascending, empty last");
        t.sort(0, true);
        assert_eq!(t.rows[0][0], "3");
        let all = t.view(|_| true);
        assert_eq!(page(&all, 1, 2).len(), 1);
        assert_eq!(page(&all, 9, 2).len(), 1, "past the end: the last page");
        assert_eq!(pages(all.len(), 2), 2);
        assert_eq!(pages(0, 2), 1);
        assert_eq!(t.view(|r| r[1] == "c").len(), 1);
        assert_eq!(esc("<a&\">"), "&lt;a&amp;&quot;&gt;");
    }

    #[test]
    fn cells_are_shown_in_their_headers_unit() {
        assert_eq!(display_header("ttft_s"), "TTFT (ms)");
        assert_eq!(display_header("prompt_tokens"), "prompt (tokens)");
        assert_eq!(display_header("predicted_order_tokens"), "predicted order (tokens)");
        assert_eq!(display_cell("ttft_s", "0.04868919"), "48.7");
        assert_eq!(display_cell("tpot_s", "0.011648808857142857"), "11.6");
        assert_eq!(display_cell("queue_delay_s", "0.000412"), "0.41");
        assert_eq!(display_cell("queue_delay_s", "0"), "0.0");
        assert_eq!(display_cell("arrival_s", "1.119879435"), "1.120");
        assert_eq!(display_cell("e2e_s", ""), "");
        assert_eq!(display_cell("class", "chat"), "chat");
    }

    fn col(label: &str, format: Format, decisive: bool) -> Column {
        Column { label: label.into(), unit: String::new(), format, decisive }
    }

    #[test]
    fn decisive_columns_are_shown_after_the_rows_name() {
        let names =
            |cols: &[Column]| -> Vec<String> { shown_order(cols).into_iter().map(|i| cols[i].label.clone()).collect() };
        // A fleet-like table: the name, then the decisive columns in their order, then the rest.
        let fleet = [
            col("Candidate", Format::Text, false),
            col("TP", Format::Int, false),
            col("$/h", Format::Num, true),
            col("p95 TTFT", Format::Seconds, false),
            col("Status", Format::Text, true),
        ];
        assert_eq!(names(&fleet), ["Candidate", "$/h", "Status", "TP", "p95 TTFT"]);
        // A ranking: a rank names the row with the scheduler beside it.
        let ranking = [
            col("Rank", Format::Int, false),
            col("Scheduler", Format::Text, false),
            col("Goodput", Format::Num, false),
            col("Versus the best", Format::Text, true),
        ];
        assert_eq!(names(&ranking), ["Rank", "Scheduler", "Versus the best", "Goodput"]);
        // Nothing decisive: the report's order; no columns: nothing.
        let plain =
            [col("Rate", Format::Num, false), col("Pass", Format::Bool, false), col("Note", Format::Text, false)];
        assert_eq!(names(&plain), ["Rate", "Pass", "Note"]);
        assert!(shown_order(&[]).is_empty());
    }
}
