//! The pitch sweep: `pitch_write`, `pitch_update` and `pitch_read`
//! (kernels/src/calibrate/pitch.rs), 32 lanes one pitch apart, over a grid of pitches and
//! spans. The profile keeps it (schema 4): `explain` times a kernel's scattered
//! requests (a segment per lane, no other request's) at its rates.

use cust::memory::CopyDestination;
use kernels::entry;
use kernels::gpu::Float4;

use crate::device::Gpu;
use crate::error::Result;
use crate::launch::{AsGlobal, Launch};
pub use crate::profile::{PAGE_BYTES, PitchPoint, RequestKind};
use crate::timing::{Reps, time_launches};
use crate::units::{format_bytes, gb_per_s};

/// Bytes `pitch_read` reads at every point: 256 MiB (64 MiB for `calibrate --quick`),
/// 5 x L2 of an H100.
pub fn pitch_read_bytes(quick: bool) -> u64 {
    if quick { 64 << 20 } else { 256 << 20 }
}

/// The sweep's (pitch, span) points, bytes, span = rows x pitch with rows a power of
/// two: every pitch from 64 B to 1 MiB over 4 x the bytes read, 1 GiB (what a
/// request's spread costs); the span from the bytes read up to 32 x them, 8 GiB, at a
/// 64 KiB pitch (a request within one page) and at a 1 MiB pitch (16 pages a request):
/// what the whole walk's pages cost; and four of the first pitches 64 B longer, over
/// the same rows: whether the lanes' power-of-two spacing is what costs (it puts them
/// on the same DRAM channels). Every point reads whole columns: 1 <= columns <= a
/// row's float4s.
pub fn pitch_grid(quick: bool) -> Vec<(u64, u64)> {
    let read = pitch_read_bytes(quick);
    let step = if quick { 2 } else { 1 };
    let mut grid: Vec<(u64, u64)> = (6..=20).step_by(step).map(|k| (1u64 << k, 4 * read)).collect();
    for pitch in [64 << 10, 1 << 20] {
        let mut span = read;
        while span <= 32 * read {
            grid.push((pitch, span));
            span *= 2;
        }
    }
    for pitch in [256, 1 << 10, 64 << 10, 1 << 20] {
        let rows = 4 * read / pitch;
        grid.push((pitch + 64, rows * (pitch + 64)));
    }
    grid
}

/// Grid-stride iterations a thread runs at each point: one (a thread per float4, as a
/// launch of one thread per element runs) and more (as a grid sized to the GPU runs a
/// longer walk: saxpy's f32x4-strided, two).
pub const ITERATIONS: [u32; 3] = [1, 2, 4];

/// The threads of a pitch kernel's grid that walk `items` float4s in `iterations`
/// iterations each: whole blocks, at least one.
pub fn grid_threads(items: u64, iterations: u32) -> u64 {
    let block = u64::from(kernels::calibrate::pitch::BLOCK);
    items
        .div_ceil(u64::from(iterations.max(1)))
        .div_ceil(block)
        .max(1)
        * block
}

/// What threads 0 .. `wave` of a pitch kernel's grid of `grid` threads touch over a
/// view of rows (a power of two) x `pitch` bytes, `cols` float4 columns walked (index
/// g takes float4 (g mod rows, g / rows); a thread takes its own index and those a
/// grid apart, as `explain` records a thread's every iteration): (2 MiB pages,
/// distinct 64-byte segments x 64 per float4, distinct 32-byte sectors x 32 per float4).
pub fn wave_footprint(rows: u64, pitch: u64, cols: u64, wave: u64, grid: u64) -> (u64, f64, f64) {
    use std::collections::HashSet;
    let items = rows * cols;
    let threads = wave.min(grid).min(items).max(1);
    let indices = (0..threads).flat_map(|t| (t..items).step_by(grid.max(1) as usize));
    let addrs = indices.map(|g| (g % rows) * pitch + (g / rows) * 16);
    let walked = addrs.clone().count() as f64;
    let distinct = |size: u64| addrs.clone().map(|a| a / size).collect::<HashSet<u64>>().len() as u64;
    (
        distinct(PAGE_BYTES),
        (distinct(64) * 64) as f64 / walked,
        (distinct(32) * 32) as f64 / walked,
    )
}

