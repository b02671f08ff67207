// The emulator's kernel table generator, shared by `kernels/build.rs` and
// `tests/broken-kernels/build.rs` through `include!`, so the scanner exists once.
//
// It finds every `kernel! { pub fn NAME(PARAMS) { ... } }` block in the given source
// files and writes `$OUT_DIR/host_kernels.rs`: a `HOST_KERNELS` table with one
// `HostKernel` per kernel, whose `call` turns parameter words into arguments. Adding a
// kernel therefore needs no table edit. Plain std, no dependencies: the kernel crates
// have none, and a build script should not pull in a parser for this much syntax.
//
// The scan is lexical, not a full parse: comments and string/char literals are blanked
// first (so doc comments, `// notes` and braces in strings cannot confuse it), then
// brackets are matched. Anything in a `kernel!` block that is not the shape the macro
// accepts fails the build with a message naming the file and line, rather than
// leaving a kernel out of the table silently.

use std::path::Path;

/// One kernel found in a source file.
struct ScannedKernel {
    /// The function's path from the generated code, e.g. `crate::copy::copy_f32`.
    path: String,
    name: String,
    /// Parameter types as written, whitespace runs collapsed to one space.
    params: Vec<String>,
    /// `file:line` of the `kernel!` block, for duplicate-name errors.
    site: String,
    /// `#[launch_bounds(THREADS, BLOCKS)]`: the most threads per block and the blocks
    /// that must fit on one SM, which `host/build.rs` writes into the PTX.
    launch_bounds: Option<(u32, u32)>,
}

/// The kernel crate's module files in `src` (sorted, so the table's order does not
/// depend on the file system), each with its module path: every top-level file is a
/// module of lib.rs named after it, and lib.rs is the root.
#[allow(dead_code)] // The broken-kernels crate lists its one file itself.
fn module_files(src: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(src)
        .unwrap_or_else(|e| panic!("{} is not readable: {e}", src.display()))
        .map(|e| e.expect("the kernel sources list").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).expect("UTF-8 file names in src");
            let prefix = if stem == "lib" { "crate".to_string() } else { format!("crate::{stem}") };
            (p, prefix)
        })
        .collect()
}

/// Every kernel of `files` (as for [`generate_host_kernels`]) declared with
/// `#[launch_bounds(THREADS, BLOCKS)]`: (name, threads, blocks).
#[allow(dead_code)] // Only host/build.rs asks.
fn scan_launch_bounds(files: &[(&Path, String)]) -> Vec<(String, u32, u32)> {
    let mut bounds = Vec::new();
    for (file, prefix) in files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {} to list its kernels: {e}", file.display()));
        for k in scan_kernels(&file.display().to_string(), &source, prefix) {
            if let Some((threads, blocks)) = k.launch_bounds {
                bounds.push((k.name, threads, blocks));
            }
        }
    }
    bounds
}

/// Scans `files` (each with the module path its kernels live at, e.g. `crate::copy`,
/// or `crate` for lib.rs) and writes `$OUT_DIR/host_kernels.rs`. `emu` is the path of
/// `kernels::gpu::emu` as the including crate sees it.
#[allow(dead_code)] // host/build.rs includes the scanner for launch bounds only.
fn generate_host_kernels(files: &[(&Path, String)], emu: &str) {
    let mut kernels = Vec::new();
    for (file, prefix) in files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {} to list its kernels: {e}", file.display()));
        kernels.extend(scan_kernels(&file.display().to_string(), &source, prefix));
    }
    // The names are PTX entry points and table keys: two kernels of one name would
    // collide on the GPU and make `host_kernel(name)` ambiguous.
    for (i, k) in kernels.iter().enumerate() {
        if let Some(first) = kernels[..i].iter().find(|o| o.name == k.name) {
            panic!(
                "{}: kernel `{}` is already declared at {}: kernel names must be unique",
                k.site, k.name, first.site
            );
        }
    }
    let out = std::env::var_os("OUT_DIR").expect("OUT_DIR is set for build scripts");
    let path = Path::new(&out).join("host_kernels.rs");
    std::fs::write(&path, render_table(&kernels, emu))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// The generated Rust source: `HOST_KERNELS`, in the order the kernels were found.
