//! The embedded PTX: every entry point is there, vector accesses stay vector, and
//! (where `ptxas` is installed) both modules, the sm_70 baseline and the sm_80 one,
//! assemble for sm_80 and sm_90 with no spills.

mod common;

use common::{fresh_dir, nvdisasm, ptxas, sass_functions, sass_listing};

use std::process::Command;

use coalesce::experiments::ALL;
use coalesce::ptx::{PTX, PTX_SM80, PTX_SM90A, entry_points, text};

/// The body of the `.entry` of the kernel called `name`, in the module its handle names.
fn body(name: &str) -> &'static str {
    let kernel = kernels::HOST_KERNELS
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name}"));
    let ptx = text(kernel.module);
    let start = ptx.find(&format!(".entry {name}(")).unwrap();
    let rest = &ptx[start..];
    let end = rest.find("\n}").map(|e| e + 2).unwrap_or(rest.len());
    &rest[..end]
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn every_experiment_kernel_is_an_entry_point() {
    let mut entries = entry_points(PTX);
    entries.extend(entry_points(PTX_SM80));
    entries.extend(entry_points(PTX_SM90A));
    for e in ALL {
        for k in e.kernels() {
            assert!(
                entries.contains(&k.name),
                "{} missing from PTX entries {entries:?}",
                k.name
            );
        }
    }
}

#[test]
fn copy_kernels_compile_to_plain_loads_and_stores() {
    // The accessors must add nothing: one load and one store per copy.
    let f32 = body("copy_f32");
    assert_eq!(
        (count(f32, "ld.global."), count(f32, "st.global.")),
        (1, 1),
        "{f32}"
    );
    // f32x4: one 16-byte vector load/store in the loop plus the scalar tail.
    let v4 = body("copy_f32x4");
    assert_eq!(count(v4, "ld.global.nc.v4."), 1, "{v4}");
    assert_eq!(count(v4, "st.global.v4."), 1, "{v4}");
    assert_eq!(count(v4, "ld.global."), 2, "{v4}");
    // No trap paths from bounds checks or panics.
    assert_eq!(count(PTX, "trap;"), 0, "a kernel can panic");
}

/// The instructions of a body (no directives, labels or comments). Inline-assembly
/// blocks (`{ .reg ...; cvta...; ld.global.nc...; }`) count instruction by instruction.
fn instructions(body: &str) -> impl Iterator<Item = &str> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .flat_map(|l| l.trim_start_matches('{').trim_end_matches('}').split(';'))
        .map(str::trim)
        .filter(|i| !i.is_empty() && !i.starts_with('.') && !i.starts_with('$') && !i.starts_with("//"))
}

/// Reads of a `Global` (read-only for the whole kernel) take the read-only data path,
/// `ld.global.nc`; reads of a `GlobalMut` (written in the kernel) must not.
#[test]
fn read_only_inputs_use_the_non_coherent_path() {
    // (kernel, nc loads, plain loads)
    let expected = [
        ("copy_f32", 1, 0),
        ("stride_read", 1, 0),
        ("saxpy_f32", 1, 1),
        ("particles_soa", 3, 3),
        ("particles_aos", 0, 6),
        ("particles_soa_f32x4", 3, 3),
        ("transpose_padded_64_f32x4", 4, 0),
        ("matmul_remapped", 2, 0),
    ];
    for (kernel, nc, plain) in expected {
        let b = body(kernel);
        let loads: Vec<&str> = instructions(b).filter(|i| i.starts_with("ld.global.")).collect();
        let n_nc = loads.iter().filter(|i| i.starts_with("ld.global.nc.")).count();
        // Unrolled loops repeat loads; the ratio is what the types decide.
        assert!(n_nc >= nc && loads.len() - n_nc >= plain, "{kernel}: {loads:?}");
        assert_eq!(nc == 0, n_nc == 0, "{kernel}: {loads:?}");
        assert_eq!(plain == 0, loads.len() == n_nc, "{kernel}: {loads:?}");
    }
}

