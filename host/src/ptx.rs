//! The PTX that `build.rs` compiled from `kernels/`: the only place it enters the code.

pub use kernels::handle::PtxModule;

/// The kernels crate compiled for `nvptx64-nvidia-cuda`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Deliberately wrong kernels (`tests/broken-kernels`), for the tests that prove
/// validation and fault handling work. Built only with the `broken-kernels` feature.
#[cfg(feature = "broken-kernels")]
pub const BROKEN_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/broken_kernels.ptx"));

/// The deliberately wrong Hopper kernels (`#[requires(sm_90a)]`), built for sm_90a.
#[cfg(feature = "broken-kernels")]
pub const BROKEN_PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/broken_kernels_sm90a.ptx"));

/// The `-C target-cpu` the PTX was built for (`COALESCE_ARCH`, default sm_70).
pub const ARCH: &str = env!("COALESCE_PTX_ARCH");

/// The kernels that need sm_80 (declared `kernel! { #[requires(sm_80)] ... }`: they
/// use `cp.async`), and only those: a second module, built for [`SM80_ARCH`], which
/// [`crate::device::Gpu`] loads where the device has compute capability 8.0 or later.
/// The baseline [`PTX`] stays loadable on every GPU from sm_70.
pub const PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm80.ptx"));

/// The `-C target-cpu` of [`PTX_SM80`]: sm_80, or [`ARCH`] if that is newer.
pub const SM80_ARCH: &str = env!("COALESCE_PTX_SM80_ARCH");

/// The Hopper kernels (`#[requires(sm_90a)]`: TMA, transaction barriers, clusters,
/// `wgmma`), built for sm_90a, which [`crate::device::Gpu`] loads only on compute
/// capability 9.0 (the "a" instructions are that architecture's alone).
pub const PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90a.ptx"));

/// The `-C target-cpu` of [`PTX_SM90A`].
pub const SM90A_ARCH: &str = "sm_90a";

/// The text of one embedded module.
pub fn text(module: PtxModule) -> &'static str {
    match module {
        PtxModule::Baseline => PTX,
        PtxModule::Sm80 => PTX_SM80,
        PtxModule::Sm90a => PTX_SM90A,
    }
}

/// The `-C target-cpu` one embedded module was built for.
pub fn arch(module: PtxModule) -> &'static str {
    match module {
        PtxModule::Baseline => ARCH,
        PtxModule::Sm80 => SM80_ARCH,
        PtxModule::Sm90a => SM90A_ARCH,
    }
}

/// The kernel entry points (`.entry NAME(`) declared in a PTX module, in order.
pub fn entry_points(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
}

/// The text between the braces of `kernel`'s `.entry` in `ptx`, or `None` if `ptx` has
/// none (what `explain` reads of a kernel's PTX).
pub fn entry_body<'a>(ptx: &'a str, kernel: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {kernel}("))?;
    let after = &ptx[start..];
    let params = after.find(')')?;
    let open = params + after[params..].find('{')?;
    let mut depth = 0usize;
    for (i, c) in after[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&after[open + 1..open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entry_points() {
        let ptx =
            ".version 7.0\n.visible .entry copy_f32(\n\t.param .u64 a\n)\n.visible .entry stride_read(\n";
        assert_eq!(entry_points(ptx), ["copy_f32", "stride_read"]);
    }

    #[test]
    fn embedded_ptx_targets_the_configured_arch() {
        assert!(
            PTX.contains(&format!(".target {ARCH}")),
            "PTX header should name {ARCH}"
        );
        assert!(PTX_SM80.contains(&format!(".target {SM80_ARCH}")));
    }

    /// Each handle's module has its entry point and the other does not, and only the
    /// sm_80 module uses `cp.async` (the driver would refuse the whole baseline module
    /// on an sm_70 GPU otherwise).
    #[test]
    fn each_kernel_is_in_the_module_its_handle_names() {
        for k in kernels::HOST_KERNELS {
            for m in PtxModule::ALL {
                assert_eq!(
                    entry_points(text(m)).contains(&k.name),
                    m == k.module,
                    "{} in {m:?}",
                    k.name
                );
            }
        }
        assert!(!entry_points(PTX_SM80).is_empty());
        assert!(!PTX.contains("cp.async"), "the sm_70 baseline uses cp.async");
        assert!(PTX_SM80.contains("cp.async.wait_group"));
        assert_eq!(kernels::entry::copy_f32.module, PtxModule::Baseline);
        assert_eq!(arch(PtxModule::Sm80), SM80_ARCH);
    }
}
