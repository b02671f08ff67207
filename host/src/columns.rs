//! The one column formatter behind every plain-text table (`run`, `compare`,
//! `explain`, `check` against Nsight Compute).

/// How a table is laid out.
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout<'a> {
    /// Which columns are right-aligned (numbers); the rest, and columns past the
    /// end of this list, are left-aligned.
    pub right: &'a [bool],
    /// Put before every line.
    pub indent: &'a str,
    /// A rule of dashes under the first row (the header).
    pub rule: bool,
}

/// Right-aligns every column from `left` on: the shape of the measurement tables.
pub fn numbers_from(left: usize, ncol: usize) -> Vec<bool> {
    (0..ncol).map(|c| c >= left).collect()
}

/// Aligns `rows` into columns two spaces apart; trailing spaces are trimmed.
pub fn columns(rows: &[Vec<String>], layout: Layout<'_>) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..n)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mut line = String::from(layout.indent);
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(width[c] - cell.chars().count());
            if layout.right.get(c).copied().unwrap_or(false) {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 && layout.rule {
            out.push_str(layout.indent);
            out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * n.saturating_sub(1)));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let rows = vec![vec!["a".into(), "1".into()], vec!["long".into(), "100".into()]];
        let plain = Layout {
            right: &[false, true],
            ..Layout::default()
        };
        assert_eq!(columns(&rows, plain), "a       1\nlong  100\n");
        let ruled = Layout { rule: true, ..plain };
        assert_eq!(columns(&rows, ruled), "a       1\n---------\nlong  100\n");
        assert_eq!(numbers_from(2, 4), [false, false, true, true]);
    }
}
