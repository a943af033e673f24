//! Where the scenario JSON stops being JSON, and the line numbers beside the editor that show it. Pure, so
//! its tests run natively.

use crate::components::table::esc;

/// A syntax error in the editor's text: its line and column (1-based, as serde_json counts) and what was
/// expected there, without serde_json's own " at line … column …".
#[derive(Debug, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl SyntaxError {
    /// The error as the editor's list says it.
    pub fn text(&self) -> String {
        format!("line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// The text's first syntax error, or None when it is JSON (whether or not it is a valid scenario).
pub fn syntax_error(text: &str) -> Option<SyntaxError> {
    let e = serde_json::from_str::<serde_json::Value>(text).err()?;
    let full = e.to_string();
    let message = match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    };
    // An empty editor is line 0 to serde_json; it is line 1 to a person.
    Some(SyntaxError { line: e.line().max(1), column: e.column().max(1), message })
}

/// The line a syntax error's text names ("line 3, column 3: …").
pub fn line_of(message: &str) -> Option<usize> {
    message.strip_prefix("line ")?.split(',').next()?.parse().ok()
}

/// The gutter's HTML: one number per line of `text`, the line `bad` marked.
pub fn gutter_html(text: &str, bad: Option<&SyntaxError>) -> String {
    let lines = text.split('\n').count();
    (1..=lines.max(bad.map_or(1, |b| b.line)))
        .map(|n| match bad {
            Some(b) if b.line == n => format!("<mark title=\"{}\">{n}</mark>", esc(&b.text())),
            _ => n.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The byte range of line `line` (1-based) in `text`, to select it; past the end: the end.
pub fn line_range(text: &str, line: usize) -> (usize, usize) {
    let mut start = 0;
    for (i, l) in text.split('\n').enumerate() {
        if i + 1 == line {
            return (start, start + l.len());
        }
        start += l.len() + 1;
    }
    (text.len(), text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_comma_is_found_at_its_line_and_said_plainly() {
        let text = "{\n  \"seed\": 7\n  \"name\": \"x\"\n}";
        let e = syntax_error(text).unwrap();
        assert_eq!((e.line, e.column), (3, 3));
        assert_eq!(e.text(), "line 3, column 3: expected `,` or `}`");
        assert_eq!(line_of(&e.text()), Some(3));
        assert_eq!(line_of("must be 1 … 4096"), None);
        let g = gutter_html(text, Some(&e));
        assert_eq!(g.lines().count(), 4);
        assert!(g.contains("<mark title=\"line 3, column 3: expected `,` or `}`\">3</mark>"));
        assert_eq!(&text[line_range(text, 3).0..line_range(text, 3).1], "  \"name\": \"x\"");
    }

    #[test]
    fn json_that_is_no_scenario_is_no_syntax_error_and_empty_text_is_line_1() {
        assert_eq!(syntax_error("{\"seed\": \"seven\"}"), None, "the validator names that field");
        let e = syntax_error("").unwrap();
        assert_eq!(e.line, 1);
        assert_eq!(e.message, "EOF while parsing a value");
        let e = syntax_error("{\n\"a\": [1, 2,\n").unwrap();
        assert_eq!(e.line, 3, "an unfinished list is reported where the text ends");
        assert_eq!(gutter_html("{\n\"a\": [1, 2,\n", Some(&e)).lines().count(), 3);
        assert_eq!(line_range("ab", 9), (2, 2));
    }
}
