//! The CUDA C++ twins: one `cuda/NAME.cu` per experiment, named by its declaration
//! ([`crate::experiment::Experiment::twin`]) and embedded in the binary, compiled by
//! NVRTC for the GPU at hand and loaded into the context that runs the Rust kernels.

use cust::function::Function;
use cust::module::Module;

use super::headers;
use super::nvrtc::{self, CompileError, Nvrtc};
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::experiment::{Experiment, Twin};
use crate::ptx::{PtxModule, entry_points};

/// The kernels a source declares as `extern "C" __global__ void NAME(`, in order
/// (or `... void __launch_bounds__(...) NAME(`).
pub fn declared(source: &str) -> Vec<&str> {
    const DECL: &str = "extern \"C\" __global__ void ";
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(DECL))
        .map(|rest| match rest.strip_prefix("__launch_bounds__(") {
            Some(bounds) => bounds.split_once(')').map_or(rest, |(_, r)| r.trim_start()),
            None => rest,
        })
        .filter_map(|rest| rest.split_once('('))
        .map(|(name, _)| name.trim())
        .collect()
}

/// Why the twins cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// The toolkit is missing or does not fit this GPU or driver: not our fault,
    /// the comparison shows the Rust side only.
    Unavailable(String),
    /// A twin is wrong (does not compile, lacks an entry point): a failure.
    Broken(String),
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::Unavailable(s) | Unusable::Broken(s) => f.write_str(s),
        }
    }
}

/// Like for like: the twins target the virtual architecture the Rust PTX was built
/// for (`COALESCE_ARCH`), so both reach the driver's JIT as the same kind of PTX. An
/// NVRTC that no longer accepts that architecture (CUDA 13 dropped sm_70) gets the
/// device's own; the table's header says which was used.
fn choose_arch(nvrtc: &Nvrtc, gpu: &Gpu) -> String {
    let rust = nvrtc::arch_for_target(crate::ptx::ARCH);
    match nvrtc.compile("probe.cu", "extern \"C\" __global__ void probe() {}", &rust) {
        Ok(_) => rust,
        Err(_) => nvrtc::arch_for(gpu.info.compute_capability),
    }
}

/// Compiles `experiment`'s twin to PTX for `arch` and checks that it defines every
/// variant's twin entry point with the Rust kernel's parameter types. A twin that
/// includes toolkit headers (`<cuda_bf16.h>`) is handed their folder; without one, it
/// is unavailable, as without NVRTC.
pub fn compile(nvrtc: &Nvrtc, experiment: &Experiment, arch: &str) -> std::result::Result<String, Unusable> {
    let twin = &experiment.twin;
    let include = headers::find(&headers::system_includes(twin.source), &headers::candidates())
        .map_err(|why| Unusable::Unavailable(format!("cuda/{}: {why}", twin.file)))?;
    let ptx = nvrtc
        .compile_with(twin.file, twin.source, arch, include.as_deref())
        .map_err(|e| match e {
            CompileError::Refused { .. } => Unusable::Unavailable(e.to_string()),
            _ => Unusable::Broken(e.to_string()),
        })?;
    let entries = entry_points(&ptx);
    for v in experiment.variants {
        if !entries.contains(&v.twin) {
            return Err(Unusable::Broken(format!(
                "cuda/{} does not define {}, the twin of the Rust {}/{}",
                twin.file, v.twin, experiment.name, v.name
            )));
        }
        // The harness passes one argument list to both: the parameters must agree.
        let rust_ptx = crate::ptx::text(v.kernel.module);
        let (rust, cpp) = (params(rust_ptx, v.kernel.name), params(&ptx, v.twin));
        if rust != cpp {
            return Err(Unusable::Broken(format!(
                "cuda/{}: {} takes {cpp:?} in C++ but {} takes {rust:?} in Rust",
                twin.file, v.twin, v.kernel.name
            )));
        }
    }
    Ok(ptx)
}

/// The PTX types of `entry`'s parameters (`.u64`, `.f32`, ...), or None if absent.
pub fn params<'p>(ptx: &'p str, entry: &str) -> Option<Vec<&'p str>> {
    let head = format!(".visible .entry {entry}(");
    let start = ptx.find(&head)? + head.len();
    let list = &ptx[start..start + ptx[start..].find(')')?];
    Some(
        list.split(',')
            .filter_map(|p| p.split_whitespace().nth(1))
            .collect(),
    )
}

struct Loaded {
    twin: &'static Twin,
    experiment: &'static str,
    ptx: String,
    module: Module,
    /// The twin entry points this module answers for: those of the variants whose
    /// Rust kernel is in the module of the same architecture.
    serves: Vec<&'static str>,
    /// The Rust module whose kernels' twins it holds.
    rust: PtxModule,
}

