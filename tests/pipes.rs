//! `coalesce calibrate`'s compute microbenchmarks (kernels/src/calibrate/pipes.rs): on the CPU
//! emulator each stores what calibrate's CPU reference of its arithmetic says; and
//! where ptxas and nvdisasm are found, the loop of each holds, in SASS, the
//! instructions its declared count says a round does, and next to nothing else.

mod common;

use std::collections::BTreeMap;

use coalesce::calibrate::compute::{
    FMA_A, FMA_B, ISSUE_K, MMA_A, MMA_B, WGMMA_B, bulk_shape, bulk_sum, chase_end, check_wgmma_16bit_blocks,
    check_wgmma_16bit_n128_blocks, check_wgmma_blocks, fma_chain, fma_chains, issue_chains, l2_shape,
    l2_sums, l2_value, line_sum, line_value, mma_sum,
};
use coalesce::elem::Elem;
use coalesce::ptx::{PTX, PTX_SM80, PTX_SM90A};
use common::{fresh_dir, nvdisasm, ptxas, sass_functions, sass_listing};
use kernels::calibrate::pipes::{
    BLOCK, CHASE_THREADS, FMA_PER_ROUND, ISSUE_FMA_PER_ROUND, ISSUE_LOP3_PER_ROUND, LATENCY_STEPS,
    MMA_PER_ROUND, REQUEST_WINDOW, REQUESTS_PER_ROUND, WGMMA_16BIT_N128_SHARED_BYTES,
    WGMMA_16BIT_SHARED_BYTES, WGMMA_PER_ROUND, WGMMA_SHARED_BYTES, WGMMA_THREADS,
};
use kernels::entry;
use kernels::gpu::emu::{Dim3, LaunchConfig, launch};
use kernels::gpu::{Float4, Global, GlobalMut};

fn run(grid: u32, block: u32, shared: usize, kernel: impl Fn() + Sync) {
    let cfg = LaunchConfig {
        grid: Dim3::from(grid),
        block: Dim3::from(block),
        dynamic_shared_bytes: shared,
        ..Default::default()
    };
    launch(&cfg, kernel);
}

