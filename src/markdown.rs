//! A user's text inside Markdown, for every writer of it (the run report, a study's, the bundle's, the
//! validation document): written once, so no writer lets raw HTML or a line break through.

/// A user's text (a scenario or class name) made safe for one Markdown table cell: no raw HTML, no `|` or
/// line break to break the table.
pub fn md_cell(t: &str) -> String {
    md_text(t).replace('|', "\\|")
}

/// Text a user gave (a scenario's, a class's or a session class's name), and prose that quotes it, inside
/// Markdown: no raw HTML reaches a renderer, and no newline breaks a line, a heading or a list item.
pub fn md_text(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace(['\n', '\r'], " ")
}
