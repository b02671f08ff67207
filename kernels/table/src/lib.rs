//! The table of a crate's kernels, read from its `kernel!` blocks with a real Rust
//! parser (`syn`), for the build scripts: `kernels/build.rs` and
//! `tests/broken-kernels/build.rs` generate each crate's typed kernel handles from it
//! ([`write_handles`]), and `host/build.rs` reads the kernels' `#[launch_bounds]` and
//! PTX modules from it.
//!
//! Every `.rs` file under the crate's `src/` is read, at any depth; a file's module
//! path comes from where it lies (`foo.rs` and `foo/mod.rs` are `crate::foo`,
//! `foo/bar.rs` is `crate::foo::bar`), and inline `mod` blocks add to it. A `kernel!`
//! block is `#[launch_bounds(T, B)]` (optional, first), `#[requires(sm_XX)]`
//! (optional, next), `#[cluster(N)]` (optional, next: blocks of a thread-block
//! cluster), doc comments and other attributes, then exactly one
//! `pub fn NAME(PARAMS) { BODY }`, as the macro accepts. Anything else, a `kernel!`
//! that is not an item of a module, or two kernels of one name, is an [`Error`] naming
//! the file and line: the build fails rather than leave a kernel out of the table.

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, FnArg, ItemFn, LitInt, Pat, ReturnType, Visibility};

/// One kernel, as its `kernel!` block declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The function's name: the PTX entry point's, and its handle's.
    pub name: String,
    /// The module the block is in, e.g. `crate::sgemm::smem`.
    pub module_path: String,
    /// Each parameter's name, in order.
    pub params: Vec<String>,
    /// `#[requires(sm_XX)]`'s architecture (`sm_80`), or None for the baseline module.
    pub requires: Option<String>,
    /// `#[launch_bounds(THREADS, BLOCKS)]`.
    pub launch_bounds: Option<LaunchBounds>,
    /// `#[cluster(N)]`: the kernel runs in clusters of N blocks along x (CUDA's
    /// `__cluster_dims__(N, 1, 1)`); 1 without the attribute.
    pub cluster: u32,
    /// The doc comment's lines, as written after `///`.
    pub doc: Vec<String>,
    /// The file (as given) and line of the `kernel!` invocation.
    pub file: String,
    pub line: usize,
}

/// CUDA's `__launch_bounds__(threads, blocks)`: at most `threads` threads per block,
/// registers capped so that `blocks` blocks fit on one SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub threads: u32,
    pub blocks: u32,
}

impl Kernel {
    /// The function's path, e.g. `crate::copy::copy_f32`.
    pub fn path(&self) -> String {
        format!("{}::{}", self.module_path, self.name)
    }

    /// The variant of the kernel crate's `PtxModule` enum the kernel belongs to:
    /// `Baseline`, or the required architecture in camel case (`sm_80` is `Sm80`).
    pub fn ptx_module(&self) -> String {
        match &self.requires {
            None => "Baseline".into(),
            Some(arch) => arch
                .split('_')
                .map(|part| {
                    let mut c = part.chars();
                    c.next()
                        .map(|first| first.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                })
                .collect(),
        }
    }
}

/// What is wrong with a kernel source, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for Error {}

fn error(file: &str, span: proc_macro2::Span, message: impl Into<String>) -> Error {
    Error {
        file: file.to_string(),
        line: span.start().line,
        message: message.into(),
    }
}

/// Every kernel of the crate whose sources are under `src` (its `src/` folder): the
/// files in path order, the blocks of each in source order. Names must be unique.
pub fn scan_crate(src: &Path) -> Result<Vec<Kernel>, Error> {
    let mut kernels = Vec::new();
    for (file, module_path) in module_files(src)? {
        let text = std::fs::read_to_string(&file).map_err(|e| Error {
            file: file.display().to_string(),
            line: 0,
            message: format!("cannot read it: {e}"),
        })?;
        kernels.extend(scan_source(&file.display().to_string(), &text, &module_path)?);
    }
    check_unique(&kernels)?;
    Ok(kernels)
}

/// The `.rs` files under `src`, sorted (so the table's order does not depend on the
/// file system), each with its module path.
pub fn module_files(src: &Path) -> Result<Vec<(PathBuf, String)>, Error> {
    let mut files = Vec::new();
    collect_rs(src, &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let module_path = module_path(src, &file)?;
            Ok((file, module_path))
        })
        .collect()
}