fn render_table(kernels: &[ScannedKernel], emu: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let mut line = |text: String| {
        s.push_str(&text);
        s.push('\n');
    };
    line("// Generated by kernel_table.rs (a build script) from the crate's `kernel!` blocks.".into());
    line(format!(
        "/// Every kernel of this crate, runnable on the emulator by name: see [`{emu}::HostKernel`]."
    ));
    line(format!("pub static HOST_KERNELS: &[{emu}::HostKernel] = &["));
    for k in kernels {
        let (name, n) = (&k.name, k.params.len());
        let mut params = String::new();
        let mut args = String::new();
        for (i, p) in k.params.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(params, "{sep}{p:?}");
            let _ = write!(args, "{sep}{emu}::FromWord::from_word(w[{i}])");
        }
        line(format!("    {emu}::HostKernel {{"));
        line(format!("        name: {name:?},"));
        line(format!("        params: &[{params}],"));
        line("        call: {".into());
        line("            unsafe fn call(w: &[u64]) {".into());
        // Checked before any conversion, so a wrong count names the kernel instead of
        // failing as an index out of bounds.
        line(format!(
            "                assert!(w.len() == {n}, \"kernel {name} takes {n} parameter words, got {{}}\", w.len());"
        ));
        line(
            "                // SAFETY: the caller keeps HostKernel::call's contract, which is the kernel's."
                .into(),
        );
        line(format!("                unsafe {{ {}({args}) }}", k.path));
        line("            }".into());
        line("            call".into());
        line("        },".into());
        line("    },".into());
    }
    line("];".into());
    s
}

