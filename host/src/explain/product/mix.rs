//! A kernel's instruction mix per iteration of its hot loop, read offline from its
//! code: what a model of a matrix multiply's time needs beside the GPU's rates
//! (instructions issued, FP32 and tensor-core FLOPs, shared and global accesses,
//! barriers, per step of the k loop).
//!
//! **Which code.** [`instruction_mix`] reads the SASS where it can: ptxas assembles
//! the kernel's own embedded module for the profile's architecture (`sm_90a` for the
//! sm_90a module's kernels, as [`super::super::residency`] does), nvdisasm disassembles it
//! (`$NVDISASM`, else beside `$PTXAS`, else on the PATH), once per module and
//! architecture in a process. Without them it reads the embedded PTX, which is always
//! there; [`InstructionMix::source`] says which, [`InstructionMix::fallback`] why.
//! PTX counts are a rougher guide: ptxas unrolls, merges scalar shared accesses into
//! vector ones ([`crate::explain::emulate::vectorize`]) and adds or removes address arithmetic.
//!
//! **Which loop.** The loops are the natural loops of the control-flow graph
//! (`mix/cfg.rs` says why not "a backward branch and its target"). A loop's *direct*
//! math is its math instructions (FP32, `mma.sync`, `wgmma`) outside the loops nested
//! in it. The **hot loop** is the loop whose direct math does the most FLOPs, each
//! loop's counted twice for each loop it is nested in (a loop runs at least twice a
//! trip of its parent: a persistent kernel's k loop beats the tile loop around it that
//! holds the k step ptxas peeled off), the deeper of equals (twice a trip is the
//! least a nested loop runs: overlap's tile loop holds two k steps of math to its k
//! loop's one), then the first by position (`sgemm_interior`'s two copies of one loop
//! are alike). Its mix
//! is every instruction of its body once, nested loops included once, i.e. one trip
//! of each: an mbarrier wait's spin loop counts its instructions once, as where the
//! data has arrived; the TMA issue loops ptxas wraps around each `UTMALDG`
//! (`BRA.U.ANY`, one trip where the warp's operands are uniform) the same. A kernel
//! with no loop that holds math gets the mix of its whole body, each instruction
//! once. Where the hot loop is nested (a tile's k steps in the loop over k tiles),
//! [`InstructionMix::outer`] counts what a trip of the loop around it adds. Only
//! instructions the entry reaches count (not the traps ptxas leaves after
//! the end). [`InstructionMix::hot_loop`] says where the loop lies and
//! [`InstructionMix::math_share`] how much of the kernel's static math it holds.
//!
//! **What counts**, per warp (one instruction = one warp instruction):
//! - `total`: every instruction, but SASS `NOP`s (padding) and PTX directives;
//! - `fp32`: `FFMA`, `FADD`, `FMUL` (PTX: `fma`/`mad`/`add`/`sub`/`mul` `.f32`);
//! - `mma_sync`: `HMMA` (`mma.sync`); `wgmma`: `HGMMA` (`wgmma.mma_async`);
//! - `shared_loads`: `LDS*`, `LDSM` (`ld.shared*`, `ldmatrix`); `shared_stores`:
//!   `STS*`, `STSM`;
//! - `global_loads`: `LDG*`, `LDGSTS` (`ld.global*`, `cp.async.ca/cg`);
//!   `global_stores`: `STG*`;
//! - `bulk_copies`: `UTMALDG`, `UTMASTG`, `UTMAREDG`, `UTMAPF`, `UBLK*`
//!   (`cp.async.bulk*` but its commit and wait);
//! - `barriers`: `BAR.*` and the mbarrier waits `SYNCS.PHASECHK.*` (`bar.*`,
//!   `barrier.*`, `mbarrier.try_wait`/`test_wait`); not `DEPBAR` (cp.async's wait),
//!   not `mbarrier.arrive`;
//!   `block_barriers`, of them `BAR.*` (`bar.*`, `barrier.*`) alone;
//! - `wgmma_waits_all`: waits for every `wgmma` the warp issued, `WARPGROUP.DEPBAR.LE
//!   gsb0, 0x0` (`wgmma.wait_group 0`);
//! - `branches`: `BRA`, `BRX`, `JMP`, `JMX` (`bra`, `brx`), predicated or not;
//! - `flops`: `FFMA` 64 (32 lanes x 2), `FADD`/`FMUL` 32; `HMMA` mMnNkK 2 M N K
//!   (`HMMA.1688` 2048); `HGMMA` 64xNxK 2 x 64 N K / 4: the warpgroup's product
//!   shared by the 4 warps that each issue it (in PTX every thread of the warpgroup
//!   executes the `wgmma`, so it too counts once per warp);
//! - `wgmma_flops`: the `HGMMA`s' FLOPs, and of them `wgmma_16bit_flops` those on
//!   16-bit operands (`HGMMA.64x256x16.F32.BF16`, or `HGMMA.64x256x16.F32` for FP16,
//!   whose operand type nvdisasm leaves unnamed; `wgmma...k16.f32.bf16.bf16`
//!   or `.f16.f16`), which the tensor cores run at their own rate; the rest are TF32
//!   (`.TF32`, `.tf32`); and of the 16-bit ones `wgmma_16bit_n128_flops`, those whose
//!   N is 128 (`HGMMA.64x128x16`, `m64n128k16`), which the tensor cores run at the rate
//!   of that shape.
//!
//! Each SASS instruction is one warp instruction whatever its predicate: a predicated-
//! off one still issues. Counts are static, per trip: how often the hot loop runs is
//! the caller's (k / its step).

