//! Generates `$OUT_DIR/host_kernels.rs`, the emulator's table of every kernel
//! (`kernels::HOST_KERNELS`), from the `kernel!` blocks of the module files `src/*.rs`,
//! so adding a kernel needs no table edit. Runs for the nvptx build too (build scripts
//! run on the host); `lib.rs` includes the table only on the host.

include!("kernel_table.rs");

fn main() {
    println!("cargo:rerun-if-changed=src");
    let files = module_files(Path::new("src"));
    let files: Vec<(&Path, String)> = files.iter().map(|(p, m)| (p.as_path(), m.clone())).collect();
    generate_host_kernels(&files, "crate::gpu::emu");
}
