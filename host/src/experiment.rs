//! What an experiment is, as data: the one declaration every backend runs.
//!
//! BabelStream's `benchmark.h` is the model: one constant table says *what* each
//! kernel moves, and the drivers never know which kernel they run. An
//! [`Experiment`] names its variants (each a Rust entry point, its C++ twin's entry
//! point, a launch rule and an argument list), its buffers with their roles, its
//! useful work and its CPU reference. The GPU ([`crate::prepared`]), the C++ twins
//! ([`crate::compare`]) and the CPU emulator ([`crate::explain::emulate`]) all run
//! the same declaration with no code of their own per experiment.

use std::fmt;

use kernels::fill::uniform;
use kernels::gpu::param::{KernelArgs, ParamKind};
use kernels::handle::{Kernel, KernelInfo};
use serde::{Deserialize, Serialize};

use crate::device::DeviceInfo;
pub use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::launch::Launch;
use crate::tensor_map::MapSpec;
use crate::validate::Tolerance;

// `Experiment::buffers_for`: how each variant's buffers lie in memory (padded rows).
mod layout;
// `Experiment::requested_problem`: what `--size` and `--shape` ask of an experiment.
mod requested;

pub use layout::Padding;

pub use crate::problem::{AWKWARD_2D, AWKWARD_3D, AWKWARD_N, DefaultSize, Dim, Kind, Problem};

/// An experiment: a family of kernels doing the same work with different access
/// patterns, declared once.
pub struct Experiment {
    pub name: &'static str,
    /// One sentence: what it shows.
    pub about: &'static str,
    /// What its problem size is made of.
    pub kind: Kind,
    /// Its problem when the user gives no `--size` or `--shape`.
    pub default_size: DefaultSize,
    /// In table order.
    pub variants: &'static [Variant],
    /// The buffers at a problem size, in the order [`Arg::Buffer`] counts them;
    /// `None` when a length overflows.
    pub buffers: fn(&Problem) -> Option<Vec<Buffer>>,
    /// Useful work of one launch (every variant does the same work).
    pub work: fn(&Problem) -> Work,
    /// What every output must hold.
    pub reference: Reference,
    /// The CUDA C++ twins: `cuda/FILE`, embedded.
    pub twin: Twin,
}

/// One kernel of an experiment.
pub struct Variant {
    /// Name within the experiment (`f32x4`, `4`, ...), as in `EXPERIMENT/VARIANT`.
    pub name: &'static str,
    /// The Rust kernel: its handle's untyped part ([`kernels::entry`]).
    pub kernel: &'static KernelInfo,
    /// The C++ twin's entry point (the same name in `cuda/`). A string: NVRTC
    /// compiles the twins from source at run time.
    pub twin: &'static str,
    /// The kernel's parameters, in order.
    pub args: &'static [Arg],
    /// Grid, block and shared memory at a problem size on a device.
    pub launch: fn(&Problem, &DeviceInfo) -> Result<Launch>,
    /// The variant's own scalar (a stride, an offset), passed by [`Arg::Param`] and
    /// seen by the reference.
    pub param: usize,
    /// What its kernel multiplies in: sets its product's error bound and the cuBLAS
    /// mode its rate is compared with.
    pub arithmetic: Arithmetic,
    /// The relative rounding of each input before it is multiplied, where the kernel
    /// rounds less well than its arithmetic's own ([`Arithmetic::input_rounding`]).
    pub rounding: Option<f64>,
    /// Bytes of the variant's scratch buffer ([`Arg::Scratch`]) at a problem and its
    /// launch; `None` for a variant that takes none.
    pub scratch: Option<fn(&Problem, &Launch) -> u64>,
    /// The variant of the same experiment it changes by one lesson, where that is not
    /// the one declared before it: the report shows its source as a diff from that one.
    pub builds_on: Option<&'static str>,
}

