//! Reading SASS: ptxas assembles a PTX module to a cubin, nvdisasm prints it, and
//! each function's instructions are parsed with their offsets and branch targets.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use kernels::handle::PtxModule;

use super::{Inst, Kind};

/// nvdisasm: `$NVDISASM`, else next to `$PTXAS`, else on the PATH; the first that
/// runs (the tests find it so too).
pub fn nvdisasm() -> Result<String, String> {
    let beside_ptxas = std::env::var("PTXAS").ok().and_then(|p| {
        let dir = std::path::Path::new(&p).parent()?;
        Some(dir.join("nvdisasm").to_string_lossy().into_owned())
    });
    [
        std::env::var("NVDISASM").ok(),
        beside_ptxas,
        Some("nvdisasm".into()),
    ]
    .into_iter()
    .flatten()
    .find(|exe| {
        Command::new(exe)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
    .ok_or_else(|| "nvdisasm not found (set NVDISASM)".to_string())
}

/// Whether ptxas and nvdisasm both run (why not, in one line): what the tests ask
/// before they require the SASS.
#[cfg(test)]
pub(super) fn tools() -> Result<(), String> {
    let ptxas = crate::explain::residency::ptxas();
    Command::new(&ptxas)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .ok_or_else(|| format!("ptxas not found ({ptxas}; set PTXAS)"))?;
    nvdisasm().map(|_| ())
}

/// Each function's SASS text, by name.
pub(super) type Listing = Arc<HashMap<String, String>>;

/// A cubin disassembled: why not, in one line, where nvdisasm is missing or fails.
fn disassemble(cubin: &[u8], arch: &str, tag: &str) -> Result<Listing, String> {
    let nvdisasm = nvdisasm()?;
    let dir = std::env::temp_dir().join(format!("coalesce-mix-{}-{tag}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join("kernels.cubin");
    let run = || -> Result<String, String> {
        std::fs::write(&file, cubin).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let out = Command::new(&nvdisasm)
            .arg("-c")
            .arg(&file)
            .output()
            .map_err(|e| format!("{nvdisasm}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "nvdisasm failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let listing = run();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Arc::new(functions(&listing?)))
}

/// An embedded module's SASS for `arch`, disassembled once per process from the
/// assembly residency made (every kernel of a module shares it).
pub(super) fn module_listing(module: PtxModule, arch: &str) -> Result<Listing, String> {
    type Cached = (PtxModule, String, Result<Listing, String>);
    static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, l)) = cache.iter().find(|(m, a, _)| *m == module && a == arch) {
        return l.clone();
    }
    let l = crate::explain::residency::assembled(module, arch)
        .and_then(|a| disassemble(&a.cubin, arch, &format!("{module:?}")));
    cache.push((module, arch.to_string(), l.clone()));
    l
}

/// Each function's text in `nvdisasm -c` output: from its `.text.NAME:` line to the
/// next.
pub(super) fn functions(listing: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut current: Option<(String, String)> = None;
    for line in listing.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
            out.extend(current.take());
            current = Some((name.to_string(), String::new()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(t);
            text.push('\n');
        }
    }
    out.extend(current);
    out
}

/// A function's instructions, `NOP`s left out (ptxas pads with them after the last
/// `EXIT`; a label on one names the next instruction). Lines look like
/// `/*0030*/ @!P0 BRA `(.L_x_156) ;` and `.L_x_156:`.
pub(super) fn parse(function: &str) -> Vec<Inst> {
    let mut labels: HashMap<&str, usize> = HashMap::new();
    let mut parsed: Vec<(Inst, Option<&str>)> = Vec::new();
    for line in function.lines().map(str::trim) {
        if let Some(label) = line.strip_suffix(':') {
            if !label.contains(char::is_whitespace) {
                labels.insert(label, parsed.len());
            }
            continue;
        }
        let Some((offset, rest)) = line.strip_prefix("/*").and_then(|l| l.split_once("*/")) else {
            continue;
        };
        let Ok(offset) = u32::from_str_radix(offset.trim(), 16) else {
            continue;
        };
        let text = rest.split(';').next().unwrap_or("").trim();
        let (predicated, text) = match text.strip_prefix('@') {
            Some(p) => {
                let (pred, rest) = p.split_once(char::is_whitespace).unwrap_or((p, ""));
                (pred != "PT", rest.trim())
            }
            None => (false, text),
        };
        let opcode = text.split_whitespace().next().unwrap_or("");
        if opcode.is_empty() || opcode == "NOP" {
            continue;
        }
        let (kind, flops) = classify(opcode);
        // `WARPGROUP.DEPBAR.LE gsb0, 0x0`: the warp waits for every wgmma it issued.
        let kind = if opcode.starts_with("WARPGROUP.DEPBAR") && text.ends_with(", 0x0") {
            Kind::WgmmaWaitAll
        } else {
            kind
        };
        let base = opcode.split('.').next().unwrap_or("");
        // BSSY names a reconvergence point, CALL a function: neither is a jump here.
        let label = match base {
            "BRA" => text.split("`(").nth(1).and_then(|t| t.split(')').next()),
            _ => None,
        };
        let ends = match base {
            "BRA" => !opcode.contains(".DIV"),
            // Indirect jumps: their targets are not in the text.
            "BRX" | "JMX" | "JMP" | "EXIT" | "RET" | "KILL" => true,
            // A call that does not return (ptxas's for a panic): were its fall-through
            // followed, the panic path would run into the code laid out next (an
            // out-of-line spin loop) and hide the loop that jumps there.
            "CALL" => opcode.contains(".NOINC"),
            _ => opcode.starts_with("BPT.TRAP"),
        };
        let inst = Inst {
            offset,
            kind,
            flops,
            target: None,
            falls_through: predicated || !ends,
        };
        parsed.push((inst, label.map(str::trim)));
    }
    parsed
        .into_iter()
        .map(|(mut inst, label)| {
            inst.target = label.and_then(|l| labels.get(l).copied());
            inst
        })
        .collect()
}

/// What a SASS opcode is, and the FLOPs one warp's instruction does (all 32 lanes).
pub(super) fn classify(opcode: &str) -> (Kind, f64) {
    let mut parts = opcode.split('.');
    let base = parts.next().unwrap_or("");
    let shape = parts.next().unwrap_or("");
    match base {
        "FFMA" => (Kind::Fp32, 64.0),
        "FADD" | "FMUL" => (Kind::Fp32, 32.0),
        // HMMA.1688: m16 n8 k8 for the warp.
        "HMMA" => {
            let (m, n, k) = if let Some(k) = shape.strip_prefix("168") {
                (16.0, 8.0, k.parse().unwrap_or(0.0))
            } else if let Some(k) = shape.strip_prefix("88") {
                (8.0, 8.0, k.parse().unwrap_or(0.0))
            } else {
                (0.0, 0.0, 0.0)
            };
            (Kind::MmaSync, 2.0 * m * n * k)
        }
        // HGMMA.64x256x8.F32.TF32: the warpgroup's product; each of its 4 warps issues
        // it. HGMMA.64x256x16.F32.BF16, and HGMMA.64x256x16.F32 (FP16 operands, which
        // nvdisasm does not name): the same on 16-bit operands.
        "HGMMA" => {
            let dims: Vec<f64> = shape.split('x').filter_map(|d| d.parse().ok()).collect();
            let (flops, n) = match dims[..] {
                [m, n, k] => (2.0 * m * n * k / 4.0, n as u32),
                _ => (0.0, 0),
            };
            let types: Vec<&str> = parts.collect();
            let half = types.contains(&"BF16") || types.iter().all(|t| *t == "F32" || *t == "F16");
            (if half { Kind::Wgmma16Bit { n } } else { Kind::Wgmma }, flops)
        }
        "LDS" | "LDSM" => (Kind::SharedLoad, 0.0),
        "STS" | "STSM" => (Kind::SharedStore, 0.0),
        "LDG" | "LDGSTS" => (Kind::GlobalLoad, 0.0),
        "STG" => (Kind::GlobalStore, 0.0),
        "UTMALDG" | "UTMASTG" | "UTMAREDG" | "UTMAPF" | "UBLKCP" | "UBLKRED" | "UBLKPF" => (Kind::Bulk, 0.0),
        "BAR" => (Kind::BlockBarrier, 0.0),
        "SYNCS" if opcode.contains(".PHASECHK") => (Kind::Barrier, 0.0),
        "BRA" | "BRX" | "JMP" | "JMX" => (Kind::Branch, 0.0),
        _ => (Kind::Other, 0.0),
    }
}
