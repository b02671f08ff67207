//! A line diff (longest common subsequence) of two kernels' sources, drawn side by
//! side with each line's annotations: the lesson of a step is the lines it changed
//! and the change in their numbers.

use std::fmt::Write as _;

use super::annotate::{Line, notes_html};
use super::escape::text;

/// One row of a side-by-side diff: the old line, the new one, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The same text on both sides (`old`, `new` indices).
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

/// The steps that turn `old` into `new`, keeping the longest common subsequence of
/// lines (compared after trimming, so re-indenting is no change).
pub fn diff<T: AsRef<str>>(old: &[T], new: &[T]) -> Vec<Step> {
    let (n, m) = (old.len(), new.len());
    let eq = |i: usize, j: usize| old[i].as_ref().trim() == new[j].as_ref().trim();
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if eq(i, j) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && eq(i, j) {
            out.push(Step::Same(i, j));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(Step::Added(j));
            j += 1;
        } else {
            out.push(Step::Removed(i));
            i += 1;
        }
    }
    out
}

/// Unchanged rows kept around each change; longer runs fold into one row.
const CONTEXT: usize = 3;

/// The side-by-side table of `old` against `new`, or a sentence where they read the
/// same line for line with the same numbers.
pub fn side_by_side(old_name: &str, old: &[Line], new_name: &str, new: &[Line]) -> String {
    let texts = |l: &[Line]| l.iter().map(|x| x.code.to_string()).collect::<Vec<_>>();
    let steps = diff(&texts(old), &texts(new));
    // A row changes where its text or its numbers do.
    let changed: Vec<bool> = steps
        .iter()
        .map(|s| match *s {
            Step::Same(i, j) => old[i].notes_text() != new[j].notes_text(),
            _ => true,
        })
        .collect();
    if !changed.iter().any(|&c| c) {
        return "<p class=\"same\">The same source, line for line, with the same numbers.</p>\n".into();
    }
    let rows = paired(&steps, &changed);
    let near_change = |k: usize| {
        let lo = k.saturating_sub(CONTEXT);
        let hi = (k + CONTEXT).min(rows.len() - 1);
        (lo..=hi).any(|x| rows[x].2)
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<table class=\"diff\"><colgroup><col class=\"lnc\"><col><col class=\"lnc\"><col></colgroup>\
         <thead><tr><th colspan=\"2\">{}</th><th colspan=\"2\">{}</th></tr></thead><tbody>",
        text(old_name),
        text(new_name)
    );
    let mut folded = 0;
    for (k, &(l, r, change)) in rows.iter().enumerate() {
        if !near_change(k) {
            folded += 1;
            continue;
        }
        fold_row(&mut out, &mut folded);
        let (l, r) = (l.map(|i| &old[i]), r.map(|j| &new[j]));
        if let (Some(a), Some(b)) = (l, r)
            && a.is_heading()
            && b.is_heading()
        {
            let _ = writeln!(
                out,
                "<tr class=\"hdr\"><td colspan=\"2\">{}</td><td colspan=\"2\">{}</td></tr>",
                text(&a.code),
                text(&b.code)
            );
            continue;
        }
        let class = match (l, r, change) {
            (Some(_), Some(_), false) => "same",
            (Some(a), Some(b), true) if a.code.trim() == b.code.trim() => "renum",
            (Some(_), None, _) => "del",
            (None, Some(_), _) => "add",
            _ => "chg",
        };
        let _ = writeln!(out, "<tr class=\"{class}\">{}{}</tr>", cell(l), cell(r));
    }
    fold_row(&mut out, &mut folded);
    out.push_str("</tbody></table>\n");
    out
}

