use super::*;
use crate::experiments::{matmul, sgemm};

// Which SASS loop is hot.
mod hot_loop;

/// LLVM's shape of a loop with a wait: entered in its middle (`bra.uni` to the
/// header, the latch laid out before it), a wait nested in it (`{WAIT}`), and what
/// comes before the loop (`{BEFORE}`).
const SPIN_LOOP: &str = "
.visible .entry k(
	.param .u32 k_param_0
)
{
	.reg .pred 	%p<3>;
	ld.param.u32 	%r1, [k_param_0];
{BEFORE}	bra.uni 	$L__BB0_2;
$L__BB0_1:                              // in Loop
	@%p1 bra 	$L__BB0_4;
$L__BB0_2:                              // =>This Loop Header: Depth=1
	add.s32 	%r2, %r2, 1;
{WAIT}	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
	ld.shared.v4.f32 	{%f1, %f2, %f3, %f4}, [%r3];
	cp.async.cg.shared.global [%r1], [%rd1], 16;
	bar.sync 	0;
	bra.uni 	$L__BB0_1;
$L__BB0_4:
	st.global.f32 	[%rd2], %f1;
	ret;
}
";

fn spin_loop(before: &str, wait: &str) -> String {
    SPIN_LOOP.replace("{BEFORE}", before).replace("{WAIT}", wait)
}

/// The loop with a spin on `mbarrier.try_wait` (in inline assembly) around it, as
/// LLVM lays out a Rust loop: nothing before the loop.
fn ptx_spin() -> String {
    let wait = "$L__BB0_3:
	{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%r56], %r57; selp.u32 %r55, 1, 0, p; }
	setp.eq.s32 	%p2, %r55, 0;
	@%p2 bra 	$L__BB0_3;
";
    spin_loop("", wait)
}

#[test]
fn ptx_loops_entered_in_the_middle_with_a_nested_spin() {
    let m = from_ptx(&ptx_spin(), "k", "sm_80").unwrap();
    assert_eq!(m.source, MixSource::Ptx);
    // Instructions 2 (the latch) to 13 (bra.uni), the spin loop 4-7 once.
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 2,
            last: 13,
            nested: 1
        })
    );
    assert_eq!((m.total, m.mma_sync, m.flops), (12, 2, 2.0 * 2048.0), "{m:?}");
    assert_eq!((m.barriers, m.branches), (2, 3));
    assert_eq!((m.shared_loads, m.global_loads, m.global_stores), (1, 1, 0));
    assert!(from_ptx(&ptx_spin(), "other", "sm_80").is_none());
}

/// The same loop with the kernel std's barrier wait: the spin inside one asm block,
/// its label `LAB_WAIT` declared again in each inlined copy (PTX scopes it to the
/// braces); one copy before the loop, one in it.
fn ptx_spin_asm() -> String {
    let wait = |b: &str, q: &str| {
        format!(
            "\t{{ .reg .pred p; LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; @!p bra LAB_WAIT; }}\n"
        )
    };
    spin_loop(&wait("%r9", "%r8"), &wait("%r56", "%r57"))
}

#[test]
fn ptx_a_wait_in_one_asm_block_branches_to_its_own_label() {
    let m = from_ptx(&ptx_spin_asm(), "k", "sm_80").unwrap();
    // Instructions 4 (the latch) to 13 (bra.uni); the spin 6-7 once, its branch to the
    // label at 6, not to the first copy's at 1.
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 4,
            last: 13,
            nested: 1
        })
    );
    assert_eq!((m.total, m.mma_sync, m.flops), (10, 2, 2.0 * 2048.0), "{m:?}");
    assert_eq!((m.barriers, m.branches), (2, 3));
    assert_eq!((m.shared_loads, m.global_loads, m.global_stores), (1, 1, 0));
}

