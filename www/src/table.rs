//! The per-request table: CSV parsing, sorting, paging. Pure, so it is tested natively.

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

    /// Rows of page `page` (0-based) of `size`.
    pub fn page(&self, page: usize, size: usize) -> &[Vec<String>] {
        let start = (page * size).min(self.rows.len());
        &self.rows[start..(start + size).min(self.rows.len())]
    }

    pub fn pages(&self, size: usize) -> usize {
        self.rows.len().div_ceil(size).max(1)
    }
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
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
        assert_eq!(t.page(1, 2).len(), 1);
        assert_eq!(t.pages(2), 2);
        assert_eq!(esc("<a&\">"), "&lt;a&amp;&quot;&gt;");
    }
}