/// The rows of the side-by-side view: unchanged lines side by side, and each run of
/// removed lines beside the run of added lines it gave way to. Each row is (old
/// line, new line, whether it changed).
fn paired(steps: &[Step], changed: &[bool]) -> Vec<(Option<usize>, Option<usize>, bool)> {
    let mut rows = Vec::new();
    let mut k = 0;
    while k < steps.len() {
        if let Step::Same(i, j) = steps[k] {
            rows.push((Some(i), Some(j), changed[k]));
            k += 1;
            continue;
        }
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        while k < steps.len() {
            match steps[k] {
                Step::Removed(i) => removed.push(i),
                Step::Added(j) => added.push(j),
                Step::Same(..) => break,
            }
            k += 1;
        }
        for n in 0..removed.len().max(added.len()) {
            rows.push((removed.get(n).copied(), added.get(n).copied(), true));
        }
    }
    rows
}

/// The row that stands for the unchanged lines folded away, if any.
fn fold_row(out: &mut String, folded: &mut usize) {
    if *folded > 0 {
        let _ = writeln!(
            out,
            "<tr class=\"fold\"><td colspan=\"4\">{} unchanged line{}</td></tr>",
            folded,
            if *folded == 1 { "" } else { "s" }
        );
        *folded = 0;
    }
}

/// One side's two cells: the line number, and the code with its notes beneath.
fn cell(line: Option<&Line>) -> String {
    match line {
        None => "<td class=\"ln\"></td><td class=\"code\"></td>".into(),
        Some(l) if l.is_heading() => format!(
            "<td class=\"ln\"></td><td class=\"code hdr\">{}</td>",
            text(&l.code)
        ),
        Some(l) => format!(
            "<td class=\"ln\">{}</td><td class=\"code {}\"><code>{}</code>{}</td>",
            l.number,
            l.waste_class(),
            text(&l.code),
            if l.sites.is_empty() {
                String::new()
            } else {
                format!("<div class=\"notes\">{}</div>", notes_html(&l.sites))
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sites::SiteNote;

    #[test]
    fn the_diff_keeps_the_common_lines_and_marks_the_rest() {
        let old = ["a", "b", "c", "d"];
        let new = ["a", "x", "c", "  d", "e"];
        let steps = diff(&old, &new);
        assert_eq!(
            steps,
            vec![
                Step::Same(0, 0),
                Step::Added(1),
                Step::Removed(1),
                Step::Same(2, 2),
                Step::Same(3, 3),
                Step::Added(4)
            ]
        );
        assert_eq!(diff::<&str>(&[], &[]), vec![]);
        assert_eq!(diff(&["a"], &[]), vec![Step::Removed(0)]);
    }

    fn site(ways: f64) -> SiteNote {
        SiteNote {
            file: "kernels/src/x.rs".into(),
            line: 9,
            op: "load".into(),
            space: "shared".into(),
            array: None,
            requests: 8,
            sectors_per_request: None,
            useful_bytes: 128.0,
            fetched_bytes: None,
            wavefronts: Some(ways),
            bank_ways: Some(ways),
            bank_ways_max: Some(ways as u64),
            pattern: "bank conflicts".into(),
        }
    }

    /// One source, two parameters: no line changes, but the line whose numbers do is
    /// shown on both sides, and the long unchanged run before it folds to one row.
    #[test]
    fn a_line_whose_numbers_changed_is_shown_and_the_rest_folds() {
        let (conflicted, free) = (site(32.0), site(1.0));
        fn lines(s: &SiteNote) -> Vec<Line<'_>> {
            (1..=10)
                .map(|n| Line {
                    number: n,
                    code: format!("line {n}"),
                    sites: if n == 9 { vec![s] } else { Vec::new() },
                })
                .collect()
        }
        let html = side_by_side("a", &lines(&conflicted), "b", &lines(&free));
        assert!(html.contains("<tr class=\"renum\">"), "{html}");
        assert!(html.contains("5 unchanged lines"), "{html}");
        assert!(html.contains("32 wavefronts/req") && html.contains("1 wavefronts/req"));
        assert_eq!(html.matches("<tr class=\"renum\">").count(), 1);
        // The same numbers on the same lines: a sentence, no table.
        let same = side_by_side("a", &lines(&free), "b", &lines(&free));
        assert!(same.contains("line for line"), "{same}");
    }
}