#[test]
fn ptx_opcodes_are_classified() {
    let cases: &[(&str, Kind, f64)] = &[
        ("fma.rn.f32", Kind::Fp32, 64.0),
        ("mul.rn.f32", Kind::Fp32, 32.0),
        ("add.f32", Kind::Fp32, 32.0),
        ("add.s32", Kind::Other, 0.0),
        ("mul.wide.u32", Kind::Other, 0.0),
        ("cvt.rn.f32.u32", Kind::Other, 0.0),
        (
            "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
            Kind::Wgmma,
            65536.0,
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
            Kind::Wgmma16Bit { n: 256 },
            131072.0,
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
            Kind::Wgmma16Bit { n: 256 },
            131072.0,
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
            Kind::Wgmma16Bit { n: 128 },
            65536.0,
        ),
        ("wgmma.fence.sync.aligned", Kind::Other, 0.0),
        ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", Kind::SharedLoad, 0.0),
        ("ld.shared::cta.v4.f32", Kind::SharedLoad, 0.0),
        ("ld.global.nc.v4.f32", Kind::GlobalLoad, 0.0),
        ("ld.param.u64", Kind::Other, 0.0),
        ("st.global.v4.f32", Kind::GlobalStore, 0.0),
        ("cp.async.ca.shared.global", Kind::GlobalLoad, 0.0),
        ("cp.async.commit_group", Kind::Other, 0.0),
        ("cp.async.wait_group", Kind::Other, 0.0),
        (
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            Kind::Bulk,
            0.0,
        ),
        ("cp.async.bulk.commit_group", Kind::Other, 0.0),
        ("mbarrier.arrive.expect_tx.shared::cta.b64", Kind::Other, 0.0),
        ("barrier.sync.aligned", Kind::BlockBarrier, 0.0),
        ("bar.warp.sync", Kind::Other, 0.0),
        ("mbarrier.try_wait.parity.shared::cta.b64", Kind::Barrier, 0.0),
        ("bra.uni", Kind::Branch, 0.0),
    ];
    for &(op, kind, flops) in cases {
        assert_eq!(ptx::classify(op), (kind, flops), "{op}");
    }
    for (op, kind, flops) in [
        ("HMMA.16816.F32.BF16", Kind::MmaSync, 4096.0),
        ("HGMMA.64x256x8.F32.TF32", Kind::Wgmma, 65536.0),
        ("HGMMA.64x256x16.F32.BF16", Kind::Wgmma16Bit { n: 256 }, 131072.0),
        ("HGMMA.64x128x16.F32", Kind::Wgmma16Bit { n: 128 }, 65536.0),
        ("HGMMA.64x128x16.F32.BF16", Kind::Wgmma16Bit { n: 128 }, 65536.0),
        ("LDSM.16.M88.4", Kind::SharedLoad, 0.0),
        ("LDGSTS.E.BYPASS.128", Kind::GlobalLoad, 0.0),
        ("LDGDEPBAR", Kind::Other, 0.0),
        ("UTMALDG.2D", Kind::Bulk, 0.0),
        ("SYNCS.ARRIVE.TRANS64", Kind::Other, 0.0),
        ("STS.128", Kind::SharedStore, 0.0),
        ("BRA.U.ANY", Kind::Branch, 0.0),
        ("BAR.SYNC.DEFER_BLOCKING", Kind::BlockBarrier, 0.0),
        ("SYNCS.PHASECHK.TRANS64.TRYWAIT", Kind::Barrier, 0.0),
    ] {
        assert_eq!(sass::classify(op), (kind, flops), "{op}");
    }
}

