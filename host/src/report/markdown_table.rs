//! A Markdown table, for every section of the report.

use std::fmt::Write as _;

/// Escapes the characters that would break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A Markdown table: the header, its rule, one line per row (every section's tables).
pub fn table(out: &mut String, header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}