/// The pitch sweep: at every point of [`pitch_grid`] whose span fits in free memory,
/// and each of [`ITERATIONS`], `pitch_write` of 1.0s timed, `pitch_update` (whose fixed
/// point is 1.0) timed, then `pitch_read` of what they left, its sums checked (every
/// one is 4), then timed.
/// `wave` is the threads the GPU holds at once (SMs x threads per SM). Returns the
/// points and the validation failures.
pub(super) fn pitch_sweep(
    gpu: &Gpu,
    quick: bool,
    reps: Reps,
    wave: u64,
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<PitchPoint>, Vec<String>)> {
    use kernels::calibrate::pitch::BLOCK;
    let read = pitch_read_bytes(quick);
    let threads = (read / 16) as usize;
    let (free, _) = gpu.memory()?;
    // Leave room for the sums and the driver.
    let room = free.saturating_sub(threads as u64 * 4 + (512 << 20));
    let grid: Vec<(u64, u64)> = pitch_grid(quick)
        .into_iter()
        .filter(|&(_, span)| span <= room)
        .collect();
    let Some(largest) = grid.iter().map(|&(_, span)| span).max() else {
        return Ok((
            Vec::new(),
            vec![format!(
                "pitch: {} free, too little for any point",
                format_bytes(free)
            )],
        ));
    };
    progress(&format!(
        "pitch: {} read per point, spans up to {}",
        format_bytes(read),
        format_bytes(largest)
    ));
    let src = gpu.alloc::<u32>((largest / 4) as usize)?;
    let mut out = gpu.alloc::<f32>(threads)?;
    let (read_sums, write, update) = (
        gpu.load(&entry::pitch_read)?,
        gpu.load(&entry::pitch_write)?,
        gpu.load(&entry::pitch_update)?,
    );
    // The span as the float4s the kernels walk.
    let (span_in, span_out) = (src.global_as::<Float4>(), src.global_mut_as::<Float4>());
    let mut sums = vec![0f32; threads];
    let (mut points, mut failures) = (Vec::new(), Vec::new());
    let runs = grid
        .iter()
        .flat_map(|&(pitch, span)| ITERATIONS.map(|k| (pitch, span, k)));
    for (pitch, span, iterations) in runs {
        progress(&format!(
            "pitch {} over {}, {iterations} iteration(s) a thread",
            format_bytes(pitch),
            format_bytes(span)
        ));
        let launched = grid_threads(threads as u64, iterations);
        let cfg = Launch {
            grid: ((launched / u64::from(BLOCK)) as u32, 1, 1),
            block: (BLOCK, 1, 1),
            shared_bytes: 0,
        };
        // Zeros over the span, in stream order before the write's launches: a float4
        // the write missed sums to 0, not to an earlier point's 1.0s.
        // SAFETY: the buffer lives until the syncs below.
        unsafe { src.index(..(span / 4) as usize).set_32_async(0, &gpu.stream) }
            .map_err(gpu.cuda_error("clearing the pitch span"))?;
        let rows = span / pitch;
        let (rows_log2, pitch4, cols) = (
            rows.trailing_zeros(),
            (pitch / 16) as usize,
            threads / rows as usize,
        );
        let written = time_launches(gpu, reps, || {
            write.launch(cfg, (rows_log2, pitch4, cols, 1.0f32, span_out))
        })?;
        let updated = time_launches(gpu, reps, || {
            update.launch(cfg, (rows_log2, pitch4, cols, span_out))
        })?;
        let sum_args = (rows_log2, pitch4, cols, span_in, out.global_mut());
        // SAFETY: out lives until the sync below.
        unsafe { out.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("clearing the sums"))?;
        read_sums.launch(cfg, sum_args)?;
        gpu.sync("pitch_read")?;
        out.copy_to(&mut sums[..])
            .map_err(gpu.cuda_error("copying the sums"))?;
        if let Some(g) = sums.iter().position(|&v| v != 4.0) {
            failures.push(format!(
                "pitch_read after pitch_write and pitch_update at pitch {pitch} over {span}, {iterations} iteration(s): float4 {g} summed {}, not 4",
                sums[g]
            ));
        }
        let t = time_launches(gpu, reps, || read_sums.launch(cfg, sum_args))?;
        let (wave_pages, segment_bytes_per_lane, sector_bytes_per_lane) =
            wave_footprint(rows, pitch, cols as u64, wave, launched);
        points.push(PitchPoint {
            pitch_bytes: pitch,
            span_bytes: span,
            wave_pages,
            segment_bytes_per_lane,
            sector_bytes_per_lane,
            read_gb_per_s: gb_per_s(read + read / 4, t.median_ms),
            write_gb_per_s: gb_per_s(read, written.median_ms),
            update_gb_per_s: gb_per_s(2 * read, updated.median_ms),
            iterations,
        });
    }
    Ok((points, failures))
}

