//! The PTX that `build.rs` compiled from `kernels/`: the only place it enters the code.

/// The kernels crate compiled for `nvptx64-nvidia-cuda`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Deliberately wrong kernels (`tests/broken-kernels`), for the tests that prove
/// validation and fault handling work. Built only with the `broken-kernels` feature.
#[cfg(feature = "broken-kernels")]
pub const BROKEN_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/broken_kernels.ptx"));

/// The `-C target-cpu` the PTX was built for (`COALESCE_ARCH`, default sm_70).
pub const ARCH: &str = env!("COALESCE_PTX_ARCH");

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
    }
}
