//! The toolkit headers a twin includes (`#include <cuda_bf16.h>`): NVRTC has none of
//! its own, so they are found in a toolkit's `include` folder and handed to it with
//! `-I`. The twins' own headers (`hopper.cuh`) are embedded ([`super::nvrtc::HEADERS`]).

use std::path::{Path, PathBuf};

use super::libs::toolkit_roots;

/// The headers `source` includes from the system (`#include <NAME>`), in order.
pub fn system_includes(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("#include"))
        .filter_map(|rest| rest.trim_start().strip_prefix('<'))
        .filter_map(|rest| rest.split_once('>'))
        .map(|(name, _)| name.trim())
        .collect()
}

/// The `include` folders of the toolkits to look in ([`toolkit_roots`]), in order.
pub fn candidates() -> Vec<PathBuf> {
    toolkit_roots().iter().map(|r| r.join("include")).collect()
}

/// The first of `dirs` that holds every header in `names`; none needed, none chosen.
/// The error is one line: which headers, where we looked, what to do.
pub fn find(names: &[&str], dirs: &[PathBuf]) -> Result<Option<PathBuf>, String> {
    if names.is_empty() {
        return Ok(None);
    }
    let holds_all = |d: &Path| names.iter().all(|n| d.join(n).is_file());
    match dirs.iter().find(|d| holds_all(d)) {
        Some(d) => Ok(Some(d.clone())),
        None => Err(format!(
            "the CUDA headers {} were not found in {}; install the CUDA toolkit, or set CUDA_HOME to \
             a folder whose include/ holds them (the nvidia-cuda-runtime wheel's nvidia/cu13)",
            names.join(", "),
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_includes_are_the_angled_ones() {
        let src = "#include <cuda_bf16.h>\n  #include  <cuda_fp16.h> // half\n#include \"hopper.cuh\"\n\
                   // #include <not_this.h> in a comment\nint x;\n";
        assert_eq!(system_includes(src), ["cuda_bf16.h", "cuda_fp16.h"]);
        assert!(system_includes("#include \"sgemm_hopper.cuh\"\n").is_empty());
    }

    #[test]
    fn the_first_folder_with_every_header_is_chosen() {
        let root = std::env::temp_dir().join(format!("coalesce-headers-{}", std::process::id()));
        let (half, both) = (root.join("half"), root.join("both"));
        for d in [&half, &both] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(half.join("cuda_fp16.h"), "").unwrap();
        for n in ["cuda_bf16.h", "cuda_fp16.h"] {
            std::fs::write(both.join(n), "").unwrap();
        }
        let names = ["cuda_bf16.h", "cuda_fp16.h"];
        let dirs = [root.join("none"), half.clone(), both.clone()];
        assert_eq!(find(&names, &dirs), Ok(Some(both.clone())));
        assert_eq!(
            find(&[], &dirs),
            Ok(None),
            "a twin that includes nothing needs no folder"
        );
        let e = find(&names, &dirs[..2]).unwrap_err();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(e.lines().count(), 1, "{e}");
        for want in [
            "cuda_bf16.h, cuda_fp16.h",
            "half",
            "CUDA_HOME",
            "nvidia-cuda-runtime",
        ] {
            assert!(e.contains(want), "{want:?} not in {e}");
        }
    }

    #[test]
    fn the_toolkits_include_folders_end_with_the_default_install() {
        let c = candidates();
        assert!(c.contains(&PathBuf::from("/usr/local/cuda/include")), "{c:?}");
        assert!(c.iter().all(|d| d.ends_with("include")), "{c:?}");
    }
}
