//! The pure fits behind `coalesce calibrate`: each profile parameter as a function
//! of the microbenchmarks' timings, tested on synthetic timings without a GPU.

use crate::profile::SweepPoint;

/// Strides at which every lane of a warp reads a 32-byte sector of its own and no two
/// lanes share a 64-byte segment (f32 lanes 64 and 128 bytes apart): each read costs
/// DRAM exactly its read granularity.
pub const GRANULARITY_STRIDES: [usize; 2] = [16, 32];

/// A copy whose rate is under this share of the copy ceiling is waiting on latency,
/// not on bandwidth: only such points enter the Little's-law fit.
pub const BELOW_CEILING: f64 = 0.9;

/// Elements of the chase buffer between consecutive slots: 128 bytes of `u32`, so
/// every hop lands in a 128-byte line (and so a sector and a DRAM burst) of its own.
pub const CHASE_SPACING: usize = 128 / 4;

/// The DRAM read granularity as fitted from the stride sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Granularity {
    /// Rounded to whole 32-byte sectors: the profile's value.
    pub bytes: u32,
    /// The raw estimate of DRAM bytes per element read, and the stride it came from.
    pub per_element: f64,
    pub stride: usize,
}

/// The DRAM read granularity from the stride sweep (points x = stride, gb_per_s = the
/// useful rate R = 8 n / t of `stride_read`, which reads n floats and writes n).
///
/// At strides 16 and 32 ([`GRANULARITY_STRIDES`]) every read costs DRAM one whole
/// granule g and the coalesced writes cost 4 bytes each. Running at the copy ceiling C
/// (read + written bytes per second), DRAM moves t C bytes in the kernel's time t, so
///
///   g = (t C - 4 n) / n = 8 C / R - 4
///
/// (n and t cancel). A kernel that runs below the ceiling overstates g, so the
/// smallest estimate of the two strides is kept, rounded to the nearest multiple of 32
/// bytes, at least 32. `None` without a usable point at those strides.
pub fn read_granularity(sweep: &[SweepPoint], copy_gb_per_s: f64) -> Option<Granularity> {
    sweep
        .iter()
        .filter(|p| GRANULARITY_STRIDES.iter().any(|&s| p.x == s as f64))
        .filter(|p| p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
        .map(|p| (8.0 * copy_gb_per_s / p.gb_per_s - 4.0, p.x as usize))
        .filter(|(g, _)| g.is_finite())
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(per_element, stride)| Granularity {
            bytes: ((per_element / 32.0).round().max(1.0) as u32) * 32,
            per_element,
            stride,
        })
}

/// Read bytes one SM keeps in flight in an inflight copy: each thread loads all its
/// `read_bytes / threads` bytes before it stores any (rounded to whole bytes), and an
/// SM holds min(threads / sm_count, max_threads_per_sm) threads at once. Registers or
/// blocks per SM may hold fewer threads than that: then this overstates the bytes in
/// flight, and the latency fitted from it.
pub fn bytes_in_flight_per_sm(read_bytes: u64, threads: u64, sm_count: u32, max_threads_per_sm: u32) -> f64 {
    let per_thread = (read_bytes as f64 / threads.max(1) as f64).round();
    let per_sm = (threads as f64 / f64::from(sm_count.max(1))).min(f64::from(max_threads_per_sm));
    per_thread * per_sm
}

/// The loaded latency as fitted from the inflight sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyFit {
    pub ns: f64,
    /// Points the median is over.
    pub used: usize,
    /// Every copy ran at the ceiling: the latency is at most `ns`.
    pub upper_bound: bool,
}

