//! NVRTC through cudarc: CUDA C++ source to PTX at run time, from the user's toolkit.

use std::ffi::{CString, c_char, c_int};
use std::path::Path;

use cudarc::nvrtc::result::{self as nv, NvrtcError};
use cudarc::nvrtc::sys::{self, nvrtcResult};

use super::libs::{self, Found, Lib};

const LIB: Lib = Lib {
    label: "NVRTC",
    stem: "nvrtc",
    // SAFETY: only tries to open the library.
    present: || unsafe { sys::is_culib_present() },
};

/// A loaded NVRTC.
#[derive(Clone, Debug)]
pub struct Nvrtc {
    pub found: Found,
    /// (major, minor) as NVRTC reports it.
    pub version: (i32, i32),
}

/// Why a source did not become PTX.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The options were refused: typically an NVRTC older than the GPU's architecture.
    #[error("NVRTC {version} refused {options} ({code:?}){log}; a toolkit that knows this GPU is needed")]
    Refused {
        version: String,
        options: String,
        code: nvrtcResult,
        log: String,
    },
    /// Our source did not compile: a bug in `cuda/NAME.cu`.
    #[error("{name} does not compile with NVRTC {version}: {log}")]
    Source {
        name: String,
        version: String,
        log: String,
    },
    /// Any other NVRTC failure.
    #[error("NVRTC {version} failed while {what} {name}: {code:?}")]
    Call {
        name: String,
        version: String,
        what: &'static str,
        code: nvrtcResult,
    },
}

/// The `--gpu-architecture` for a device of compute capability (major, minor):
/// virtual, so NVRTC emits PTX that the driver compiles like the Rust PTX.
pub fn arch_for(cc: (i32, i32)) -> String {
    format!("compute_{}{}", cc.0, cc.1)
}

/// The virtual architecture matching a `-C target-cpu` like `sm_90` or `sm_90a`.
pub fn arch_for_target(target_cpu: &str) -> String {
    format!("compute_{}", target_cpu.trim_start_matches("sm_"))
}

/// The options every twin is compiled with: the device's architecture and, where it
/// includes toolkit headers, their folder; nothing else, NVRTC's defaults being
/// nvcc's (-O3 device code, fused multiply-add on).
pub fn options(arch: &str, include: Option<&Path>) -> Vec<String> {
    let mut opts = vec![format!("--gpu-architecture={arch}")];
    opts.extend(include.map(|d| format!("-I{}", d.display())));
    opts
}

/// The headers twins include (`#include "hopper.cuh"`), embedded: NVRTC is given them
/// by name, so a twin compiles from the binary alone.
pub const HEADERS: [(&str, &str); 3] = [
    (
        "hopper.cuh",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/hopper.cuh")),
    ),
    (
        "sgemm_hopper.cuh",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/sgemm_hopper.cuh")),
    ),
    (
        "hgemm_hopper.cuh",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/hgemm_hopper.cuh")),
    ),
];

/// `nvrtcCreateProgram` with [`HEADERS`] (cudarc's wrapper passes none).
fn create_with_headers(src: &CString, name: &CString) -> Result<sys::nvrtcProgram, NvrtcError> {
    let texts: Vec<CString> = HEADERS
        .iter()
        .map(|(_, t)| CString::new(*t).unwrap_or_default())
        .collect();
    let names: Vec<CString> = HEADERS
        .iter()
        .map(|(n, _)| CString::new(*n).unwrap_or_default())
        .collect();
    let text_ptrs: Vec<*const c_char> = texts.iter().map(|t| t.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is to a NUL-terminated string alive for the call, and the
    // two arrays hold HEADERS.len() entries; NVRTC copies what it keeps.
    unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            src.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as c_int,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
        .result()?;
        Ok(prog.assume_init())
    }
}