impl Variant {
    /// A variant running `kernel` (a handle, `&entry::copy_f32`) with the arguments
    /// `args`, whose C++ twin has the same entry-point name. The arguments are
    /// checked against the kernel's parameters ([`check_args`]) when the declaration
    /// is compiled: a `static` that does not fit its kernel fails the build.
    pub const fn new<P: KernelArgs>(
        name: &'static str,
        kernel: &'static Kernel<P>,
        args: &'static [Arg],
        launch: fn(&Problem, &DeviceInfo) -> Result<Launch>,
    ) -> Variant {
        check_args(args, P::KINDS);
        let kernel = kernel.info();
        Variant {
            name,
            kernel,
            twin: kernel.name,
            args,
            launch,
            param: 0,
            arithmetic: Arithmetic::Fp32,
            rounding: None,
            scratch: None,
            builds_on: None,
        }
    }

    /// The same variant as a step from `variant`, an earlier variant of its experiment
    /// that is not the one just before it: the report diffs its source against that
    /// one's.
    pub const fn builds_on(self, variant: &'static str) -> Variant {
        Variant {
            builds_on: Some(variant),
            ..self
        }
    }

    /// The same variant with a scratch buffer of `bytes(problem, launch)` bytes,
    /// passed by [`Arg::Scratch`].
    pub const fn with_scratch(self, bytes: fn(&Problem, &Launch) -> u64) -> Variant {
        Variant {
            scratch: Some(bytes),
            ..self
        }
    }

    /// Bytes of its scratch buffer at `p` launched as `launch` (0 without one).
    pub fn scratch_bytes(&self, p: &Problem, launch: &Launch) -> u64 {
        self.scratch.map_or(0, |bytes| bytes(p, launch))
    }

    /// The same variant with a parameter.
    pub const fn with_param(self, param: usize) -> Variant {
        Variant { param, ..self }
    }

    /// The same variant computing on TF32 tensor cores.
    pub const fn tf32(self) -> Variant {
        Variant {
            arithmetic: Arithmetic::Tf32,
            ..self
        }
    }

    /// The same variant on TF32 tensor cores reading one operand from shared memory,
    /// where they drop its 13 low bits (truncation: up to 2^-10 relative), as `wgmma`
    /// does for the tile it reads there.
    pub const fn tf32_truncating(self) -> Variant {
        Variant {
            arithmetic: Arithmetic::Tf32,
            rounding: Some(1.0 / 1024.0),
            ..self
        }
    }

    /// The same variant on BF16 tensor cores (or BF16 arithmetic of any kind): BF16
    /// inputs, f32 accumulation, a BF16 C; compared with cuBLAS in the same precision.
    pub const fn bf16(self) -> Variant {
        Variant {
            arithmetic: Arithmetic::Bf16,
            ..self
        }
    }

    /// [`Variant::bf16`] for FP16 (IEEE binary16, `half`).
    pub const fn f16(self) -> Variant {
        Variant {
            arithmetic: Arithmetic::F16,
            ..self
        }
    }

    /// Its precision as the tables and JSON name it: `FP32`, `TF32`, `BF16`, `FP16`.
    pub fn precision(&self) -> &'static str {
        self.arithmetic.label()
    }

    /// The relative rounding of each input its product's bound allows for.
    pub fn input_rounding(&self) -> f64 {
        self.rounding.unwrap_or(self.arithmetic.input_rounding())
    }

    /// The buffers its arguments pass, in argument order.
    pub fn buffers(&self) -> impl Iterator<Item = usize> + '_ {
        self.args.iter().filter_map(|a| match a {
            Arg::Buffer(b) => Some(*b),
            Arg::Map(spec) => Some(spec.buffer),
            _ => None,
        })
    }
}

/// The arithmetic a kernel multiplies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    /// f32 operations throughout.
    Fp32,
    /// TF32 tensor cores: each input rounded to nearest (ties away) to 11 significant
    /// bits, products accumulated in f32 (`kernels::gpu::mma`).
    Tf32,
    /// BF16 inputs (already BF16 values, so multiplied exactly), f32 accumulation, a
    /// BF16 output: the output's rounding is in its product's bound
    /// ([`crate::validate::ProductBound`]), taken from C's [`Elem`].
    Bf16,
    /// FP16 likewise.
    F16,
}

