//! How many blocks an SM holds ([`blocks_per_sm`]): the least that its threads,
//! registers, shared memory and block slots allow, with a kernel's registers per thread
//! and static shared memory per block as ptxas assigns them for the profile's GPU
//! ([`resources`]). ptxas is NVIDIA's PTX assembler; `explain` runs `ptxas -v` on the
//! embedded PTX, offline, once per architecture, and reads its report.

use kernels::handle::PtxModule;
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::profile::{Profile, SmLimits};

/// The ptxas to run: `$PTXAS`, else `ptxas` on the PATH.
pub(super) fn ptxas() -> String {
    std::env::var("PTXAS").unwrap_or_else(|_| "ptxas".into())
}

/// Every entry point's resources in a `ptxas -v` report: the registers of its "Used N
/// registers" line and the bytes of "N bytes smem" (0 when the line names none).
pub fn parse_ptxas_log(log: &str) -> HashMap<String, Resources> {
    let mut out = HashMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if let (Some(name), Some(used)) = (&current, line.split("Used ").nth(1)) {
            let number_before = |unit: &str| -> Option<u32> {
                let i = used.find(unit)?;
                used[..i].trim().rsplit([' ', ',']).next()?.parse().ok()
            };
            if let Some(registers) = number_before(" registers") {
                out.insert(
                    name.clone(),
                    Resources {
                        registers,
                        shared_bytes: number_before(" bytes smem").unwrap_or(0),
                    },
                );
            }
        }
    }
    out
}

/// A module as ptxas assembled it: every entry's resources (`-v`), and the cubin,
/// which the instruction mix disassembles ([`super::product::mix`]), so that each module is
/// assembled once per process for both.
pub struct Assembly {
    pub resources: HashMap<String, Resources>,
    pub cubin: Vec<u8>,
}

type Assembled = Result<Arc<Assembly>, String>;

/// Assembles `ptx` for `arch` (`sm_90`) with `ptxas -v` in a temporary directory:
/// every entry's resources and the cubin; why not, in one line, when ptxas is not
/// there or fails.
fn assemble(ptx: &str, arch: &str) -> Assembled {
    let exe = ptxas();
    let dir = std::env::temp_dir().join(format!("coalesce-residency-{}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (src, cubin) = (dir.join("kernels.ptx"), dir.join("kernels.cubin"));
    let run = || -> Result<(std::process::Output, Vec<u8>), String> {
        std::fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
        let out = Command::new(&exe)
            .args(["-v", "-arch", arch, "-o"])
            .arg(&cubin)
            .arg(&src)
            .output()
            .map_err(|e| format!("ptxas not found ({exe}: {e}; set PTXAS)"))?;
        let bytes = if out.status.success() {
            std::fs::read(&cubin).map_err(|e| format!("cannot read {}: {e}", cubin.display()))?
        } else {
            Vec::new()
        };
        Ok((out, bytes))
    };
    let ran = run();
    let _ = std::fs::remove_dir_all(&dir);
    let (out, cubin) = ran?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let first = log.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!("ptxas -arch {arch} failed: {first}"));
    }
    Ok(Arc::new(Assembly {
        resources: parse_ptxas_log(&log),
        cubin,
    }))
}

/// An embedded PTX module assembled once per architecture in this process.
pub(super) fn assembled(module: PtxModule, arch: &str) -> Assembled {
    static CACHE: Mutex<Vec<(PtxModule, String, Assembled)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, a)) = cache.iter().find(|(m, a, _)| *m == module && a == arch) {
        return a.clone();
    }
    let a = assemble(crate::ptx::text(module), arch);
    cache.push((module, arch.to_string(), a.clone()));
    a
}

/// The module that holds `kernel`, and the architecture ptxas assembles it for on a
/// GPU of compute capability `sm` (sm_90a's own instructions need `sm_90a`).
pub(super) fn module_of(kernel: &str, sm: &str) -> (PtxModule, String) {
    let module = kernels::entry::ALL
        .iter()
        .find(|k| k.name == kernel)
        .map_or(PtxModule::Baseline, |k| k.module);
    match module {
        PtxModule::Sm90a => (module, crate::ptx::SM90A_ARCH.to_string()),
        _ => (module, sm.to_string()),
    }
}

