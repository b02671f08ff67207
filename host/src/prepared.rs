//! The GPU backend: any declared [`Experiment`] with its buffers allocated at one
//! problem size. It fills inputs, poisons outputs, launches a variant's kernel (or
//! any function with the same parameters: a C++ twin, a deliberately broken kernel)
//! on those buffers, and judges the result by the experiment's reference.

use cust::function::Function;
use cust::memory::{DeviceBuffer, DeviceSlice};

use crate::arena::Lease;
use crate::buffers::{download, fill_uniform, poison, poison_padding};
use crate::device::Gpu;
use crate::elem::Elem;
use crate::error::{Error, Result};
use crate::experiment::{Arg, Buffer, Experiment, Inputs, Problem, Reference, Role, Variant, Work};
use crate::launch::Launch;
use crate::reference::{Scope, judge};
use crate::validate::Validation;

/// Row-major C (m x n) = A (m x k) B (k x n) on device buffers, A and B of `input`
/// elements and C of `output` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub input: Elem,
    pub output: Elem,
}

/// An experiment's buffers on the GPU at one problem size.
pub struct Prepared {
    pub experiment: &'static Experiment,
    pub problem: Problem,
    /// The buffers as allocated: each at its largest layout over the variants.
    buffers: Vec<Buffer>,
    /// Each variant's view of them ([`Experiment::buffers_for`]): a padded matrix
    /// where it passes one to the copy engine, else the dense layout, at the start
    /// of the same memory.
    layouts: Vec<Vec<Buffer>>,
    /// Each buffer's bytes on the device, in declaration order.
    memory: Vec<DeviceSlice<u8>>,
    /// What keeps `memory` allocated while this lives.
    _owner: Owner,
    /// Each variant's launch, or why this shape leaves it out (a tensor the copy
    /// engine cannot address).
    launches: Vec<std::result::Result<Launch, String>>,
    /// Each variant's tensor maps on the device, in argument order.
    maps: Vec<Vec<DeviceBuffer<u64>>>,
    /// Each variant's scratch buffer ([`Arg::Scratch`]), zeroed when allocated and
    /// then the kernel's (and its twin's) from launch to launch.
    scratch: Vec<Option<DeviceBuffer<u8>>>,
    seed: u64,
    /// What the last [`Prepared::reset`] filled the inputs with.
    inputs: Inputs,
}

impl Prepared {
    /// Every buffer of `experiment` at `problem`, from the GPU's reservation where it
    /// has one ([`Gpu::lease`]) or allocated; `seed` seeds the inputs.
    pub fn new(gpu: &Gpu, experiment: &'static Experiment, problem: Problem, seed: u64) -> Result<Prepared> {
        let buffers = experiment.allocations_at(&problem)?;
        let sizes: Vec<u64> = buffers
            .iter()
            .map(|b| {
                b.bytes().ok_or_else(|| Error::TooLarge {
                    what: format!("buffer {} of {} at {problem}", b.name, experiment.name),
                    why: "its size in bytes overflows".into(),
                })
            })
            .collect::<Result<_>>()?;
        let (memory, owner) = match gpu.lease(&sizes) {
            Some((lease, slices)) => (slices, Owner::Lease(lease)),
            None => {
                let own = sizes
                    .iter()
                    .map(|&bytes| gpu.alloc::<u8>(bytes as usize))
                    .collect::<Result<Vec<_>>>()?;
                // SAFETY: views of buffers that `Owner::Buffers` keeps alive beside them.
                let views = own
                    .iter()
                    .map(|b| unsafe { DeviceSlice::from_raw_parts(b.as_device_ptr(), b.len()) })
                    .collect();
                (views, Owner::Buffers(own))
            }
        };
        let (mut launches, mut maps, mut scratch, mut layouts) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for v in experiment.variants {
            let made = (v.launch)(&problem, &gpu.info).and_then(|l| {
                let m = device_maps(gpu, v, &problem, &buffers, &memory)?;
                let s = zeroed_scratch(gpu, v.scratch_bytes(&problem, &l))?;
                let layout = experiment.buffers_for(v, &problem)?;
                Ok((l, m, s, layout))
            });
            match made {
                Ok((l, m, s, layout)) => {
                    launches.push(Ok(l));
                    maps.push(m);
                    scratch.push(s);
                    layouts.push(layout);
                }
                Err(e @ Error::Unaddressable { .. }) => {
                    launches.push(Err(e.to_string()));
                    maps.push(Vec::new());
                    scratch.push(None);
                    layouts.push(experiment.buffers_at(&problem)?);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Prepared {
            experiment,
            problem,
            buffers,
            layouts,
            memory,
            _owner: owner,
            launches,
            maps,
            scratch,
            seed,
            inputs: Inputs { seed },
        })
    }

    /// `Err(why)` when this shape leaves variant `i` out: the commands skip it with
    /// that line.
    pub fn applicable(&self, i: usize) -> std::result::Result<(), &str> {
        self.launches[i].as_ref().map(|_| ()).map_err(String::as_str)
    }

    pub fn variants(&self) -> &'static [Variant] {
        self.experiment.variants
    }

    /// The index of the variant called `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.variants().iter().position(|v| v.name == name)
    }

    /// Buffer `b` of the declaration, on the device: its bytes.
    pub fn buffer(&self, b: usize) -> &DeviceSlice<u8> {
        &self.memory[b]
    }

    /// Useful work of one launch.
    pub fn work(&self) -> Work {
        (self.experiment.work)(&self.problem)
    }

    /// Buffer `b` as variant `i` is passed it: the start of its memory that its
    /// layout covers.
    fn view(&self, i: usize, b: usize) -> DeviceSlice<u8> {
        let buf = &self.layouts[i][b];
        self.memory[b].index(..buf.len * buf.elem.bytes())
    }