#[test]
fn each_kernel_stores_what_its_reference_computes() {
    let rounds = 3;
    let mut out = vec![0f32; 2 * BLOCK as usize];
    let o = GlobalMut::from_ptr(out.as_mut_ptr());
    // SAFETY (each): out holds a value per thread of the launch.
    run(2, BLOCK, 0, unsafe {
        entry::fma_throughput.bind((rounds, FMA_A, FMA_B, o))
    });
    assert!(
        out.iter().all(|v| *v == fma_chains(3, FMA_A, FMA_B)),
        "{:?}",
        &out[..4]
    );
    run(1, 32, 0, unsafe {
        entry::fma_latency.bind((rounds, FMA_A, FMA_B, o))
    });
    assert!(out[..32].iter().all(|v| *v == fma_chain(3, FMA_A, FMA_B)));
    run(1, BLOCK, 0, unsafe {
        entry::mma_tf32_throughput.bind((rounds, MMA_A, MMA_B, o))
    });
    assert!(
        out[..256].iter().all(|v| *v == mma_sum(3, MMA_A, MMA_B)),
        "{:?}",
        &out[..4]
    );
    let wg = WGMMA_THREADS as usize;
    run(2, WGMMA_THREADS, WGMMA_SHARED_BYTES, unsafe {
        entry::wgmma_tf32_throughput.bind((rounds, MMA_A, WGMMA_B, o))
    });
    assert_eq!(check_wgmma_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B), None);
    run(2, WGMMA_THREADS, WGMMA_16BIT_SHARED_BYTES, unsafe {
        entry::wgmma_bf16_throughput.bind((rounds, MMA_A, WGMMA_B, o))
    });
    assert_eq!(check_wgmma_16bit_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B), None);
    // A wrong product fails: B's values doubled, or one round fewer.
    run(2, WGMMA_THREADS, WGMMA_16BIT_SHARED_BYTES, unsafe {
        entry::wgmma_bf16_throughput.bind((rounds, MMA_A, 2.0 * WGMMA_B, o))
    });
    assert!(check_wgmma_16bit_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B).is_some());
    run(2, WGMMA_THREADS, WGMMA_16BIT_SHARED_BYTES, unsafe {
        entry::wgmma_bf16_throughput.bind((rounds - 1, MMA_A, WGMMA_B, o))
    });
    assert!(check_wgmma_16bit_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B).is_some());
    // N = 128: its own total, not the N = 256 one's.
    run(2, WGMMA_THREADS, WGMMA_16BIT_N128_SHARED_BYTES, unsafe {
        entry::wgmma_bf16_n128_throughput.bind((rounds, MMA_A, WGMMA_B, o))
    });
    assert_eq!(
        check_wgmma_16bit_n128_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B),
        None
    );
    assert!(check_wgmma_16bit_blocks(&out[..2 * wg], 3, MMA_A, WGMMA_B).is_some());
    let lines: Vec<f32> = (0..2 * REQUEST_WINDOW).map(line_value).collect();
    run(2, BLOCK, 0, unsafe {
        entry::line_requests.bind((rounds, Global::from_ptr(lines.as_ptr()), o))
    });
    for (i, v) in out.iter().enumerate() {
        let (b, t) = (i / BLOCK as usize, i % BLOCK as usize);
        assert_eq!(*v, line_sum(b, t, 3), "line_requests: thread {t} of block {b}");
    }
    let mut words = vec![0u32; BLOCK as usize];
    let w = GlobalMut::from_ptr(words.as_mut_ptr());
    run(1, BLOCK, 0, unsafe {
        entry::issue_mix.bind((rounds, FMA_A, FMA_B, ISSUE_K, w))
    });
    assert!(words.iter().all(|v| *v == issue_chains(3, FMA_A, FMA_B, ISSUE_K)));
    run(1, CHASE_THREADS, 0, unsafe {
        entry::shared_chase.bind((rounds, w))
    });
    let ends: Vec<u32> = (0..32).map(|l| chase_end(l, 3)).collect();
    assert_eq!(&words[..32], &ends[..]);
    // l2_read over 4 blocks: 2 layers of 1024 float4s, one block's shift a round.
    let threads = 4 * BLOCK as usize;
    let (layers, shift) = l2_shape(threads as u64, (threads * 16 * 2 * 4) as u64);
    assert_eq!((layers, shift), (2, 2 * BLOCK as usize));
    let src: Vec<Float4> = (0..threads * layers)
        .map(|p| {
            let v = |c: usize| l2_value(4 * p + c) as f32;
            Float4::new(v(0), v(1), v(2), v(3))
        })
        .collect();
    let mut sums = vec![0f32; threads];
    let args = (
        5,
        layers,
        shift,
        Global::from_ptr(src.as_ptr()),
        GlobalMut::from_ptr(sums.as_mut_ptr()),
    );
    run(4, BLOCK, 0, unsafe { entry::l2_read.bind(args) });
    let want: Vec<f32> = l2_sums(threads, layers, shift, 5)
        .into_iter()
        .map(|s| s as f32)
        .collect();
    assert_eq!(sums, want);
}

