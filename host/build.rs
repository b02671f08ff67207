//! Builds the kernels crate to PTX (the role of Rust-CUDA's `cuda_builder`) and
//! makes sure `-lcuda` links on machines with and without an NVIDIA driver.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";
/// PTX for sm_70 is JIT-compiled by the driver on every GPU from Volta up.
const DEFAULT_ARCH: &str = "sm_70";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    build_ptx(&manifest, &out);
    link_libcuda(&manifest, &out);
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
    let text = compile_to_ptx(&kernels, "kernels", &target_dir, &arch);
    fs::write(out.join("kernels.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
    println!("cargo:rustc-env=COALESCE_PTX_ARCH={arch}");

    // The `broken-kernels` feature (tests only): deliberately wrong kernels, as a
    // second module that the product never loads.
    if env::var_os("CARGO_FEATURE_BROKEN_KERNELS").is_some() {
        let broken = root.join("tests/broken-kernels");
        for p in [broken.join("src"), broken.join("Cargo.toml")] {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        let text = compile_to_ptx(&broken, "broken_kernels", &target_dir, &arch);
        fs::write(out.join("broken_kernels.ptx"), text).unwrap_or_else(|e| fail(&format!("write PTX: {e}")));
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

/// Compiles the no_std crate in `dir` (library `lib`) to one PTX module and returns it.
fn compile_to_ptx(dir: &Path, lib: &str, target_dir: &Path, arch: &str) -> String {
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
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        // Kernels cannot unwind; one codegen unit and LTO give one self-contained PTX module.
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=true"])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.opt-level=3"])
        .args(["--", "-C"])
        .arg(format!("target-cpu={arch}"));
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

/// cust links `-lcuda`. With a driver installed we link against it; without one
/// (CI, a laptop) we link against a stub exporting cust's driver API symbols, each
/// returning CUDA_ERROR_NO_DEVICE, so tests and the binary build and then report
/// "no GPU" cleanly. The stub sits in OUT_DIR, which `cargo run`/`cargo test` put on
/// the loader path; binaries run elsewhere load the machine's real `libcuda.so.1`.
fn link_libcuda(manifest: &Path, out: &Path) {
    println!("cargo:rerun-if-env-changed=COALESCE_CUDA_STUB");
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    let symbols = manifest.join("cuda-stub/symbols.txt");
    println!("cargo:rerun-if-changed={}", symbols.display());
    let dir = out.join("libcuda");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("create {}: {e}", dir.display())));

    let forced = env::var("COALESCE_CUDA_STUB").ok();
    let driver = if forced.as_deref() == Some("1") {
        None
    } else {
        find_driver()
    };
    match driver {
        Some(real) => {
            // Link against the driver itself (some installs ship only libcuda.so.1).
            if let Err(e) = symlink(&real, &dir.join("libcuda.so")) {
                fail(&format!("link {}: {e}", real.display()));
            }
            println!("cargo:rustc-env=COALESCE_CUDA_STUB=0");
        }
        None => {
            build_stub(&symbols, &dir, out);
            println!("cargo:rustc-env=COALESCE_CUDA_STUB=1");
        }
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
}

fn find_driver() -> Option<PathBuf> {
    // The loader cache knows where the driver's library is on most distributions.
    for ldconfig in ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"] {
        if let Ok(o) = Command::new(ldconfig).arg("-p").output() {
            let text = String::from_utf8_lossy(&o.stdout);
            let hit = text
                .lines()
                .filter(|l| l.trim_start().starts_with("libcuda.so.1 "))
                .filter(|l| !l.contains("i386") && !l.contains("32-bit"))
                .find_map(|l| l.split("=> ").nth(1).map(|p| PathBuf::from(p.trim())));
            if let Some(p) = hit.filter(|p| p.exists()) {
                return Some(p);
            }
            break;
        }
    }
    let mut dirs: Vec<PathBuf> = env::var("LD_LIBRARY_PATH")
        .map(|v| env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.extend(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/nvidia/lib64",
            "/usr/lib/wsl/lib",
        ]
        .map(PathBuf::from),
    );
    dirs.into_iter()
        .map(|d| d.join("libcuda.so.1"))
        .find(|p| p.exists())
}

fn build_stub(symbols: &Path, dir: &Path, out: &Path) {
    let list =
        fs::read_to_string(symbols).unwrap_or_else(|e| fail(&format!("read {}: {e}", symbols.display())));
    let mut c = String::from("/* generated by coalesce's build.rs: a libcuda with no GPU */\n");
    for name in list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        // 100 = CUDA_ERROR_NO_DEVICE; extra arguments are ignored by the C calling convention.
        c.push_str(&format!("int {name}(void) {{ return 100; }}\n"));
    }
    let src = out.join("libcuda_stub.c");
    fs::write(&src, c).unwrap_or_else(|e| fail(&format!("write {}: {e}", src.display())));
    let lib = dir.join("libcuda.so");
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!(
            "building the stub libcuda failed ({s}); install a C compiler or the NVIDIA driver"
        )),
        Err(e) => fail(&format!(
            "building the stub libcuda: cannot run the C compiler: {e}"
        )),
    }
    if let Err(e) = symlink(Path::new("libcuda.so"), &dir.join("libcuda.so.1")) {
        fail(&format!("link the stub: {e}"));
    }
    println!(
        "cargo:warning=no NVIDIA driver found: linked a stub libcuda (builds and CPU tests work; GPU commands report no device). Set COALESCE_CUDA_STUB=0 after installing a driver to relink."
    );
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    fs::copy(target, link).map(|_| ())
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1)
}
