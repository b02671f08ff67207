//! The text the page annotates: each kernel's own lines in the kernels crate's
//! sources (embedded at build time), with the helpers its accesses sit in; its CUDA
//! C++ twin's entry function; its PTX entry.

/// Every `kernels/src/**.rs`, by the path the emulator's sites name
/// (`kernels/src/copy.rs`), with its text (host/build.rs).
const SOURCES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// The text of an embedded kernels-crate file.
pub fn file(path: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
}

/// A run of lines of one file: `first` is the 1-based number of `lines[0]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub file: String,
    pub first: u32,
    pub lines: Vec<&'static str>,
}

impl Section {
    pub fn last(&self) -> u32 {
        self.first + self.lines.len() as u32 - 1
    }

    pub fn holds(&self, file: &str, line: u32) -> bool {
        self.file == file && (self.first..=self.last()).contains(&line)
    }
}

/// A line's code with any `//` comment and string or char literal dropped, for
/// counting braces.
fn code_only(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A char literal ('{'), not a lifetime ('a): a quote two or three on.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                } else if rest.starts_with('\\') && rest.chars().nth(2) == Some('\'') {
                    chars.nth(2);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The index of the line that closes the block opened at or after `start` (the
/// first `{` there): braces counted, comments and literals skipped.
fn block_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut opened = false;
    for (i, l) in lines.iter().enumerate().skip(start) {
        for c in code_only(l).chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        // A declaration ending in `;` before any brace is no block.
        if !opened && code_only(l).trim_end().ends_with(';') {
            return None;
        }
        if opened && depth <= 0 {
            return Some(i);
        }
    }
    None
}

/// The first line of the comments and attributes just above line `at`.
fn with_preamble(lines: &[&str], at: usize, comment: &str) -> usize {
    let mut first = at;
    while first > 0 {
        let l = lines[first - 1].trim_start();
        if l.starts_with(comment) || l.starts_with("#[") || l.starts_with("kernel!") {
            first -= 1;
        } else {
            break;
        }
    }
    first
}

/// Whether `line` declares the function `name` (`pub fn name(`, `unsafe fn name<`).
fn declares(line: &str, name: &str) -> bool {
    let t = line.trim_start();
    let Some(at) = t.find("fn ") else { return false };
    let prefix = &t[..at];
    let words_ok = prefix.split_whitespace().all(|w| {
        matches!(
            w,
            "pub" | "pub(crate)" | "pub(super)" | "unsafe" | "const" | "extern" | "\"C\"" | "async"
        )
    });
    let rest = &t[at + 3..];
    words_ok && rest.starts_with(name) && rest[name.len()..].starts_with(['(', '<'])
}

/// The function declared at or above line `at` (0-based) whose body holds `at`.
fn enclosing_fn(lines: &[&str], at: usize) -> Option<(usize, usize)> {
    (0..=at).rev().find_map(|i| {
        let t = lines[i].trim_start();
        let is_fn = t.contains("fn ") && {
            let before = &t[..t.find("fn ").unwrap_or(0)];
            before
                .split_whitespace()
                .all(|w| matches!(w, "pub" | "pub(crate)" | "pub(super)" | "unsafe" | "const"))
        };
        if !is_fn {
            return None;
        }
        let end = block_end(lines, i)?;
        (end >= at).then(|| (with_preamble(lines, i, "//"), end))
    })
}

fn section(file: &str, lines: &[&'static str], first: usize, last: usize) -> Section {
    Section {
        file: file.to_string(),
        first: first as u32 + 1,
        lines: lines[first..=last].to_vec(),
    }
}

/// The names of the functions `lines` call by a bare name (`overlap::<Bf16>(`,
/// `simt(`): not methods (`.read(`), paths (`wgmma::fence(`) or macros.
fn bare_calls(lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        let code = code_only(l);
        let b = code.as_bytes();
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while i < b.len() {
            if !(ident(b[i]) && (i == 0 || !ident(b[i - 1]))) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let name = &code[start..i];
            let before = code[..start].trim_end();
            let called = code[i..].starts_with('(') || code[i..].starts_with("::<");
            let bare = !(before.ends_with('.') || before.ends_with("::") || before.ends_with("fn"));
            if called && bare && !name.as_bytes()[0].is_ascii_digit() && !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// A kernel's source: its `kernel!` block (doc comment and body), then the functions
/// of its file that the block calls by name (the rung's body, where the block only
/// instantiates it) and each function of the kernels crate that holds one of
/// `site_lines` outside it (the helpers its accesses sit in), in file order. Empty
/// where the kernel is not found.
pub fn kernel_sections(kernel: &str, site_lines: &[(String, u32)]) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut helpers: Vec<Section> = Vec::new();
    for (path, text) in SOURCES {
        let lines: Vec<&'static str> = text.lines().collect();
        if let Some(at) = lines.iter().position(|l| declares(l, kernel))
            && let Some(end) = block_end(&lines, at)
        {
            // The `kernel! {` block's closing brace, right after the function's.
            let end = match lines.get(end + 1) {
                Some(l) if l.trim() == "}" && lines[..at].iter().rev().any(|l| l.starts_with("kernel!")) => {
                    end + 1
                }
                _ => end,
            };
            out.push(section(path, &lines, with_preamble(&lines, at, "///"), end));
            for name in bare_calls(&lines[at..=end]).iter().filter(|n| *n != kernel) {
                let Some(decl) = lines.iter().position(|l| declares(l, name)) else {
                    continue;
                };
                if let Some(last) = block_end(&lines, decl) {
                    helpers.push(section(path, &lines, with_preamble(&lines, decl, "//"), last));
                }
            }
            break;
        }
    }
    for (path, line) in site_lines {
        if out.iter().chain(&helpers).any(|s| s.holds(path, *line)) {
            continue;
        }
        let Some(text) = file(path) else { continue };
        let lines: Vec<&'static str> = text.lines().collect();
        let at = (*line as usize).saturating_sub(1);
        if at >= lines.len() {
            continue;
        }
        if let Some((first, last)) = enclosing_fn(&lines, at) {
            helpers.push(section(path, &lines, first, last));
        }
    }
    helpers.sort_by(|a, b| (&a.file, a.first).cmp(&(&b.file, b.first)));
    helpers.dedup();
    out.extend(helpers);
    out
}

/// The CUDA C++ twin's `__global__` function `entry` in `source`, with the comment
/// above it; `None` where it is not found.
pub fn twin_entry(source: &str, entry: &str) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let at = lines.iter().position(|l| {
        l.contains("__global__")
            && l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == entry)
    })?;
    let end = block_end(&lines, at)?;
    let first = with_preamble(&lines, at, "//");
    Some(lines[first..=end].join("\n"))
}

/// The PTX of `.entry name` in `ptx`, from its declaration to its closing brace.
pub fn ptx_entry(ptx: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let at = lines.iter().position(|l| {
        l.contains(".entry")
            && l.split_whitespace()
                .any(|w| w == name || w.strip_suffix('(') == Some(name))
    })?;
    let end = (at..lines.len()).find(|&i| lines[i] == "}")?;
    Some(lines[at..=end].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_section_is_its_kernel_block() {
        let s = kernel_sections("transpose_naive_write", &[]);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].file, "kernels/src/transpose.rs");
        assert!(s[0].lines[0].starts_with("kernel!"), "{:?}", s[0].lines[0]);
        assert!(s[0].lines.iter().any(|l| l.contains("fn transpose_naive_write(")));
        assert_eq!(s[0].lines.last().map(|l| l.trim()), Some("}"));
        // Not the next kernel's.
        assert!(!s[0].lines.iter().any(|l| l.contains("transpose_naive_read")));
    }

    #[test]
    fn a_helper_that_holds_a_site_is_shown_after_the_kernel() {
        let text = file("kernels/src/transpose.rs").unwrap();
        let inside = text
            .lines()
            .position(|l| l.contains("tile.write(j * pitch + tx"))
            .unwrap() as u32
            + 1;
        let s = kernel_sections("transpose_tiled", &[("kernels/src/transpose.rs".into(), inside)]);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[1].holds("kernels/src/transpose.rs", inside));
        assert!(s[1].lines.iter().any(|l| l.contains("fn through_tile(")));
    }

    #[test]
    fn the_rung_a_kernel_block_instantiates_is_shown_after_it() {
        let s = kernel_sections("hgemm_overlap_bf16", &[]);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].lines.iter().any(|l| l.contains("fn hgemm_overlap_bf16(")));
        assert_eq!(s[1].file, "kernels/src/hgemm/overlap.rs");
        assert!(
            s[1].lines
                .iter()
                .any(|l| l.contains("unsafe fn overlap<H: Half>("))
        );
        // Methods, paths and macros are not bare calls; the kernel's own name is skipped.
        assert_eq!(
            bare_calls(&["unsafe { a.read(i); wgmma::fence(); unroll!(x); rung::<T>(m, f(k)) }"]),
            ["rung", "f"]
        );
    }

    #[test]
    fn braces_in_comments_and_literals_do_not_count() {
        assert_eq!(code_only("let c = '{'; // }"), "let c = ; ");
        // A lifetime loses its quote, not its name: no brace hides there.
        assert_eq!(code_only("f(\"{\", 'a)"), "f(, a)");
        let lines = ["fn f() {", "  let s = \"}\";", "}", "fn g() {}"];
        assert_eq!(block_end(&lines, 0), Some(2));
    }

    #[test]
    fn twin_and_ptx_entries_are_cut_out_of_their_files() {
        let twin = twin_entry(
            crate::experiments::transpose::EXPERIMENT.twin.source,
            "transpose_naive_write",
        )
        .unwrap();
        assert!(twin.starts_with("// Naive"), "{twin}");
        assert!(twin.ends_with('}'));
        assert!(!twin.contains("transpose_naive_read"));
        let ptx = ptx_entry(crate::ptx::PTX, "transpose_naive_write").unwrap();
        assert!(ptx.contains(".entry transpose_naive_write"), "{ptx}");
        assert!(ptx.ends_with('}'));
        assert!(!ptx.contains(".entry transpose_naive_read"));
        assert_eq!(twin_entry("x", "nothing"), None);
        assert_eq!(ptx_entry(crate::ptx::PTX, "nothing"), None);
    }
}
