//! What `coalesce info` says of the CUDA toolkit: where NVRTC, cuBLAS and the headers
//! the twins include were found, or why not.

use super::headers;
use super::libs::{Lib, locate, toolkit_dirs};
use super::nvrtc::Nvrtc;

/// The NVRTC, cuBLAS and headers lines of `coalesce info`: found where, or why not.
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
    vec![nvrtc, cublas, headers_line()]
}

/// Where the toolkit headers the twins include are, or why they are not found.
fn headers_line() -> String {
    let mut names: Vec<&str> = crate::experiments::ALL
        .iter()
        .flat_map(|e| headers::system_includes(e.twin.source))
        .collect();
    names.sort_unstable();
    names.dedup();
    match headers::find(&names, &headers::candidates()) {
        Ok(Some(dir)) => format!("CUDA headers ({}): {}", names.join(", "), dir.display()),
        Ok(None) => "CUDA headers: none needed".into(),
        Err(e) => format!("CUDA headers: unavailable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The headers line names the 16-bit twins' headers, found or not, on one line.
    #[test]
    fn info_names_the_headers_the_twins_include() {
        let lines = toolkit_lines();
        let line = &lines[2];
        assert!(line.starts_with("CUDA headers"), "{lines:?}");
        assert!(
            line.contains("cuda_bf16.h, cuda_fp16.h") && line.lines().count() == 1,
            "{line}"
        );
    }
}
