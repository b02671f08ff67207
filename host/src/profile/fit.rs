//! The fits of the sweeps a profile keeps: the DRAM read granularity from its stride
//! sweep, the loaded latency from its inflight sweep. `coalesce calibrate` fits them
//! after measuring; [`refit`](mod@super::refit) fits them again. Pure functions,
//! tested on synthetic timings without a GPU.

use super::SweepPoint;

/// Strides at which every lane of a warp reads a 32-byte sector of its own and no two
/// lanes share a 64-byte segment (f32 lanes 64 and 128 bytes apart): each read costs
/// DRAM exactly its read granularity.
pub const GRANULARITY_STRIDES: [usize; 2] = [16, 32];

/// A copy whose rate is under this share of the copy ceiling can be waiting on
/// latency; above it the queueing term rho / (1 - rho) is too steep for a
/// measurement to say anything about the latency, and the point is left out of the fit.
pub const BELOW_CEILING: f64 = 0.97;

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

/// The loaded latency as fitted from the inflight sweep: at DRAM utilisation rho (the
/// read + written rate over the copy ceiling) a load waits
///
///   L(rho) = base_ns + queue_ns x rho / (1 - rho)
///
/// ns: a base latency, plus a queueing delay that grows without bound as the DRAM
/// approaches its ceiling (the M/M/1 form).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyFit {
    /// L(0): the intercept of the fit (the profile's `loaded_latency_ns`).
    pub base_ns: f64,
    /// ns of queueing per unit of rho / (1 - rho) (the profile's `queueing_latency_ns`).
    pub queue_ns: f64,
    /// Points the fit is over.
    pub used: usize,
    /// No copy was latency-bound: the latency is at most `base_ns` (and `queue_ns` is 0).
    pub upper_bound: bool,
}

impl LatencyFit {
    /// The latency at DRAM utilisation `rho` (0 <= rho < 1), ns.
    pub fn at(&self, rho: f64) -> f64 {
        self.base_ns + self.queue_ns * rho / (1.0 - rho)
    }
}

