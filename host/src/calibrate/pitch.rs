//! The pitch sweep `calibrate` prints beside the profile (informational: the model does
//! not use it yet): `pitch_write` and `pitch_read` (kernels/src/pitch.rs), 32 lanes one
//! pitch apart, over a grid of pitches and spans.

use cust::memory::CopyDestination;

use crate::args;
use crate::device::Gpu;
use crate::error::Result;
use crate::launch::Launch;
use crate::timing::{Reps, time_launches};
use crate::units::{format_bytes, gb_per_s};

/// Bytes of the pages [`PitchPoint`] counts: CUDA maps device memory in 2 MiB pages.
pub const PAGE_BYTES: u64 = 2 << 20;

/// One point of the pitch sweep (kernels/src/pitch.rs): `pitch_read` gathers
/// [`pitch_read_bytes`] in float4s one pitch apart down the columns of a span of
/// rows x pitch bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct PitchPoint {
    /// Bytes between two lanes' float4s.
    pub pitch_bytes: u64,
    /// Bytes the gather walks: rows x pitch.
    pub span_bytes: u64,
    /// `pitch_read`: read + written bytes per second (16 read and 4 written per
    /// thread), GB/s.
    pub gb_per_s: f64,
    /// `pitch_write`: written bytes per second (16 per thread), GB/s.
    pub write_gb_per_s: f64,
}

impl PitchPoint {
    /// 2 MiB pages one warp request's 32 lanes span (32 x pitch bytes), rounded up.
    pub fn pages_per_request(&self) -> u64 {
        (32 * self.pitch_bytes).div_ceil(PAGE_BYTES)
    }

    /// 2 MiB pages of the span.
    pub fn pages(&self) -> u64 {
        self.span_bytes.div_ceil(PAGE_BYTES)
    }
}

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

/// The pitch sweep: at every point of [`pitch_grid`] whose span fits in free memory,
/// `pitch_write` of 1.0s timed, then `pitch_read` of what it wrote, its sums checked
/// (every one is 4), then timed. Returns the points and the validation failures.
pub(super) fn pitch_sweep(
    gpu: &Gpu,
    quick: bool,
    reps: Reps,
    progress: &mut impl FnMut(&str),
) -> Result<(Vec<PitchPoint>, Vec<String>)> {
    use kernels::pitch::BLOCK;
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
    let f = gpu.function("pitch_read")?;
    let w = gpu.function("pitch_write")?;
    let cfg = Launch {
        grid: (threads.div_ceil(BLOCK as usize) as u32, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let mut sums = vec![0f32; threads];
    let (mut points, mut failures) = (Vec::new(), Vec::new());
    for (pitch, span) in grid {
        progress(&format!(
            "pitch {} over {}",
            format_bytes(pitch),
            format_bytes(span)
        ));
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
        let write = args![rows_log2, pitch4, cols, 1.0f32, src.as_device_ptr()];
        let written = time_launches(gpu, reps, || gpu.launch(&w, cfg, &write))?;
        let words = args![rows_log2, pitch4, cols, src.as_device_ptr(), out.as_device_ptr()];
        // SAFETY: out lives until the sync below.
        unsafe { out.set_32_async(0, &gpu.stream) }.map_err(gpu.cuda_error("clearing the sums"))?;
        gpu.launch(&f, cfg, &words)?;
        gpu.sync("pitch_read")?;
        out.copy_to(&mut sums[..])
            .map_err(gpu.cuda_error("copying the sums"))?;
        if let Some(g) = sums.iter().position(|&v| v != 4.0) {
            failures.push(format!(
                "pitch_read at pitch {pitch} over {span}: thread {g} summed {}, not 4",
                sums[g]
            ));
        }
        let t = time_launches(gpu, reps, || gpu.launch(&f, cfg, &words))?;
        points.push(PitchPoint {
            pitch_bytes: pitch,
            span_bytes: span,
            gb_per_s: gb_per_s(read + read / 4, t.median_ms),
            write_gb_per_s: gb_per_s(read, written.median_ms),
        });
    }
    Ok((points, failures))
}

/// The pitch sweep as a table, each rate also as % of the copy (informational: the
/// model does not use it yet).
pub fn pitch_table(points: &[PitchPoint], copy_gb_per_s: f64) -> String {
    if points.is_empty() {
        return String::new();
    }
    let mut t = String::from(
        "\npitch sweep (32 lanes one pitch apart, 16 B each; pitch_read: read + written bytes, pitch_write: written bytes; not used by the model)\n",
    );
    t.push_str(&format!(
        "{:>9} {:>9} {:>13} {:>6} {:>9} {:>9} {:>10} {:>9}\n",
        "pitch", "span", "pages/request", "pages", "read GB/s", "% of copy", "write GB/s", "% of copy"
    ));
    for p in points {
        t.push_str(&format!(
            "{:>9} {:>9} {:>13} {:>6} {:>9.1} {:>9.1} {:>10.1} {:>9.1}\n",
            format_bytes(p.pitch_bytes),
            format_bytes(p.span_bytes),
            p.pages_per_request(),
            p.pages(),
            p.gb_per_s,
            100.0 * p.gb_per_s / copy_gb_per_s,
            p.write_gb_per_s,
            100.0 * p.write_gb_per_s / copy_gb_per_s
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
            gb_per_s: 1000.0,
            write_gb_per_s: 500.0,
        };
        // 32 lanes 64 KiB apart span one 2 MiB page; 1 MiB apart, 16.
        assert_eq!(
            (
                at(64 << 10, 1 << 30).pages_per_request(),
                at(64 << 10, 1 << 30).pages()
            ),
            (1, 512)
        );
        assert_eq!(at(1 << 20, 4 << 30).pages_per_request(), 16);
        assert_eq!(at(64, 1 << 30).pages_per_request(), 1);
        let table = pitch_table(&[at(1 << 20, 4 << 30)], 2000.0);
        assert!(table.contains("1.0 GiB") || table.contains("4.0 GiB"), "{table}");
        assert!(
            table
                .lines()
                .last()
                .unwrap()
                .ends_with("50.0      500.0      25.0"),
            "{table}"
        );
        assert_eq!(pitch_table(&[], 2000.0), "");
    }
}