/// On the host the accessors record every access for `coalesce explain`; on the GPU
/// they must cost nothing: exactly the global loads and stores the source makes
/// (vector ones kept), no calls (everything inlined), no local memory.
#[test]
fn accessors_add_no_instructions_on_the_gpu() {
    // (kernel, scalar loads, scalar stores, v4 loads, v4 stores)
    let expected: &[(&str, usize, usize, usize, usize)] = &[
        ("copy_f32", 1, 1, 0, 0),
        ("stride_read", 1, 1, 0, 0),
        ("offset_read", 1, 1, 0, 0),
        ("complex_real_interleaved", 1, 1, 0, 0),
        ("saxpy_f32", 2, 1, 0, 0),
        // The float4 loop, then the scalar tail.
        ("copy_f32x4", 1, 1, 1, 1),
        ("saxpy_f32x4", 2, 1, 2, 1),
        ("complex_real_split_f32x4", 1, 1, 1, 1),
        // The float4 loop (a vector load, or four gathers), then the scalar tail.
        ("stride_read_f32x4", 5, 1, 1, 1),
        ("offset_read_f32x4", 5, 1, 1, 1),
        ("particles_soa_f32x4", 6, 3, 6, 3),
    ];
    for &(kernel, ld, st, ld4, st4) in expected {
        let b = body(kernel);
        let ops: Vec<&str> = instructions(b)
            .filter(|i| i.starts_with("ld.") || i.starts_with("st.") || i.starts_with("atom"))
            .filter(|i| !i.starts_with("ld.param"))
            .collect();
        let n = |prefix: &str, vector: bool| {
            ops.iter()
                .filter(|i| i.starts_with(prefix) && i.contains(".v4.") == vector)
                .count()
        };
        assert_eq!(
            (
                n("ld.global.", false),
                n("st.global.", false),
                n("ld.global.", true),
                n("st.global.", true)
            ),
            (ld, st, ld4, st4),
            "{kernel}:\n{b}"
        );
        assert_eq!(
            ops.len(),
            ld + st + ld4 + st4,
            "{kernel}: no other memory access\n{b}"
        );
    }
    // The one-element kernels whole: indexing, a guard, the accesses; nothing else.
    for kernel in ["copy_f32", "stride_read", "offset_read", "saxpy_f32"] {
        let n = instructions(body(kernel)).count();
        assert!(n <= 24, "{kernel} has {n} instructions\n{}", body(kernel));
    }
    for forbidden in [".func", "call", ".local", "membar", "atom."] {
        assert_eq!(count(PTX, forbidden), 0, "the PTX contains {forbidden}");
        assert_eq!(
            count(PTX_SM80, forbidden),
            0,
            "the sm_80 PTX contains {forbidden}"
        );
    }
}