/// Assembles the embedded PTX for the profile's GPU now (where it has SM limits), so
/// that [`resources`] finds it done.
pub fn prefetch(profile: &Profile) {
    if let Some(sm) = &profile.sm {
        let [major, minor] = sm.compute_capability;
        let _ = assembled(PtxModule::Baseline, &format!("sm_{major}{minor}"));
    }
}

/// `kernel`'s resources on the profile's GPU, or why residency counts threads only.
pub fn resources(kernel: &str, profile: &Profile) -> Result<Resources, String> {
    let Some(sm) = &profile.sm else {
        return Err(format!(
            "the profile (schema {}) has no register or shared-memory limits; recalibrate",
            profile.schema
        ));
    };
    let [major, minor] = sm.compute_capability;
    let (module, arch) = module_of(kernel, &format!("sm_{major}{minor}"));
    let all = assembled(module, &arch)?;
    all.resources
        .get(kernel)
        .copied()
        .ok_or_else(|| format!("ptxas reported nothing for {kernel} on {arch}"))
}

/// A kernel's registers per thread and static shared bytes per block, as ptxas
/// assigns them for the profile's GPU ([`resources`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Resources {
    pub registers: u32,
    pub shared_bytes: u32,
}

/// What limits the blocks one SM holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    Threads,
    Registers,
    SharedMemory,
    Blocks,
}

impl Limit {
    pub fn describe(self) -> &'static str {
        match self {
            Limit::Threads => "threads",
            Limit::Registers => "registers",
            Limit::SharedMemory => "shared memory",
            Limit::Blocks => "the block limit",
        }
    }
}

/// Blocks one SM holds at once, and which limit sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Residency {
    pub blocks: u32,
    pub limit: Limit,
}

/// How a launch fills the GPU: blocks, threads per block, dynamic shared bytes, and
/// the blocks of a cluster (1 without clusters), which the GPU places together on SMs
/// of one GPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchSize {
    pub blocks: u64,
    pub threads_per_block: u32,
    pub dynamic_shared_bytes: u32,
    pub cluster: u32,
}

/// Hopper, Ampere and Volta hold at most 32 blocks per SM: the block limit of a profile
/// that does not state its own (schema 2).
const MAX_BLOCKS_PER_SM: u32 = 32;

/// Blocks resident on one SM at once: the least of what each limit allows, at least 1.
///
/// - threads: T / threads per block;
/// - the block limit (the profile's, else 32);
/// - registers (with the kernel's registers r from ptxas): each warp gets
///   ceil(32 r / unit) x unit registers, so registers per SM / that / warps per block;
/// - shared memory: shared bytes per SM / (static + dynamic + reserved bytes per block).
///
/// Without `resources` (or a profile without limits), registers are not counted and
/// shared memory counts the dynamic bytes only.
pub fn blocks_per_sm(launch: LaunchSize, profile: &Profile, resources: Option<Resources>) -> Residency {
    residency(
        launch.threads_per_block,
        launch.dynamic_shared_bytes,
        profile.max_threads_per_sm,
        profile.sm.as_ref(),
        resources,
    )
}

/// [`blocks_per_sm`] from its parts: a block's threads and dynamic shared bytes, the
/// SM's threads and its other limits (if known), the kernel's resources (if known).
pub fn residency(
    threads_per_block: u32,
    dynamic_shared_bytes: u32,
    max_threads_per_sm: u32,
    sm: Option<&SmLimits>,
    resources: Option<Resources>,
) -> Residency {
    let threads = threads_per_block.max(1);
    let mut limits = vec![
        (Limit::Threads, max_threads_per_sm / threads),
        (
            Limit::Blocks,
            sm.map_or(MAX_BLOCKS_PER_SM, |sm| sm.max_blocks_per_sm),
        ),
    ];
    if let Some(sm) = sm {
        if let Some(r) = resources.filter(|r| r.registers > 0) {
            let per_warp = (32 * r.registers).next_multiple_of(sm.register_allocation_unit.max(1));
            limits.push((
                Limit::Registers,
                sm.registers_per_sm / per_warp / threads.div_ceil(32),
            ));
        }
        let static_bytes = resources.map_or(0, |r| r.shared_bytes);
        let per_block = static_bytes + dynamic_shared_bytes + sm.reserved_shared_bytes_per_block;
        if let Some(blocks) = sm.shared_bytes_per_sm.checked_div(per_block) {
            limits.push((Limit::SharedMemory, blocks));
        }
    }
    // The first of equal limits names it: threads before the others.
    let (limit, blocks) = limits
        .into_iter()
        .reduce(|a, b| if b.1 < a.1 { b } else { a })
        .unwrap_or((Limit::Threads, 1));
    Residency {
        blocks: blocks.max(1),
        limit,
    }
}