impl Arithmetic {
    /// Relative rounding of each input before it is multiplied: half a unit in the
    /// last of TF32's 11 significant bits, 2^-11 (0 for f32). It widens a product's
    /// error bound ([`crate::validate::check_rounded_product`]).
    pub fn input_rounding(self) -> f64 {
        match self {
            Arithmetic::Fp32 | Arithmetic::Bf16 | Arithmetic::F16 => 0.0,
            Arithmetic::Tf32 => 2f64.powi(-11),
        }
    }

    /// `FP32`, `TF32`, `BF16`, `FP16`: the precision column of every table.
    pub const fn label(self) -> &'static str {
        match self {
            Arithmetic::Fp32 => "FP32",
            Arithmetic::Tf32 => "TF32",
            Arithmetic::Bf16 => "BF16",
            Arithmetic::F16 => "FP16",
        }
    }
}

/// One kernel parameter, as declared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A dimension of the problem (`usize`).
    Dim(Dim),
    /// The variant's [`Variant::param`] (`usize`).
    Param,
    /// A constant (`f32`).
    F32(f32),
    /// The device address of buffer i.
    Buffer(usize),
    /// The address of a tensor map of one buffer, for the copy engine (TMA).
    Map(MapSpec),
    /// The device address of the variant's scratch buffer ([`Variant::scratch`]):
    /// memory the kernel keeps to itself from launch to launch (workspace, flags),
    /// zeroed once when it is allocated, never filled, poisoned or validated; a kernel
    /// leaves what must read zero at its next launch zero.
    Scratch,
}

/// Whether `arg` can be passed as a parameter of kind `param`: a dimension or the
/// variant's parameter as a `usize` or `u32` (a u32 one is checked to fit when the
/// words are made), a constant as an `f32`, a buffer as a device pointer.
pub const fn fits(arg: Arg, param: ParamKind) -> bool {
    match arg {
        Arg::Dim(_) | Arg::Param => matches!(param, ParamKind::Usize | ParamKind::U32),
        Arg::F32(_) => matches!(param, ParamKind::F32),
        Arg::Buffer(_) | Arg::Map(_) | Arg::Scratch => param.is_pointer(),
    }
}

/// Panics unless `args` fit `params` one for one ([`fits`]). Called by
/// [`Variant::new`] in `static` declarations, where the panic is a compile error.
pub const fn check_args(args: &[Arg], params: &[ParamKind]) {
    if args.len() != params.len() {
        panic!("a variant declares a different number of arguments than its kernel takes");
    }
    let mut i = 0;
    while i < args.len() {
        if !fits(args[i], params[i]) {
            panic!(
                "a declared argument does not fit its kernel's parameter: Dim and Param pass a \
                 usize or u32, F32 an f32, Buffer and Scratch a Global or GlobalMut"
            );
        }
        i += 1;
    }
}

/// How a kernel uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read only: filled with random data, must come back unchanged.
    Input,
    /// Written: poisoned with NaN first, so an element the kernel skips fails.
    Output,
    /// Read and written in place: random data, updated.
    InOut,
}

/// One buffer, counted in elements of its [`Elem`] (f32 unless declared otherwise;
/// structs are f32s in a row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub name: &'static str,
    /// Elements in memory, padding included.
    pub len: usize,
    pub role: Role,
    pub elem: Elem,
    /// A matrix laid out with padded rows (for the copy engine); `None`: dense.
    pub padding: Option<Padding>,
}

impl Buffer {
    pub fn input(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            len,
            role: Role::Input,
            elem: Elem::F32,
            padding: None,
        }
    }
    pub fn output(name: &'static str, len: usize) -> Self {
        Buffer {
            role: Role::Output,
            ..Buffer::input(name, len)
        }
    }
    pub fn in_out(name: &'static str, len: usize) -> Self {
        Buffer {
            role: Role::InOut,
            ..Buffer::input(name, len)
        }
    }
    /// The same buffer of `elem` elements: `Buffer::input("a", n).of(Elem::Bf16)`.
    pub fn of(self, elem: Elem) -> Self {
        Buffer { elem, ..self }
    }
    /// Its size in bytes (None on overflow).
    pub fn bytes(&self) -> Option<u64> {
        self.elem.bytes_of(self.len)
    }
}

/// The useful work one launch does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Work {
    /// Bytes the algorithm must move: each input read once plus each output written once.
    Bytes(u64),
    /// Floating-point operations, and the bytes the algorithm must move.
    Flops { flops: u64, bytes: u64 },
}