#[test]
fn assembles_without_spills_where_ptxas_is_installed() {
    let Some(ptxas) = ptxas() else {
        assert!(
            std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
            "COALESCE_REQUIRE_PTXAS is set but ptxas was not found"
        );
        eprintln!("ptxas not found (pip install nvidia-cuda-nvcc-cu12, or set PTXAS): skipped");
        return;
    };
    let dir = fresh_dir("ptx-ptxas");
    for (name, ptx) in [("kernels", PTX), ("kernels-sm80", PTX_SM80)] {
        let src = dir.join(format!("{name}.ptx"));
        std::fs::write(&src, ptx).unwrap();
        for arch in ["sm_80", "sm_90"] {
            let out = Command::new(&ptxas)
                .args(["-v", "-arch", arch, "-o"])
                .arg(dir.join(format!("{name}-{arch}.cubin")))
                .arg(&src)
                .output()
                .unwrap();
            let log = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "ptxas -arch {arch} {name} failed:\n{log}");
            for line in log.lines().filter(|l| l.contains("spill")) {
                assert!(
                    line.contains("0 bytes spill stores, 0 bytes spill loads"),
                    "{name} {arch}: {line}"
                );
            }
            // The 128 x 128 x 8 pipelines run two blocks of 256 threads per SM only at
            // 128 registers or fewer (65536 per SM); the 4 x 8 tuning's lesson needs it,
            // and the interior rung's launch bounds must hold it there.
            for k in [
                "sgemm_pipeline_128x128x8",
                "sgemm_pipeline_128x128x8_4x8",
                "sgemm_interior",
            ] {
                if name == "kernels" {
                    let r = registers(&log, k).unwrap_or_else(|| panic!("{k} not in the log:\n{log}"));
                    assert!(r <= 128, "{name} {arch}: {k} uses {r} registers");
                }
            }
            let functions = count(&log, "Compiling entry function");
            assert_eq!(
                functions,
                entry_points(ptx).len(),
                "{name} {arch}: every entry assembled\n{log}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The registers ptxas's `-v` log reports for entry function `name`.
fn registers(log: &str, name: &str) -> Option<u32> {
    let start = log.find(&format!("Compiling entry function '{name}'"))?;
    let rest = &log[start..];
    let used = rest.find("Used ")?;
    rest[used + 5..].split_whitespace().next()?.parse().ok()
}

#[test]
fn saxpy_float4_uses_16_byte_vector_accesses() {
    for k in ["saxpy_f32x4", "saxpy_f32x4_strided"] {
        let b = body(k);
        // x and y vector loads, one y vector store (the scalar tail has plain ones).
        assert_eq!(
            count(b, "ld.global.nc.v4.") + count(b, "ld.global.v4."),
            2,
            "{k}:\n{b}"
        );
        assert_eq!(count(b, "st.global.v4."), 1, "{k}:\n{b}");
    }
    assert_eq!(count(body("saxpy_f32"), "ld.global.v4."), 0);
}

/// The tuned kernels (issue 15) move 16 bytes per access in their loops: one vector
/// load per input array (read-only ones on the `.nc` path) and one vector store per output.
#[test]
fn tuned_kernels_use_16_byte_vector_accesses() {
    // (kernel, nc v4 loads, plain v4 loads, v4 stores)
    for (k, nc4, ld4, st4) in [
        ("copy_f32x4", 1, 0, 1),
        ("stride_read_f32x4", 1, 0, 1),
        ("offset_read_f32x4", 1, 0, 1),
        ("complex_real_split_f32x4", 1, 0, 1),
        ("particles_soa_f32x4", 3, 3, 3),
    ] {
        let b = body(k);
        assert_eq!(count(b, "ld.global.nc.v4."), nc4, "{k}:\n{b}");
        assert_eq!(count(b, "ld.global.v4."), ld4, "{k}:\n{b}");
        assert_eq!(count(b, "st.global.v4."), st4, "{k}:\n{b}");
    }
}

/// The tuned transposes: their tiles in shared memory, their barriers, every global
/// load on the read-only path, and float4 global accesses in the vector one.
#[test]
fn tuned_transposes_keep_their_tiles_and_vectors() {
    // (kernel, tile bytes, barriers, nc loads at least)
    for (k, bytes, bars, nc) in [
        ("transpose_padded_64", 64 * 65 * 4, 1, 16),
        ("transpose_padded_64_f32x4", 64 * 65 * 4, 1, 4),
    ] {
        let b = body(k);
        assert_eq!(count(b, "bar.sync"), bars, "{k}:\n{b}");
        assert!(count(b, "ld.global.nc.") >= nc, "{k}:\n{b}");
        assert_eq!(
            count(b, "ld.global.f32") + count(b, "ld.global.b32"),
            0,
            "{k}:\n{b}"
        );
        assert!(
            b.contains("st.shared.f32") && b.contains("ld.shared.f32"),
            "{k}:\n{b}"
        );
        assert!(
            PTX.contains(&format!("[{bytes}];")),
            "{k}: a {bytes}-byte shared array is declared"
        );
    }
    // 16 elements per thread, loads unrolled: 16 of them before the barrier.
    let b = body("transpose_padded_64");
    let before = &b[..b.find("bar.sync").unwrap()];
    assert_eq!(count(before, "ld.global.nc.f32"), 16, "{b}");
    // Four float4 loads (aligned rows) before the barrier, float4 stores after it.
    let b = body("transpose_padded_64_f32x4");
    let (before, after) = b.split_at(b.find("bar.sync").unwrap());
    assert_eq!(count(before, "ld.global.nc.v4.f32"), 4, "{b}");
    assert!(count(after, "st.global.v4.") >= 1, "{b}");
}

#[test]
fn tiles_live_in_shared_memory_and_loops_are_unrolled() {
    for (k, bytes) in [
        ("transpose_tiled", 32 * 32 * 4),
        ("transpose_tiled_padded", 32 * 33 * 4),
    ] {
        let b = body(k);
        // 4 rows per thread, unrolled: 4 shared stores, 4 shared loads, one barrier, no loop.
        assert_eq!(count(b, "st.shared.f32"), 4, "{k}:\n{b}");
        assert_eq!(count(b, "ld.shared.f32"), 4, "{k}:\n{b}");
        assert_eq!(count(b, "bar.sync"), 1, "{k}:\n{b}");
        assert!(
            PTX.contains(&format!("[{bytes}];")),
            "{k}: a {bytes}-byte shared array is declared"
        );
    }
}

/// The deliberately wrong kernels (`--features broken-kernels`): a module of their
/// own, with every entry the GPU tests load, assembling where ptxas is installed.
#[cfg(feature = "broken-kernels")]
#[test]
fn the_broken_kernels_are_a_separate_module() {
    use coalesce::ptx::BROKEN_PTX;
    let broken = entry_points(BROKEN_PTX);
    for k in [
        "copy_f32_off_by_one",
        "matmul_remapped_a_transposed",
        "transpose_tiled_no_barrier",
        "copy_f32_wild",
    ] {
        assert!(broken.contains(&k), "{k} missing from {broken:?}");
        assert!(
            !entry_points(PTX).contains(&k),
            "{k} leaked into the product's PTX"
        );
    }
    // The tile without its barrier is the real one minus `bar.sync`.
    let start = BROKEN_PTX.find(".entry transpose_tiled_no_barrier(").unwrap();
    let body = &BROKEN_PTX[start..start + BROKEN_PTX[start..].find("\n}").unwrap()];
    assert_eq!(count(body, "bar.sync"), 0, "{body}");
    assert_eq!(count(body, "st.shared.f32"), 4, "{body}");
    // The Hopper ones are in a module of their own, for sm_90a, with their launch bounds.
    use coalesce::ptx::BROKEN_PTX_SM90A;
    let hopper = entry_points(BROKEN_PTX_SM90A);
    for k in ["copy_tma_wrong_phase", "hgemm_wgmma_bf16_wrong_atoms"] {
        assert!(hopper.contains(&k), "{k} missing from {hopper:?}");
        assert!(!broken.contains(&k), "{k} is in the sm_70 module");
        assert!(
            !entry_points(PTX_SM90A).contains(&k),
            "{k} leaked into the product's PTX"
        );
    }
    assert!(BROKEN_PTX_SM90A.contains(".target sm_90a"));
    assert!(BROKEN_PTX_SM90A.contains(".maxntid 256, 1, 1"));
    let Some(ptxas) = ptxas() else { return };
    let dir = fresh_dir("ptx-broken-ptxas");
    let src = dir.join("broken.ptx");
    for (ptx, arch) in [(BROKEN_PTX, "sm_90"), (BROKEN_PTX_SM90A, "sm_90a")] {
        std::fs::write(&src, ptx).unwrap();
        let out = Command::new(&ptxas)
            .args(["-arch", arch, "-o"])
            .arg(dir.join("broken.cubin"))
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{arch}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The register-blocked SGEMM rungs (kernels/src/sgemm/) keep their accumulators in
/// registers (every loop over a register array unrolled: no local memory), and from
/// the vec4 rung on move tiles with 16-byte accesses: `ld.global.nc.v4` for the global
/// float4 loads (one of A, one of B per thread per tile at 128 x 128 x 8 with 256
/// threads), `ld.shared.v4` for the fragments, `st.global.v4` for C.
#[test]
fn sgemm_rungs_use_vector_accesses_and_no_local_memory() {
    let v4 = body("sgemm_vec4");
    assert_eq!(count(v4, "ld.global.nc.v4.f32"), 2, "{v4}");
    // The tile's 8 k steps unrolled, as the twin's `#pragma unroll`: per step 8 values
    // of A and 8 of B, two float4s each, and 64 fused multiply-adds.
    assert_eq!(count(v4, "ld.shared.v4.f32"), 8 * 4, "{v4}");
    assert_eq!(count(v4, "ld.shared.f32"), 0, "{v4}");
    assert_eq!(count(v4, "st.shared.v4.f32"), 1, "{v4}");
    assert!(count(v4, "st.global.v4.") >= 1, "{v4}");
    assert!(count(v4, "fma.rn.f32") >= 8 * 64, "{v4}");
    // The scalar path for k or n not a multiple of 4 is there too.
    assert!(count(v4, "ld.global.nc.f32") >= 4, "{v4}");
    for k in [
        "sgemm_tile_1d",
        "sgemm_tile_2d",
        "sgemm_vec4",
        "sgemm_banks",
        "sgemm_warptile",
        "sgemm_pipeline_128x128x16",
        "sgemm_pipeline_128x128x8",
        "sgemm_pipeline_128x128x8_4x8",
        "sgemm_pipeline_128x64x16",
    ] {
        let b = body(k);
        assert_eq!(count(b, ".local"), 0, "{k} uses local memory:\n{b}");
        // Two barriers per tile; the pipelines one per tile and one after the prologue.
        assert_eq!(count(b, "bar.sync"), 2, "{k}");
    }
    // The interior rung: the pipeline's loop twice, one of them with float4 loads only
    // (no scalar fallback: the guarded copy's 8 scalar loads per tile are its only ones).
    let interior = body("sgemm_interior");
    assert_eq!(count(interior, ".local"), 0);
    assert_eq!(count(interior, "bar.sync"), 4);
    assert_eq!(
        count(interior, "ld.global.nc.f32"),
        count(body("sgemm_pipeline_128x128x8_4x8"), "ld.global.nc.f32")
    );
    assert_eq!(
        count(interior, "ld.global.nc.v4.f32"),
        2 * count(body("sgemm_pipeline_128x128x8_4x8"), "ld.global.nc.v4.f32")
    );
    // Its launch bounds, written into the PTX by the build.
    assert!(interior.contains(".maxntid 256, 1, 1") && interior.contains(".minnctapersm 2"));
    // Warp tiling: 8 x 4 outputs in each of 4 sub-tiles per k step.
    assert!(count(body("sgemm_warptile"), "fma.rn.f32") >= 128);
}

/// The `cp.async` rungs (the sm_80 module): tiles go from global to shared memory by
/// asynchronous copies only, so no global load or shared store is left (no staging
/// registers); A by 4-byte `cp.async.ca` (transposed), B by 16-byte `cp.async.cg` (and
/// 4-byte copies where n % 4 != 0); one barrier and one wait per tile.
#[test]
fn sgemm_async_rungs_copy_tiles_with_cp_async_only() {
    // (kernel, A's 4-byte copies and B's 16-byte ones per thread per tile)
    for (k, a4, b16) in [("sgemm_async_128x128x8", 4, 1), ("sgemm_async_128x256x8", 4, 2)] {
        assert!(PTX_SM80.contains(&format!(".entry {k}(")) && !PTX.contains(&format!(".entry {k}(")));
        let b = body(k);
        assert_eq!(count(b, "ld.global"), 0, "{k}:\n{b}");
        assert_eq!(count(b, "st.shared"), 0, "{k}:\n{b}");
        assert_eq!(count(b, ".local"), 0, "{k}:\n{b}");
        let (ca, cg) = (
            count(b, "cp.async.ca.shared.global"),
            count(b, "cp.async.cg.shared.global"),
        );
        // Each place that issues a tile issues A's copies and both of B's paths.
        let issues = cg / b16;
        assert!(issues >= 2 && cg == issues * b16, "{k}: {cg} 16-byte copies");
        assert_eq!(ca, issues * (a4 + 4 * b16), "{k}: 4-byte copies");
        assert_eq!(count(b, "cp.async.wait_group 1;"), 1, "{k}");
        assert_eq!(count(b, "bar.sync"), 1, "{k}");
        assert!(count(b, "cp.async.commit_group") >= 2, "{k}");
        assert!(
            count(b, "ld.shared.v4.f32") >= 4 && count(b, "fma.rn.f32") >= 64,
            "{k}"
        );
    }
}

/// The tensor-core rungs (the sm_80 module): tiles go to shared memory by `cp.async`
/// only; per k step of 8, A's fragments load by `ldmatrix` (four 16-row tiles) and
/// B's by `ld.shared.v4` (two rows of each 32 columns), for 32 `mma.sync` (a warp's
/// 64 x 64), four k steps per tile unrolled, the next step's fragments loaded during
/// this one's (five loads of each: a tile's four steps and the first one ahead).
/// The k loop comes in two versions, one by 16-byte copies only (k and n multiples of
/// 4), one by 4-byte copies only. Accumulators stay in registers; one wait and one
/// barrier per tile, and one each after the prologue. The baseline module has no
/// tensor-core instruction.
#[test]
fn sgemm_tf32_rungs_multiply_on_tensor_cores() {
    // (kernel, A's and B's 16-byte copies per thread per tile)
    for (k, a16, b16) in [("sgemm_tf32_128x128x32", 8, 8), ("sgemm_tf32_128x256x32", 4, 8)] {
        assert!(PTX_SM80.contains(&format!(".entry {k}(")) && !PTX.contains(&format!(".entry {k}(")));
        let b = body(k);
        // Two versions of the loop.
        let mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
        assert_eq!(count(b, mma), 2 * 4 * 32, "{k}");
        assert_eq!(
            count(b, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            2 * 5 * 4,
            "{k}"
        );
        assert_eq!(count(b, "ld.shared.v4.f32"), 2 * 5 * 4, "{k}");
        for none in ["ld.global", "st.shared", "ld.shared.f32", ".local"] {
            assert_eq!(count(b, none), 0, "{k} has {none}:\n{b}");
        }
        // Two places per version issue a tile (the prologue's loop, and the main loop,
        // a share at each k step): 16-byte copies in one version, 4-byte ones in the other.
        assert_eq!(count(b, "cp.async.cg.shared.global"), 2 * (a16 + b16), "{k}");
        assert_eq!(count(b, "cp.async.ca.shared.global"), 2 * 4 * (a16 + b16), "{k}");
        assert_eq!(count(b, "cp.async.wait_group 1;"), 2 * 2, "{k}");
        assert_eq!(count(b, "bar.sync"), 2 * 2, "{k}");
        assert!(count(b, "st.global.v4.") >= 2, "{k}");
    }
    for forbidden in ["mma.sync", "ldmatrix"] {
        assert_eq!(count(PTX, forbidden), 0, "the sm_70 baseline has {forbidden}");
    }
}

/// What `explain` assumes ptxas does with scalar shared accesses (explain::emulate::vectorize:
/// 4-byte `ld.shared`/`st.shared` off one base in one block, in an aligned 16- or
/// 8-byte window, become one `LDS.128`/`LDS.64`), counted in the SASS of every
/// kernel with scalar shared accesses: its vector shared accesses are the PTX's own
/// plus the windows the analysis finds, no more, no fewer. Where ptxas and nvdisasm
/// are installed.
#[test]
fn ptxas_merges_the_shared_accesses_explain_assumes() {
    let (Some(ptxas), Some(nvdisasm)) = (ptxas(), nvdisasm()) else {
        assert!(
            std::env::var_os("COALESCE_REQUIRE_NVDISASM").is_none()
                && std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
            "COALESCE_REQUIRE_PTXAS or COALESCE_REQUIRE_NVDISASM is set but ptxas or nvdisasm was not found"
        );
        eprintln!("ptxas or nvdisasm not found (set PTXAS and NVDISASM): skipped");
        return;
    };
    let dir = fresh_dir("ptx-sass");
    let mut merged = Vec::new();
    for (name, ptx) in [("kernels", PTX), ("kernels-sm80", PTX_SM80)] {
        let listing = sass_listing(&ptxas, &nvdisasm, &dir, name, ptx, "sm_90");
        let sass = sass_functions(&listing);
        for kernel in entry_points(ptx) {
            let v = coalesce::explain::emulate::vectorize::analyse(ptx, kernel).unwrap();
            let code = sass.get(kernel).unwrap_or_else(|| panic!("no SASS for {kernel}"));
            let b = body(kernel);
            for (dir, ptx_op, sass_op) in [(0, "ld.shared", "LDS"), (1, "st.shared", "STS")] {
                let [wide, pair] = v.vectors[dir];
                let ptx4 = count(b, &format!("{ptx_op}.v4."));
                let ptx2 = count(b, &format!("{ptx_op}.v2."));
                let words = ["f32", "u32", "s32", "b32"];
                let scalar: usize = words.iter().map(|w| count(b, &format!("{ptx_op}.{w} "))).sum();
                // Only where the PTX has scalar accesses to merge: elsewhere ptxas may
                // unroll a loop of vector ones (fewer in the PTX than in the SASS).
                if scalar == 0 {
                    continue;
                }
                assert_eq!(
                    (
                        count(code, &format!("{sass_op}.128 ")),
                        count(code, &format!("{sass_op}.64 "))
                    ),
                    (ptx4 + wide, ptx2 + pair),
                    "{kernel}: {sass_op}.128 and .64 in the SASS against {ptx_op}.v4 and .v2 in the PTX plus the windows {v:?}"
                );
            }
            if v.vectors != [[0; 2]; 2] {
                merged.push(kernel);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // The scalar sgemm rungs are where it matters (docs/explain.md).
    assert_eq!(merged, ["sgemm_smem", "sgemm_tile_1d", "sgemm_tile_2d"]);
}

/// The Hopper kernels are in their own module, for sm_90a, and use the machinery they
/// teach: the copy engine for every tile, warpgroup MMAs, and register reallocation
/// where warp-specialised.
#[test]
fn hopper_kernels_are_sm90a_and_use_the_copy_engine_and_wgmma() {
    assert!(
        PTX_SM90A.contains(".target sm_90a"),
        "{}",
        &PTX_SM90A[..300.min(PTX_SM90A.len())]
    );
    let entries = entry_points(PTX_SM90A);
    for k in [
        "copy_tma",
        "transpose_tma",
        "sgemm_wgmma",
        "sgemm_wgmma_ws",
        "sgemm_wgmma_cluster",
    ] {
        assert!(
            entries.contains(&k),
            "{k} missing from the sm_90a module: {entries:?}"
        );
        assert!(!entry_points(PTX).contains(&k), "{k} in the baseline module");
    }
    let body = |k: &str| {
        let start = PTX_SM90A.find(&format!(".entry {k}(")).unwrap();
        let end = PTX_SM90A[start + 1..]
            .find(".entry ")
            .map_or(PTX_SM90A.len(), |e| start + 1 + e);
        &PTX_SM90A[start..end]
    };
    assert!(body("copy_tma").contains("cp.async.bulk.tensor.1d"));
    assert!(body("transpose_tma").contains("cp.async.bulk.tensor.2d"));
    let ws = body("sgemm_wgmma_ws");
    for op in [
        "wgmma.mma_async",
        "setmaxnreg.inc",
        "setmaxnreg.dec",
        "mbarrier.try_wait.parity",
        "cp.async.bulk.tensor.2d",
    ] {
        assert!(ws.contains(op), "sgemm_wgmma_ws lacks {op}");
    }
    assert!(body("sgemm_wgmma_cluster").contains(".multicast::cluster"));
}
