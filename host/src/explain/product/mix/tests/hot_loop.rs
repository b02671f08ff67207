//! Which loop of a kernel's SASS is hot, and what the loops around it add.

use super::*;

/// The shape of sgemm_wgmma's main loop on sm_90a: the mbarrier wait inline, its
/// spin loop out of line after `EXIT` with a `BRA` back into the loop (backward, but
/// no loop of its own), a panic's call that does not return laid out just before
/// it, then traps and padding.
const SASS_SPIN: &str = "\
/*0000*/                   LDC R1, c[0x0][0x28] ;
/*0010*/               @P2 BRA `(.L_x_8) ;
.L_x_1:
/*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR11], R13 ;
/*0030*/              @!P0 BRA `(.L_x_9) ;
.L_x_2:
/*0040*/                   HGMMA.64x256x8.F32.TF32 R24, R156, gdesc[UR24], R24 ;
/*0050*/                   HGMMA.64x256x8.F32.TF32 R24, R152, gdesc[UR24], R24, gsb0 ;
/*0060*/                   LDS.128 R4, [R2] ;
/*0070*/                   ISETP.NE.AND P1, PT, R3, RZ, PT ;
/*0080*/               @P1 BRA `(.L_x_1) ;
/*0090*/                   STG.E desc[UR4][R2.64], R24 ;
/*00a0*/                   EXIT ;
.L_x_8:
/*00b0*/                   CALL.REL.NOINC `($k$panic) ;
.L_x_9:
/*00c0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR11], R13 ;
/*00d0*/              @!P0 BRA `(.L_x_9) ;
/*00e0*/                   BRA `(.L_x_2) ;
.L_x_3:
/*00f0*/                   BRA `(.L_x_3);
/*0100*/                   NOP;
/*0110*/                   NOP;
";

#[test]
fn a_spin_loop_in_the_main_loop_counts_once() {
    let m = from_sass(SASS_SPIN, "sm_90a");
    assert_eq!(m.source, MixSource::Sass);
    // The loop from 0x20 (not from the backward BRA's target 0x40) to 0xe0, the
    // spin loop at 0xc0 once; not the EXIT path, the panic, the trap or the NOPs.
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x20,
            last: 0xe0,
            nested: 1
        })
    );
    assert_eq!(m.total, 10, "{m:?}");
    assert_eq!((m.wgmma, m.fp32, m.mma_sync), (2, 0, 0));
    assert_eq!((m.barriers, m.branches, m.shared_loads), (2, 4, 1));
    assert_eq!(m.global_stores, 0);
    assert_eq!(m.flops, 2.0 * (2.0 * 64.0 * 256.0 * 8.0 / 4.0));
    assert_eq!((m.kernel_math, m.math_share()), (2, 1.0));
}

#[test]
fn the_loop_with_the_most_math_is_hot() {
    let sass = "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   FFMA R4, R5, R6, R4 ;
/*0020*/                   LDG.E R5, desc[UR4][R2.64] ;
/*0030*/               @P0 BRA `(.L_x_1) ;
.L_x_2:
/*0040*/                   FFMA R4, R5, R6, R4 ;
/*0050*/                   FMUL R7, R5, R6 ;
/*0060*/                   FADD R8, R5, R6 ;
/*0070*/                   LDS R5, [R9] ;
/*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
/*0090*/              @!P1 BRA `(.L_x_2) ;
/*00a0*/                   FFMA R4, R5, R6, R4 ;
/*00b0*/                   EXIT ;
";
    let m = from_sass(sass, "sm_90");
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x40,
            last: 0x90,
            nested: 0
        })
    );
    assert_eq!(
        (m.total, m.fp32, m.shared_loads, m.barriers, m.branches),
        (6, 3, 1, 1, 1)
    );
    assert_eq!(m.global_loads, 0);
    assert_eq!(m.flops, 64.0 + 32.0 + 32.0);
    assert_eq!((m.kernel_math, m.outer.is_none()), (5, true));
}

#[test]
fn the_loop_with_the_most_flops_is_hot_not_the_most_instructions() {
    // A stream-k owner's fix-up loop: more math instructions (FADDs) than the k loop's
    // one wgmma, far fewer FLOPs.
    let fadds: String = (0..8)
        .map(|i| {
            format!(
                "/*{:04x}*/                   FADD R{}, R5, R6 ;\n",
                0x50 + 0x10 * i,
                8 + i
            )
        })
        .collect();
    let sass = format!(
        "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
/*0020*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
/*0030*/               @P0 BRA `(.L_x_1) ;
.L_x_2:
/*0040*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
{fadds}/*00d0*/              @!P1 BRA `(.L_x_2) ;
/*00e0*/                   EXIT ;
"
    );
    let m = from_sass(&sass, "sm_90a");
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x10,
            last: 0x30,
            nested: 0
        })
    );
    assert_eq!((m.wgmma, m.fp32), (1, 0));
    assert_eq!(m.wgmma_16bit_flops, 2.0 * 64.0 * 256.0 * 16.0 / 4.0);
    assert_eq!(m.wgmma_16bit_n128_flops, 0.0);
}

#[test]
fn a_k_loop_beats_the_tile_loop_around_it_that_holds_a_peeled_k_step() {
    // A persistent kernel's loop over tiles: the first k step peeled off (as many
    // FLOPs as the k loop's own), then the k loop, then the tile's stores. On the old
    // rule (direct FLOPs alone, the first of equals) the tile loop was hot and its
    // epilogue counted as k-loop instructions.
    let sass = "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
.L_x_2:
/*0020*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
/*0030*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
/*0040*/               @P0 BRA `(.L_x_2) ;
/*0050*/                   STG.E desc[UR12][R8.64], R24 ;
/*0060*/                   STG.E desc[UR12][R8.64+0x10], R25 ;
/*0070*/                   STG.E desc[UR12][R8.64+0x20], R26 ;
/*0080*/               @P1 BRA `(.L_x_1) ;
/*0090*/                   EXIT ;
";
    let m = from_sass(sass, "sm_90a");
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x20,
            last: 0x40,
            nested: 0
        })
    );
    assert_eq!((m.total, m.wgmma, m.global_stores), (3, 1, 0));
    let outer = m.outer.expect("the tile loop");
    assert_eq!((outer.wgmma, outer.global_stores), (1, 3));
}

#[test]
fn a_k_loop_beats_a_tile_loop_of_twice_its_math() {
    // overlap's loop over tiles: a k step ptxas peeled and the next tile's first k
    // step, issued beside the stores, against the k loop's one. Two a trip for the tile
    // loop and twice one for the k loop tie; twice a tile is the least the k loop runs.
    let sass = "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
.L_x_2:
/*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
/*0030*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
/*0040*/               @P0 BRA `(.L_x_2) ;
/*0050*/                   STS.128 [R8], R24 ;
/*0060*/                   HGMMA.64x128x16.F32.BF16 R88, gdesc[UR8], RZ, !UPT, gsb0 ;
/*0070*/                   STS.128 [R8+0x10], R88 ;
/*0080*/               @P1 BRA `(.L_x_1) ;
/*0090*/                   EXIT ;
";
    let m = from_sass(sass, "sm_90a");
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x20,
            last: 0x40,
            nested: 0
        })
    );
    let outer = m.outer.expect("the tile loop");
    assert_eq!((outer.wgmma, outer.shared_stores), (2, 2));
}

#[test]
fn the_loop_around_the_hot_loop_adds_its_own_instructions() {
    // A k-tile loop (global load, shared store, barriers) around its k steps.
    let sass = "\
/*0000*/                   MOV R0, RZ ;
.L_x_1:
/*0010*/                   LDG.E R5, desc[UR4][R2.64] ;
/*0020*/                   STS [R9], R5 ;
/*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
.L_x_2:
/*0040*/                   LDS R6, [R9] ;
/*0050*/                   FFMA R4, R5, R6, R4 ;
/*0060*/                   FFMA R7, R5, R6, R7 ;
/*0070*/               @P0 BRA `(.L_x_2) ;
/*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
/*0090*/               @P1 BRA `(.L_x_1) ;
/*00a0*/                   EXIT ;
";
    let m = from_sass(sass, "sm_90");
    assert_eq!((m.total, m.fp32, m.shared_loads, m.branches), (4, 2, 1, 1));
    assert_eq!((m.global_loads, m.barriers), (0, 0));
    let outer = m.outer.expect("the k-tile loop");
    assert_eq!(
        outer.hot_loop,
        Some(HotLoop {
            first: 0x10,
            last: 0x90,
            nested: 1
        })
    );
    assert_eq!(
        (
            outer.total,
            outer.global_loads,
            outer.shared_stores,
            outer.barriers,
            outer.branches
        ),
        (5, 1, 1, 2, 1)
    );
    assert_eq!((outer.fp32, outer.flops, outer.outer.is_none()), (0, 0.0, true));
}

#[test]
fn without_a_loop_the_whole_kernel_counts_once() {
    let sass = "\
/*0000*/                   S2R R0, SR_TID.X ;
/*0010*/                   ISETP.GE.AND P0, PT, R0, 0x20, PT ;
/*0020*/               @P0 EXIT ;
/*0030*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
/*0040*/                   HMMA.1688.F32.TF32 R8, R4, R6, R8 ;
/*0050*/                   STG.E.128 desc[UR4][R2.64], R8 ;
/*0060*/                   EXIT ;
.L_x_0:
/*0070*/                   BRA `(.L_x_0);
/*0080*/                   NOP;
";
    let m = from_sass(sass, "sm_90");
    assert_eq!(m.hot_loop, None);
    assert_eq!(
        (m.total, m.mma_sync, m.global_loads, m.global_stores),
        (7, 1, 1, 1)
    );
    assert_eq!((m.branches, m.flops), (0, 2048.0));
}