/// The compiled, loaded twins of some experiments. Drop before the [`Gpu`].
pub struct Twins {
    pub nvrtc: Nvrtc,
    /// The `--gpu-architecture` they were compiled for.
    pub arch: String,
    /// The architectures the twins of the newer modules' kernels were compiled for,
    /// where any were.
    pub newer_archs: Vec<(PtxModule, String)>,
    loaded: Vec<Loaded>,
}

/// Like for like again: the twins of the kernels in a newer module (sm_80's
/// `cp.async`, sm_90a's TMA and `wgmma`) target that module's architecture, or the
/// device's if NVRTC refuses it (an arch-specific one, sm_90a, has no fallback).
fn choose_module_arch(nvrtc: &Nvrtc, gpu: &Gpu, module: PtxModule) -> String {
    let rust = nvrtc::arch_for_target(crate::ptx::arch(module));
    match nvrtc.compile("probe.cu", "extern \"C\" __global__ void probe() {}", &rust) {
        Ok(_) => rust,
        Err(_) => nvrtc::arch_for(gpu.info.compute_capability),
    }
}

impl Twins {
    /// Compiles and loads the twins of `experiments` for `gpu`.
    pub fn build(gpu: &Gpu, experiments: &[&'static Experiment]) -> std::result::Result<Twins, Unusable> {
        let nvrtc = Nvrtc::load().map_err(Unusable::Unavailable)?;
        let arch = choose_arch(&nvrtc, gpu);
        let mut newer_archs: Vec<(PtxModule, String)> = Vec::new();
        let mut loaded = Vec::new();
        for experiment in experiments {
            for module in PtxModule::ALL {
                let serves: Vec<&'static str> = experiment
                    .variants
                    .iter()
                    .filter(|v| v.kernel.module == module)
                    .map(|v| v.twin)
                    .collect();
                if module == PtxModule::Baseline {
                    loaded.push(load(gpu, &nvrtc, experiment, &arch, serves, module)?);
                    continue;
                }
                // Only where the GPU runs the module's kernels; elsewhere they are skipped.
                let Some(first) = experiment.variants.iter().find(|v| v.kernel.module == module) else {
                    continue;
                };
                if gpu.supports(first.kernel).is_err() {
                    continue;
                }
                let arch = match newer_archs.iter().find(|(m, _)| *m == module) {
                    Some((_, a)) => a.clone(),
                    None => {
                        let a = choose_module_arch(&nvrtc, gpu, module);
                        newer_archs.push((module, a.clone()));
                        a
                    }
                };
                loaded.push(load(gpu, &nvrtc, experiment, &arch, serves, module)?);
            }
        }
        Ok(Twins {
            nvrtc,
            arch,
            newer_archs,
            loaded,
        })
    }

    /// The C++ kernel with entry point `kernel`.
    pub fn function(&self, kernel: &str) -> Result<Function<'_>> {
        self.loaded
            .iter()
            .find(|l| l.serves.contains(&kernel) && entry_points(&l.ptx).contains(&kernel))
            .and_then(|l| l.module.get_function(kernel).ok())
            .ok_or_else(|| Error::MissingKernel {
                kernel: format!("{kernel} (C++ twin)"),
            })
    }

    /// Each loaded twin's experiment and file, with the PTX NVRTC made of it and the
    /// Rust module whose kernels' twins it holds.
    pub fn ptx(&self) -> impl Iterator<Item = (&'static str, &'static Twin, &str, PtxModule)> {
        self.loaded
            .iter()
            .map(|l| (l.experiment, l.twin, l.ptx.as_str(), l.rust))
    }

    /// One line: which compiler, for which architecture, from where.
    pub fn describe(&self) -> String {
        let newer: String = self
            .newer_archs
            .iter()
            .map(|(m, a)| {
                format!(
                    " (the {} kernels' twins for {a})",
                    m.requires().unwrap_or("baseline")
                )
            })
            .collect();
        format!(
            "C++ twins: NVRTC {} ({}), PTX for {}{newer}, loaded into the Rust kernels' context",
            self.nvrtc.version_string(),
            self.nvrtc.found,
            self.arch
        )
    }
}

