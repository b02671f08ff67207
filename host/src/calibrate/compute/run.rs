//! Running one compute microbenchmark of the table: its launch, its buffers and
//! arguments, its launches under whatever measures them (CUDA events, the board's
//! energy counter), and the check of what the last launch stored.

use cust::function::BlockSize;
use cust::memory::DeviceBuffer;
use kernels::calibrate::pipes::{BLOCK, BULK_BOX, BULK_STAGE, REQUEST_WINDOW};
use kernels::gpu::tma::TensorMap;
use kernels::gpu::{Float4, Global, GlobalMut};
use kernels::handle::KernelInfo;

use super::expected::{
    FMA_A, FMA_B, ISSUE_K, bulk_sum, chase_end, issue_chains, l2_sums, l2_value, line_sum, line_value,
};
use super::table::{Blocks, Microbenchmark, Setup, Work};
use super::{first_wrong, read};
use crate::device::Gpu;
use crate::elem::Elem;
use crate::error::Result;
use crate::launch::{AsGlobal, Launch};
use crate::problem::{Dim, Problem};
use crate::tensor_map::MapSpec;

/// What a run needs besides its launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// An eighth of the rounds, for a smoke test.
    pub quick: bool,
    /// Bytes the L2 kernels' buffers are a quarter of: the L2's (or more, to read
    /// from DRAM).
    pub span: u64,
    /// Blocks of `l2_bulk_read` that read each chunk at once (1 for its own rate).
    pub group: usize,
}

/// What a run measured, and what its launches did.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran<T> {
    /// What the measure returned.
    pub measured: T,
    /// Rounds of one launch.
    pub rounds: usize,
    /// Units of work of one launch ([`Microbenchmark::units`]).
    pub units: u64,
    /// The first stored value that is not the CPU's, naming the kernel; None if all are.
    pub failure: Option<String>,
}