fn collect_rs(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    let unreadable = |e: std::io::Error| Error {
        file: dir.display().to_string(),
        line: 0,
        message: format!("cannot list the kernel sources: {e}"),
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        if path.is_dir() {
            collect_rs(&path, files)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// `lib.rs` is `crate`; `a.rs` and `a/mod.rs` are `crate::a`; `a/b.rs` is `crate::a::b`.
fn module_path(src: &Path, file: &Path) -> Result<String, Error> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    if let Some(part) = parts.iter().find(|p| syn::parse_str::<syn::Ident>(p).is_err()) {
        return Err(Error {
            file: file.display().to_string(),
            line: 0,
            message: format!("`{part}` in the path is not a module name"),
        });
    }
    Ok(std::iter::once("crate".to_string())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::"))
}

/// The kernels declared in `source` (the text of `file`), whose module path is
/// `module_path`, in source order.
pub fn scan_source(file: &str, source: &str, module_path: &str) -> Result<Vec<Kernel>, Error> {
    let syntax =
        syn::parse_file(source).map_err(|e| error(file, e.span(), format!("cannot parse this file: {e}")))?;
    let mut scan = Scan {
        file,
        modules: vec![module_path.to_string()],
        in_body: 0,
        kernels: Vec::new(),
        error: None,
    };
    scan.visit_file(&syntax);
    match scan.error {
        Some(e) => Err(e),
        None => Ok(scan.kernels),
    }
}

/// Two kernels of one name would collide as PTX entry points and as handles.
pub fn check_unique(kernels: &[Kernel]) -> Result<(), Error> {
    for (i, k) in kernels.iter().enumerate() {
        if let Some(first) = kernels[..i].iter().find(|o| o.name == k.name) {
            return Err(Error {
                file: k.file.clone(),
                line: k.line,
                message: format!(
                    "kernel `{}` is already declared at {}:{}: kernel names must be unique",
                    k.name, first.file, first.line
                ),
            });
        }
    }
    Ok(())
}

/// Walks one file's items, with the module path of where it is.
struct Scan<'a> {
    file: &'a str,
    modules: Vec<String>,
    /// How many blocks (function bodies, const blocks) the walk is inside.
    in_body: usize,
    kernels: Vec<Kernel>,
    error: Option<Error>,
}

/// Whether a macro invocation is `kernel!` (as `kernel!`, `kernels::kernel!`, ...).
fn is_kernel_macro(mac: &syn::Macro) -> bool {
    mac.path.segments.last().is_some_and(|s| s.ident == "kernel")
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let path = format!("{}::{}", self.modules.last().expect("a module path"), m.ident);
        self.modules.push(path);
        syn::visit::visit_item_mod(self, m);
        self.modules.pop();
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        self.in_body += 1;
        syn::visit::visit_block(self, block);
        self.in_body -= 1;
    }

    fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
        if item.ident.is_none() && is_kernel_macro(&item.mac) && self.in_body == 0 {
            if self.error.is_none() {
                let module_path = self.modules.last().expect("a module path").clone();
                match parse_block(self.file, &item.mac, module_path) {
                    Ok(k) => self.kernels.push(k),
                    Err(e) => self.error = Some(e),
                }
            }
        } else {
            syn::visit::visit_item_macro(self, item);
        }
    }

    // Reached for every macro but the `kernel!` items of a module (which stop in
    // `visit_item_macro`): one in a function body, an expression, a type.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if is_kernel_macro(mac) && self.error.is_none() {
            self.error = Some(error(
                self.file,
                mac.path.span(),
                "a `kernel!` block must be an item of a module (not inside a function): \
                 its handle names it by module path",
            ));
        }
    }
}

