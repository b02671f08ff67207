//! Generates `$OUT_DIR/host_kernels.rs`, the emulator's table of every kernel
//! (`kernels::HOST_KERNELS`), from the `kernel!` blocks of the module files `src/*.rs`,
//! so adding a kernel needs no table edit. Runs for the nvptx build too (build scripts
//! run on the host); `lib.rs` includes the table only on the host.

use std::path::PathBuf;

include!("kernel_table.rs");

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files: Vec<PathBuf> = std::fs::read_dir("src")
        .expect("kernels/src is readable")
        .map(|e| e.expect("kernels/src lists").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .collect();
    // Sorted, so the table's order does not depend on the file system.
    files.sort();
    // Each top-level file is a module of lib.rs named after it; lib.rs is the root.
    let files: Vec<(&std::path::Path, String)> = files
        .iter()
        .map(|p| {
            let stem = p
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("UTF-8 file names in src");
            let prefix = if stem == "lib" {
                "crate".to_string()
            } else {
                format!("crate::{stem}")
            };
            (p.as_path(), prefix)
        })
        .collect();
    generate_host_kernels(&files, "crate::gpu::emu");
}