/// The kernels declared in `source` (the text of `file`), whose module path is `prefix`.
fn scan_kernels(file: &str, source: &str, prefix: &str) -> Vec<ScannedKernel> {
    let code = mask_comments_and_literals(source);
    let c = code.as_slice();
    let mut found = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b if is_ident_start(b) && (i == 0 || !is_ident(c[i - 1])) => {
                let end = ident_end(c, i);
                let after = skip_ws(c, end);
                if &c[i..end] == b"kernel" && c.get(after) == Some(&b'!') {
                    let fail = |what: &str, at: usize| -> ! { parse_error(file, source, c, at, what) };
                    if depth != 0 {
                        fail(
                            "a `kernel!` block at the top level of its file (the table names \
                             kernels by file; one inside a function or inline module cannot be named)",
                            i,
                        );
                    }
                    let open = skip_ws(c, after + 1);
                    if !matches!(c.get(open), Some(b'{' | b'(' | b'[')) {
                        fail("`{` after `kernel!`", open);
                    }
                    let close = matching(c, open).unwrap_or_else(|| fail("a closing bracket", open));
                    let site = format!("{file}:{}", line_of(c, i));
                    found.push(parse_block(file, source, c, open + 1, close, prefix, site));
                    i = close + 1;
                    continue;
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Parses the inside of one `kernel!` block, `c[start..end]`: attributes, then exactly
/// one `pub fn NAME(PARAMS) { BODY }`, as the macro's matcher accepts.
fn parse_block(
    file: &str,
    source: &str,
    c: &[u8],
    start: usize,
    end: usize,
    prefix: &str,
    site: String,
) -> ScannedKernel {
    let fail = |what: &str, at: usize| -> ! { parse_error(file, source, c, at.min(end), what) };
    let within = |p: Option<usize>, at: usize| match p {
        Some(p) if p < end => p,
        _ => fail("balanced brackets", at),
    };
    let mut p = skip_ws(c, start);
    let mut launch_bounds = None;
    // Attributes (doc comments are already blanked): `#[...]`, possibly `#![...]`.
    while p < end && c[p] == b'#' {
        let mut q = skip_ws(c, p + 1);
        if c.get(q) == Some(&b'!') {
            q = skip_ws(c, q + 1);
        }
        if c.get(q) != Some(&b'[') {
            fail("`[` after `#`", q);
        }
        let close = within(matching(c, q), q);
        let inside = String::from_utf8_lossy(&c[q + 1..close]);
        if let Some(args) = inside.trim().strip_prefix("launch_bounds") {
            let numbers: Option<Vec<u32>> = args
                .trim()
                .strip_prefix('(')
                .and_then(|a| a.strip_suffix(')'))
                .map(|a| a.split(',').map(|n| n.trim().parse().ok()).collect::<Option<Vec<u32>>>())
                .unwrap_or(None);
            match numbers.as_deref() {
                Some(&[threads, blocks]) if threads > 0 && blocks > 0 => launch_bounds = Some((threads, blocks)),
                _ => fail("`#[launch_bounds(THREADS, BLOCKS)]` with two positive integers", q),
            }
        }
        p = skip_ws(c, close + 1);
    }
    let word = |p: &mut usize, what: &str| -> String {
        if *p >= end || !is_ident_start(c[*p]) {
            fail(what, *p);
        }
        let e = ident_end(c, *p);
        let w = String::from_utf8_lossy(&c[*p..e]).into_owned();
        *p = skip_ws(c, e);
        w
    };
    let at = p;
    if word(&mut p, "`pub fn`") != "pub" {
        fail("`pub fn`", at);
    }
    let at = p;
    if word(&mut p, "`fn` after `pub`") != "fn" {
        fail("`fn` after `pub`", at);
    }
    let name = word(&mut p, "the kernel's name after `pub fn`");
    if c.get(p) != Some(&b'(') || p >= end {
        fail("`(` after the kernel's name (kernels take no generics)", p);
    }
    let close = within(matching(c, p), p);
    let params = split_params(&c[p + 1..close]).unwrap_or_else(|(offset, what)| fail(what, p + 1 + offset));
    let body = skip_ws(c, close + 1);
    if c.get(body) != Some(&b'{') || body >= end {
        fail(
            "the kernel's body `{` after its parameters (kernels return nothing)",
            body,
        );
    }
    let body_end = within(matching(c, body), body);
    let rest = skip_ws(c, body_end + 1);
    if rest < end {
        fail("the end of the `kernel!` block: one `pub fn` per block", rest);
    }
    ScannedKernel {
        path: format!("{prefix}::{name}"),
        name,
        params,
        site,
        launch_bounds,
    }
}

/// Splits `name: Type, ...` at top-level commas into the types; `Err` has the offset
/// of the problem and what was expected there.
fn split_params(list: &[u8]) -> Result<Vec<String>, (usize, &'static str)> {
    let mut pieces = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, &b) in list.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            // `->` in a fn-pointer type is not a closing angle bracket.
            b'>' if i > 0 && list[i - 1] == b'-' => {}
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b',' if depth == 0 => {
                pieces.push((from, &list[from..i]));
                from = i + 1;
            }
            _ => {}
        }
    }
    pieces.push((from, &list[from..]));
    let last = pieces.len() - 1;
    let mut types = Vec::new();
    for (k, (offset, piece)) in pieces.into_iter().enumerate() {
        let text = String::from_utf8_lossy(piece);
        if text.trim().is_empty() {
            // A trailing comma (or no parameters at all) leaves one empty last piece.
            if k == last {
                continue;
            }
            return Err((offset, "a parameter `name: Type` between commas"));
        }
        let Some((name, ty)) = text.split_once(':') else {
            return Err((offset, "a parameter `name: Type`"));
        };
        let name = name.trim();
        let ty = tidy_type(ty);
        let plain_name = name.bytes().next().is_some_and(is_ident_start) && name.bytes().all(is_ident);
        if !plain_name || ty.is_empty() || ty.starts_with(':') {
            return Err((
                offset,
                "a parameter `name: Type` (a plain identifier, then a type)",
            ));
        }
        types.push(ty);
    }
    Ok(types)
}

