//! The PTX that `build.rs` compiled from `kernels/`: the only place it enters the code.

/// The kernels crate compiled for `nvptx64-nvidia-cuda`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Deliberately wrong kernels (`tests/broken-kernels`), for the tests that prove
/// validation and fault handling work. Built only with the `broken-kernels` feature.
#[cfg(feature = "broken-kernels")]
pub const BROKEN_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/broken_kernels.ptx"));

/// The `-C target-cpu` the PTX was built for (`COALESCE_ARCH`, default sm_70).
pub const ARCH: &str = env!("COALESCE_PTX_ARCH");

/// The kernels that need sm_80 (declared `kernel! { #[requires(sm_80)] ... }`: they
/// use `cp.async`), and only those: a second module, built for [`SM80_ARCH`], which
/// [`crate::device::Gpu`] loads where the device has compute capability 8.0 or later.
/// The baseline [`PTX`] stays loadable on every GPU from sm_70.
pub const PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm80.ptx"));

/// The `-C target-cpu` of [`PTX_SM80`]: sm_80, or [`ARCH`] if that is newer.
pub const SM80_ARCH: &str = env!("COALESCE_PTX_SM80_ARCH");

/// The compute capability [`PTX_SM80`]'s kernels need.
pub const SM80: (i32, i32) = (8, 0);

/// Whether `kernel` is an entry point of [`PTX_SM80`] (so it needs [`SM80`]).
pub fn needs_sm80(kernel: &str) -> bool {
    entry_points(PTX_SM80).contains(&kernel)
}

/// The embedded module that defines `kernel`, if any.
pub fn module_of(kernel: &str) -> Option<&'static str> {
    [PTX, PTX_SM80]
        .into_iter()
        .find(|ptx| entry_points(ptx).contains(&kernel))
}

/// The kernel entry points (`.entry NAME(`) declared in a PTX module, in order.
pub fn entry_points(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
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

    /// The two modules share no entry point, and only the sm_80 one uses `cp.async`
    /// (the driver would refuse the whole baseline module on an sm_70 GPU otherwise).
    #[test]
    fn the_sm80_module_holds_the_cp_async_kernels_and_nothing_else() {
        let (base, sm80) = (entry_points(PTX), entry_points(PTX_SM80));
        assert!(!sm80.is_empty());
        for k in &sm80 {
            assert!(!base.contains(k), "{k} is in both modules");
            assert!(needs_sm80(k) && module_of(k) == Some(PTX_SM80));
        }
        assert!(!PTX.contains("cp.async"), "the sm_70 baseline uses cp.async");
        assert!(PTX_SM80.contains("cp.async.wait_group"));
        assert_eq!(module_of("copy_f32"), Some(PTX));
        assert!(!needs_sm80("copy_f32"));
        assert_eq!(module_of("no_such_kernel"), None);
    }
}