#[test]
fn the_copy_engines_l2_read_sums_each_stage_it_waited_for() {
    use coalesce::problem::{Dim, Problem};
    use coalesce::tensor_map::MapSpec;
    use kernels::calibrate::pipes::{BULK_BOX, BULK_SHARED_BYTES, BULK_STAGE};
    // 5 chunks of a stage's floats (a quarter of a 160 KiB L2), 3 blocks, 2 rounds.
    let (chunks, shift) = bulk_shape(160 << 10);
    assert_eq!((chunks, shift), (5, 2));
    let src: Vec<f32> = (0..chunks * BULK_STAGE).map(|i| l2_value(i) as f32).collect();
    let map = MapSpec::line(0, Dim::Len, BULK_BOX as u32)
        .for_emulator(
            &Problem::Elements { n: src.len() },
            Elem::F32,
            src.as_ptr() as u64,
        )
        .unwrap();
    // 4 blocks, each chunk read by one block, then by two at once.
    for group in [1, 2] {
        let mut sums = vec![0f32; 4];
        let args = (
            2,
            chunks,
            shift,
            group,
            Global::from_ptr(&map),
            GlobalMut::from_ptr(sums.as_mut_ptr()),
        );
        // SAFETY: the map is of src, live for the launch; sums holds a value per block.
        run(4, 32, BULK_SHARED_BYTES, unsafe {
            entry::l2_bulk_read.bind(args)
        });
        let want: Vec<f32> = (0..4).map(|b| bulk_sum(b, group, chunks, shift, 2)).collect();
        assert_eq!(sums, want, "group {group}");
        if group == 1 {
            assert!(want[0] != want[1] || want[1] != want[2], "{want:?}");
        } else {
            assert_eq!(
                (want[0], want[2]),
                (want[1], want[3]),
                "pairs read the same chunks"
            );
        }
    }
}

/// The opcode of each instruction of a SASS listing's loops: for each backward branch
/// to a label, the instructions from the label to the branch.
fn loops(sass: &str) -> Vec<Vec<String>> {
    let (mut labels, mut ins) = (BTreeMap::new(), Vec::new());
    let mut out = Vec::new();
    for line in sass.lines() {
        let t = line.trim();
        if let Some(label) = t.strip_suffix(':').filter(|l| l.starts_with(".L_x_")) {
            labels.insert(label.to_string(), ins.len());
            continue;
        }
        let Some(rest) = t
            .strip_prefix("/*")
            .and_then(|r| r.split_once("*/"))
            .map(|(_, r)| r.trim())
        else {
            continue;
        };
        let text = rest.trim_end_matches(';').trim();
        let op = text
            .split_whitespace()
            .find(|w| !w.starts_with('@'))
            .unwrap_or("")
            .to_string();
        if op.is_empty() {
            continue;
        }
        ins.push(op.clone());
        if op == "BRA"
            && let Some(target) = text.split(['(', ')']).nth(1)
            && let Some(&start) = labels.get(target)
        {
            out.push(ins[start..].to_vec());
        }
    }
    out
}

#[test]
fn the_loop_reader_finds_a_backward_branch() {
    let sass = ".L_x_3:\n /*0d10*/ FFMA R1, R1, R2, R3 ;\n /*0d20*/ ISETP.NE.U32.AND P0, PT, R4, R5, PT ;\n /*0d30*/ @P0 BRA `(.L_x_3) ;\n /*0d40*/ EXIT ;";
    assert_eq!(loops(sass), [["FFMA", "ISETP.NE.U32.AND", "BRA"]]);
}

