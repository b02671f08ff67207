//! What ptxas does to scalar shared-memory accesses that the source does not show.
//!
//! Where a kernel's PTX has 4-byte `ld.shared` (or `st.shared`) in one basic block at
//! one base register plus constant offsets, ptxas issues those that share an aligned
//! 16-byte window as one `LDS.128` when it can prove the window aligned (three or
//! four of its words: `sgemm_smem` loads words 28-30 of a row with one `LDS.128`), and
//! two that share an aligned 8-byte one as one `LDS.64`: `sgemm_smem`'s 32 scalar
//! reads of a row of A's tile are 8 `LDS.128` on the GPU. The GPU then makes fewer,
//! wider requests than the source, and Nsight Compute counts them. [`analyse`] finds
//! those windows in the embedded PTX, per shared array, proving alignment from the
//! arrays' `.align` and the address arithmetic (known trailing zero bits); [`merge`]
//! applies them to an emulated log: a thread's 4-byte accesses to such an array
//! between two barriers that share an aligned window become one access of the
//! window, as the vector instruction ptxas emits.
//!
//! The PTX decides which arrays (a loop LLVM left rolled puts one access per
//! iteration in its block: nothing to merge; a row pitch of 65 floats proves no
//! alignment); the emulated addresses decide which windows. `tests/ptx.rs` checks the
//! windows against the SASS where nvdisasm is installed.

use std::collections::{BTreeMap, HashMap, HashSet};

use kernels::gpu::emu::{Access, Space};
use kernels::handle::KernelInfo;
use serde::Serialize;

use super::analyse::Direction;
use super::hash::FastMap;

mod ptx;
use ptx::{
    Def, Root, address, body, def_of, defines, ends_block, known_zeros, resolve, scalar_shared,
    shared_symbols,
};

/// What ptxas merges in one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Vectorized {
    /// Per shared array (its PTX symbol) and direction: the widest access ptxas makes
    /// of its runs of scalar accesses, 8 or 16 bytes.
    pub widths: Vec<(String, Direction, u64)>,
    /// Per direction (loads, stores): the 16-byte and the 8-byte accesses those
    /// windows make in the PTX's code: what the SASS has as `LDS.128` / `LDS.64`
    /// (`STS.*`) on top of the PTX's own vector accesses.
    pub vectors: [[usize; 2]; 2],
}

impl Vectorized {
    /// The widest access ptxas merges `array`'s scalar accesses of `op` into (4: none).
    pub fn width(&self, array: &str, op: Direction) -> u64 {
        self.widths
            .iter()
            .find(|(a, o, _)| a == array && *o == op)
            .map_or(4, |w| w.2)
    }
}