use serde::Serialize;

use crate::profile::Profile;
use kernels::handle::PtxModule;

mod cfg;
mod ptx;
mod sass;
pub use sass::nvdisasm;
#[cfg(test)]
mod tests;

/// Which code the counts were read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MixSource {
    Sass,
    Ptx,
}

/// Where the hot loop lies: the offsets of its first and last instructions (SASS:
/// bytes, as nvdisasm prints them; PTX: the instruction's index in the body, labels
/// and directives not counted). Its body need not be that whole range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HotLoop {
    pub first: u32,
    pub last: u32,
    /// Loops nested in it, counted one trip each.
    pub nested: u32,
}

/// A kernel's warp instructions per iteration of its hot loop (the module docs say
/// which loop and what each count holds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstructionMix {
    pub source: MixSource,
    /// The architecture the SASS was assembled for, or the PTX's target.
    pub arch: String,
    /// Why the SASS was not read, where `source` is PTX.
    pub fallback: Option<String>,
    pub total: u32,
    pub fp32: u32,
    pub mma_sync: u32,
    pub wgmma: u32,
    pub shared_loads: u32,
    pub shared_stores: u32,
    pub global_loads: u32,
    pub global_stores: u32,
    pub bulk_copies: u32,
    pub barriers: u32,
    pub block_barriers: u32,
    pub wgmma_waits_all: u32,
    pub branches: u32,
    /// FLOPs one warp's iteration does, of them its `wgmma`s', of those its 16-bit
    /// `wgmma`s', and of those the ones 128 wide (`m64n128k16`).
    pub flops: f64,
    pub wgmma_flops: f64,
    pub wgmma_16bit_flops: f64,
    pub wgmma_16bit_n128_flops: f64,
    /// `None`: no loop holds math, and the counts are the whole kernel's.
    pub hot_loop: Option<HotLoop>,
    /// The innermost loop around the hot loop, one trip, the hot loop's own
    /// instructions left out: what each trip of it adds to its trips of the hot loop
    /// (where the hot loop is a k tile's steps, the tile's global loads, shared
    /// stores and barriers). Its `hot_loop` is where that loop lies; its own `outer`
    /// is `None`.
    pub outer: Option<Box<InstructionMix>>,
    /// Math instructions in the whole kernel, each once (static).
    pub kernel_math: u32,
}

impl InstructionMix {
    /// Math instructions of the mix: FP32, `mma.sync` and `wgmma`.
    pub fn math(&self) -> u32 {
        self.fp32 + self.mma_sync + self.wgmma
    }

    /// The share of the kernel's static math instructions that the hot loop holds.
    pub fn math_share(&self) -> f64 {
        if self.kernel_math == 0 {
            0.0
        } else {
            f64::from(self.math()) / f64::from(self.kernel_math)
        }
    }

    /// Instructions issued per 1000 FLOPs (infinite without math).
    pub fn per_kflop(&self) -> f64 {
        1000.0 * f64::from(self.total) / self.flops
    }
}

/// The N of the 16-bit `wgmma`s counted apart: the profile measures their rate.
const N128: u32 = 128;

/// What one instruction is, for the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fp32,
    MmaSync,
    /// A `wgmma` on TF32 operands, and one on 16-bit (BF16, FP16) operands, with its
    /// tile's N (the tensor cores' rate differs with it).
    Wgmma,
    Wgmma16Bit {
        n: u32,
    },
    SharedLoad,
    SharedStore,
    GlobalLoad,
    GlobalStore,
    Bulk,
    Barrier,
    BlockBarrier,
    WgmmaWaitAll,
    Branch,
    Other,
}