impl Microbenchmark {
    /// Its kernel, by its handle's untyped part.
    pub fn kernel(&self) -> &'static KernelInfo {
        self.setup.kernel()
    }

    /// Its launch: blocks of its threads, one or as many as the driver says fit on
    /// every SM ([`Blocks`]), or `blocks` when given.
    pub fn launch(&self, gpu: &Gpu, blocks: Option<u32>) -> Result<Launch> {
        let blocks = match (blocks, self.blocks) {
            (Some(b), _) => b,
            (None, Blocks::One) => 1,
            (None, Blocks::Fill) => {
                let per_sm = gpu
                    .function(self.kernel())?
                    .max_active_blocks_per_multiprocessor(
                        BlockSize::x(self.threads),
                        self.shared_bytes as usize,
                    )
                    .map_err(gpu.cuda_error("asking the driver's occupancy calculator"))?;
                gpu.info.sm_count.max(1) * per_sm.max(1)
            }
        };
        Ok(Launch {
            grid: (blocks, 1, 1),
            block: (self.threads, 1, 1),
            shared_bytes: self.shared_bytes,
        })
    }

    /// Makes its buffers for `cfg`, hands `measure` its launch (to run as often as it
    /// likes), then checks what the last launch stored against the CPU's arithmetic.
    pub fn run<T>(
        &self,
        gpu: &Gpu,
        cfg: Launch,
        on: Inputs,
        measure: impl FnOnce(&mut dyn FnMut() -> Result<()>) -> Result<T>,
    ) -> Result<Ran<T>> {
        let (blocks, threads) = (u64::from(cfg.grid.0), u64::from(cfg.block.0));
        let n = (blocks * threads) as usize;
        let work = |rounds: usize, layers: usize| Work {
            blocks,
            threads: blocks * threads,
            rounds: rounds as u64,
            layers: layers as u64,
        };
        let rounds_for = |layers| self.rounds.count(on.quick, (self.units)(work(1, layers)));
        let (measured, rounds, layers, failure) = match self.setup {
            Setup::Chains { kernel, a, b, check } => {
                let rounds = rounds_for(1);
                let out = gpu.alloc::<f32>(n)?;
                let k = gpu.load(kernel)?;
                let args = (rounds as u32, a, b, out.global_mut());
                let measured = measure(&mut || k.launch(cfg, args))?;
                (measured, rounds, 1, check(&read(gpu, &out)?, rounds, a, b))
            }
            Setup::IssueMix(kernel) => {
                let rounds = rounds_for(1);
                let out = gpu.alloc::<u32>(n)?;
                let k = gpu.load(kernel)?;
                let args = (rounds as u32, FMA_A, FMA_B, ISSUE_K, out.global_mut());
                let measured = measure(&mut || k.launch(cfg, args))?;
                let want = issue_chains(rounds, FMA_A, FMA_B, ISSUE_K);
                (measured, rounds, 1, first_wrong(&read(gpu, &out)?, |_| want))
            }
            Setup::LineRequests(kernel) => {
                let rounds = rounds_for(1);
                let host: Vec<f32> = (0..blocks as usize * REQUEST_WINDOW).map(line_value).collect();
                let src = gpu.upload(&host)?;
                let out = gpu.alloc::<f32>(n)?;
                let k = gpu.load(kernel)?;
                let args = (rounds as u32, src.global_as(), out.global_mut());
                let measured = measure(&mut || k.launch(cfg, args))?;
                let per = threads as usize;
                let want = |i| line_sum(i / per, i % per, rounds);
                (measured, rounds, 1, first_wrong(&read(gpu, &out)?, want))
            }
            Setup::SharedChase(kernel) => {
                let rounds = rounds_for(1);
                let out = gpu.alloc::<u32>(n)?;
                let k = gpu.load(kernel)?;
                let measured = measure(&mut || k.launch(cfg, (rounds as u32, out.global_mut())))?;
                (
                    measured,
                    rounds,
                    1,
                    first_wrong(&read(gpu, &out)?, |i| chase_end(i, rounds)),
                )
            }
            Setup::L2Read(kernel) => {
                let l2 = L2Read::new(gpu, n, on.span)?;
                let rounds = rounds_for(l2.layers);
                let k = gpu.load(kernel)?;
                let measured = measure(&mut || k.launch(cfg, l2.args(rounds)))?;
                (measured, rounds, l2.layers, l2.check(gpu, rounds)?)
            }
            Setup::BulkRead { kernel, .. } => {
                let bulk = BulkRead::new(gpu, cfg.grid.0, on.span)?;
                let rounds = rounds_for(1);
                let k = gpu.load(kernel)?;
                let measured = measure(&mut || k.launch(cfg, bulk.args(rounds, on.group)))?;
                (measured, rounds, 1, bulk.check(gpu, rounds, on.group)?)
            }
        };
        let name = self.kernel().name;
        Ok(Ran {
            measured,
            rounds,
            units: (self.units)(work(rounds, layers)),
            failure: failure.map(|why| format!("{name}: {why}")),
        })
    }
}

/// `l2_read`'s buffer for a grid of `threads` threads on an L2 of `l2_bytes`: layers of
/// one float4 a thread, as many as make about a quarter of the L2 (at least one), and
/// the shift between rounds, in threads: about 0.382 of the grid's blocks (the golden
/// section, so that an SM's blocks meet their own lines of a few rounds before only
/// rarely), a whole number of blocks so each warp's reads stay whole lines.
pub fn l2_shape(threads: u64, l2_bytes: u64) -> (usize, usize) {
    let layer = threads * 16;
    let layers = ((l2_bytes / 4 + layer / 2) / layer.max(1)).max(1);
    let blocks = threads / u64::from(BLOCK);
    let shift = ((blocks as f64 * 0.382).round() as u64).clamp(1, blocks.saturating_sub(1).max(1));
    (layers as usize, (shift * u64::from(BLOCK)) as usize)
}