impl Work {
    pub fn bytes(self) -> u64 {
        match self {
            Work::Bytes(b) | Work::Flops { bytes: b, .. } => b,
        }
    }
    pub fn flops(self) -> Option<u64> {
        match self {
            Work::Bytes(_) => None,
            Work::Flops { flops, .. } => Some(flops),
        }
    }
}

/// The initial contents of every buffer that is read, as a function: buffer b's
/// element i is `kernels::fill::uniform(stream(seed, b), i)`, which the GPU fills and
/// the CPU recomputes, so a reference never needs the inputs copied back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    pub seed: u64,
}

impl Inputs {
    /// The random stream of buffer `b`.
    pub fn stream(&self, b: usize) -> u64 {
        kernels::fill::mix64(self.seed ^ (b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
    /// Element i of buffer b before the launch, for an f32 buffer.
    pub fn get(&self, b: usize, i: usize) -> f32 {
        uniform(self.stream(b), i as u64)
    }
    /// Element i of buffer b before the launch, for a buffer of `elem` elements: the
    /// same draw rounded as the type stores it (the 16-bit fills round to nearest
    /// even), an exact f32.
    pub fn value(&self, b: usize, elem: Elem, i: usize) -> f32 {
        elem.round(self.get(b, i))
    }
}

/// What the outputs of a launch must hold.
#[derive(Clone, Copy)]
pub enum Reference {
    /// Every written element (of an output or in-out buffer) is computed from the
    /// inputs: `expected(problem, variant param, inputs, buffer, i)`, compared bit for
    /// bit (data movement) or within a tolerance (arithmetic).
    Elementwise {
        check: Check,
        expected: fn(&Problem, usize, &Inputs, usize, usize) -> f32,
    },
    /// C = A B on buffers a, b, c of a [`Kind::Product`]: each entry within an error
    /// bound that grows with k, against an f64 dot product (all entries of small
    /// products, a sample of large ones). cuBLAS can compute the same product.
    Product { a: usize, b: usize, c: usize },
}

/// How elementwise outputs must match.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Bit for bit.
    Exact,
    /// Within a tolerance.
    Close(Tolerance),
}

/// The CUDA C++ source of an experiment's twins.
#[derive(Debug)]
pub struct Twin {
    /// Its file under `cuda/`.
    pub file: &'static str,
    pub source: &'static str,
}

/// `twin!("copy.cu")`: the file under `cuda/`, embedded in the binary.
#[macro_export]
macro_rules! twin {
    ($file:literal) => {
        $crate::experiment::Twin {
            file: $file,
            source: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../cuda/", $file)),
        }
    };
}

impl Experiment {
    /// How many numbers `--shape` takes (0: none).
    pub fn shape_rank(&self) -> usize {
        self.kind.shape_rank()
    }

    /// The variant called `name`.
    pub fn variant(&self, name: &str) -> Option<&'static Variant> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Variant names, in table order.
    pub fn variant_names(&self) -> Vec<&'static str> {
        self.variants.iter().map(|v| v.name).collect()
    }

    /// The kernels it launches, each once.
    pub fn kernels(&self) -> Vec<&'static KernelInfo> {
        let mut k: Vec<&'static KernelInfo> = Vec::new();
        for v in self.variants {
            if !k.contains(&v.kernel) {
                k.push(v.kernel);
            }
        }
        k
    }