/// Parses the inside of one `kernel!` block.
fn parse_block(file: &str, mac: &syn::Macro, module_path: String) -> Result<Kernel, Error> {
    let line = mac.path.span().start().line;
    let fail =
        |span: proc_macro2::Span, what: &str| error(file, span, format!("in this `kernel!` block: {what}"));
    let parser = |input: ParseStream| {
        let item: ItemFn = input.parse()?;
        if !input.is_empty() {
            return Err(input.error("one `pub fn` per `kernel!` block"));
        }
        Ok(item)
    };
    let item = parser.parse2(mac.tokens.clone()).map_err(|e| {
        fail(
            e.span(),
            &format!("expected `pub fn NAME(PARAMS) {{ BODY }}`: {e}"),
        )
    })?;
    let sig = &item.sig;
    if !matches!(item.vis, Visibility::Public(_)) {
        return Err(fail(sig.fn_token.span, "expected `pub fn` (kernels are public)"));
    }
    if let Some(token) = sig.constness.map(|t| t.span).or(sig.asyncness.map(|t| t.span)) {
        return Err(fail(token, "expected `pub fn`: a kernel is not const or async"));
    }
    if let Some(token) = sig.unsafety {
        return Err(fail(
            token.span,
            "expected `pub fn`: the macro makes the kernel unsafe itself",
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(fail(
            abi.span(),
            "expected `pub fn`: the macro gives the kernel its ABI",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(fail(
            sig.generics.span(),
            "a kernel takes no generics (a PTX entry point has one signature)",
        ));
    }
    if let ReturnType::Type(arrow, _) = &sig.output {
        return Err(fail(arrow.spans[0], "a kernel returns nothing"));
    }
    if let Some(v) = &sig.variadic {
        return Err(fail(v.span(), "a kernel takes a fixed list of parameters"));
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(typed) = arg else {
            return Err(fail(arg.span(), "a parameter `name: Type`"));
        };
        match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() && typed.attrs.is_empty() => {
                params.push(p.ident.to_string())
            }
            other => {
                return Err(fail(
                    other.span(),
                    "a parameter `name: Type` (a plain identifier, then a type)",
                ));
            }
        }
    }
    let (launch_bounds, requires, cluster, doc) =
        read_attributes(&item.attrs).map_err(|(span, what)| fail(span, &what))?;
    Ok(Kernel {
        name: sig.ident.to_string(),
        module_path,
        params,
        requires,
        launch_bounds,
        cluster,
        doc,
        file: file.to_string(),
        line,
    })
}

type Attributes = (Option<LaunchBounds>, Option<String>, u32, Vec<String>);

/// `#[launch_bounds]`, `#[requires]`, `#[cluster]` and the doc comment, checked to
/// come in the order the macro reads them: launch bounds, the requirement, the cluster.
fn read_attributes(attrs: &[Attribute]) -> Result<Attributes, (proc_macro2::Span, String)> {
    let (mut bounds, mut requires, mut cluster, mut doc) = (None, None, 1, Vec::new());
    for (i, attr) in attrs.iter().enumerate() {
        let span = attr.span();
        if attr.path().is_ident("launch_bounds") {
            if i != 0 {
                return Err((span, "`#[launch_bounds]` first in the block".into()));
            }
            bounds = Some(launch_bounds(attr).ok_or((
                span,
                "`#[launch_bounds(THREADS, BLOCKS)]` with two positive integers".to_string(),
            ))?);
        } else if attr.path().is_ident("requires") {
            if i != usize::from(bounds.is_some()) {
                return Err((
                    span,
                    "`#[requires(..)]` first in the block, or right after `#[launch_bounds]`".into(),
                ));
            }
            let arch = attr
                .parse_args::<syn::Ident>()
                .ok()
                .map(|a| a.to_string())
                .filter(|a| is_arch(a))
                .ok_or((
                    span,
                    "`#[requires(sm_XX)]` naming one GPU architecture, e.g. `#[requires(sm_80)]`".to_string(),
                ))?;
            requires = Some(arch);
        } else if attr.path().is_ident("cluster") {
            if i != usize::from(bounds.is_some()) + usize::from(requires.is_some()) || requires.is_none() {
                return Err((
                    span,
                    "`#[cluster(N)]` right after `#[requires(sm_90a)]` (clusters need sm_90)".into(),
                ));
            }
            cluster = attr
                .parse_args::<LitInt>()
                .ok()
                .and_then(|n| n.base10_parse::<u32>().ok())
                .filter(|n| (2..=8).contains(n))
                .ok_or((span, "`#[cluster(N)]` with N from 2 to 8 blocks".to_string()))?;
        } else if attr.path().is_ident("doc")
            && let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            doc.push(s.value());
        }
    }
    Ok((bounds, requires, cluster, doc))
}

/// `sm_80`, `sm_90a`: an architecture a PTX module can be built for.
fn is_arch(a: &str) -> bool {
    a.strip_prefix("sm_").is_some_and(|v| {
        let digits = v.strip_suffix('a').unwrap_or(v);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

fn launch_bounds(attr: &Attribute) -> Option<LaunchBounds> {
    let numbers = attr
        .parse_args_with(syn::punctuated::Punctuated::<LitInt, syn::Token![,]>::parse_terminated)
        .ok()?;
    let values: Vec<u32> = numbers
        .iter()
        .map(|n| n.base10_parse().ok())
        .collect::<Option<_>>()?;
    match values[..] {
        [threads, blocks] if threads > 0 && blocks > 0 => Some(LaunchBounds { threads, blocks }),
        _ => None,
    }
}

/// The generated Rust source of a crate's kernel handles, to `include!` inside its
/// `entry` module: one `pub static NAME: Kernel<PARAMS>` per kernel, named after its
/// PTX entry point, and `ALL`, every kernel's info in table order.
///
/// `krate` is the path of the `kernels` crate from the including crate (`crate` in
/// the kernels crate itself, `::kernels` elsewhere). The parameter types are the type
/// alias `kernel!` declares beside each kernel function (`crate::copy::copy_f32` in the
/// type namespace is `(usize, Global<f32>, GlobalMut<f32>)`), so they are the real
/// types, resolved where the kernel is written, and their kinds are the types' own.
pub fn render_handles(kernels: &[Kernel], krate: &str) -> String {
    let mut s = String::new();
    let handle = format!("{krate}::handle");
    let param = format!("{krate}::gpu::param");
    let _ = writeln!(
        s,
        "// Generated by the kernel table (kernels/table) from this crate's `kernel!` blocks."
    );
    for k in kernels {
        let (name, path, n) = (&k.name, k.path(), k.params.len());
        for line in &k.doc {
            let _ = writeln!(s, "#[doc = {line:?}]");
        }
        if !k.doc.is_empty() {
            let _ = writeln!(s, "#[doc = \"\"]");
        }
        let _ = writeln!(s, "#[doc = \"Declared at `{}:{}`.\"]", k.file, k.line);
        let _ = writeln!(
            s,
            "pub static {name}: {handle}::Kernel<{path}> = {handle}::Kernel::new({handle}::KernelInfo {{"
        );
        let _ = writeln!(s, "    name: {name:?},");
        let _ = writeln!(s, "    params: <{path} as {param}::KernelArgs>::KINDS,");
        let _ = writeln!(s, "    module: {handle}::PtxModule::{},", k.ptx_module());
        match k.launch_bounds {
            Some(LaunchBounds { threads, blocks }) => {
                let _ = writeln!(
                    s,
                    "    launch_bounds: Some({handle}::LaunchBounds {{ threads: {threads}, blocks: {blocks} }}),"
                );
            }
            None => {
                let _ = writeln!(s, "    launch_bounds: None,");
            }
        }
        let _ = writeln!(s, "    cluster: {},", k.cluster);
        let words: Vec<String> = (0..n)
            .map(|i| format!("{param}::KernelParam::from_word(w[{i}])"))
            .collect();
        let _ = writeln!(s, "    call: {{");
        let _ = writeln!(s, "        unsafe fn call(w: &[u64]) {{");
        // Checked before any conversion, so a wrong count names the kernel instead of
        // failing as an index out of bounds.
        let _ = writeln!(
            s,
            "            assert!(w.len() == {n}, \"kernel {name} takes {n} parameter words, got {{}}\", w.len());"
        );
        let _ = writeln!(
            s,
            "            // SAFETY: the caller keeps KernelInfo::call's contract, which is the kernel's."
        );
        let _ = writeln!(s, "            unsafe {{ {path}({}) }}", words.join(", "));
        let _ = writeln!(s, "        }}");
        let _ = writeln!(s, "        call");
        let _ = writeln!(s, "    }},");
        let _ = writeln!(s, "}});");
    }
    let _ = writeln!(s, "/// Every kernel of this crate, in table order.");
    let _ = writeln!(s, "pub static ALL: &[&{handle}::KernelInfo] = &[");
    for k in kernels {
        let _ = writeln!(s, "    {}.info(),", k.name);
    }
    let _ = writeln!(s, "];");
    s
}

/// For a kernel crate's build script: reads the crate's `src/`, writes its handles to
/// `$OUT_DIR/kernel_handles.rs` ([`render_handles`]) and asks cargo to rerun the
/// script when a source changes. Any [`Error`] ends the build with its message.
pub fn write_handles(krate: &str) {
    println!("cargo:rerun-if-changed=src");
    let kernels = scan_crate(Path::new("src")).unwrap_or_else(|e| fail(&e));
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let path = Path::new(&out).join("kernel_handles.rs");
    if let Err(e) = std::fs::write(&path, render_handles(&kernels, krate)) {
        eprintln!("error: cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
}

/// Ends a build script on a kernel source error, with the error as its message.
pub fn fail(e: &Error) -> ! {
    eprintln!("error: {e}");
    std::process::exit(1)
}

#[cfg(test)]
mod tests;