/// The windows ptxas merges in `kernel`, or `None` if `ptx` does not define it.
pub fn analyse(ptx: &str, kernel: &str) -> Option<Vectorized> {
    let statements = body(ptx, kernel)?;
    let symbols = shared_symbols(ptx);
    let zeros = known_zeros(&statements, &symbols);
    let mut defs: HashMap<&str, Vec<Def>> = HashMap::new();
    for s in statements.iter().flatten().filter(|s| defines(s.opcode)) {
        let def = def_of(s, &symbols);
        let dest = s.operands.first().copied().unwrap_or("");
        for reg in dest.trim_matches(['{', '}']).split(',').map(str::trim) {
            if reg.starts_with('%') {
                defs.entry(reg).or_default().push(def.clone());
            }
        }
    }
    // Which shared arrays each register's value may point into: every symbol that
    // flows into it, through any instruction (a fixpoint over the function).
    let mut taint: HashMap<&str, HashSet<&str>> = HashMap::new();
    loop {
        let mut changed = false;
        for s in statements.iter().flatten().filter(|s| defines(s.opcode)) {
            let Some((dest, sources)) = s.operands.split_first() else {
                continue;
            };
            let mut flowing: HashSet<&str> = HashSet::new();
            // A loaded value is no address into the array it came from.
            for &token in sources.iter().filter(|s| !s.starts_with('[')) {
                if symbols.contains_key(token) {
                    flowing.insert(token);
                } else if let Some(t) = taint.get(token) {
                    flowing.extend(t);
                }
            }
            if flowing.is_empty() {
                continue;
            }
            for reg in dest.trim_matches(['{', '}']).split(',').map(str::trim) {
                let t = taint.entry(reg).or_default();
                let before = t.len();
                t.extend(&flowing);
                changed |= t.len() != before;
            }
        }
        if !changed {
            break;
        }
    }
    // Per basic block, the scalar shared accesses as (root, direction) -> offset ->
    // the array, where one is known.
    type Accesses<'a> = BTreeMap<(Root<'a>, Direction), BTreeMap<i64, Option<&'a str>>>;
    let mut blocks: Vec<Accesses> = vec![BTreeMap::new()];
    let mut local: HashMap<&str, (Root, i64)> = HashMap::new();
    let mut fresh = 0;
    for s in &statements {
        let Some(s) = s else {
            blocks.push(BTreeMap::new());
            local.clear();
            continue;
        };
        if let Some(op) = scalar_shared(s.opcode) {
            let at = if op == Direction::Load { 1 } else { 0 };
            if let Some((base, k)) = s.operands.get(at).and_then(|o| address(o)) {
                let (root, off, array) = if symbols.contains_key(base) {
                    (Root::Symbol(base), 0, Some(base))
                } else {
                    let (root, off) = local
                        .get(base)
                        .cloned()
                        .unwrap_or_else(|| resolve(base, &defs, 0));
                    let array = taint
                        .get(base)
                        .filter(|t| t.len() == 1)
                        .and_then(|t| t.iter().next().copied());
                    (root, off, array)
                };
                let block = blocks.last_mut().expect("one block at least");
                block.entry((root, op)).or_default().insert(off + k, array);
            }
        }
        if defines(s.opcode)
            && let Some(&dest) = s.operands.first()
            && dest.starts_with('%')
        {
            let value = match def_of(s, &symbols) {
                Def::Offset(src, k) => {
                    let (root, off) = local.get(src).cloned().unwrap_or_else(|| resolve(src, &defs, 0));
                    (root, off + k)
                }
                Def::Symbol(name) => (Root::Symbol(name), 0),
                Def::Other => {
                    fresh += 1;
                    (Root::Fresh(fresh, dest), 0)
                }
            };
            local.insert(dest, value);
        }
        if ends_block(s.opcode) {
            blocks.push(BTreeMap::new());
            local.clear();
        }
    }
    let mut out = Vectorized::default();
    for ((root, op), offsets) in blocks.iter().flatten() {
        // What the root is known to be aligned to, in trailing zero bits.
        let aligned = match root {
            Root::Register(r) | Root::Fresh(_, r) => zeros.get(r).copied().unwrap_or(0),
            Root::Symbol(s) => symbols.get(s).copied().unwrap_or(0),
        };
        let dir = usize::from(*op == Direction::Store);
        for (start, width) in windows(offsets.keys().copied(), aligned) {
            let words = (start..start + width as i64).step_by(4);
            let arrays: HashSet<Option<&str>> = words.filter_map(|o| offsets.get(&o).copied()).collect();
            // One known array, or nothing to attribute the window to.
            let (1, Some(Some(array))) = (arrays.len(), arrays.iter().next()) else {
                continue;
            };
            out.vectors[dir][usize::from(width == 8)] += 1;
            match out.widths.iter_mut().find(|(a, o, _)| a == array && o == op) {
                Some(w) => w.2 = w.2.max(width),
                None => out.widths.push((array.to_string(), *op, width)),
            }
        }
    }
    Some(out)
}

/// The vector accesses ptxas makes of 4-byte accesses at `offsets` (sorted, distinct)
/// from a base with `aligned` known trailing zero bits, as (first offset, bytes): an
/// aligned 16-byte window holding three or four of them, else an aligned 8-byte pair.
fn windows(offsets: impl IntoIterator<Item = i64>, aligned: u32) -> Vec<(i64, u64)> {
    let offsets: Vec<i64> = offsets.into_iter().collect();
    let has = |o: i64| offsets.binary_search(&o).is_ok();
    let mut out = Vec::new();
    let mut done: HashSet<i64> = HashSet::new();
    for &o in &offsets {
        if done.contains(&o) {
            continue;
        }
        let quad = o - o.rem_euclid(16);
        let in_quad = (0..4).filter(|i| has(quad + 4 * i)).count();
        if aligned >= 4 && in_quad >= 3 {
            out.push((quad, 16));
            done.extend((0..4).map(|i| quad + 4 * i));
            continue;
        }
        let pair = o - o.rem_euclid(8);
        if aligned >= 3 && pair == o && has(o + 4) {
            out.push((pair, 8));
            done.extend([o, o + 4]);
        }
    }
    out
}

