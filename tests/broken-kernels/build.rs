//! Generates `$OUT_DIR/kernel_handles.rs` (`broken_kernels::entry`, and
//! `broken_kernels::HOST_KERNELS`) from the `kernel!` blocks under `src/`, with the
//! kernel table the kernels crate uses.

fn main() {
    kernel_table::write_handles("::kernels");
}