/// The loaded latency from the inflight sweep (points x = read bytes in flight per SM,
/// gb_per_s = the copy's read + written rate R), by Little's law: bytes in flight =
/// rate x latency. A copy with x read bytes in flight on each of `sm_count` SMs moves
/// 2 x sm_count bytes per latency L (it writes what it reads), so below the ceiling
///
///   L = 2 x sm_count / R   (ns, with R in GB/s = bytes per ns).
///
/// The fit is the median of L over the points under [`BELOW_CEILING`] of the copy
/// ceiling. When every point reaches the ceiling, the point with the fewest bytes in
/// flight is used: its bytes already sufficed, so its L bounds the latency from above.
/// `None` without a usable point.
pub fn loaded_latency(points: &[SweepPoint], sm_count: u32, copy_gb_per_s: f64) -> Option<LatencyFit> {
    let usable: Vec<&SweepPoint> = points
        .iter()
        .filter(|p| p.x > 0.0 && p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
        .collect();
    let latency = |p: &SweepPoint| 2.0 * p.x * f64::from(sm_count) / p.gb_per_s;
    let mut below: Vec<f64> = usable
        .iter()
        .filter(|p| p.gb_per_s < BELOW_CEILING * copy_gb_per_s)
        .map(|p| latency(p))
        .collect();
    if below.is_empty() {
        let fewest = usable.iter().min_by(|a, b| a.x.total_cmp(&b.x))?;
        return Some(LatencyFit {
            ns: latency(fewest),
            used: 1,
            upper_bound: true,
        });
    }
    below.sort_by(f64::total_cmp);
    let mid = below.len() / 2;
    let median = if below.len() % 2 == 1 {
        below[mid]
    } else {
        (below[mid - 1] + below[mid]) / 2.0
    };
    Some(LatencyFit {
        ns: median,
        used: below.len(),
        upper_bound: false,
    })
}

/// SplitMix64: a seeded generator for the chase's cycle (reproducible, no dependency).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        kernels::fill::mix64(self.0)
    }

    /// Uniform in 0..bound (multiply-shift; its bias, under bound / 2^64, is nothing here).
    fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next()) * bound as u128) >> 64) as usize
    }
}

/// The chase's buffer: `slots` slots [`CHASE_SPACING`] elements apart, slot s's first
/// element holding the index of the slot after s in one random cycle through all of
/// them (Sattolo's algorithm, seeded), so a chase from any slot visits every slot,
/// each once, in a random order no prefetcher follows. The other elements are never
/// read. `None` when `slots` is zero or an index would not fit the kernel's `u32`.
pub fn chase_buffer(slots: usize, seed: u64) -> Option<Vec<u32>> {
    let len = slots.checked_mul(CHASE_SPACING)?;
    if slots == 0 || u32::try_from(len).is_err() {
        return None;
    }
    // Sattolo: like Fisher-Yates, but j < i, never j = i, which makes next one cycle.
    let mut next: Vec<usize> = (0..slots).collect();
    let mut rng = SplitMix(seed);
    for i in (1..slots).rev() {
        let j = rng.below(i);
        next.swap(i, j);
    }
    let mut buf = vec![0u32; len];
    for (s, &n) in next.iter().enumerate() {
        buf[s * CHASE_SPACING] = (n * CHASE_SPACING) as u32;
    }
    Some(buf)
}