/// `l2_bulk_read`'s buffer on an L2 of `l2_bytes`: chunks of a stage's floats, as many
/// as make about a quarter of the L2 (at least one), and the shift between a block's
/// stages, in chunks: about 0.382 of them (the golden section), so the blocks' reads
/// spread over the buffer.
pub fn bulk_shape(l2_bytes: u64) -> (usize, usize) {
    let chunk = (BULK_STAGE * 4) as u64;
    let chunks = ((l2_bytes / 4 + chunk / 2) / chunk).max(1);
    let shift = ((chunks as f64 * 0.382).round() as u64).max(1);
    (chunks as usize, shift as usize)
}

/// `l2_read`'s buffers for `n` threads reading a quarter of `span` bytes
/// ([`l2_shape`]): the source and the threads' sums.
struct L2Read {
    layers: usize,
    shift: usize,
    src: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
}

impl L2Read {
    fn new(gpu: &Gpu, n: usize, span: u64) -> Result<L2Read> {
        let (layers, shift) = l2_shape(n as u64, span);
        let host: Vec<f32> = (0..4 * n * layers).map(|i| l2_value(i) as f32).collect();
        Ok(L2Read {
            layers,
            shift,
            src: gpu.upload(&host)?,
            out: gpu.alloc::<f32>(n)?,
        })
    }

    fn args(&self, rounds: usize) -> (u32, usize, usize, Global<Float4>, GlobalMut<f32>) {
        let (src, out) = (self.src.global_as(), self.out.global_mut());
        (rounds as u32, self.layers, self.shift, src, out)
    }

    /// The first thread whose sum is not [`l2_sums`]'s, or None.
    fn check(&self, gpu: &Gpu, rounds: usize) -> Result<Option<String>> {
        let got = read(gpu, &self.out)?;
        let want = l2_sums(got.len(), self.layers, self.shift, rounds);
        Ok(first_wrong(&got, |i| want[i] as f32))
    }
}

/// `l2_bulk_read`'s buffers: the source, its tensor map and the blocks' sums.
struct BulkRead {
    chunks: usize,
    shift: usize,
    _src: DeviceBuffer<f32>,
    map: DeviceBuffer<u64>,
    out: DeviceBuffer<f32>,
}

impl BulkRead {
    /// The buffers for a launch of `blocks` blocks reading a quarter of `span` bytes
    /// ([`bulk_shape`]).
    fn new(gpu: &Gpu, blocks: u32, span: u64) -> Result<BulkRead> {
        let (chunks, shift) = bulk_shape(span);
        let host: Vec<f32> = (0..chunks * BULK_STAGE).map(|i| l2_value(i) as f32).collect();
        let src = gpu.upload(&host)?;
        let map = MapSpec::line(0, Dim::Len, BULK_BOX as u32).for_gpu(
            &Problem::Elements { n: host.len() },
            Elem::F32,
            src.as_device_ptr().as_raw(),
        )?;
        Ok(BulkRead {
            chunks,
            shift,
            map: gpu.upload(&map.words)?,
            out: gpu.alloc::<f32>(blocks as usize)?,
            _src: src,
        })
    }

    /// The kernel's arguments, `group` blocks reading each chunk at once.
    fn args(
        &self,
        rounds: usize,
        group: usize,
    ) -> (u32, usize, usize, usize, Global<TensorMap>, GlobalMut<f32>) {
        let (map, out) = (self.map.global_as(), self.out.global_mut());
        (rounds as u32, self.chunks, self.shift, group, map, out)
    }

    /// The first block whose sum is not [`bulk_sum`]'s for a launch of `group`, or None.
    fn check(&self, gpu: &Gpu, rounds: usize, group: usize) -> Result<Option<String>> {
        let got = read(gpu, &self.out)?;
        Ok(first_wrong(&got, |b| {
            bulk_sum(b, group, self.chunks, self.shift, rounds)
        }))
    }
}
