//! The spread sweep: `spread_writes` and `spread_reads` (kernels/src/calibrate/spread.rs), a
//! coalesced copy whose waves write, or read, 128-byte chunks spread over 1 to 128
//! times the bytes they move. The profile keeps it (schema 5): `explain` slows a
//! kernel's DRAM bytes by the rate the sweep measured at the pages its first wave's
//! stores and loads spread over.

use cust::memory::{AsyncCopyDestination, CopyDestination};

use crate::device::Gpu;
use crate::error::Result;
use crate::launch::{AsGlobal, Launch};
use crate::profile::{PAGE_BYTES, SpreadPoint, Stream, pages_filled, spread};
use crate::timing::{Reps, time_launches};
use crate::units::{format_bytes, gb_per_s};
use kernels::calibrate::spread::{BLOCK, CHUNK_LOG2, PER_BLOCK, placed};
use kernels::entry;
use kernels::gpu::{Global, GlobalMut};
use kernels::handle::Kernel;

/// log2 of the chunks of the array at every point: 2^21 chunks of 128 bytes, 256 MiB
/// (2^19, 64 MiB, for `calibrate --quick`), 5 x the L2 of an H100.
pub fn chunks_log2(quick: bool) -> u32 {
    (if quick { 24 } else { 26 }) - CHUNK_LOG2
}

/// How far apart consecutive chunks land, in chunks: 1 (a copy in order) to 128, so a
/// wave of 1056 blocks (4.1 MiB) spreads over 4 MiB to the whole 256 MiB. `--quick`:
/// every other one.
pub fn apart(quick: bool) -> Vec<u64> {
    (0..=7)
        .step_by(if quick { 2 } else { 1 })
        .map(|k| 1u64 << k)
        .collect()
}

/// The kernel that spreads `stream` (both take `(chunks_log2, rows_log2, src, dst)`).
pub fn kernel_of(stream: Stream) -> &'static Kernel<(u32, u32, Global<f32>, GlobalMut<f32>)> {
    match stream {
        Stream::Reads => &entry::spread_reads,
        Stream::Writes => &entry::spread_writes,
    }
}

/// The [`spread`] of what the first `wave_blocks` blocks read and write, counted from
/// the kernel's index arithmetic over arrays that start on a page, as `explain` counts
/// a window's: (read spread, write spread).
pub fn wave_spread(stream: Stream, chunks_log2: u32, rows_log2: u32, wave_blocks: u64) -> (f64, f64) {
    use std::collections::HashSet;
    let n = 1u64 << (chunks_log2 + CHUNK_LOG2);
    let floats = (wave_blocks * PER_BLOCK as u64).min(n);
    // A chunk lies in one page: count the chunks' pages on each side.
    let side = |at: &dyn Fn(u64) -> u64| {
        let pages: HashSet<u64> = (0..floats)
            .step_by(1 << CHUNK_LOG2)
            .map(|i| 4 * at(i) / PAGE_BYTES)
            .collect();
        spread(pages.len() as u64, pages_filled(4 * floats))
    };
    let (a, b) = (
        side(&|i| i),
        side(&|i| placed(i as usize, chunks_log2, rows_log2) as u64),
    );
    match stream {
        Stream::Reads => (b, a),
        Stream::Writes => (a, b),
    }
}