impl Kind {
    fn is_math(self) -> bool {
        matches!(
            self,
            Kind::Fp32 | Kind::MmaSync | Kind::Wgmma | Kind::Wgmma16Bit { .. }
        )
    }
}

/// One instruction: its offset, kind, FLOPs per warp, and control flow (the target
/// as the index of an instruction of the same function).
#[derive(Clone, Debug, PartialEq)]
struct Inst {
    offset: u32,
    kind: Kind,
    flops: f64,
    target: Option<usize>,
    falls_through: bool,
}

/// `kernel`'s mix on the profile's GPU: from the SASS for its compute capability
/// where ptxas and nvdisasm run, else from the PTX (saying why).
pub fn instruction_mix(kernel: &str, profile: &Profile) -> Result<InstructionMix, String> {
    let sass = match &profile.sm {
        Some(sm) => {
            let [major, minor] = sm.compute_capability;
            sass_mix(kernel, &format!("sm_{major}{minor}"))
        }
        None => Err(format!(
            "the profile (schema {}) names no compute capability",
            profile.schema
        )),
    };
    sass.or_else(|why| {
        let mut mix = ptx_mix(kernel)?;
        mix.fallback = Some(why);
        Ok(mix)
    })
}

/// `kernel`'s mix from the SASS of its module assembled for `sm` (`sm_90`; its own
/// architecture for sm_90a kernels).
pub fn sass_mix(kernel: &str, sm: &str) -> Result<InstructionMix, String> {
    let (module, arch) = super::super::residency::module_of(kernel, sm);
    let listing = sass::module_listing(module, &arch)?;
    let function = listing
        .get(kernel)
        .ok_or_else(|| format!("nvdisasm printed no {kernel} for {arch}"))?;
    Ok(from_sass(function, &arch))
}

/// `kernel`'s SASS for `sm` (`sm_90`; its own architecture for sm_90a kernels) as
/// nvdisasm prints it, with that architecture; why not where ptxas or nvdisasm does
/// not run. `explain --html` folds it under the kernel's PTX.
pub fn sass_of(kernel: &str, sm: &str) -> Result<(String, String), String> {
    let (module, arch) = super::super::residency::module_of(kernel, sm);
    let listing = sass::module_listing(module, &arch)?;
    let function = listing
        .get(kernel)
        .ok_or_else(|| format!("nvdisasm printed no {kernel} for {arch}"))?;
    Ok((arch, function.clone()))
}

/// `kernel`'s mix from the embedded PTX of its module.
pub fn ptx_mix(kernel: &str) -> Result<InstructionMix, String> {
    let module = kernels::entry::ALL
        .iter()
        .find(|k| k.name == kernel)
        .map(|k| k.module)
        .ok_or_else(|| format!("no kernel {kernel}"))?;
    let arch = match module {
        PtxModule::Baseline => crate::ptx::ARCH,
        PtxModule::Sm80 => crate::ptx::SM80_ARCH,
        PtxModule::Sm90a => crate::ptx::SM90A_ARCH,
    };
    from_ptx(crate::ptx::text(module), kernel, arch).ok_or_else(|| format!("the PTX has no {kernel}"))
}

/// The mix of one function's SASS as `nvdisasm -c` prints it (the lines after its
/// `.text.NAME:`).
pub fn from_sass(function: &str, arch: &str) -> InstructionMix {
    count(&sass::parse(function), MixSource::Sass, arch)
}

/// The mix of `kernel`'s body in `ptx`, or `None` if `ptx` does not define it.
pub fn from_ptx(ptx: &str, kernel: &str, arch: &str) -> Option<InstructionMix> {
    Some(count(&ptx::parse(ptx, kernel)?, MixSource::Ptx, arch))
}