/// Where ptxas and nvdisasm are found: each microbenchmark's loops (ptxas may unroll
/// one more time, or keep a remainder loop) hold a whole number of rounds of the
/// instructions it declares, no other floating-point or memory instruction, and at
/// most the loop's 3 (the wgmma ones: and each round's fence and wait; NOPs aside).
#[test]
fn each_microbenchmark_loop_holds_its_declared_instructions() {
    let (Some(ptxas), Some(nvdisasm)) = (ptxas(), nvdisasm()) else {
        assert!(
            std::env::var_os("COALESCE_REQUIRE_NVDISASM").is_none()
                && std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
            "COALESCE_REQUIRE_PTXAS or COALESCE_REQUIRE_NVDISASM is set but ptxas or nvdisasm was not found"
        );
        eprintln!("ptxas or nvdisasm not found (set PTXAS and NVDISASM): skipped");
        return;
    };
    let dir = fresh_dir("pipes-sass");
    let mut sass = BTreeMap::new();
    for (name, ptx, arch) in [
        ("kernels", PTX, "sm_90"),
        ("sm80", PTX_SM80, "sm_90"),
        ("sm90a", PTX_SM90A, "sm_90a"),
    ] {
        let listing = sass_listing(&ptxas, &nvdisasm, &dir, name, ptx, arch);
        for (k, code) in sass_functions(&listing) {
            sass.insert(k.to_string(), code);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // (kernel, the declared instruction, per round, others allowed besides the loop's 3)
    let declared = [
        ("fma_throughput", "FFMA", FMA_PER_ROUND, 0),
        ("issue_mix", "FFMA", ISSUE_FMA_PER_ROUND, ISSUE_LOP3_PER_ROUND),
        ("mma_tf32_throughput", "HMMA.1688.F32.TF32", MMA_PER_ROUND, 0),
        (
            "wgmma_tf32_throughput",
            "HGMMA.64x256x8.F32.TF32",
            WGMMA_PER_ROUND,
            2,
        ),
        (
            "wgmma_bf16_throughput",
            "HGMMA.64x256x16.F32.BF16",
            WGMMA_PER_ROUND,
            2,
        ),
        (
            "wgmma_bf16_n128_throughput",
            "HGMMA.64x128x16.F32.BF16",
            WGMMA_PER_ROUND,
            2,
        ),
        ("fma_latency", "FFMA", LATENCY_STEPS, 0),
        ("shared_chase", "LDS", LATENCY_STEPS, 0),
    ];
    // line_requests: 16 one-line loads a round, each added into the sum.
    let requests: Vec<Vec<String>> = loops(&sass["line_requests"])
        .into_iter()
        .filter(|b| b.iter().any(|o| o.starts_with("LDG")))
        .collect();
    assert!(!requests.is_empty(), "line_requests: no loop with a load");
    for body in requests {
        let loads = body.iter().filter(|o| o.starts_with("LDG.E")).count();
        let adds = body.iter().filter(|o| *o == "FADD").count();
        assert!(loads > 0 && loads % REQUESTS_PER_ROUND == 0, "{body:?}");
        assert_eq!(adds, loads, "{body:?}");
        assert!(body.len() <= 2 * loads + 3 + loads / 4, "line_requests: {body:?}");
    }
    for (kernel, op, per_round, extra) in declared {
        let code = sass.get(kernel).unwrap_or_else(|| panic!("no SASS for {kernel}"));
        let bodies: Vec<Vec<String>> = loops(code)
            .into_iter()
            .filter(|b| b.iter().any(|o| o == op))
            .collect();
        assert!(!bodies.is_empty(), "{kernel}: no loop with {op}\n{code}");
        for body in bodies {
            let n = body.iter().filter(|o| *o == op).count();
            assert_eq!(
                n % per_round,
                0,
                "{kernel}: {n} {op} in a loop, not whole rounds of {per_round}: {body:?}"
            );
            let rounds = n / per_round;
            let fp_or_memory = |o: &&String| {
                *o != op
                    && (o.starts_with('F') || o.starts_with("LD") || o.starts_with("ST") || o.contains("MMA"))
            };
            assert_eq!(body.iter().filter(fp_or_memory).count(), 0, "{kernel}: {body:?}");
            let others = body.iter().filter(|o| *o != op && *o != "NOP").count();
            if kernel == "issue_mix" {
                let lop3 = body.iter().filter(|o| *o == "LOP3.LUT").count();
                assert_eq!(lop3, rounds * extra, "{kernel}: {body:?}");
                assert!(others - lop3 <= 3, "{kernel}: {body:?}");
            } else {
                // Per round: ptxas unrolls the N = 128 wgmma loop 4 times.
                assert!(
                    others <= 3 + rounds * extra,
                    "{kernel}: {others} other instructions: {body:?}"
                );
            }
        }
    }
    // l2_read: each 16-byte load is summed (4 FADD), and nothing else computes.
    for body in loops(&sass["l2_read"])
        .into_iter()
        .filter(|b| b.iter().any(|o| o.starts_with("LDG")))
    {
        let loads = body.iter().filter(|o| *o == "LDG.E.128.CONSTANT").count();
        let adds = body.iter().filter(|o| *o == "FADD").count();
        assert_eq!(adds, 4 * loads, "{body:?}");
        assert!(
            !body.iter().any(|o| o == "FFMA" || o.starts_with("ST")),
            "{body:?}"
        );
    }
}
