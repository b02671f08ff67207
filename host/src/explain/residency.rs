//! A kernel's registers per thread and static shared memory per block, as ptxas
//! assigns them for the profile's GPU: what, with the block size, decides how many
//! blocks an SM holds ([`super::predict::blocks_per_sm`]). ptxas is NVIDIA's PTX
//! assembler; `explain` runs `ptxas -v` on the embedded PTX, offline, once per
//! architecture, and reads its report.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use super::predict::Resources;
use crate::profile::Profile;

/// The ptxas to run: `$PTXAS`, else `ptxas` on the PATH.
fn ptxas() -> String {
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

type Assembled = Result<Arc<HashMap<String, Resources>>, String>;

/// Assembles `ptx` for `arch` (`sm_90`) with `ptxas -v` into a temporary file and
/// reads every entry's resources; why not, in one line, when ptxas is not there or
/// fails.
pub fn assemble(ptx: &str, arch: &str) -> Assembled {
    let exe = ptxas();
    let dir = std::env::temp_dir().join(format!("coalesce-residency-{}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join("kernels.ptx");
    std::fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = Command::new(&exe)
        .args(["-v", "-arch", arch, "-o"])
        .arg(dir.join("kernels.cubin"))
        .arg(&src)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.map_err(|e| format!("ptxas not found ({exe}: {e}; set PTXAS)"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let first = log.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!("ptxas -arch {arch} failed: {first}"));
    }
    Ok(Arc::new(parse_ptxas_log(&log)))
}

/// The embedded PTX assembled once per architecture in this process.
fn assembled(arch: &str) -> Assembled {
    static CACHE: Mutex<Vec<(String, Assembled)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, a)) = cache.iter().find(|(a, _)| a == arch) {
        return a.clone();
    }
    let a = assemble(crate::ptx::PTX, arch);
    cache.push((arch.to_string(), a.clone()));
    a
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
    let arch = format!("sm_{major}{minor}");
    let all = assembled(&arch)?;
    all.get(kernel)
        .copied()
        .ok_or_else(|| format!("ptxas reported nothing for {kernel} on {arch}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