/// Compiles `experiment`'s twin for `arch` and loads it, answering for `serves` (the
/// twins of `rust`'s kernels).
fn load(
    gpu: &Gpu,
    nvrtc: &Nvrtc,
    experiment: &'static Experiment,
    arch: &str,
    serves: Vec<&'static str>,
    rust: PtxModule,
) -> std::result::Result<Loaded, Unusable> {
    let twin = &experiment.twin;
    let ptx = compile(nvrtc, experiment, arch)?;
    let module = Module::from_ptx(&ptx, &[]).map_err(|e| {
        Unusable::Unavailable(format!(
            "the driver (CUDA {}.{}) could not load the PTX NVRTC {} made from cuda/{}: {e}; \
             a toolkit newer than the driver makes PTX it cannot read: point LD_LIBRARY_PATH \
             at a toolkit no newer than the driver",
            gpu.info.driver_version / 1000,
            gpu.info.driver_version % 1000 / 10,
            nvrtc.version_string(),
            twin.file
        ))
    })?;
    Ok(Loaded {
        twin,
        experiment: experiment.name,
        ptx,
        module,
        serves,
        rust,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::ALL;

    /// The experiments whose twins are in `e`'s file (one, or a family such as
    /// gemm-bf16 and gemm-f16 in `hgemm.cu`).
    fn sharing(e: &Experiment) -> Vec<&'static Experiment> {
        ALL.iter()
            .copied()
            .filter(|x| x.twin.file == e.twin.file)
            .collect()
    }

    #[test]
    fn every_variant_has_a_twin_and_every_twin_a_variant() {
        for e in ALL {
            let mut want: Vec<&str> = sharing(e).iter().flat_map(|x| x.twins()).collect();
            let mut got = declared(e.twin.source);
            want.sort();
            got.sort();
            assert_eq!(got, want, "cuda/{} against {}'s variants", e.twin.file, e.name);
        }
    }

    #[test]
    fn sources_are_embedded_with_their_entry_points() {
        for e in ALL {
            let t = &e.twin;
            // An experiment's own file is named after it; a family's after its kernels.
            if sharing(e).len() == 1 {
                assert_eq!(t.file, format!("{}.cu", e.name));
            } else {
                let stem = t.file.trim_end_matches(".cu");
                assert!(e.kernels().iter().all(|k| k.name.starts_with(stem)), "{}", t.file);
            }
            let on_disk = std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../cuda")
                    .join(t.file),
            )
            .unwrap();
            assert_eq!(t.source, on_disk, "{} is embedded as it is on disk", t.file);
            for k in declared(t.source) {
                assert!(t.source.contains(&format!(" {k}(")), "{k}");
            }
        }
    }

    /// Where NVRTC is installed (CI installs it; no GPU needed), every twin compiles
    /// and its PTX defines every kernel of its experiment. `COALESCE_REQUIRE_NVRTC`
    /// (CI sets it) makes a missing NVRTC a failure, not a skip.
    #[test]
    fn every_twin_compiles_where_nvrtc_is_installed() {
        let nvrtc = match Nvrtc::load() {
            Ok(nvrtc) => nvrtc,
            Err(e) => {
                assert!(
                    std::env::var_os("COALESCE_REQUIRE_NVRTC").is_none(),
                    "COALESCE_REQUIRE_NVRTC is set but NVRTC could not be loaded: {e}"
                );
                eprintln!("NVRTC not installed: skipping the compile check");
                return;
            }
        };
        for e in ALL {
            let ptx = compile(&nvrtc, e, "compute_80").unwrap_or_else(|u| panic!("{u}"));
            assert!(ptx.contains(".target sm_80"), "{}", e.twin.file);
            // The Hopper twins' bodies compile only for sm_90a (as `compare` builds them there).
            if e.variants.iter().any(|v| v.kernel.module == PtxModule::Sm90a) {
                let ptx = compile(&nvrtc, e, "compute_90a").unwrap_or_else(|u| panic!("{u}"));
                assert!(ptx.contains(".target sm_90a"), "{}", e.twin.file);
            }
        }
        // A twin whose signature differs from the Rust kernel's is refused.
        let wrong = Experiment {
            twin: Twin {
                file: "wrong.cu",
                source: "extern \"C\" __global__ void copy_f32(size_t n, float* dst) { dst[0] = n; }\n\
                         extern \"C\" __global__ void copy_f32x4(size_t n, const float* src, float* dst) {}",
            },
            ..crate::experiments::copy::EXPERIMENT
        };
        let e = compile(&nvrtc, &wrong, "compute_80").unwrap_err();
        assert!(matches!(&e, Unusable::Broken(m) if m.contains("takes")), "{e}");
    }

    #[test]
    fn parses_parameter_types() {
        let ptx = ".visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .f32 k_param_1,\n\t.param .u64 .ptr .align 1 k_param_2\n)\n{\n}\n.visible .entry e(\n)\n";
        assert_eq!(params(ptx, "k"), Some(vec![".u64", ".f32", ".u64"]));
        assert_eq!(params(ptx, "e"), Some(vec![]));
        assert_eq!(params(ptx, "missing"), None);
        // Every Rust kernel with a twin has a parameter list to compare against.
        for e in ALL {
            for k in e.kernels() {
                let module = crate::ptx::text(k.module);
                assert!(
                    params(module, k.name).is_some_and(|p| !p.is_empty()),
                    "{}",
                    k.name
                );
            }
        }
    }

    #[test]
    fn parses_declarations() {
        let src = "// x\nextern \"C\" __global__ void a(size_t n) {}\n  extern \"C\" __global__ void b (float* p);\nvoid c();\n\
                   extern \"C\" __global__ void __launch_bounds__(256, 2) d(int m) {}\n";
        assert_eq!(declared(src), ["a", "b", "d"]);
    }
}
