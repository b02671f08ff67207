//! What the integration tests share: the binary, its one-line errors, the GPU, fresh
//! folders, a recorded emulator launch, and NVRTC for the twins. Each test file takes
//! what it needs (`mod common;`), so some of these go unused in each.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use coalesce::device::Gpu;
use kernels::gpu::emu::{Access, Dim3, LaunchConfig, launch};

/// The binary as a user runs it (`CARGO_BIN_EXE_coalesce`, set by cargo or by
/// scripts/gpu-run.sh to the bundled binary).
pub fn coalesce() -> Command {
    Command::cargo_bin("coalesce").expect("the coalesce binary is built")
}

/// Runs the binary with `args` and returns its exit code and stderr, checking what
/// every error shares: one line, never a panic.
pub fn exit_and_error(args: &[&str]) -> (i32, String) {
    let out = coalesce().args(args).output().expect("run coalesce");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "args {args:?} panicked: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line on stderr for {args:?}: {err}"
    );
    (out.status.code().unwrap_or(-1), err)
}

/// The binary fails with exit code `code` and one `error: ` line, which it returns.
pub fn fails(args: &[&str], code: i32) -> String {
    let (got, err) = exit_and_error(args);
    assert_eq!(got, code, "args {args:?}: stderr {err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

/// GPU 0, for the `#[ignore = "needs an NVIDIA GPU"]` tests.
pub fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("this test needs an NVIDIA GPU: {e}"))
}

/// A path for a test's output, with nothing there yet: under cargo's per-target
/// temporary folder, or the system's where the test binary runs away from its build
/// (the GPU bundle). Names must differ between tests: they run in parallel.
pub fn temp_path(name: &str) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = if target.is_dir() {
        target.join(name)
    } else {
        std::env::temp_dir()
            .join(format!("coalesce-tests-{}", std::process::id()))
            .join(name)
    };
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    // Outputs go into folders that exist (docs/commands.md): the test's folder does.
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("make the tests' folder");
    }
    path
}

/// [`temp_path`], made an empty folder.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = temp_path(name);
    std::fs::create_dir_all(&dir).expect("make a test folder");
    dir
}

/// `kernel` run on the CPU emulator over `grid` blocks of `block` threads, every
/// access recorded.
pub fn recorded(grid: impl Into<Dim3>, block: impl Into<Dim3>, kernel: impl Fn() + Sync) -> Vec<Access> {
    let cfg = LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        record: true,
        ..Default::default()
    };
    launch(&cfg, kernel)
}

/// NVRTC, for the tests that compile the C++ twins (no GPU needed), or `None` where
/// it is not installed: such a test says so and passes, unless
/// `COALESCE_REQUIRE_NVRTC` is set (CI sets it), when a missing NVRTC fails it.
pub fn nvrtc() -> Option<coalesce::compare::nvrtc::Nvrtc> {
    match coalesce::compare::nvrtc::Nvrtc::load() {
        Ok(nvrtc) => Some(nvrtc),
        Err(e) => {
            assert!(
                std::env::var_os("COALESCE_REQUIRE_NVRTC").is_none(),
                "COALESCE_REQUIRE_NVRTC is set but NVRTC could not be loaded: {e}"
            );
            eprintln!("NVRTC not installed: skipping the twins' compile check");
            None
        }
    }
}

/// ptxas: `$PTXAS`, else on the PATH; None where neither runs.
pub fn ptxas() -> Option<String> {
    let exe = std::env::var("PTXAS").unwrap_or_else(|_| "ptxas".into());
    std::process::Command::new(&exe)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| exe)
}

/// nvdisasm, to read the SASS ptxas makes: where `explain` finds it (`$NVDISASM`, else
/// next to `$PTXAS`, else on the PATH).
pub fn nvdisasm() -> Option<String> {
    coalesce::explain::product::mix::nvdisasm().ok()
}

/// The SASS listing (`nvdisasm -c`) of `ptx` assembled by `ptxas` for `arch`, the
/// files kept in `dir` under `name`.
pub fn sass_listing(ptxas: &str, nvdisasm: &str, dir: &Path, name: &str, ptx: &str, arch: &str) -> String {
    let (src, cubin) = (dir.join(format!("{name}.ptx")), dir.join(format!("{name}.cubin")));
    std::fs::write(&src, ptx).unwrap();
    let out = std::process::Command::new(ptxas)
        .args(["-arch", arch, "-o"])
        .arg(&cubin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(nvdisasm)
        .arg("-c")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each function's SASS in `nvdisasm -c` output, by name.
pub fn sass_functions(listing: &str) -> std::collections::HashMap<&str, String> {
    let mut out = std::collections::HashMap::new();
    let mut current: Option<(&str, String)> = None;
    for line in listing.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
            if let Some((n, text)) = current.take() {
                out.insert(n, text);
            }
            current = Some((name, String::new()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(t);
            text.push('\n');
        }
    }
    if let Some((n, text)) = current {
        out.insert(n, text);
    }
    out
}
