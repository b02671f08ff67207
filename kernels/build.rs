//! Generates `$OUT_DIR/kernel_handles.rs`, this crate's kernel handles
//! (`kernels::entry`, and `kernels::HOST_KERNELS`), from the `kernel!` blocks of every
//! file under `src/` (kernels/table reads them), so adding a kernel needs no table
//! edit. Runs for the nvptx build too (build scripts run on the host); `lib.rs`
//! includes the handles only on the host.

fn main() {
    kernel_table::write_handles("crate");
}
