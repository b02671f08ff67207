//! Builds the kernels crate to PTX (the role of Rust-CUDA's `cuda_builder`) and
//! carries the CUDA driver API as a loader, so the binary starts on machines with and
//! without an NVIDIA driver.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";
/// The Hopper module's architecture: sm_90 with its arch-specific instructions.
const SM90A: &str = "sm_90a";
/// PTX for sm_70 is JIT-compiled by the driver on every GPU from Volta up.
const DEFAULT_ARCH: &str = "sm_70";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    build_ptx(&manifest, &out);
    embed_kernel_sources(&manifest, &out);
    link_libcuda(&manifest, &out);
}

/// Every source file of the kernels crate, embedded (`kernel_sources.rs`: a table of
/// its path as the emulator's sites name it, `kernels/src/copy.rs`, and its text), so
/// the report page shows each kernel's own lines beside what the emulator counted.
fn embed_kernel_sources(manifest: &Path, out: &Path) {
    let root = manifest.join("..");
    let mut files = Vec::new();
    let mut stack = vec![root.join("kernels/src")];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| fail(&format!("read {}: {e}", dir.display())));
        for e in entries {
            let p = e
                .unwrap_or_else(|e| fail(&format!("read {}: {e}", dir.display())))
                .path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut table = String::from("&[\n");
    for p in &files {
        let rel = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/");
        let abs = fs::canonicalize(p).unwrap_or_else(|e| fail(&format!("{}: {e}", p.display())));
        table.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    table.push_str("]\n");
    let dest = out.join("kernel_sources.rs");
    fs::write(&dest, table).unwrap_or_else(|e| fail(&format!("write {}: {e}", dest.display())));
}

fn build_ptx(manifest: &Path, out: &Path) {
    let kernels = manifest.join("../kernels");
    let root = manifest.join("..");
    for p in [
        kernels.join("src"),
        kernels.join("Cargo.toml"),
        root.join("rust-toolchain.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    println!("cargo:rerun-if-env-changed=COALESCE_ARCH");
    let arch = arch();
    let target_dir = out.join("kernels-target");
    // The kernels' table (their `kernel!` blocks), for their launch bounds and modules.
    let table = kernel_table::scan_crate(&kernels.join("src")).unwrap_or_else(|e| kernel_table::fail(&e));
    let bounds: Vec<(String, u32, u32)> = table
        .iter()
        .filter_map(|k| Some((k.name.clone(), k.launch_bounds?.threads, k.launch_bounds?.blocks)))
        .collect();
    let clusters: Vec<(String, u32)> = table
        .iter()
        .filter(|k| k.cluster > 1)
        .map(|k| (k.name.clone(), k.cluster))
        .collect();
    let mut bounded = Vec::new();
    let text = with_launch_bounds(
        compile_to_ptx(&kernels, "kernels", &target_dir, &arch, None),
        &bounds,
        &mut bounded,
    );
    check_module(&text, &table, "Baseline", "kernels.ptx");
    fs::write(out.join("kernels.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
    println!("cargo:rustc-env=COALESCE_PTX_ARCH={arch}");

    // The kernels that need sm_80 (`kernel! { #[requires(sm_80)] ... }`: cp.async),
    // as a second module built for sm_80 (or the configured arch, if newer), so the
    // baseline above stays loadable on every GPU; the host loads this one only where
    // the device has sm_80. Its own target directory: a different target-cpu and
    // feature set would otherwise rebuild the baseline's artefacts every time.
    let sm80 = at_least_sm80(&arch);
    let text = with_launch_bounds(
        compile_to_ptx(
            &kernels,
            "kernels",
            &out.join("kernels-sm80-target"),
            &sm80,
            Some("sm80"),
        ),
        &bounds,
        &mut bounded,
    );
    check_module(&text, &table, "Sm80", "kernels_sm80.ptx");
    fs::write(out.join("kernels_sm80.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
    println!("cargo:rustc-env=COALESCE_PTX_SM80_ARCH={sm80}");

    // The Hopper kernels (`#[requires(sm_90a)]`: TMA, transaction barriers, wgmma,
    // setmaxnreg), a third module for sm_90a, which only an sm_90 GPU loads: the "a"
    // instructions are not forward-compatible.
    let text = with_clusters(
        with_launch_bounds(
            compile_to_ptx(
                &kernels,
                "kernels",
                &out.join("kernels-sm90a-target"),
                SM90A,
                Some("sm90a"),
            ),
            &bounds,
            &mut bounded,
        ),
        &clusters,
    );
    check_module(&text, &table, "Sm90a", "kernels_sm90a.ptx");
    fs::write(out.join("kernels_sm90a.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
    if let Some((kernel, ..)) = bounds.iter().find(|(k, ..)| !bounded.contains(k)) {
        fail(&format!(
            "#[launch_bounds] of {kernel}: no PTX module has the kernel"
        ));
    }

    // The `broken-kernels` feature (tests only): deliberately wrong kernels, as a
    // second module that the product never loads.
    if env::var_os("CARGO_FEATURE_BROKEN_KERNELS").is_some() {
        let broken = root.join("tests/broken-kernels");
        for p in [broken.join("src"), broken.join("Cargo.toml")] {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        let text = compile_to_ptx(&broken, "broken_kernels", &target_dir, &arch, None);
        fs::write(out.join("broken_kernels.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
        // Its Hopper kernels, as the product's are: a module for sm_90a, with their
        // launch bounds (the registers ptxas may give a thread).
        let table = kernel_table::scan_crate(&broken.join("src")).unwrap_or_else(|e| kernel_table::fail(&e));
        let bounds: Vec<(String, u32, u32)> = table
            .iter()
            .filter_map(|k| Some((k.name.clone(), k.launch_bounds?.threads, k.launch_bounds?.blocks)))
            .collect();
        let text = with_launch_bounds(
            compile_to_ptx(
                &broken,
                "broken_kernels",
                &out.join("broken-sm90a-target"),
                SM90A,
                Some("sm90a"),
            ),
            &bounds,
            &mut Vec::new(),
        );
        fs::write(out.join("broken_kernels_sm90a.ptx"), text)
            .unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
    }
}

/// Writes each kernel's `#[launch_bounds(THREADS, BLOCKS)]` (from its `kernel!` block,
/// `bounds`) into the PTX module that has it, after its parameter list: `.maxntid
/// THREADS, 1, 1` and `.minnctapersm BLOCKS`, what nvcc emits for
/// `__launch_bounds__(THREADS, BLOCKS)` and what ptxas reads to cap registers per
/// thread (Rust has no attribute for it). Each kernel it finds goes into `found`.
fn with_launch_bounds(mut ptx: String, bounds: &[(String, u32, u32)], found: &mut Vec<String>) -> String {
    for (kernel, threads, blocks) in bounds {
        let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
            continue;
        };
        let Some(close) = ptx[start..].find(')').map(|i| start + i + 1) else {
            fail(&format!("the PTX entry {kernel} has no parameter list"));
        };
        ptx.insert_str(
            close,
            &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}"),
        );
        found.push(kernel.clone());
    }
    ptx
}

/// Writes each kernel's `#[cluster(N)]` into its PTX entry as `.reqnctapercluster N,
/// 1, 1`, what nvcc emits for `__cluster_dims__(N, 1, 1)`.
fn with_clusters(mut ptx: String, clusters: &[(String, u32)]) -> String {
    for (kernel, blocks) in clusters {
        let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
            fail(&format!(
                "#[cluster] of {kernel}: the sm_90a module has no such kernel"
            ));
        };
        let Some(close) = ptx[start..].find(')').map(|i| start + i + 1) else {
            fail(&format!("the PTX entry {kernel} has no parameter list"));
        };
        ptx.insert_str(close, &format!("\n.reqnctapercluster {blocks}, 1, 1"));
    }
    ptx
}

/// Fails unless the entry points of `ptx` (the module `file`) are exactly the kernels
/// the table puts in `module` (a `PtxModule` variant): what each kernel handle says
/// of its module is then what the host loads.
fn check_module(ptx: &str, table: &[kernel_table::Kernel], module: &str, file: &str) {
    let entries: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect();
    for k in table {
        if (k.ptx_module() == module) != entries.contains(&k.name.as_str()) {
            fail(&format!(
                "{}:{}: kernel {} belongs to the {} module, but {file} {} it",
                k.file,
                k.line,
                k.name,
                k.ptx_module(),
                if entries.contains(&k.name.as_str()) {
                    "has"
                } else {
                    "lacks"
                }
            ));
        }
    }
    if let Some(extra) = entries.iter().find(|e| !table.iter().any(|k| k.name == **e)) {
        fail(&format!(
            "{file} has an entry point {extra} that no `kernel!` block declares"
        ));
    }
}

/// `COALESCE_ARCH`, checked, or the default.
fn arch() -> String {
    let arch = env::var("COALESCE_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.to_string());
    let valid = arch
        .strip_prefix("sm_")
        .map(|v| {
            let digits = v.strip_suffix('a').unwrap_or(v);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        })
        .unwrap_or(false);
    if !valid {
        fail(&format!(
            "COALESCE_ARCH={arch:?} is not a GPU architecture like sm_70, sm_80 or sm_90"
        ));
    }
    arch
}

/// `arch`, or sm_80 if `arch` is older (the `cp.async` kernels need sm_80).
fn at_least_sm80(arch: &str) -> String {
    let digits = arch.trim_start_matches("sm_").trim_end_matches('a');
    match digits.parse::<u32>() {
        Ok(v) if v >= 80 => arch.to_string(),
        _ => "sm_80".to_string(),
    }
}

/// Compiles the no_std crate in `dir` (library `lib`) to one PTX module and returns it,
/// with the crate's `feature` on if given.
fn compile_to_ptx(dir: &Path, lib: &str, target_dir: &Path, arch: &str, feature: Option<&str>) -> String {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(dir)
        .args([
            "rustc",
            "--release",
            "--target",
            TARGET,
            "-Zbuild-std=core",
            "--crate-type",
            "cdylib",
        ])
        .args(feature.map(|f| ["--features", f]).into_iter().flatten())
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        // Kernels cannot unwind; one codegen unit and LTO give one self-contained PTX module.
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=true"])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.opt-level=3"])
        // As target rustflags, not `-- -C`: build-std's core must be compiled for the
        // same target-cpu, or rustc refuses to link them (an ABI mismatch from sm_90 up).
        .arg("--config")
        .arg(format!(
            "target.{TARGET}.rustflags=[\"-C\", \"target-cpu={arch}\"{}]",
            // sm_90a's instructions need PTX ISA 8.0, above LLVM's default for it.
            if arch == SM90A {
                ", \"-C\", \"target-feature=+ptx80\""
            } else {
                ""
            }
        ));
    // The outer build's flags and wrappers target the host (coverage, sanitizers,
    // clippy-driver, a shared target dir whose lock the outer cargo holds): drop them.
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let outer = matches!(
            key,
            "RUSTFLAGS"
                | "RUSTDOCFLAGS"
                | "RUSTC_WRAPPER"
                | "RUSTC_WORKSPACE_WRAPPER"
                | "CARGO_TARGET_DIR"
                | "CARGO_BUILD_TARGET"
                | "CARGO_BUILD_TARGET_DIR"
                | "CARGO_BUILD_RUSTFLAGS"
                | "CARGO_BUILD_RUSTC_WRAPPER"
                | "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER"
                | "CARGO_INCREMENTAL"
        ) || key.starts_with("CARGO_ENCODED_")
            || key.starts_with("CARGO_PROFILE_")
            || (key.starts_with("CARGO_TARGET_") && key != "CARGO_TARGET_TMPDIR");
        if outer {
            cmd.env_remove(key);
        }
    }
    // The nested cargo's errors (a kernel that does not compile) go to our stderr,
    // which cargo prints when this build script fails.
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => fail(&format!("could not run cargo to build the kernels: {e}")),
    };
    if !status.success() {
        fail(&format!(
            "{} failed to compile to PTX (the compiler's errors are above)",
            dir.display()
        ));
    }
    let ptx = target_dir.join(TARGET).join("release").join(format!("{lib}.ptx"));
    fs::read_to_string(&ptx).unwrap_or_else(|e| fail(&format!("expected PTX at {}: {e}", ptx.display())))
}

/// cust links `-lcuda`, which would make the binary refuse to start (a loader error)
/// on a machine without an NVIDIA driver, where `list`, `explain` and `report --from`
/// are exactly what a user wants. Instead the binary carries the driver API itself:
/// a static archive with one trampoline per entry point cust uses
/// (`cuda-stub/symbols.txt`), each a jump through a table that a constructor fills
/// at start-up from `dlopen("libcuda.so.1")`. With no driver every entry returns
/// CUDA_ERROR_NO_DEVICE, so GPU commands say "no NVIDIA GPU" in one line; the same
/// binary uses a driver installed later, and never needs a rebuild.
fn link_libcuda(manifest: &Path, out: &Path) {
    let symbols = manifest.join("cuda-stub/symbols.txt");
    println!("cargo:rerun-if-changed={}", symbols.display());
    let list =
        fs::read_to_string(&symbols).unwrap_or_else(|e| fail(&format!("read {}: {e}", symbols.display())));
    let names: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let src = out.join("cuda_loader.c");
    fs::write(&src, loader_source(&names)).unwrap_or_else(|e| fail(&format!("write {}: {e}", src.display())));
    let dir = out.join("libcuda");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("create {}: {e}", dir.display())));
    cc::Build::new()
        .file(&src)
        .cargo_metadata(false)
        .out_dir(&dir)
        .try_compile("coalesce_cuda")
        .unwrap_or_else(|e| fail(&format!("building the CUDA driver loader: {e}")));
    // `-lcuda` (from cust) must still find a library: an empty archive, since every
    // symbol is already defined by the whole loader archive linked before it.
    let empty = out.join("empty.c");
    fs::write(
        &empty,
        "/* satisfies -lcuda: the driver is loaded at run time */\n",
    )
    .unwrap_or_else(|e| fail(&format!("write {}: {e}", empty.display())));
    cc::Build::new()
        .file(&empty)
        .cargo_metadata(false)
        .out_dir(&dir)
        .try_compile("cuda")
        .unwrap_or_else(|e| fail(&format!("building the empty libcuda archive: {e}")));
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static:+whole-archive=coalesce_cuda");
    println!("cargo:rustc-link-lib=dylib=dl");
}

/// C for the loader: a table of entry points filled at start-up, and one
/// trampoline per name that jumps through it (a tail jump, so any signature works).
fn loader_source(names: &[&str]) -> String {
    let mut c = LOADER_HEAD.replace("COUNT", &names.len().to_string());
    for n in names {
        c.push_str(&format!("    \"{n}\",\n"));
    }
    c.push_str(LOADER_BODY);
    for (i, n) in names.iter().enumerate() {
        c.push_str(&format!("TRAMPOLINE({n}, {i})\n"));
    }
    c
}

const LOADER_HEAD: &str = r#"/* generated by coalesce's host/build.rs: the CUDA driver API, loaded at run time */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* CUDA_ERROR_NO_DEVICE: no driver on this machine. */
static int coalesce_no_driver(void) { return 100; }
/* CUDA_ERROR_NOT_FOUND: the driver is older than this entry point. */
static int coalesce_not_found(void) { return 500; }

__attribute__((visibility("hidden"))) void *coalesce_cuda_table[COUNT];
static void *coalesce_cuda_handle;
/* A copy of dlerror()'s message: its buffer is reused by the next dl* call that fails
   (NVRTC's and cuBLAS's look-ups), so the pointer itself goes stale. */
static char coalesce_cuda_error[1024];

static const char *const coalesce_cuda_names[COUNT] = {
"#;

const LOADER_BODY: &str = r#"};

__attribute__((constructor)) static void coalesce_cuda_load(void) {
    coalesce_cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!coalesce_cuda_handle) {
        const char *why = dlerror();
        if (why) strncpy(coalesce_cuda_error, why, sizeof coalesce_cuda_error - 1);
    }
    for (size_t i = 0; i < sizeof coalesce_cuda_names / sizeof *coalesce_cuda_names; i++) {
        void *f = coalesce_cuda_handle ? dlsym(coalesce_cuda_handle, coalesce_cuda_names[i]) : NULL;
        coalesce_cuda_table[i] = f ? f : coalesce_cuda_handle ? (void *)coalesce_not_found : (void *)coalesce_no_driver;
    }
}

/* Whether libcuda.so.1 was found, and the loader's message when it was not. */
int coalesce_cuda_driver_loaded(void) { return coalesce_cuda_handle != NULL; }
const char *coalesce_cuda_load_error(void) { return coalesce_cuda_error[0] ? coalesce_cuda_error : NULL; }

#if defined(__x86_64__)
#define TRAMPOLINE(name, i) __asm__(".text\n.p2align 4\n.globl " #name "\n.type " #name ",@function\n" #name ":\n\tjmp *coalesce_cuda_table+8*" #i "(%rip)\n.size " #name ",.-" #name "\n");
#elif defined(__aarch64__)
#define TRAMPOLINE(name, i) __asm__(".text\n.p2align 4\n.globl " #name "\n.type " #name ",%function\n" #name ":\n\tadrp x16, coalesce_cuda_table\n\tadd x16, x16, :lo12:coalesce_cuda_table\n\tldr x16, [x16, #8*" #i "]\n\tbr x16\n.size " #name ",.-" #name "\n");
#else
#error "coalesce's CUDA driver loader supports x86-64 and aarch64"
#endif

"#;

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1)
}