/// `analyse` of `kernel` in the embedded PTX module its handle names (nothing merged
/// if it has no shared accesses there).
pub fn of_kernel(kernel: &KernelInfo) -> Vectorized {
    analyse(crate::ptx::text(kernel.module), kernel.name).unwrap_or_default()
}

/// Merges `log`'s scalar shared accesses as ptxas merges them (`vectorized`): per
/// thread, array and direction, between two barriers, the 4-byte accesses that share
/// one of `windows` (offsets into the array, 16-byte aligned, as its PTX base is)
/// become one access of the window at the first of them to run (its site and
/// occurrence), the others dropped. Returns how many accesses were folded into others.
pub fn merge(log: &mut Vec<Access>, vectorized: &Vectorized) -> usize {
    if vectorized.widths.is_empty() {
        return 0;
    }
    // (block, thread, epoch, array, direction) -> offset -> first log index.
    type Thread<'a> = (usize, usize, usize, &'a str, Direction);
    let mut groups: FastMap<Thread, BTreeMap<i64, usize>> = FastMap::default();
    for (i, a) in log.iter().enumerate() {
        let op = match a.op {
            kernels::gpu::emu::Op::Load => Direction::Load,
            kernels::gpu::emu::Op::Store => Direction::Store,
        };
        if a.space != Space::Shared || a.async_copy || a.bytes != 4 || vectorized.width(a.array_name, op) == 4
        {
            continue;
        }
        groups
            .entry((a.block, a.thread, a.epoch, a.array_name, op))
            .or_default()
            .entry(a.addr as i64)
            .or_insert(i);
    }
    let mut dropped = vec![false; log.len()];
    let mut folded = 0;
    for ((.., name, op), at) in &groups {
        // The array's width caps the windows: 8 allows pairs only.
        let aligned = vectorized.width(name, *op).trailing_zeros();
        for (start, bytes) in windows(at.keys().copied(), aligned) {
            let members: Vec<usize> = (start..start + bytes as i64)
                .step_by(4)
                .filter_map(|o| at.get(&o).copied())
                .collect();
            let first = *members.iter().min().expect("a window holds two words or more");
            log[first].addr = start as usize;
            log[first].bytes = bytes as usize;
            for &m in members.iter().filter(|&&m| m != first) {
                dropped[m] = true;
                folded += 1;
            }
        }
    }
    let mut i = 0;
    log.retain(|_| {
        i += 1;
        !dropped[i - 1]
    });
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module declaring `decls` with one kernel `k` whose body is `body`.
    fn kernel(decls: &str, body: &str) -> String {
        format!(
            ".version 7.0\n.target sm_70\n{decls}\n.visible .entry k(\n\t.param .u32 p\n)\n{{\n{body}\n}}\n"
        )
    }

    const DECL: &str = ".shared .align 16 .b8 TILE_A[4096];\n.shared .align 16 .b8 TILE_B[4096];";

    #[test]
    fn adjacent_loads_off_one_base_merge_and_strided_ones_do_not() {
        // As sgemm_smem's PTX: A's row at %r30 + 0, 4, ... (in another block than the
        // definitions), B's column at %r32 + 0, 128, ...
        let body = "\
	mov.u32 %r15, TILE_A;
	mov.u32 %r16, TILE_B;
	and.b32 %r20, %r18, 3968;
	add.s32 %r30, %r15, %r20;
	add.s32 %r34, %r30, 4;
	add.s32 %r38, %r30, 8;
	add.s32 %r42, %r30, 12;
	add.s32 %r32, %r16, %r19;
	add.s32 %r36, %r32, 128;
$L__BB0_2:
	// begin inline asm
	ld.shared.f32 %r29, [%r30];
	// end inline asm
	ld.shared.f32 %r31, [%r32];
	ld.shared.f32 %r33, [%r34];
	ld.shared.f32 %r35, [%r36];
	ld.shared.f32 %r37, [%r38];
	ld.shared.f32 %r41, [%r42];
	bar.sync 0;
	ret;";
        let v = analyse(&kernel(DECL, body), "k").unwrap();
        assert_eq!(v.width("TILE_A", Direction::Load), 16);
        assert_eq!(v.width("TILE_B", Direction::Load), 4);
        assert_eq!(v.vectors, [[1, 0], [0, 0]]);
    }

    #[test]
    fn a_loop_left_rolled_merges_nothing_and_blocks_and_barriers_split_runs() {
        // tile_2d's A fragment: one iteration's loads 32 bytes apart, the next k step
        // in the next iteration; then two adjacent loads split by a barrier, and two
        // by a label.
        let body = "\
	mov.u32 %r21, TILE_A;
	mov.b32 %r226, %r21;
$L__BB0_1:
	add.s32 %r86, %r226, -32;
	ld.shared.f32 %r85, [%r86];
	ld.shared.f32 %r93, [%r226];
	add.s32 %r95, %r226, 32;
	ld.shared.f32 %r94, [%r95];
	add.s32 %r226, %r226, 4;
	@%p1 bra $L__BB0_1;
	mov.u32 %r50, TILE_B;
	ld.shared.f32 %r51, [%r50];
	bar.sync 0;
	ld.shared.f32 %r52, [%r50+4];
$L__BB0_3:
	ld.shared.f32 %r53, [%r50+8];
	ret;";
        let v = analyse(&kernel(DECL, body), "k").unwrap();
        assert!(v.widths.is_empty(), "{v:?}");
    }

    #[test]
    fn a_register_redefined_in_the_block_starts_a_new_base() {
        let body = "\
	mov.u32 %r1, TILE_A;
	ld.shared.f32 %r2, [%r1];
	mul.lo.s32 %r1, %r3, 4;
	ld.shared.f32 %r4, [%r1+4];
	st.shared.f32 [TILE_B+8], %r4;
	st.shared.f32 [TILE_B+12], %r4;
	ret;";
        let v = analyse(&kernel(DECL, body), "k").unwrap();
        assert_eq!(v.width("TILE_A", Direction::Load), 4);
        assert_eq!(v.width("TILE_B", Direction::Store), 8);
        assert_eq!(v.vectors, [[0, 0], [0, 1]]);
        assert!(analyse(&kernel(DECL, body), "other").is_none());
    }

    fn access(thread: usize, occurrence: usize, addr: usize, epoch: usize) -> Access {
        Access {
            block: 0,
            thread,
            site: std::panic::Location::caller(),
            occurrence,
            op: kernels::gpu::emu::Op::Load,
            space: Space::Shared,
            addr,
            array: 0,
            array_name: "TILE_A",
            epoch,
            bytes: 4,
            async_copy: false,
            bulk: false,
            copied_from: None,
        }
    }

    #[test]
    fn merging_folds_aligned_runs_between_barriers_into_the_first_access() {
        let v = Vectorized {
            widths: vec![("TILE_A".to_string(), Direction::Load, 16)],
            vectors: [[0; 2]; 2],
        };
        // Thread 0 reads bytes 0..16 (one 16-byte access), 16, 20 and 28 (three words
        // of a window: one 16-byte access too, as ptxas loads them) before a barrier, 32
        // after it; thread 1 reads 4 and 8 (not an aligned pair), thread 2 8 and 12 (one).
        let mut log: Vec<Access> = [0, 4, 8, 12, 16, 20, 28]
            .iter()
            .enumerate()
            .map(|(i, &a)| access(0, i, a, 0))
            .collect();
        log.push(access(0, 7, 32, 1));
        log.extend([access(1, 0, 4, 0), access(1, 1, 8, 0)]);
        log.extend([access(2, 0, 12, 0), access(2, 1, 8, 0)]);
        let folded = merge(&mut log, &v);
        let got: Vec<(usize, usize, usize, usize)> = log
            .iter()
            .map(|a| (a.thread, a.occurrence, a.addr, a.bytes))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 0, 16),
                (0, 4, 16, 16),
                (0, 7, 32, 4),
                (1, 0, 4, 4),
                (1, 1, 8, 4),
                (2, 0, 8, 8)
            ]
        );
        assert_eq!(folded, 6);
        // Nothing merges where ptxas merges nothing.
        let mut again = log.clone();
        assert_eq!(merge(&mut again, &Vectorized::default()), 0);
        assert_eq!(again.len(), log.len());
    }
}