/// Threads resident on one SM: as many whole blocks as fit, no more than the grid
/// spread over every SM.
pub fn resident_threads(launch: LaunchSize, profile: &Profile, resources: Option<Resources>) -> u32 {
    let spread = launch.blocks.div_ceil(u64::from(profile.sm_count.max(1)));
    let blocks = u64::from(blocks_per_sm(launch, profile, resources).blocks).min(spread.max(1)) as u32;
    blocks * launch.threads_per_block.max(1)
}

/// Blocks the GPU runs at once: one wave, S x the blocks per SM (at most the grid).
/// The L2 serves what blocks resident together share.
pub fn wave_blocks(launch: LaunchSize, profile: &Profile, resources: Option<Resources>) -> u64 {
    let known = resources.filter(|_| profile.sm.is_some());
    let per_sm = u64::from(blocks_per_sm(launch, profile, known).blocks);
    (per_sm * u64::from(profile.sm_count.max(1))).min(launch.blocks.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::tests::sample;

    #[test]
    fn reads_registers_and_shared_bytes_per_entry() {
        let log = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'transpose_tiled_padded' for 'sm_90'
ptxas info    : Function properties for transpose_tiled_padded
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, used 1 barriers, 4224 bytes smem
ptxas info    : Compile time = 11.313 ms
ptxas info    : Compiling entry function 'copy_f32' for 'sm_90'
ptxas info    : Function properties for copy_f32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]
";
        let r = parse_ptxas_log(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r["transpose_tiled_padded"],
            Resources {
                registers: 26,
                shared_bytes: 4224
            }
        );
        assert_eq!(
            r["copy_f32"],
            Resources {
                registers: 8,
                shared_bytes: 0
            }
        );
    }

    #[test]
    fn a_schema_2_profile_says_why_residency_counts_threads_only() {
        let e = resources("copy_f32", &crate::profile::tests::schema_2()).unwrap_err();
        assert!(e.contains("no register or shared-memory limits"), "{e}");
    }

    #[test]
    fn a_wave_is_the_blocks_the_gpu_holds_at_once() {
        let p = sample();
        let launch = |blocks| LaunchSize {
            blocks,
            threads_per_block: 256,
            dynamic_shared_bytes: 0,
            cluster: 1,
        };
        assert_eq!(wave_blocks(launch(1 << 20), &p, None), 8 * 132);
        // 42 registers: 5 blocks of 256 threads per SM.
        let heavy = Resources {
            registers: 42,
            shared_bytes: 0,
        };
        assert_eq!(wave_blocks(launch(1 << 20), &p, Some(heavy)), 5 * 132);
        // A grid of less than a wave is all of it.
        assert_eq!(wave_blocks(launch(100), &p, None), 100);
    }

    #[test]
    fn small_grids_and_big_blocks_hold_fewer_threads() {
        let p = sample();
        let shape = |blocks, threads_per_block| LaunchSize {
            blocks,
            threads_per_block,
            dynamic_shared_bytes: 0,
            cluster: 1,
        };
        assert_eq!(resident_threads(shape(1 << 20, 256), &p, None), 2048);
        assert_eq!(resident_threads(shape(132, 256), &p, None), 256);
        assert_eq!(resident_threads(shape(1 << 20, 1024), &p, None), 2048);
        assert_eq!(resident_threads(shape(1 << 20, 768), &p, None), 1536);
        assert_eq!(resident_threads(shape(1 << 20, 32), &p, None), 1024);
    }
}
