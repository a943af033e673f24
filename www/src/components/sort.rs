//! The sort state of a table, shared by every panel's table: click a header to sort ascending, again for
//! descending; the header says which (`aria-sort`) for sight and for screen readers.

use crate::components::table::esc;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sort {
    pub col: Option<usize>,
    pub desc: bool,
}

impl Sort {
    /// A click on column `col`: ascending, then descending, then ascending again.
    pub fn click(&mut self, col: usize) {
        self.desc = self.col == Some(col) && !self.desc;
        self.col = Some(col);
    }

    /// The header cell of column `i` (`attr` carries its index for the click handler); `label` is HTML.
    pub fn th(&self, attr: &str, i: usize, label: &str, title: &str) -> String {
        self.th_classed(attr, i, label, title, "")
    }

    /// [`Sort::th`] with a class (`""`: none).
    pub fn th_classed(&self, attr: &str, i: usize, label: &str, title: &str, class: &str) -> String {
        let sort = match (self.col == Some(i), self.desc) {
            (true, true) => " aria-sort=\"descending\"",
            (true, false) => " aria-sort=\"ascending\"",
            _ => "",
        };
        let class = if class.is_empty() { String::new() } else { format!(" class=\"{class}\"") };
        format!("<th {attr}=\"{i}\"{class} tabindex=\"0\" title=\"{}\"{sort}>{label}</th>", esc(title))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_toggle_and_headers_say_so() {
        let mut s = Sort::default();
        assert_eq!(
            s.th("data-col", 2, "TTFT", "ttft_s"),
            "<th data-col=\"2\" tabindex=\"0\" title=\"ttft_s\">TTFT</th>"
        );
        s.click(2);
        assert_eq!((s.col, s.desc), (Some(2), false));
        assert!(s.th("data-col", 2, "TTFT", "").contains("aria-sort=\"ascending\""));
        s.click(2);
        assert!(s.desc && s.th("data-col", 2, "TTFT", "").contains("aria-sort=\"descending\""));
        s.click(2);
        assert!(!s.desc);
        s.click(4);
        assert_eq!((s.col, s.desc), (Some(4), false), "another column starts ascending");
        assert!(!s.th("data-col", 2, "TTFT", "").contains("aria-sort"));
    }
}