/// The pitch sweep as a table, each rate also as % of the copy.
pub fn pitch_table(points: &[PitchPoint], copy_gb_per_s: f64) -> String {
    if points.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        "\npitch sweep (32 lanes one pitch apart, 16 B each; read: pitch_read, 16 B read + 4 written a thread; write: pitch_write, 16 written; update: pitch_update, 16 read + 16 written)\n",
    );
    t.push_str(&format!(
        "{:>9} {:>9} {:>10} {:>13} {:>10} {:>9} {:>6} {:>10} {:>6} {:>11} {:>6}\n",
        "pitch",
        "span",
        "iterations",
        "pages/request",
        "wave pages",
        "read GB/s",
        "%",
        "write GB/s",
        "%",
        "update GB/s",
        "%"
    ));
    let pct = |gb: f64| 100.0 * gb / copy_gb_per_s;
    for p in points {
        t.push_str(&format!(
            "{:>9} {:>9} {:>10} {:>13} {:>10} {:>9.1} {:>6.1} {:>10.1} {:>6.1} {:>11.1} {:>6.1}\n",
            format_bytes(p.pitch_bytes),
            format_bytes(p.span_bytes),
            p.iterations,
            p.pages_per_request(),
            p.wave_pages,
            p.read_gb_per_s,
            pct(p.read_gb_per_s),
            p.write_gb_per_s,
            pct(p.write_gb_per_s),
            p.update_gb_per_s,
            pct(p.update_gb_per_s)
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pitch_grid_holds_every_read_and_counts_its_pages() {
        for quick in [false, true] {
            let read = pitch_read_bytes(quick);
            let grid = pitch_grid(quick);
            for &(pitch, span) in &grid {
                assert!(
                    pitch % 16 == 0 && span % pitch == 0 && (span / pitch).is_power_of_two(),
                    "{pitch} {span}"
                );
                // The columns read (read / 16 / rows) fit in a row of pitch / 16 float4s,
                // and a warp's 32 lanes lie in 32 different rows.
                let rows = span / pitch;
                let cols = read / 16 / rows;
                assert!((1..=pitch / 16).contains(&cols) && rows >= 32, "{pitch} {span}");
            }
        }
        let full = pitch_grid(false);
        assert_eq!(full.len(), 15 + 2 * 6 + 4);
        assert_eq!(full[full.len() - 1], ((1 << 20) + 64, 1024 * ((1 << 20) + 64)));
        assert_eq!((full[0], full[14]), ((64, 1 << 30), (1 << 20, 1 << 30)));
        let at = |pitch, span| PitchPoint {
            pitch_bytes: pitch,
            span_bytes: span,
            wave_pages: 7,
            segment_bytes_per_lane: 64.0,
            sector_bytes_per_lane: 32.0,
            read_gb_per_s: 1000.0,
            write_gb_per_s: 500.0,
            update_gb_per_s: 800.0,
            iterations: 2,
        };
        // 32 lanes 64 KiB apart span one 2 MiB page; 1 MiB apart, 16.
        assert_eq!(at(64 << 10, 1 << 30).pages_per_request(), 1);
        assert_eq!(at(1 << 20, 4 << 30).pages_per_request(), 16);
        assert_eq!(at(64, 1 << 30).pages_per_request(), 1);
        let table = pitch_table(&[at(1 << 20, 4 << 30)], 2000.0);
        assert!(table.contains("1.0 GiB") || table.contains("4.0 GiB"), "{table}");
        assert!(
            table.lines().last().unwrap().ends_with(
                "2            16          7    1000.0   50.0      500.0   25.0       800.0   40.0"
            ),
            "{table}"
        );
        assert_eq!(pitch_table(&[], 2000.0), "");
        // DRAM rates: a thread's DRAM bytes over its time. A gather of 64 B a lane
        // in 20 / 1000 ns, less its 4-byte sum at the ceiling, 4 / 2000 ns.
        let p = at(64, 1 << 30);
        assert!((p.dram_gb_per_s(RequestKind::Gather, 2000.0) - 64.0 / 0.018).abs() < 1e-9);
        assert_eq!(
            p.dram_gb_per_s(RequestKind::Scatter, 2000.0),
            32.0 / (16.0 / 500.0)
        );
        assert_eq!(
            p.dram_gb_per_s(RequestKind::Update, 2000.0),
            96.0 / (32.0 / 800.0)
        );
    }

    #[test]
    fn a_wave_touches_the_pages_and_segments_of_the_rows_it_reaches() {
        let wave = 132 * 2048;
        let one = |rows: u64, cols: u64| grid_threads(rows * cols, 1);
        // 64 B apart over 1 GiB: a wave reaches 270336 rows of one column, 16.5 MiB,
        // 9 pages; every lane a segment and a sector of its own.
        assert_eq!(
            wave_footprint(1 << 24, 64, 1, wave, one(1 << 24, 1)),
            (9, 64.0, 32.0)
        );
        // 64 KiB apart over 256 MiB (4096 rows): a wave walks 66 columns of every row,
        // all 128 pages; four columns share a segment (17 segments for 66), two a sector.
        let (pages, segment, sector) = wave_footprint(4096, 64 << 10, 1024, wave, one(4096, 1024));
        assert_eq!((pages, sector), (128, 16.0));
        assert!((segment - 64.0 * 17.0 / 66.0).abs() < 1e-9, "{segment}");
        // Two iterations: the wave's threads walk columns 0..66 and 512..578 of the
        // 1024 (a grid of 512 columns' threads): the same sharing, twice the float4s.
        let grid = grid_threads(4096 * 1024, 2);
        assert_eq!(grid, 4096 * 512);
        let (pages, segment2, sector) = wave_footprint(4096, 64 << 10, 1024, wave, grid);
        assert_eq!((pages, sector), (128, 16.0));
        assert!((segment2 - 64.0 * 17.0 / 66.0).abs() < 1e-9, "{segment2}");
        // Fewer threads than the view: only the rows they read.
        assert_eq!(wave_footprint(4096, 64 << 10, 16, 64, one(4096, 16)).0, 2);
        // Grids are whole blocks: 1000 float4s in 3 iterations, 334 threads, 2 blocks.
        assert_eq!(grid_threads(1000, 3), 512);
        assert_eq!(grid_threads(0, 1), 256);
    }
}