/// NUL-terminated C characters as a `String` (lossy; NVRTC writes ASCII).
fn text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Nvrtc {
    /// Finds and opens NVRTC; the error is one line for the user.
    pub fn load() -> Result<Nvrtc, String> {
        let found = libs::locate(&LIB, &libs::toolkit_dirs()).map_err(|e| e.to_string())?;
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        let status = libs::guarded("NVRTC", "nvrtcVersion", || {
            // SAFETY: two valid out-pointers.
            unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        })?;
        status
            .result()
            .map_err(|e| format!("NVRTC ({found}) failed to report its version: {e}"))?;
        Ok(Nvrtc {
            found,
            version: (major, minor),
        })
    }

    pub fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// Compiles `source` (named `name` in messages) to PTX for `arch`.
    pub fn compile(&self, name: &str, source: &str, arch: &str) -> Result<String, CompileError> {
        self.compile_with(name, source, arch, None)
    }

    /// [`Nvrtc::compile`], with the toolkit headers' folder (`-I`) where the source
    /// includes any.
    pub fn compile_with(
        &self,
        name: &str,
        source: &str,
        arch: &str,
        include: Option<&Path>,
    ) -> Result<String, CompileError> {
        let version = self.version_string();
        let call = |what, e: NvrtcError| CompileError::Call {
            name: name.to_string(),
            version: version.clone(),
            what,
            code: e.0,
        };
        let src = CString::new(source).map_err(|_| CompileError::Source {
            name: name.to_string(),
            version: version.clone(),
            log: "the source contains a NUL byte".into(),
        })?;
        let cname = CString::new(name).unwrap_or_default();
        let prog = create_with_headers(&src, &cname).map_err(|e| call("creating", e))?;
        let opts = options(arch, include);
        // SAFETY: `prog` was created above and is destroyed once, at the end;
        // `src` and `cname` outlive it.
        let compiled = unsafe { nv::compile_program(prog, &opts) };
        let log = unsafe { nv::get_program_log(prog) }
            .map(|l| text(&l))
            .unwrap_or_default();
        let result = match compiled {
            Ok(()) => unsafe { nv::get_ptx(prog) }
                .map(|p| text(&p))
                .map_err(|e| call("reading the PTX of", e)),
            Err(NvrtcError(nvrtcResult::NVRTC_ERROR_COMPILATION)) => Err(CompileError::Source {
                name: name.to_string(),
                version: version.clone(),
                log: one_line(&log),
            }),
            Err(NvrtcError(code)) => Err(CompileError::Refused {
                version: version.clone(),
                options: opts.join(" "),
                code,
                log: if log.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", one_line(&log))
                },
            }),
        };
        // SAFETY: created above, not destroyed before.
        let _ = unsafe { nv::destroy_program(prog) };
        result
    }
}

/// A compiler log folded onto one line (its lines joined with " | ").
fn one_line(log: &str) -> String {
    log.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_and_options() {
        assert_eq!(arch_for((9, 0)), "compute_90");
        assert_eq!(arch_for((12, 0)), "compute_120");
        assert_eq!(arch_for_target("sm_90"), "compute_90");
        assert_eq!(arch_for_target("sm_90a"), "compute_90a");
        assert_eq!(options("compute_90", None), ["--gpu-architecture=compute_90"]);
        assert_eq!(
            options("compute_90a", Some(Path::new("/usr/local/cuda/include"))),
            ["--gpu-architecture=compute_90a", "-I/usr/local/cuda/include"]
        );
    }

    #[test]
    fn logs_fold_onto_one_line() {
        assert_eq!(
            one_line("a.cu(3): error: x\n\n  1 error detected\n"),
            "a.cu(3): error: x | 1 error detected"
        );
        let chars: Vec<c_char> = b"ptx\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(text(&chars), "ptx");
    }

    /// On a machine without NVRTC (CI) loading is an error line, not a panic; with
    /// it, a trivial kernel compiles to PTX naming its entry point.
    #[test]
    fn loads_or_says_why() {
        match Nvrtc::load() {
            Err(e) => {
                assert_eq!(e.lines().count(), 1, "{e}");
                assert!(e.contains("NVRTC"), "{e}");
                assert!(
                    std::env::var_os("COALESCE_REQUIRE_NVRTC").is_none(),
                    "COALESCE_REQUIRE_NVRTC is set but NVRTC could not be loaded: {e}"
                );
            }
            Ok(n) => {
                let ptx = n
                    .compile(
                        "t.cu",
                        "extern \"C\" __global__ void t(float* p) { p[0] = 1.0f; }",
                        "compute_80",
                    )
                    .unwrap();
                assert!(ptx.contains(".entry t("), "{ptx}");
                let bad = n.compile("bad.cu", "this is not C++", "compute_80").unwrap_err();
                assert!(matches!(bad, CompileError::Source { .. }), "{bad}");
            }
        }
    }
}