/// Where `steps` hops of the chase from `start` end: what the kernel must store.
pub fn follow(next: &[u32], start: u32, steps: usize) -> u32 {
    (0..steps).fold(start, |j, _| next[j as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, gb_per_s: f64) -> SweepPoint {
        SweepPoint { x, gb_per_s }
    }

    /// The useful rate of stride_read on a GPU at its copy ceiling `copy` whose DRAM
    /// reads `g` bytes per isolated read: DRAM moves (g + 4) n bytes for 8 n useful.
    fn strided_rate(copy: f64, g: f64) -> f64 {
        8.0 * copy / (g + 4.0)
    }

    #[test]
    fn granularity_recovers_the_bytes_dram_reads_per_sector() {
        for g in [32.0, 64.0, 128.0] {
            let sweep = [
                point(1.0, 2800.0),
                point(16.0, strided_rate(3000.0, g)),
                point(32.0, strided_rate(3000.0, g)),
                point(64.0, 1.0),
            ];
            let fit = read_granularity(&sweep, 3000.0).unwrap();
            assert_eq!(fit.bytes, g as u32, "{fit:?}");
            assert!((fit.per_element - g).abs() < 1e-9, "{fit:?}");
        }
    }

    #[test]
    fn granularity_takes_the_faster_stride_and_rounds_to_sectors() {
        // Stride 32 at 80% of the ceiling would say (64 + 4) / 0.8 - 4 = 81 bytes;
        // stride 16 at 95% says 67.6: the smaller is kept and rounds to 64.
        let sweep = [
            point(16.0, 0.95 * strided_rate(3000.0, 64.0)),
            point(32.0, 0.8 * strided_rate(3000.0, 64.0)),
        ];
        let fit = read_granularity(&sweep, 3000.0).unwrap();
        assert_eq!((fit.bytes, fit.stride), (64, 16), "{fit:?}");
        assert!((fit.per_element - 67.578_947).abs() < 1e-3, "{fit:?}");
        // Faster than the copy (an L2 effect) is still one sector; 47 B rounds to 32, 49 to 64.
        let at = |g: f64| read_granularity(&[point(16.0, strided_rate(3000.0, g))], 3000.0).unwrap();
        assert_eq!(at(-2.0).bytes, 32);
        assert_eq!(at(47.0).bytes, 32);
        assert_eq!(at(49.0).bytes, 64);
        // No point at 16 or 32, or no usable one: nothing to fit.
        assert_eq!(read_granularity(&[point(8.0, 300.0)], 3000.0), None);
        assert_eq!(read_granularity(&[point(16.0, 0.0)], 3000.0), None);
    }

    #[test]
    fn loaded_latency_is_littles_law_below_the_ceiling() {
        // A GPU of 100 SMs with a 1000 ns loaded latency and a 3000 GB/s ceiling: the
        // rate is 2 x bytes in flight / latency until it reaches the ceiling.
        let (sms, copy, latency) = (100, 3000.0, 1000.0);
        let points: Vec<SweepPoint> = [4096.0, 8192.0, 16384.0, 32768.0, 65536.0]
            .into_iter()
            .map(|x| point(x, (2.0 * x * sms as f64 / latency).min(copy)))
            .collect();
        // 819 and 1638 GB/s; the rest reach the ceiling, so two points are used.
        let fit = loaded_latency(&points, sms, copy).unwrap();
        assert_eq!(fit.used, 2, "{points:?}");
        assert!((fit.ns - latency).abs() < 1e-9, "{fit:?}");
        assert!(!fit.upper_bound);
        // The median, not the mean: one noisy point does not move it.
        let mut noisy = points.clone();
        noisy.push(point(2048.0, 2.0 * 2048.0 * 100.0 / 5000.0));
        noisy.push(point(3072.0, 2.0 * 3072.0 * 100.0 / 1000.0));
        assert!((loaded_latency(&noisy, sms, copy).unwrap().ns - latency).abs() < 1e-9);
    }

    #[test]
    fn at_the_ceiling_the_fewest_bytes_bound_the_latency() {
        let points = [
            point(65536.0, 2950.0),
            point(16384.0, 2900.0),
            point(32768.0, 2990.0),
        ];
        let fit = loaded_latency(&points, 132, 3000.0).unwrap();
        assert!(fit.upper_bound);
        assert_eq!(fit.used, 1);
        assert!((fit.ns - 2.0 * 16384.0 * 132.0 / 2900.0).abs() < 1e-9, "{fit:?}");
        assert_eq!(loaded_latency(&[], 132, 3000.0), None);
        assert_eq!(loaded_latency(&[point(0.0, 100.0)], 132, 3000.0), None);
    }

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        let slots = 1000;
        let buf = chase_buffer(slots, 7).unwrap();
        assert_eq!(buf.len(), slots * CHASE_SPACING);
        let mut seen = vec![false; slots];
        let mut j = 0u32;
        for _ in 0..slots {
            assert_eq!(j as usize % CHASE_SPACING, 0, "a hop inside a line");
            assert!(!std::mem::replace(&mut seen[j as usize / CHASE_SPACING], true));
            j = buf[j as usize];
        }
        assert_eq!(j, 0, "back at the start after every slot");
        assert!(seen.iter().all(|&s| s));
        assert_eq!(follow(&buf, 0, slots), 0);
        // Seeded: the same cycle every time, another for another seed; not in order.
        assert_eq!(chase_buffer(slots, 7).unwrap(), buf);
        assert_ne!(chase_buffer(slots, 8).unwrap(), buf);
        assert_ne!(buf[0], CHASE_SPACING as u32);
        assert_eq!(chase_buffer(1, 7).unwrap(), [0u32; CHASE_SPACING]);
        assert_eq!(chase_buffer(0, 7), None);
        assert_eq!(chase_buffer(1 << 27, 7), None, "indices past u32");
    }
}
