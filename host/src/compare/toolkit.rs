//! What `coalesce info` says of the CUDA toolkit: where NVRTC and cuBLAS were found,
//! or why not.

use super::libs::{Lib, locate, toolkit_dirs};
use super::nvrtc::Nvrtc;

/// The NVRTC and cuBLAS lines of `coalesce info`: found where, or why not.
pub fn toolkit_lines() -> Vec<String> {
    let nvrtc = match Nvrtc::load() {
        Ok(n) => format!("NVRTC: {} ({})", n.version_string(), n.found),
        Err(e) => format!("NVRTC: unavailable: {e}"),
    };
    let cublas_lib = Lib {
        label: "cuBLAS",
        stem: "cublas",
        // SAFETY: only tries to open the library.
        present: || unsafe { cudarc::cublas::sys::is_culib_present() },
    };
    let cublas = match locate(&cublas_lib, &toolkit_dirs()) {
        Ok(found) => format!("cuBLAS: {found}"),
        Err(e) => format!("cuBLAS: unavailable: {e}"),
    };
    vec![nvrtc, cublas]
}