    /// Fills the buffers variant `i` reads with fresh random data (a stream per
    /// case) and poisons those it only writes, so an element it skips fails, and
    /// every padded row's padding, so a kernel that reads or writes it fails.
    pub fn reset(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        self.inputs = Inputs {
            seed: self.seed.wrapping_add(i as u64),
        };
        let v = &self.variants()[i];
        for b in v.buffers() {
            let buf = &self.layouts[i][b];
            let mut view = self.view(i, b);
            match buf.role {
                Role::Output => poison(gpu, &mut view, buf.elem)?,
                Role::Input | Role::InOut => {
                    fill_uniform(gpu, &view, buf.elem, self.inputs.stream(b))?;
                    if let Some(padding) = buf.padding {
                        poison_padding(gpu, &view, buf.elem, (padding.cols, padding.pitch))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Grid, block, shared memory and argument words of variant `i`.
    pub fn launch_spec(&self, i: usize) -> Result<(Launch, Vec<u64>)> {
        let addresses: Vec<u64> = self.memory.iter().map(|m| m.as_device_ptr().as_raw()).collect();
        let mut maps = self.maps[i].iter().map(|m| m.as_device_ptr().as_raw());
        let scratch = self.scratch[i].as_ref().map_or(0, |s| s.as_device_ptr().as_raw());
        let words = self.experiment.words(
            &self.variants()[i],
            &self.problem,
            &addresses,
            scratch,
            &mut |_| Ok(maps.next().expect("one device map per map argument")),
        )?;
        let launch = self.launches[i].clone().map_err(|why| Error::Unaddressable {
            what: format!("{}/{}", self.experiment.name, self.variants()[i].name),
            why,
        })?;
        Ok((launch, words))
    }

    /// Enqueues one launch of variant `i` running `f` (its kernel, or a twin of it).
    pub fn launch(&self, gpu: &Gpu, i: usize, f: &Function<'_>) -> Result<()> {
        let (cfg, words) = self.launch_spec(i)?;
        gpu.launch_words(f, cfg, &words, self.variants()[i].kernel.cluster)
    }

    /// Copies variant `i`'s outputs back and judges them; `rounding` as in
    /// [`crate::reference::judge`].
    pub fn validate(&self, gpu: &Gpu, i: usize, rounding: f64) -> Result<Validation> {
        judge(
            self.experiment,
            &self.variants()[i],
            &self.problem,
            &self.inputs,
            |b| download(gpu, &self.view(i, b), self.layouts[i][b].elem),
            Scope::Written,
            rounding,
        )
    }

    /// Resets variant `i`, computes its output with `launch` (a kernel, a twin, a
    /// library call), waits and validates: the check every measured launch gets.
    pub fn check_with(
        &mut self,
        gpu: &Gpu,
        i: usize,
        what: &str,
        rounding: f64,
        launch: impl FnOnce(&Prepared) -> Result<()>,
    ) -> Result<Validation> {
        self.reset(gpu, i)?;
        launch(self)?;
        gpu.sync(&format!("running {what}"))?;
        self.validate(gpu, i, rounding)
    }

    /// [`Prepared::check_with`] running `f` on variant `i`'s launch.
    pub fn check(&mut self, gpu: &Gpu, i: usize, f: &Function<'_>) -> Result<Validation> {
        let kernel = self.variants()[i].kernel.name;
        self.check_with(gpu, i, kernel, 0.0, |p| p.launch(gpu, i, f))
    }

    /// The operands when the experiment computes a row-major GEMM C = A B, so a
    /// library (cuBLAS) can compute the same product on the same buffers, dense (as
    /// the first variant, which the library's check is judged as, lays them out).
    pub fn gemm(&self) -> Option<Gemm> {
        let (Reference::Product { a, b, c }, Problem::Product { m, n, k }) =
            (self.experiment.reference, self.problem)
        else {
            return None;
        };
        let at = |i: usize| self.memory[i].as_device_ptr().as_raw();
        Some(Gemm {
            m,
            n,
            k,
            a: at(a),
            b: at(b),
            c: at(c),
            input: self.buffers[a].elem,
            output: self.buffers[c].elem,
        })
    }
}

/// Where an experiment's buffers live: the command's reservation, or allocations of
/// their own when there is none (or it is too small). Held only to be dropped.
enum Owner {
    Lease(#[expect(dead_code, reason = "held for its Drop")] Lease),
    Buffers(#[expect(dead_code, reason = "held for its Drop")] Vec<DeviceBuffer<u8>>),
}

/// A scratch buffer of `bytes` zeros, or none for a variant that takes none.
fn zeroed_scratch(gpu: &Gpu, bytes: u64) -> Result<Option<DeviceBuffer<u8>>> {
    if bytes == 0 {
        return Ok(None);
    }
    let len = usize::try_from(bytes).map_err(|_| Error::TooLarge {
        what: format!("a scratch buffer of {bytes} bytes"),
        why: "more bytes than usize holds".into(),
    })?;
    gpu.upload(&vec![0u8; len]).map(Some)
}

/// Variant `v`'s tensor maps at `problem`, encoded by the driver and copied to the
/// device, in argument order.
fn device_maps(
    gpu: &Gpu,
    v: &Variant,
    problem: &Problem,
    buffers: &[Buffer],
    memory: &[DeviceSlice<u8>],
) -> Result<Vec<DeviceBuffer<u64>>> {
    v.args
        .iter()
        .filter_map(|a| match a {
            Arg::Map(spec) => Some(spec),
            _ => None,
        })
        .map(|spec| {
            let b = spec.buffer;
            let map = spec.for_gpu(problem, buffers[b].elem, memory[b].as_device_ptr().as_raw())?;
            gpu.upload(&map.words)
        })
        .collect()
}
