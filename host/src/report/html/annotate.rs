//! A kernel's source with what the emulator recorded beside each line: one chip per
//! access site, in words and numbers, coloured by how much of what it moves is waste.

use std::fmt::Write as _;

use super::escape::{attr, text};
use super::source::Section;
use crate::report::sites::{SiteNote, Waste, num};

/// One line as the page shows it: a source line and its sites, or a section's
/// heading (the file and where its lines start).
#[derive(Clone, Debug)]
pub struct Line<'a> {
    /// 1-based; 0 for a heading.
    pub number: u32,
    pub code: String,
    pub sites: Vec<&'a SiteNote>,
}

impl Line<'_> {
    pub fn is_heading(&self) -> bool {
        self.number == 0
    }

    /// The worst waste of its sites' as a CSS class, or none.
    pub fn waste_class(&self) -> &'static str {
        self.sites
            .iter()
            .map(|s| Waste::of(s.waste()))
            .max()
            .map_or("", Waste::class)
    }

    /// Its sites in words, to tell whether a step changed its numbers.
    pub fn notes_text(&self) -> String {
        self.sites
            .iter()
            .map(|s| s.describe())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The lines of `sections` with the sites of `notes` placed on them; the sites that
/// fall on no line shown come back apart.
pub fn lines<'a>(sections: &[Section], notes: &'a [SiteNote]) -> (Vec<Line<'a>>, Vec<&'a SiteNote>) {
    let mut out = Vec::new();
    for (k, s) in sections.iter().enumerate() {
        let role = if k == 0 { "the kernel" } else { "a helper it calls" };
        out.push(Line {
            number: 0,
            code: format!("{} ({role})", s.file),
            sites: Vec::new(),
        });
        for (i, code) in s.lines.iter().enumerate() {
            let number = s.first + i as u32;
            out.push(Line {
                number,
                code: code.to_string(),
                sites: notes
                    .iter()
                    .filter(|n| n.file == s.file && n.line == number)
                    .collect(),
            });
        }
    }
    let unplaced = notes
        .iter()
        .filter(|n| !sections.iter().any(|s| s.holds(&n.file, n.line)))
        .collect();
    (out, unplaced)
}

/// The chips of a line's sites. Each carries its figures as data attributes
/// (`data-sectors-per-request`), which a test or a script can read.
pub fn notes_html(sites: &[&SiteNote]) -> String {
    let mut out = String::new();
    for s in sites {
        let waste = Waste::of(s.waste());
        let mut data = format!(
            "data-op=\"{}\" data-space=\"{}\" data-requests=\"{}\" data-useful-bytes=\"{}\"",
            attr(&s.op),
            attr(&s.space),
            s.requests,
            num(s.useful_bytes)
        );
        if let Some(a) = &s.array {
            let _ = write!(data, " data-array=\"{}\"", attr(a));
        }
        if let Some(x) = s.sectors_per_request {
            let _ = write!(data, " data-sectors-per-request=\"{}\"", num(x));
        }
        if let Some(x) = s.wavefronts {
            let _ = write!(data, " data-wavefronts=\"{}\"", num(x));
        }
        if let Some(x) = s.bank_ways {
            let _ = write!(data, " data-bank-ways=\"{}\"", num(x));
        }
        let _ = write!(
            out,
            "<span class=\"site {}\" {data} title=\"{}\">{}<span class=\"pat\"> · {} · {} req</span></span>",
            waste.class(),
            attr(&format!(
                "{:.0}% of what it moves is beyond what its bytes need",
                100.0 * s.waste()
            )),
            text(&s.describe()),
            text(&s.pattern),
            s.requests
        );
    }
    out
}

/// The annotated source: line numbers, code, and the notes beside each line.
pub fn table(lines: &[Line], unplaced: &[&SiteNote]) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"src\"><tbody>\n");
    for l in lines {
        if l.is_heading() {
            let _ = writeln!(
                out,
                "<tr class=\"hdr\"><td colspan=\"3\">{}</td></tr>",
                text(&l.code)
            );
            continue;
        }
        let _ = writeln!(
            out,
            "<tr class=\"{}\" data-line=\"{}\"><td class=\"ln\">{}</td><td class=\"code\"><code>{}</code></td><td class=\"notes\">{}</td></tr>",
            l.waste_class(),
            l.number,
            l.number,
            text(&l.code),
            notes_html(&l.sites)
        );
    }
    out.push_str("</tbody></table></div>\n");
    if !unplaced.is_empty() {
        out.push_str("<p class=\"unplaced\">Sites outside the lines shown: ");
        for s in unplaced {
            let _ = write!(
                out,
                "<span class=\"at\">{}:{}</span> {} ",
                text(&s.file),
                s.line,
                notes_html(&[*s])
            );
        }
        out.push_str("</p>\n");
    }
    out
}
