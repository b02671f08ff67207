//! Generates `$OUT_DIR/host_kernels.rs` (`broken_kernels::HOST_KERNELS`) from the
//! `kernel!` blocks of `src/lib.rs`, with the scanner the kernels crate uses.

include!("../../kernels/kernel_table.rs");

fn main() {
    println!("cargo:rerun-if-changed=src");
    // All of this crate's kernels are in lib.rs, so they live at the crate root.
    generate_host_kernels(
        &[(Path::new("src/lib.rs"), "crate".to_string())],
        "::kernels::gpu::emu",
    );
}
