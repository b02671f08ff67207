//! Reading a kernel's PTX: its body's instructions in order (an instruction's offset
//! is its index), `$L__BB0_3:` labels and `@%p bra $L__BB0_3;` targets.

use std::collections::HashMap;

use super::{Inst, Kind};

/// `kernel`'s instructions, or `None` if `ptx` does not define it. Inline assembly
/// (`{ .reg .pred p; LAB_WAIT: mbarrier.try_wait... p, ...; @!p bra LAB_WAIT; }`)
/// counts instruction by instruction; directives count as none. A label may share its
/// line with an instruction, and may repeat: PTX scopes a label declared inside braces
/// to them, as every inlined copy of the barrier wait's does. So a branch goes to the
/// nearest label of its name before it, else the first after it.
pub(super) fn parse(ptx: &str, kernel: &str) -> Option<Vec<Inst>> {
    let text = crate::ptx::entry_body(ptx, kernel)?;
    let mut labels: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut parsed: Vec<(Inst, Option<&str>)> = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        for piece in line.split(';') {
            let mut piece = piece.trim().trim_start_matches(['{', '}', ' ', '\t']).trim();
            if let Some((label, rest)) = piece.split_once(':')
                && is_label(label)
            {
                labels.entry(label).or_default().push(parsed.len());
                piece = rest.trim();
            }
            if piece.is_empty() || piece.starts_with('.') {
                continue;
            }
            let (predicated, piece) = match piece.strip_prefix('@') {
                Some(p) => (
                    true,
                    p.split_once(char::is_whitespace).map_or("", |(_, r)| r.trim()),
                ),
                None => (false, piece),
            };
            let (opcode, operands) = piece.split_once(char::is_whitespace).unwrap_or((piece, ""));
            let (kind, flops) = classify(opcode);
            // `wgmma.wait_group 0`: the warp waits for every wgmma it issued.
            let kind = if opcode.starts_with("wgmma.wait_group") && operands.trim() == "0" {
                Kind::WgmmaWaitAll
            } else {
                kind
            };
            let base = opcode.split('.').next().unwrap_or("");
            let label = (base == "bra").then(|| operands.trim());
            let ends = matches!(base, "bra" | "brx" | "ret" | "exit" | "trap");
            let inst = Inst {
                offset: parsed.len() as u32,
                kind,
                flops,
                target: None,
                falls_through: predicated || !ends,
            };
            parsed.push((inst, label));
        }
    }
    Some(
        parsed
            .into_iter()
            .map(|(mut inst, label)| {
                inst.target = label.and_then(|l| {
                    let at = labels.get(l)?;
                    let before = at.iter().rev().find(|&&i| i <= inst.offset as usize);
                    before.or(at.first()).copied()
                });
                inst
            })
            .collect(),
    )
}

/// A label's name before its `:` (`$L__BB0_3`, `LAB_WAIT`), not a state space such
/// as the `shared::cta` inside an opcode.
fn is_label(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'))
}

/// `m16n8k8` (or `m64n256k8`) in an opcode's parts: m, n, k.
fn shape<'a>(mut parts: impl Iterator<Item = &'a str>) -> Option<(f64, f64, f64)> {
    parts.find_map(|p| {
        let rest = p.strip_prefix('m')?;
        let (m, rest) = rest.split_once('n')?;
        let (n, k) = rest.split_once('k')?;
        Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
    })
}

/// What a PTX opcode is, and the FLOPs one warp's instruction does (32 threads).
pub(super) fn classify(opcode: &str) -> (Kind, f64) {
    let parts: Vec<&str> = opcode.split('.').collect();
    let base = parts[0];
    let f32 = opcode.ends_with(".f32");
    let space = |s: &str| parts[1..].iter().any(|p| p.starts_with(s));
    match base {
        "fma" | "mad" if f32 => (Kind::Fp32, 64.0),
        "add" | "sub" | "mul" if f32 => (Kind::Fp32, 32.0),
        "mma" if opcode.starts_with("mma.sync") => {
            let (m, n, k) = shape(parts.iter().copied()).unwrap_or_default();
            (Kind::MmaSync, 2.0 * m * n * k)
        }
        // One instruction per thread of the warpgroup: each of its 4 warps issues it.
        // `...m64n256k16.f32.bf16.bf16` (or `.f16.f16`): 16-bit operands.
        "wgmma" if opcode.starts_with("wgmma.mma_async") => {
            let (m, n, k) = shape(parts.iter().copied()).unwrap_or_default();
            let half = parts.iter().any(|p| *p == "bf16" || *p == "f16");
            let kind = if half {
                Kind::Wgmma16Bit { n: n as u32 }
            } else {
                Kind::Wgmma
            };
            (kind, 2.0 * m * n * k / 4.0)
        }
        "ldmatrix" => (Kind::SharedLoad, 0.0),
        "stmatrix" => (Kind::SharedStore, 0.0),
        "ld" if space("shared") => (Kind::SharedLoad, 0.0),
        "st" if space("shared") => (Kind::SharedStore, 0.0),
        "ld" if space("global") => (Kind::GlobalLoad, 0.0),
        "st" if space("global") => (Kind::GlobalStore, 0.0),
        // cp.async.bulk..., cp.reduce.async.bulk...: the copy engine.
        "cp" if opcode.contains(".bulk") => {
            if opcode.ends_with("commit_group") || opcode.contains("wait_group") {
                (Kind::Other, 0.0)
            } else {
                (Kind::Bulk, 0.0)
            }
        }
        // cp.async.ca / .cg: LDGSTS.
        "cp" if matches!(parts.get(1..3), Some(["async", "ca" | "cg"])) => (Kind::GlobalLoad, 0.0),
        // __syncwarp: the warp's own lanes, no wait for the block.
        "bar" if parts.get(1) == Some(&"warp") => (Kind::Other, 0.0),
        "bar" | "barrier" => (Kind::BlockBarrier, 0.0),
        "mbarrier" if space("try_wait") || space("test_wait") => (Kind::Barrier, 0.0),
        "bra" | "brx" => (Kind::Branch, 0.0),
        _ => (Kind::Other, 0.0),
    }
}