/// A type as written, on one line: whitespace runs become one space, and none is kept
/// just inside brackets or before a comma, so a type rustfmt split over lines reads as
/// it would on one (`Global<\n f32\n>` is `Global<f32>`).
fn tidy_type(ty: &str) -> String {
    let words: Vec<&str> = ty.split_whitespace().collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        // `->` keeps its spaces: it starts with `-`.
        let glued = out.ends_with(['<', '(', '[']) || w.starts_with(['>', ')', ']', ',']);
        if i > 0 && !glued {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

fn parse_error(file: &str, source: &str, c: &[u8], at: usize, what: &str) -> ! {
    let at = at.min(source.len());
    let line_start = source[..at].rfind('\n').map_or(0, |n| n + 1);
    let line_end = source[at..].find('\n').map_or(source.len(), |n| at + n);
    panic!(
        "{file}:{}: cannot parse this `kernel!` block for the emulator's kernel table \
         (kernel_table.rs): expected {what}, found `{}`",
        line_of(c, at),
        source[line_start..line_end].trim()
    );
}

/// A copy of `source` with comments and the contents of string and char literals
/// replaced by spaces (newlines kept, so offsets and line numbers stay the same).
fn mask_comments_and_literals(source: &str) -> Vec<u8> {
    let b = source.as_bytes();
    let mut out = b.to_vec();
    let mut blank = |from: usize, to: usize| {
        for x in &mut out[from..to.min(b.len())] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            b'/' if next == Some(b'/') => {
                let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |n| i + n);
                blank(i, end);
                i = end;
            }
            b'/' if next == Some(b'*') => {
                // Block comments nest in Rust.
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(i, j);
                i = j;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(i + 1, j);
                i = j + 1;
            }
            // Raw strings: r"..", r#".."#, br"..". Not a raw identifier like r#type.
            b'r' if (i == 0
                || !is_ident(b[i - 1])
                || (b[i - 1] == b'b' && (i == 1 || !is_ident(b[i - 2])))) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&x| x == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let body = i + 2 + hashes;
                let mut j = body;
                while j < b.len()
                    && !(b[j] == b'"' && b[j + 1..].iter().take_while(|&&x| x == b'#').count() >= hashes)
                {
                    j += 1;
                }
                blank(body, j);
                i = j + 1 + hashes;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a), which has no
                // closing quote right after its first character.
                if next == Some(b'\\') {
                    let from = (i + 3).min(b.len());
                    let end = b[from..]
                        .iter()
                        .position(|&x| x == b'\'')
                        .map_or(b.len(), |n| from + n);
                    blank(i + 1, end);
                    i = end + 1;
                } else {
                    let width = next.map_or(1, utf8_width);
                    if b.get(i + 1 + width) == Some(&b'\'') {
                        blank(i + 1, i + 1 + width);
                        i += 2 + width;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn utf8_width(first: u8) -> usize {
    match first {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident_end(c: &[u8], from: usize) -> usize {
    from + c[from..].iter().take_while(|&&b| is_ident(b)).count()
}

fn skip_ws(c: &[u8], from: usize) -> usize {
    from + c
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .count()
}

fn line_of(c: &[u8], at: usize) -> usize {
    1 + c[..at.min(c.len())].iter().filter(|&&b| b == b'\n').count()
}

/// The index of the bracket closing the one at `open`, in masked code.
fn matching(c: &[u8], open: usize) -> Option<usize> {
    let mut stack = Vec::new();
    for (i, &b) in c.iter().enumerate().skip(open) {
        match b {
            b'(' | b'[' | b'{' => stack.push(b),
            b')' | b']' | b'}' => {
                let want = match b {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(want) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}