/// The latency-bound points of the inflight sweep, as (rho, L) pairs: rho = R / C and,
/// by Little's law (bytes in flight = rate x latency), L = 2 x x sm_count / R, since a
/// copy with x read bytes in flight on each of `sm_count` SMs moves 2 x sm_count bytes
/// (it writes what it reads) per latency (ns, with R in GB/s = bytes per ns).
///
/// A point is latency-bound when more bytes in flight made the copy faster: it ran
/// under [`BELOW_CEILING`] of the ceiling, every copy at the sweep's next bytes in
/// flight ran faster than it by more than the 3% that [`BELOW_CEILING`] counts as the
/// same rate, and so did every copy with as many bytes in flight or fewer. The first
/// copy that gains less marks the knee: from its bytes in flight on, the copies run at
/// their own plateau, where the variants differ by a few percent among themselves. A
/// plateau copy that a later one beats by a hair would read as a latency of thousands
/// of ns at a utilisation under 1, and drag the line's base towards zero.
pub fn latency_points(points: &[SweepPoint], sm_count: u32, copy_gb_per_s: f64) -> Vec<(f64, f64)> {
    let usable: Vec<&SweepPoint> = points
        .iter()
        .filter(|p| p.x > 0.0 && p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
        .collect();
    let gains = |p: &SweepPoint| {
        let next = usable
            .iter()
            .map(|o| o.x)
            .filter(|&x| x > p.x)
            .fold(f64::INFINITY, f64::min);
        next.is_finite()
            && usable
                .iter()
                .filter(|o| o.x == next)
                .all(|o| BELOW_CEILING * o.gb_per_s > p.gb_per_s)
    };
    let latency_bound = |p: &SweepPoint| p.gb_per_s < BELOW_CEILING * copy_gb_per_s && gains(p);
    let knee = usable
        .iter()
        .filter(|p| !latency_bound(p))
        .map(|p| p.x)
        .fold(f64::INFINITY, f64::min);
    usable
        .iter()
        .filter(|p| p.x < knee)
        .map(|p| {
            (
                p.gb_per_s / copy_gb_per_s,
                2.0 * p.x * f64::from(sm_count) / p.gb_per_s,
            )
        })
        .collect()
}

/// The loaded latency from the inflight sweep (points x = read bytes in flight per SM,
/// gb_per_s = the copy's read + written rate R): the least-squares line
///
///   L = base_ns + queue_ns x q,   q = rho / (1 - rho)
///
/// through the latency-bound points of [`latency_points`]. Fewer than two points, or a
/// line no queue gives (a latency that falls with load, or a base at or below zero),
/// leave a constant latency: queue_ns = 0 and base_ns the median of their L. When no
/// point is latency-bound, the point with the fewest bytes in flight bounds the
/// latency from above (its bytes already sufficed). `None` without a usable point.
pub fn loaded_latency(points: &[SweepPoint], sm_count: u32, copy_gb_per_s: f64) -> Option<LatencyFit> {
    let pairs = latency_points(points, sm_count, copy_gb_per_s);
    if pairs.is_empty() {
        let fewest = points
            .iter()
            .filter(|p| p.x > 0.0 && p.gb_per_s.is_finite() && p.gb_per_s > 0.0)
            .min_by(|a, b| a.x.total_cmp(&b.x))?;
        return Some(LatencyFit {
            base_ns: 2.0 * fewest.x * f64::from(sm_count) / fewest.gb_per_s,
            queue_ns: 0.0,
            used: 1,
            upper_bound: true,
        });
    }
    let n = pairs.len() as f64;
    let q: Vec<f64> = pairs.iter().map(|&(rho, _)| rho / (1.0 - rho)).collect();
    let mean_q = q.iter().sum::<f64>() / n;
    let mean_l = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = q.iter().map(|x| (x - mean_q).powi(2)).sum();
    let sxy: f64 = q
        .iter()
        .zip(&pairs)
        .map(|(x, p)| (x - mean_q) * (p.1 - mean_l))
        .sum();
    let (base_ns, queue_ns) = if sxx > 0.0 {
        let slope = sxy / sxx;
        (mean_l - slope * mean_q, slope)
    } else {
        (f64::NAN, f64::NAN)
    };
    if base_ns > 0.0 && queue_ns >= 0.0 {
        return Some(LatencyFit {
            base_ns,
            queue_ns,
            used: pairs.len(),
            upper_bound: false,
        });
    }
    let mut l: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    l.sort_by(f64::total_cmp);
    let mid = l.len() / 2;
    let median = if l.len() % 2 == 1 {
        l[mid]
    } else {
        (l[mid - 1] + l[mid]) / 2.0
    };
    Some(LatencyFit {
        base_ns: median,
        queue_ns: 0.0,
        used: pairs.len(),
        upper_bound: false,
    })
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

    /// The read + written rate of a copy with `x` read bytes in flight per SM on a GPU
    /// of `sms` SMs, ceiling `copy` and latency L(rho) = base + queue x rho / (1 - rho):
    /// the root of R = 2 x sms / L(R / copy), found by bisection (independent of the
    /// closed form `explain` uses).
    fn queued_rate(x: f64, sms: f64, copy: f64, base: f64, queue: f64) -> f64 {
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..200 {
            let rho = (lo + hi) / 2.0;
            let excess = rho * copy - 2.0 * x * sms / (base + queue * rho / (1.0 - rho));
            if excess > 0.0 { hi = rho } else { lo = rho }
        }
        copy * (lo + hi) / 2.0
    }

    #[test]
    fn loaded_latency_recovers_a_latency_that_rises_with_load() {
        // 100 SMs, a 3000 GB/s ceiling, L = 700 + 50 rho / (1 - rho) ns.
        let (sms, copy, base, queue) = (100, 3000.0, 700.0, 50.0);
        let mut points: Vec<SweepPoint> = [2048.0, 4096.0, 8192.0, 16384.0, 49152.0]
            .into_iter()
            .map(|x| point(x, queued_rate(x, 100.0, copy, base, queue)))
            .collect();
        // Past the knee the rate may fall a little as bytes in flight grow: under
        // BELOW_CEILING, but not latency-bound, so out.
        points.push(point(65536.0, 0.96 * copy));
        points.push(point(131072.0, 0.95 * copy));
        let rates: Vec<f64> = points.iter().map(|p| p.gb_per_s / copy).collect();
        // 0.19, 0.37, 0.68, 0.91 and 0.98 of copy: the last is over BELOW_CEILING.
        assert!(rates[3] < BELOW_CEILING && rates[4] > BELOW_CEILING, "{rates:?}");
        let pairs = latency_points(&points, sms, copy);
        assert_eq!(pairs.len(), 4, "{pairs:?}");
        for &(rho, l) in &pairs {
            assert!((l - (base + queue * rho / (1.0 - rho))).abs() < 1e-6, "{pairs:?}");
        }
        let fit = loaded_latency(&points, sms, copy).unwrap();
        assert!((fit.base_ns - base).abs() < 1e-6, "{fit:?}");
        assert!((fit.queue_ns - queue).abs() < 1e-6, "{fit:?}");
        assert_eq!((fit.used, fit.upper_bound), (4, false));
        assert!((fit.at(0.5) - 750.0).abs() < 1e-6);
    }

    #[test]
    fn the_measured_sweeps_give_these_latencies() {
        // Two inflight sweeps measured on an H100 and an H200: x, GB/s.
        let h100 = [
            (8192.0, 2415.962327813314),
            (16384.0, 2824.218949611766),
            (32768.0, 2988.4176228974547),
            (65536.0, 2958.234960235591),
            (32768.0, 2992.8529497177906),
            (65536.0, 2976.710344413331),
            (131072.0, 2951.0751251753018),
            (262144.0, 2902.0701560313883),
        ];
        let h200 = [
            (8192.0, 2685.672326582515),
            (16384.0, 3736.9067007685535),
            (32768.0, 4208.894910205371),
            (65536.0, 4151.406096463782),
            (32768.0, 4212.840603180581),
            (65536.0, 4068.7162474956704),
            (131072.0, 4011.6406361258887),
            (262144.0, 3936.095938955807),
        ];
        let sweep = |s: &[(f64, f64)]| s.iter().map(|&(x, r)| point(x, r)).collect::<Vec<_>>();
        // H100: f32-1 and f32-2 are latency-bound (80.7% and 94.4% of copy), at
        // L = 895.2 and 1531.5 ns; the line through them.
        let fit = loaded_latency(&sweep(&h100), 132, 2992.511376787178).unwrap();
        assert_eq!(fit.used, 2);
        assert!((fit.base_ns - 683.383).abs() < 1e-3, "{fit:?}");
        assert!((fit.queue_ns - 50.540).abs() < 1e-3, "{fit:?}");
        // H200: 63.6% and 88.5% of copy, L = 805.3 and 1157.5 ns.
        let fit = loaded_latency(&sweep(&h200), 132, 4220.187848199257).unwrap();
        assert_eq!(fit.used, 2);
        assert!((fit.base_ns - 702.226).abs() < 1e-3, "{fit:?}");
        assert!((fit.queue_ns - 58.876).abs() < 1e-3, "{fit:?}");
        assert!((fit.at(0.6363869152716707) - 805.269).abs() < 1e-3);
    }

    #[test]
    fn past_the_knee_no_copy_is_latency_bound() {
        // 132 SMs, a 7000 GB/s ceiling: two copies below the knee, then a plateau at
        // 90% of the ceiling whose variants differ by a few percent. The 65536 copy at
        // 6300 is beaten by both at 119156, one by a hair: still past the knee.
        let points = [
            point(8192.0, 3300.0),
            point(16384.0, 6000.0),
            point(32768.0, 6500.0),
            point(32768.0, 6400.0),
            point(65536.0, 6300.0),
            point(65536.0, 6600.0),
            point(119156.0, 6310.0),
            point(119156.0, 6900.0),
        ];
        let pairs = latency_points(&points, 132, 7000.0);
        let rates: Vec<f64> = pairs.iter().map(|&(rho, _)| rho * 7000.0).collect();
        assert_eq!(rates, [3300.0, 6000.0], "{pairs:?}");
        // A copy past the knee that a later step beats by more than 3% is past it still.
        let mut rebound = points.to_vec();
        rebound[6] = point(119156.0, 6800.0);
        assert_eq!(latency_points(&rebound, 132, 7000.0), pairs);
        // A copy that gains less than 3% from more bytes in flight marks the knee; so
        // does one of two copies at the same bytes in flight.
        let flat = [
            point(8192.0, 3300.0),
            point(16384.0, 6000.0),
            point(32768.0, 6100.0),
        ];
        assert_eq!(latency_points(&flat, 132, 7000.0).len(), 1);
        let split = [
            point(8192.0, 3300.0),
            point(8192.0, 5900.0),
            point(16384.0, 6000.0),
        ];
        assert!(latency_points(&split, 132, 7000.0).is_empty());
    }

    /// The L2-resident inflight sweeps of two calibrations of one H200, 59 minutes
    /// apart, as their profiles keep them (x, GB/s without the launch), and their
    /// memcpy ceilings.
    const HELD_L2: [(f64, [(f64, f64); 8]); 2] = [
        (
            7771.067468209665,
            [
                (8192.0, 3282.27057553106),
                (16384.0, 6163.260210237992),
                (32768.0, 7149.3814786044195),
                (65536.0, 7046.881356317442),
                (32768.0, 7123.478478381831),
                (65536.0, 7254.90821478837),
                (119156.36363636363, 6779.586633308066),
                (119156.36363636363, 6996.725965174672),
            ],
        ),
        (
            7650.11717384661,
            [
                (8192.0, 3293.266340600127),
                (16384.0, 5975.927143164415),
                (32768.0, 6874.405190938282),
                (65536.0, 6756.288737560825),
                (32768.0, 6971.914512101265),
                (65536.0, 7201.758106988551),
                (119156.36363636363, 6779.585782825619),
                (119156.36363636363, 6996.725784007838),
            ],
        ),
    ];

    #[test]
    fn two_calibrations_of_one_l2_give_nearly_the_same_line() {
        let fits: Vec<(f64, LatencyFit)> = HELD_L2
            .iter()
            .map(|(copy, sweep)| {
                let points: Vec<SweepPoint> = sweep.iter().map(|&(x, r)| point(x, r)).collect();
                (*copy, loaded_latency(&points, 132, *copy).unwrap())
            })
            .collect();
        // Both through f32-1 and f32-2, the copies below the knee.
        for (_, f) in &fits {
            assert_eq!((f.used, f.upper_bound), (2, false), "{f:?}");
        }
        let [(c0, a), (c1, b)] = [fits[0], fits[1]];
        assert!((a.base_ns - 648.788).abs() < 1e-3, "{a:?}");
        assert!((a.queue_ns - 13.829).abs() < 1e-3, "{a:?}");
        assert!((b.base_ns - 638.673).abs() < 1e-3, "{b:?}");
        assert!((b.queue_ns - 23.849).abs() < 1e-3, "{b:?}");
        // The bases within 2%, and the rates the two lines give any bytes in flight,
        // from a hundredth of the knee's to a hundred times it, within 5% (the
        // ceilings alone differ by 1.6%).
        assert!((a.base_ns / b.base_ns - 1.0).abs() < 0.02, "{a:?} {b:?}");
        for e in -20..=20 {
            let x = 16384.0 * 2f64.powf(f64::from(e) / 3.0);
            let ra = queued_rate(x, 132.0, c0, a.base_ns, a.queue_ns);
            let rb = queued_rate(x, 132.0, c1, b.base_ns, b.queue_ns);
            assert!((ra / rb - 1.0).abs() < 0.05, "x {x}: {ra} against {rb}");
        }
    }

    #[test]
    fn without_two_latency_bound_points_the_latency_is_constant() {
        // One latency-bound point: its Little's-law latency, no queue.
        let one = [
            point(8192.0, 2000.0),
            point(16384.0, 2990.0),
            point(32768.0, 2995.0),
        ];
        let fit = loaded_latency(&one, 132, 3000.0).unwrap();
        assert_eq!((fit.used, fit.queue_ns, fit.upper_bound), (1, 0.0, false));
        assert!(
            (fit.base_ns - 2.0 * 8192.0 * 132.0 / 2000.0).abs() < 1e-9,
            "{fit:?}"
        );
        // A latency that falls with load is noise, not a queue: the median, no queue.
        let falling = [
            point(8192.0, 2000.0),
            point(10000.0, 2600.0),
            point(65536.0, 2995.0),
        ];
        let fit = loaded_latency(&falling, 100, 3000.0).unwrap();
        assert_eq!((fit.used, fit.queue_ns), (2, 0.0));
        let l = |x: f64, r: f64| 2.0 * x * 100.0 / r;
        assert!((fit.base_ns - (l(8192.0, 2000.0) + l(10000.0, 2600.0)) / 2.0).abs() < 1e-9);
        // Every copy at the ceiling: the fewest bytes bound the latency from above.
        let points = [
            point(65536.0, 2950.0),
            point(16384.0, 2920.0),
            point(32768.0, 2990.0),
        ];
        let fit = loaded_latency(&points, 132, 3000.0).unwrap();
        assert!(fit.upper_bound);
        assert_eq!((fit.used, fit.queue_ns), (1, 0.0));
        assert!(
            (fit.base_ns - 2.0 * 16384.0 * 132.0 / 2920.0).abs() < 1e-9,
            "{fit:?}"
        );
        // The last point has no point beyond it to show the rate still rising.
        assert!(latency_points(&[point(8192.0, 1000.0)], 132, 3000.0).is_empty());
        assert_eq!(loaded_latency(&[], 132, 3000.0), None);
        assert_eq!(loaded_latency(&[point(0.0, 100.0)], 132, 3000.0), None);
    }
}