/// The hot loop's counts (the module docs).
fn count(insts: &[Inst], source: MixSource, arch: &str) -> InstructionMix {
    let nodes: Vec<cfg::Node> = insts
        .iter()
        .map(|i| cfg::Node {
            target: i.target,
            falls_through: i.falls_through,
        })
        .collect();
    let flow = cfg::flow(&nodes);
    let nested = |outer: &cfg::Loop| -> Vec<&cfg::Loop> {
        flow.loops
            .iter()
            .filter(|l| l.header != outer.header && outer.contains(l.header))
            .collect()
    };
    // Weighed by FLOPs, not instructions: a stream-k owner's fix-up loop adds 128
    // partial sums (128 FADDs) where its k loop issues four wgmmas of 2^17 FLOPs each.
    // And by depth: a loop runs at least twice for each trip of the loop around it, so
    // its FLOPs count double its parent's. A persistent kernel's loop over tiles holds
    // a k step ptxas peeled off the k loop nested in it: as many FLOPs of its own as
    // the k loop, run once a tile where the k loop runs k / 64 times.
    let mut hot: Option<(&cfg::Loop, f64, usize)> = None;
    for l in &flow.loops {
        let inner = nested(l);
        let depth = flow
            .loops
            .iter()
            .filter(|o| o.header != l.header && o.contains(l.header))
            .count();
        let direct: f64 = l
            .body
            .iter()
            .filter(|&&i| insts[i].kind.is_math() && !inner.iter().any(|o| o.contains(i)))
            .map(|&i| insts[i].flops)
            .sum::<f64>()
            * 2f64.powi(depth as i32);
        // Where weights tie, the deeper loop: twice a trip is the least it runs.
        if direct > 0.0 && hot.is_none_or(|(_, d, at)| direct > d || (direct == d && depth > at)) {
            hot = Some((l, direct, depth));
        }
    }
    let reachable: Vec<usize> = (0..insts.len()).filter(|&i| flow.reachable[i]).collect();
    let kernel_math = reachable.iter().filter(|&&i| insts[i].kind.is_math()).count() as u32;
    let span = |l: &cfg::Loop| HotLoop {
        first: l.body.iter().map(|&i| insts[i].offset).min().unwrap_or(0),
        last: l.body.iter().map(|&i| insts[i].offset).max().unwrap_or(0),
        nested: nested(l).len() as u32,
    };
    let tally = |chosen: &mut dyn Iterator<Item = usize>, hot_loop: Option<HotLoop>| {
        let mut mix = InstructionMix {
            source,
            arch: arch.to_string(),
            fallback: None,
            total: 0,
            fp32: 0,
            mma_sync: 0,
            wgmma: 0,
            shared_loads: 0,
            shared_stores: 0,
            global_loads: 0,
            global_stores: 0,
            bulk_copies: 0,
            barriers: 0,
            block_barriers: 0,
            wgmma_waits_all: 0,
            branches: 0,
            flops: 0.0,
            wgmma_flops: 0.0,
            wgmma_16bit_flops: 0.0,
            wgmma_16bit_n128_flops: 0.0,
            hot_loop,
            outer: None,
            kernel_math,
        };
        for inst in chosen.map(|i| &insts[i]) {
            mix.total += 1;
            mix.flops += inst.flops;
            if matches!(inst.kind, Kind::Wgmma | Kind::Wgmma16Bit { .. }) {
                mix.wgmma_flops += inst.flops;
            }
            if let Kind::Wgmma16Bit { n } = inst.kind {
                mix.wgmma_16bit_flops += inst.flops;
                if n == N128 {
                    mix.wgmma_16bit_n128_flops += inst.flops;
                }
            }
            if inst.kind == Kind::BlockBarrier {
                mix.block_barriers += 1;
            }

            let field = match inst.kind {
                Kind::Fp32 => &mut mix.fp32,
                Kind::MmaSync => &mut mix.mma_sync,
                Kind::Wgmma | Kind::Wgmma16Bit { .. } => &mut mix.wgmma,
                Kind::SharedLoad => &mut mix.shared_loads,
                Kind::SharedStore => &mut mix.shared_stores,
                Kind::GlobalLoad => &mut mix.global_loads,
                Kind::GlobalStore => &mut mix.global_stores,
                Kind::Bulk => &mut mix.bulk_copies,
                Kind::Barrier | Kind::BlockBarrier => &mut mix.barriers,
                Kind::WgmmaWaitAll => &mut mix.wgmma_waits_all,
                Kind::Branch => &mut mix.branches,
                Kind::Other => continue,
            };
            *field += 1;
        }
        mix
    };
    let Some((hot, _, _)) = hot else {
        return tally(&mut reachable.iter().copied(), None);
    };
    let mut mix = tally(&mut hot.body.iter().copied(), Some(span(hot)));
    // The innermost loop around the hot loop, less the hot loop's instructions.
    let parent = flow
        .loops
        .iter()
        .filter(|l| l.header != hot.header && l.contains(hot.header))
        .min_by_key(|l| l.body.len());
    mix.outer = parent.map(|p| {
        let rest = &mut p.body.iter().copied().filter(|&i| !hot.contains(i));
        Box::new(tally(rest, Some(span(p))))
    });
    mix
}