/// The spread sweep: at every distance of [`apart`], each kernel's copy checked (every
/// float where `placed` puts it) and then timed. `wave_blocks` is the blocks the GPU
/// holds at once. Returns the points and the validation failures.
pub(super) fn spread_sweep(
    gpu: &Gpu,
    quick: bool,
    reps: Reps,
    wave_blocks: u64,
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<SpreadPoint>, Vec<String>)> {
    let chunks = chunks_log2(quick);
    let n = 1usize << (chunks + CHUNK_LOG2);
    progress(&format!("spread: {} an array", format_bytes(4 * n as u64)));
    // Each float holds its own index: a misplaced one names where it came from.
    let host: Vec<u32> = (0..n as u32).collect();
    let mut src = gpu.alloc::<u32>(n)?;
    let mut dst = gpu.alloc::<u32>(n)?;
    // SAFETY: `host` outlives the sync below.
    unsafe { src.async_copy_from(&host[..], &gpu.stream) }
        .map_err(gpu.cuda_error("uploading the spread sweep's array"))?;
    gpu.sync("uploading the spread sweep's array")?;
    let mut back = vec![0u32; n];
    let cfg = Launch {
        grid: (n.div_ceil(PER_BLOCK) as u32, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let (mut points, mut failures) = (Vec::new(), Vec::new());
    for apart in apart(quick) {
        let rows = chunks - apart.trailing_zeros();
        for stream in [Stream::Writes, Stream::Reads] {
            let kernel = gpu.load(kernel_of(stream))?;
            let name = kernel_of(stream).name;
            progress(&format!("{name}, chunks {apart} apart"));
            // The u32 indices move as f32 words, bit for bit.
            let args = (chunks, rows, src.global_as::<f32>(), dst.global_mut_as::<f32>());
            // SAFETY: dst lives until the sync below.
            unsafe { dst.set_32_async(u32::MAX, &gpu.stream) }
                .map_err(gpu.cuda_error("clearing the spread sweep's output"))?;
            kernel.launch(cfg, args)?;
            gpu.sync(name)?;
            dst.copy_to(&mut back[..])
                .map_err(gpu.cuda_error("copying the spread sweep's output"))?;
            if let Some(wrong) = misplaced(&back, stream, chunks, rows) {
                failures.push(format!("{name}, chunks {apart} apart: {wrong}"));
            }
            let t = time_launches(gpu, reps, || kernel.launch(cfg, args))?;
            let (read_spread, write_spread) = wave_spread(stream, chunks, rows, wave_blocks);
            points.push(SpreadPoint {
                stream,
                apart,
                read_spread,
                write_spread,
                gb_per_s: gb_per_s(8 * n as u64, t.median_ms),
            });
        }
    }
    Ok((points, failures))
}

/// The first float of a kernel's output that is not what it copies there (float i of
/// the input at `placed(i)`, or float `placed(i)` at i), as a message; None when every
/// one is.
pub fn misplaced(out: &[u32], stream: Stream, chunks_log2: u32, rows_log2: u32) -> Option<String> {
    (0..out.len()).find_map(|i| {
        let j = placed(i, chunks_log2, rows_log2);
        let (at, want) = match stream {
            Stream::Writes => (j, i),
            Stream::Reads => (i, j),
        };
        (out[at] as usize != want)
            .then(|| format!("output float {at} holds input float {}, not {want}", out[at]))
    })
}

/// The spread sweep as a table, each rate also as % of the copy.
pub fn spread_table(points: &[SpreadPoint], copy_gb_per_s: f64) -> String {
    if points.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        "\nspread sweep (a copy whose waves read or write 128-byte chunks placed apart; spread: the pages a wave touches over those its bytes fill)\n",
    );
    t.push_str(&format!(
        "{:>7} {:>6} {:>12} {:>13} {:>9} {:>6}\n",
        "spread", "apart", "read spread", "write spread", "GB/s", "%"
    ));
    for p in points {
        t.push_str(&format!(
            "{:>7} {:>6} {:>12.1} {:>13.1} {:>9.1} {:>6.1}\n",
            match p.stream {
                Stream::Reads => "reads",
                Stream::Writes => "writes",
            },
            p.apart,
            p.read_spread,
            p.write_spread,
            p.gb_per_s,
            100.0 * p.gb_per_s / copy_gb_per_s
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wave_spreads_one_stream_over_apart_times_its_bytes() {
        let (chunks, wave) = (chunks_log2(false), 1056);
        // In order: 1056 blocks of 4 KiB, 4.1 MiB each way, which 3 pages hold: 1.
        assert_eq!(wave_spread(Stream::Writes, chunks, chunks, wave), (1.0, 1.0));
        // 32 apart: the writes over 32 x 4.1 MiB, 66 pages; the reads stay in 3.
        assert_eq!(wave_spread(Stream::Writes, chunks, chunks - 5, wave), (1.0, 22.0));
        assert_eq!(wave_spread(Stream::Reads, chunks, chunks - 5, wave), (22.0, 1.0));
        // 128 apart: the wave's chunks wrap around the 256 MiB, every one of its pages.
        let (_, w) = wave_spread(Stream::Writes, chunks, chunks - 7, wave);
        assert!((w - 128.0 / 3.0).abs() < 1e-12, "{w}");
        assert_eq!(apart(false), [1, 2, 4, 8, 16, 32, 64, 128]);
        assert_eq!(apart(true), [1, 4, 16, 64]);
    }

    #[test]
    fn a_misplaced_float_is_named() {
        // 4 chunks, 2 rows: chunks land 2 apart (0 2 1 3).
        let (chunks, rows) = (2, 1);
        let n = 1usize << (chunks + CHUNK_LOG2);
        let mut out = vec![0u32; n];
        for i in 0..n {
            out[placed(i, chunks, rows)] = i as u32;
        }
        assert_eq!(misplaced(&out, Stream::Writes, chunks, rows), None);
        // Output chunk 2 is input chunk 1.
        let chunk = 1 << CHUNK_LOG2;
        out[2 * chunk] = 7;
        let want = format!("output float {} holds input float 7, not {chunk}", 2 * chunk);
        assert_eq!(
            misplaced(&out, Stream::Writes, chunks, rows).as_deref(),
            Some(want.as_str())
        );
        let reads: Vec<u32> = (0..n).map(|i| placed(i, chunks, rows) as u32).collect();
        assert_eq!(misplaced(&reads, Stream::Reads, chunks, rows), None);
        let t = spread_table(
            &[SpreadPoint {
                stream: Stream::Writes,
                apart: 32,
                read_spread: 1.0,
                write_spread: 22.0,
                gb_per_s: 1500.0,
            }],
            3000.0,
        );
        assert!(
            t.lines().last().unwrap().ends_with("22.0    1500.0   50.0"),
            "{t}"
        );
    }
}