#[test]
fn a_predicated_back_edge_closes_a_loop_an_unconditional_one_ends_a_block() {
    // A rotated loop: the back edge is predicated, the exit the fall-through.
    let rotated = "\
/*0000*/                   MOV R0, RZ ;
.L_x_4:
/*0010*/                   FFMA R4, R5, R6, R4 ;
/*0020*/                   IADD3 R0, R0, 0x1, RZ ;
/*0030*/               @P0 BRA `(.L_x_4) ;
/*0040*/                   EXIT ;
";
    let m = from_sass(rotated, "sm_90");
    assert_eq!((m.total, m.fp32, m.branches), (3, 1, 1));
    // A loop left by a predicated forward branch, closed by an unconditional one:
    // what follows the BRA (dead here) is no part of it.
    let guarded = "\
/*0000*/                   MOV R0, RZ ;
.L_x_5:
/*0010*/               @P0 BRA `(.L_x_6) ;
/*0020*/                   FFMA R4, R5, R6, R4 ;
/*0030*/                   BRA `(.L_x_5) ;
/*0040*/                   FFMA R4, R5, R6, R4 ;
.L_x_6:
/*0050*/                   EXIT ;
";
    let m = from_sass(guarded, "sm_90");
    assert_eq!(
        m.hot_loop,
        Some(HotLoop {
            first: 0x10,
            last: 0x30,
            nested: 0
        })
    );
    assert_eq!((m.total, m.fp32, m.branches, m.kernel_math), (3, 1, 2, 1));
}
