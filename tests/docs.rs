//! The Markdown a reader meets says what the code does. Every relative link in the
//! project's Markdown (README, docs/, the sample report) leads somewhere: a file or
//! folder that exists, and where it names an anchor, a heading of that file (links to
//! web pages are left alone). The README's table of kernels names every variant, and
//! the messages docs/commands.md quotes are the ones the binary prints. No GPU needed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every .md file of the workspace, outside build output, hidden folders and the
/// steering folder some checkouts carry.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "shared") {
                markdown_files(&p, out);
            }
        } else if name.ends_with(".md") {
            out.push(p);
        }
    }
}

/// The text outside fenced code blocks and inline code spans, line by line (a link
/// inside code is an example, not a link).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// The destinations of a line's inline links and images, `[text](dest)`.
fn destinations(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let dest = after[..end].split_whitespace().next().unwrap_or("");
        out.push(dest.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &after[end.min(after.len())..];
    }
    // Reference definitions: `[name]: dest`.
    let t = line.trim_start();
    if t.starts_with('[')
        && let Some(at) = t.find("]: ")
    {
        out.push(t[at + 3..].split_whitespace().next().unwrap_or("").to_string());
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a Markdown file's headings make (repeats get -1, -2, ... as on GitHub).
fn anchors(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
        let mut s = base.clone();
        let mut n = 0;
        while seen.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        seen.insert(s);
    }
    seen
}

/// What is wrong with `dest`, a link in `file`; None where it resolves.
fn broken(file: &Path, dest: &str) -> Option<String> {
    if dest.is_empty() {
        return Some("an empty link".into());
    }
    if dest.contains("://") || dest.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match dest.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (dest, None),
    };
    let target = if path.is_empty() {
        file.to_path_buf()
    } else if path.starts_with('/') {
        root().join(path.trim_start_matches('/'))
    } else {
        file.parent().unwrap().join(path)
    };
    if !target.exists() {
        return Some(format!("{} does not exist", target.display()));
    }
    match anchor {
        Some(a) if target.extension().is_some_and(|e| e == "md") => {
            (!anchors(&target).contains(a)).then(|| format!("{} has no heading #{a}", target.display()))
        }
        _ => None,
    }
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let mut files = Vec::new();
    markdown_files(&root(), &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.len() > 5,
        "{files:?}"
    );
    let mut bad = Vec::new();
    let mut links = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, t) in prose(&text) {
            for d in destinations(&t) {
                links += 1;
                if let Some(why) = broken(f, &d) {
                    let shown = f.strip_prefix(root()).unwrap_or(f).display();
                    bad.push(format!("{shown}:{line}: ({d}): {why}"));
                }
            }
        }
    }
    assert!(
        links > 20,
        "only {links} links found: is the parser reading them?"
    );
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_link_reader_finds_links_and_anchors() {
    assert_eq!(
        destinations("see [a](docs/a.md#x) and ![b](b.svg \"t\") then `[c](no)`"),
        ["docs/a.md#x", "b.svg", "no"]
    );
    assert_eq!(prose("x `[c](no)` y")[0].1, "x  y");
    assert_eq!(destinations("[ref]: docs/x.md"), ["docs/x.md"]);
    assert_eq!(slug("Rust against CUDA C++"), "rust-against-cuda-c");
    assert_eq!(slug("The matmul ladder"), "the-matmul-ladder");
    assert_eq!(
        slug("`coalesce explain`: what it does"),
        "coalesce-explain-what-it-does"
    );
    let readme = root().join("README.md");
    assert!(broken(&readme, "docs/no-such-file.md").is_some());
    assert!(broken(&readme, "#no-such-heading").is_some());
    assert!(broken(&readme, "docs").is_none());
    assert!(broken(&readme, "https://example.com/x").is_none());
}

/// The README's "What the kernels show" row of each experiment names each of its
/// variants: by name in backticks, or as a family (`pipeline-*`, `f32-K`, numbers).
#[test]
fn the_readme_names_every_variant() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for e in coalesce::experiments::ALL {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", e.name)))
            .unwrap_or_else(|| panic!("the README's table of kernels has no row for {}", e.name));
        for v in e.variants {
            let name = v.name;
            let numbered = name.parse::<u32>().is_ok();
            let family = name.match_indices('-').any(|(i, _)| {
                let (prefix, last) = (&name[..i], &name[i + 1..]);
                row.contains(&format!("`{prefix}-*`"))
                    || (last.parse::<u32>().is_ok() && row.contains(&format!("`{prefix}-K`")))
            });
            assert!(
                numbered || family || row.contains(&format!("`{name}`")),
                "the README's row for {} does not name {name}: {row}",
                e.name
            );
        }
    }
}

/// docs/commands.md quotes the binary's messages for a misspelt experiment, a
/// wrong variant word and a device as an output word for word.
#[test]
fn the_messages_docs_quote_are_the_binarys() {
    let doc = std::fs::read_to_string(root().join("docs/commands.md")).unwrap();
    for (args, code) in [
        (&["run", "strid"][..], 2),
        (&["run", "copy/f64"], 2),
        (&["explain", "copy/f32", "--json", "/dev/full"], 1),
        (&["report", "--out", "/dev/null"], 1),
    ] {
        let out = assert_cmd::Command::cargo_bin("coalesce")
            .unwrap()
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.trim().strip_prefix("error: ").unwrap_or(err.trim());
        assert!(
            doc.contains(&format!("`{line}`")),
            "docs/commands.md does not quote `{}`'s message: {line}",
            args.join(" ")
        );
    }
}