#[test]
fn a_wait_for_every_wgmma_and_a_block_barrier_are_counted_apart() {
    // sgemm_wgmma's k step: wait for all, then the block barrier; a wait that keeps
    // one group in flight is not a wait for all.
    let sass = "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8], R13 ;
/*0020*/                   HGMMA.64x256x8.F32.TF32 R24, R156, gdesc[UR28], R24, gsb0 ;
/*0030*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
/*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
/*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
/*0060*/               @P1 BRA `(.L_x_1) ;
/*0070*/                   EXIT ;
";
    let m = from_sass(sass, "sm_90a");
    assert_eq!(
        (m.barriers, m.block_barriers, m.wgmma_waits_all),
        (2, 1, 1),
        "{m:?}"
    );
    assert_eq!(m.total, 6);
    let ptx = "\
.visible .entry k()
{
$L__BB0_1:
\twgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%f1}, {%r1, %r2, %r3, %r4}, %rd1, 1, 1, 1;
\twgmma.wait_group.sync.aligned 1;
\twgmma.wait_group.sync.aligned 0;
\tbar.sync 0;
\t@%p1 bra $L__BB0_1;
\tret;
}
";
    let m = from_ptx(ptx, "k", "sm_90a").unwrap();
    assert_eq!(
        (m.barriers, m.block_barriers, m.wgmma_waits_all),
        (1, 1, 1),
        "{m:?}"
    );
}

/// The ladder's kernels, each once, in suite order.
fn ladder() -> Vec<&'static str> {
    let mut k: Vec<&str> = matmul::EXPERIMENT.kernels().iter().map(|k| k.name).collect();
    k.extend(sgemm::EXPERIMENT.kernels().iter().map(|k| k.name));
    k
}

#[test]
fn the_ladder_hot_loops_in_the_ptx() {
    for name in ladder() {
        let m = ptx_mix(name).unwrap();
        assert!(m.hot_loop.is_some() && m.flops > 0.0, "{name}: {m:?}");
        assert!(m.math_share() > 0.0, "{name}: {m:?}");
    }
    let naive = ptx_mix("matmul_naive").unwrap();
    assert!(naive.fp32 >= 1 && naive.global_loads >= 2, "{naive:?}");
    // Every thread of the interior rung does its (bm x bn / threads) outputs' FMAs
    // for each of the tile's bk steps per trip (its bk loop unrolled whole).
    use kernels::sgemm::pipeline::PIPE_128X128X8_4X8 as T;
    let interior = ptx_mix("sgemm_interior").unwrap();
    let fmas = (T.bm * T.bn / T.threads * T.bk) as u32;
    assert_eq!(interior.fp32, fmas, "{interior:?}");
    assert_eq!(interior.flops, 64.0 * f64::from(fmas), "{interior:?}");
    let tf32 = ptx_mix("sgemm_tf32_128x128x32").unwrap();
    assert!(tf32.mma_sync > 0 && tf32.fp32 <= tf32.mma_sync / 8, "{tf32:?}");
    let wgmma = ptx_mix("sgemm_wgmma").unwrap();
    assert!(
        wgmma.wgmma > 0 && wgmma.bulk_copies > 0 && wgmma.barriers > 0,
        "{wgmma:?}"
    );
    assert_eq!(
        wgmma.flops,
        f64::from(wgmma.wgmma) * 2.0 * 64.0 * 256.0 * 8.0 / 4.0
    );
    // The first Hopper rung drains its wgmmas and meets at a block barrier each k
    // step; the warp-specialised one drains too but meets only on mbarriers.
    assert!(wgmma.wgmma_waits_all > 0 && wgmma.block_barriers > 0, "{wgmma:?}");
    let ws = ptx_mix("sgemm_wgmma_ws").unwrap();
    assert!(ws.wgmma_waits_all > 0 && ws.block_barriers == 0, "{ws:?}");
}

/// A 16-bit rung's wgmmas (`m64n256k16`, BF16 and FP16) count as 16-bit FLOPs, and a
/// TF32 rung's not: from the PTX, and the SASS where the tools are found.
#[test]
fn a_16_bit_rungs_wgmma_flops_are_16_bit() {
    let per_wgmma = 2.0 * 64.0 * 256.0 * 16.0 / 4.0;
    let mut mixes = vec![
        ptx_mix("hgemm_tma_store_bf16").unwrap(),
        ptx_mix("hgemm_tma_store_f16").unwrap(),
    ];
    if tools_or_skip() {
        mixes.push(sass_mix("hgemm_tma_store_bf16", "sm_90").unwrap());
        mixes.push(sass_mix("hgemm_tma_store_f16", "sm_90").unwrap());
    }
    for m in mixes {
        assert!(m.wgmma > 0, "{m:?}");
        assert_eq!(m.wgmma_flops, f64::from(m.wgmma) * per_wgmma, "{m:?}");
        assert_eq!(m.wgmma_16bit_flops, m.wgmma_flops, "{m:?}");
    }
    let tf32 = ptx_mix("sgemm_wgmma").unwrap();
    assert!(
        tf32.wgmma_flops > 0.0 && tf32.wgmma_16bit_flops == 0.0,
        "{tf32:?}"
    );
}

/// Every 16-bit rung's wgmmas count at their N: `small`, `tma-store-192`,
/// `tma-store-128` and `overlap` issue m64n128k16, the others m64n256k16 (simt none);
/// from the PTX, and the SASS where the tools are found.
#[test]
fn each_16_bit_rungs_wgmmas_count_at_their_n() {
    use crate::experiments::hgemm::{BF16_RUNGS, F16_RUNGS};
    let n128 = ["small", "tma-store-192", "tma-store-128", "overlap"];
    let sass = tools_or_skip();
    let mut seen = 0;
    for v in BF16_RUNGS.iter().chain(F16_RUNGS).filter(|v| v.name != "simt") {
        let mut mixes = vec![ptx_mix(v.kernel.name).unwrap()];
        if sass {
            mixes.push(sass_mix(v.kernel.name, "sm_90").unwrap());
        }
        let n = if n128.contains(&v.name) { 128.0 } else { 256.0 };
        for m in mixes {
            let what = format!("{} ({:?}): {m:?}", v.kernel.name, m.source);
            assert!(m.wgmma > 0, "{what}");
            assert_eq!(m.wgmma_16bit_flops, m.wgmma_flops, "{what}");
            // Each wgmma 2 x 64 x N x 16 FLOPs, a quarter of them each warp's.
            assert_eq!(
                m.wgmma_flops,
                f64::from(m.wgmma) * 2.0 * 64.0 * n * 16.0 / 4.0,
                "{what}"
            );
            let narrow = if n == 128.0 { m.wgmma_16bit_flops } else { 0.0 };
            assert_eq!(m.wgmma_16bit_n128_flops, narrow, "{what}");
        }
        seen += 1;
    }
    assert_eq!(seen, 2 * (BF16_RUNGS.len() - 1));
}

fn tools_or_skip() -> bool {
    let found = sass::tools().is_ok();
    if !found {
        assert!(
            std::env::var_os("COALESCE_REQUIRE_NVDISASM").is_none()
                && std::env::var_os("COALESCE_REQUIRE_PTXAS").is_none(),
            "COALESCE_REQUIRE_PTXAS or _NVDISASM is set but ptxas or nvdisasm was not found"
        );
        eprintln!("ptxas or nvdisasm not found (set PTXAS and NVDISASM): skipped");
    }
    found
}

#[test]
fn sass_and_ptx_find_the_same_loop() {
    if !tools_or_skip() {
        return;
    }
    for name in ladder() {
        let (s, p) = (sass_mix(name, "sm_90").unwrap(), ptx_mix(name).unwrap());
        assert_eq!(s.source, MixSource::Sass);
        // The same math in the loop: ptxas may unroll a rolled loop further, so
        // the FLOPs per trip are the PTX's times a power of two.
        let kinds = |m: &InstructionMix| (m.fp32 > 0, m.mma_sync > 0, m.wgmma > 0);
        assert_eq!(kinds(&s), kinds(&p), "{name}:\n{s:?}\n{p:?}");
        let ratio = s.flops / p.flops;
        assert!(
            (0.125..=8.0).contains(&ratio) && ratio.log2().fract() == 0.0,
            "{name}: {ratio}\n{s:?}\n{p:?}"
        );
        assert!(s.math_share() > 0.0, "{name}: {s:?}");
    }
    use kernels::sgemm::pipeline::PIPE_128X128X8_4X8 as T;
    let interior = sass_mix("sgemm_interior", "sm_90").unwrap();
    assert_eq!(
        interior.fp32 as usize,
        T.bm * T.bn / T.threads * T.bk,
        "{interior:?}"
    );
    let profile = crate::profile::tests::sample();
    let m = instruction_mix("sgemm_interior", &profile).unwrap();
    assert_eq!(
        (m.source, m.fallback, m.arch.as_str()),
        (MixSource::Sass, None, "sm_90")
    );
    let wgmma = sass_mix("sgemm_wgmma", "sm_90").unwrap();
    assert_eq!(wgmma.arch, "sm_90a");
    assert!(wgmma.hot_loop.is_some_and(|l| l.nested >= 1), "{wgmma:?}");
}

#[test]
fn a_profile_without_tools_falls_back_to_the_ptx() {
    let m = instruction_mix("matmul_naive", &crate::profile::tests::schema_2()).unwrap();
    assert_eq!(m.source, MixSource::Ptx);
    assert!(
        m.fallback
            .as_deref()
            .is_some_and(|w| w.contains("compute capability")),
        "{m:?}"
    );
    assert!(ptx_mix("no_such_kernel").is_err());
}

/// The ladder's mixes from the SASS for sm_90 (sm_90a for its module), for the
/// model's author: `cargo test -p coalesce --lib mix::tests::table -- --ignored
/// --nocapture`.
#[test]
#[ignore = "prints a table for the model's author and asserts nothing: run with --ignored --nocapture"]
fn table() {
    println!(
        "{:<30} {:>11} {:>6} {:>5} {:>4} {:>5} {:>4} {:>4} {:>4} {:>4} {:>4} {:>9} {:>8} {:>6}  outer: total ldg sts tma bar",
        "kernel",
        "source",
        "total",
        "fp32",
        "mma",
        "wgmma",
        "lds",
        "sts",
        "ldg",
        "tma",
        "bar",
        "flops",
        "ins/kFLOP",
        "share"
    );
    for name in ladder() {
        let m = sass_mix(name, "sm_90").or_else(|_| ptx_mix(name)).unwrap();
        println!(
            "{:<30} {:>11} {:>6} {:>5} {:>4} {:>5} {:>4} {:>4} {:>4} {:>4} {:>4} {:>9} {:>8.2} {:>5.0}%  {}",
            name,
            format!("{:?} {}", m.source, m.arch).to_lowercase(),
            m.total,
            m.fp32,
            m.mma_sync,
            m.wgmma,
            m.shared_loads,
            m.shared_stores,
            m.global_loads,
            m.bulk_copies,
            m.barriers,
            m.flops,
            m.per_kflop(),
            100.0 * m.math_share(),
            m.outer.as_ref().map_or("-".to_string(), |o| format!(
                "{:>5} {:>3} {:>3} {:>3} {:>3}",
                o.total, o.global_loads, o.shared_stores, o.bulk_copies, o.barriers
            ))
        );
    }
}