    /// The C++ twins' entry points, each once.
    pub fn twins(&self) -> Vec<&'static str> {
        let mut k: Vec<&'static str> = Vec::new();
        for v in self.variants {
            if !k.contains(&v.twin) {
                k.push(v.twin);
            }
        }
        k
    }

    /// The buffers at `p`, or a clean error when a length overflows.
    pub fn buffers_at(&self, p: &Problem) -> Result<Vec<Buffer>> {
        (self.buffers)(p).ok_or_else(|| Error::TooLarge {
            what: format!("{} at {p}", self.name),
            why: "a buffer's length overflows usize".into(),
        })
    }

    /// Device memory for the buffers at `p` (None if it overflows).
    pub fn device_bytes(&self, p: &Problem) -> Option<u64> {
        self.allocations_at(p)
            .ok()?
            .iter()
            .try_fold(0u64, |sum, b| sum.checked_add(b.bytes()?))
    }

    /// The element type `--size` counts in: its first buffer's (f32 for an
    /// experiment of no buffers).
    pub fn elem(&self) -> Elem {
        let unit = match self.kind {
            Kind::Elements => Problem::Elements { n: 1 },
            Kind::Matrix => Problem::Matrix { rows: 1, cols: 1 },
            Kind::Product => Problem::Product { m: 1, n: 1, k: 1 },
        };
        (self.buffers)(&unit)
            .and_then(|b| b.first().map(|b| b.elem))
            .unwrap_or_default()
    }

    /// Every variant's launch at `p`, in variant order, checked without a GPU: CUDA's
    /// grid limits, the kernels' 32-bit thread index, lengths that overflow. None for
    /// a variant whose tensors the copy engine cannot address at `p` (it is skipped).
    pub fn launches(&self, p: &Problem, info: &DeviceInfo) -> Result<Vec<Option<Launch>>> {
        self.buffers_at(p)?;
        self.variants
            .iter()
            .map(|v| match (v.launch)(p, info) {
                Ok(l) => Ok(Some(l)),
                Err(Error::Unaddressable { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .collect()
    }

    /// Whether `v` can run at `p`: its argument words exist (dimensions fit their
    /// types, the copy engine can address its tensors). `Error::Unaddressable` where
    /// the copy engine cannot: the variant is skipped there.
    pub fn addressable(&self, v: &Variant, p: &Problem) -> Result<()> {
        let buffers = self.buffers_for(v, p)?;
        self.words(v, p, &vec![0; buffers.len()], 0, &mut |spec| {
            spec.extents(p, buffers[spec.buffer].elem).map(|_| 0)
        })
        .map(|_| ())
    }

    /// A variant's arguments as 64-bit words (what the driver and the emulator read),
    /// with buffer i at `addresses[i]`, the variant's scratch at `scratch` and each
    /// tensor map where `map` put it (the backend encodes it for the GPU or the
    /// emulator). A dimension or parameter the kernel takes as a `u32` must fit one.
    pub fn words(
        &self,
        v: &Variant,
        p: &Problem,
        addresses: &[u64],
        scratch: u64,
        map: &mut dyn FnMut(&MapSpec) -> Result<u64>,
    ) -> Result<Vec<u64>> {
        v.args
            .iter()
            .zip(v.kernel.params)
            .map(|(a, kind)| {
                let index = |value: usize| match kind {
                    ParamKind::U32 => u32::try_from(value).map(u64::from).map_err(|_| Error::TooLarge {
                        what: format!("{} at {p}", self.name),
                        why: format!(
                            "{} takes its dimensions as 32-bit numbers; {value} does not fit",
                            v.kernel.name
                        ),
                    }),
                    _ => Ok(value as u64),
                };
                match *a {
                    Arg::Dim(d) => index(p.dim(d)),
                    Arg::Param => index(v.param),
                    Arg::F32(x) => Ok(u64::from(x.to_bits())),
                    Arg::Buffer(b) => Ok(addresses[b]),
                    Arg::Map(ref spec) => map(spec),
                    Arg::Scratch => Ok(scratch),
                }
            })
            .collect()
    }
}

impl fmt::Debug for Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_from_sizes_and_shapes() {
        assert_eq!(
            Kind::Elements.problem(4096, Elem::F32, None).unwrap(),
            Problem::Elements { n: 1024 }
        );
        assert_eq!(
            Kind::Matrix.problem(8192 * 8192 * 4, Elem::F32, None).unwrap(),
            Problem::Matrix {
                rows: 8192,
                cols: 8192
            }
        );
        assert_eq!(
            Kind::Matrix.problem(4, Elem::F32, Some(&[33, 65])).unwrap(),
            Problem::Matrix { rows: 33, cols: 65 }
        );
        assert_eq!(
            Kind::Product.problem(4096 * 4096 * 4, Elem::F32, None).unwrap(),
            Problem::Product {
                m: 4096,
                n: 4096,
                k: 4096
            }
        );
        // 16-bit elements: as many again in the same bytes.
        assert_eq!(
            Kind::Product.problem(4096 * 4096 * 2, Elem::Bf16, None).unwrap(),
            Kind::Product.problem(4096 * 4096 * 4, Elem::F32, None).unwrap()
        );
        assert_eq!(
            Kind::Elements.problem(7, Elem::F16, None).unwrap(),
            Problem::Elements { n: 3 }
        );
        assert!(Kind::Elements.problem(3, Elem::F32, None).is_err());
        assert!(Kind::Matrix.problem(3, Elem::F32, None).is_err());
    }

    #[test]
    fn the_largest_array_sizes_the_baseline() {
        let p = Problem::Product { m: 2, n: 3, k: 5 };
        assert_eq!(p.largest_array(), Some(15));
        assert_eq!(
            Problem::Matrix {
                rows: usize::MAX,
                cols: 2
            }
            .largest_array(),
            None
        );
        assert_eq!(p.label(), "2x3x5");
    }

    #[test]
    fn input_streams_differ_per_buffer_and_seed() {
        let a = Inputs { seed: 1 };
        assert_ne!(a.stream(0), a.stream(1));
        assert_ne!(a.stream(0), Inputs { seed: 2 }.stream(0));
        assert_eq!(a.get(3, 7), uniform(a.stream(3), 7));
    }

    #[test]
    fn declared_arguments_are_checked_against_the_kernels_parameters() {
        use ParamKind as K;
        let copy = [Arg::Dim(Dim::Len), Arg::Buffer(0), Arg::Buffer(1)];
        check_args(&copy, &[K::Usize, K::Global, K::GlobalMut]);
        check_args(&[Arg::Dim(Dim::M), Arg::Param], &[K::U32, K::Usize]);
        check_args(&[Arg::F32(1.0)], &[K::F32]);
        assert!(!fits(Arg::F32(1.0), K::Usize));
        assert!(!fits(Arg::Buffer(0), K::U64));
        assert!(!fits(Arg::Dim(Dim::Len), K::Global));
        // Every declaration of the registry compiled, so each fits its kernel; the
        // check still agrees at run time.
        for e in crate::experiments::ALL {
            for v in e.variants {
                check_args(v.args, v.kernel.params);
            }
        }
    }

    #[test]
    #[should_panic(expected = "a declared argument does not fit")]
    fn an_argument_of_the_wrong_kind_is_refused() {
        // saxpy's scalar passed as a dimension.
        check_args(
            &[
                Arg::Dim(Dim::Len),
                Arg::Dim(Dim::Len),
                Arg::Buffer(0),
                Arg::Buffer(1),
            ],
            kernels::entry::saxpy_f32.params,
        );
    }

    #[test]
    #[should_panic(expected = "a different number of arguments")]
    fn a_missing_argument_is_refused() {
        check_args(
            &[Arg::Dim(Dim::Len), Arg::Buffer(0)],
            kernels::entry::copy_f32.params,
        );
    }

    #[test]
    fn u32_dimensions_must_fit() {
        let v = &crate::experiments::matmul::EXPERIMENT.variants[0];
        let p = Problem::Product {
            m: 1 << 32,
            n: 1,
            k: 1,
        };
        let e = crate::experiments::matmul::EXPERIMENT
            .words(v, &p, &[0, 0, 0], 0, &mut |_| unreachable!("no maps"))
            .unwrap_err();
        assert!(e.to_string().contains("32-bit"), "{e}");
        let p = Problem::Product { m: 3, n: 4, k: 5 };
        let w = crate::experiments::matmul::EXPERIMENT
            .words(v, &p, &[7, 8, 9], 0, &mut |_| unreachable!("no maps"))
            .unwrap();
        assert_eq!(w, [3, 4, 5, 7, 8, 9]);
    }

    #[test]
    fn awkward_problems_are_awkward() {
        for p in Kind::Elements.awkward() {
            let n = p.dim(Dim::Len);
            assert!(n == 1 || n % 4 != 0, "{n}");
        }
        assert!(Kind::Elements.awkward().iter().any(|p| !p.emulated()));
        assert!(Kind::Product.awkward().iter().all(Problem::emulated));
    }
}
