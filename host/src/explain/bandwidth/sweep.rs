//! What the profile's sweeps say of a kernel: the DRAM rate of its scattered requests
//! ([`crate::explain::emulate::traffic::Scattered`]) from the pitch sweep (the points
//! measured at that pitch, then between pitches), and the share of the ceiling its
//! spread keeps from the spread sweep ([`spread_factor`]).
//! docs/model.md ("Scattered requests") states the same rule.

use std::collections::BTreeMap;

use crate::profile::{PitchPoint, RequestKind, SpreadPoint, Stream};

/// The rate, GB/s, at which the DRAM moves the DRAM bytes of `kind`'s requests whose
/// lanes lie `pitch` bytes apart while the wave's requests touch `pages` 2 MiB pages
/// and each thread runs `iterations` of them a grid apart
/// ([`PitchPoint::dram_gb_per_s`], over the copy ceiling `copy_gb_per_s`): within the
/// points of one pitch, linear in log2(wave pages); between the two measured pitches
/// around `pitch`, linear in log2(pitch); that at each measured iteration count, then
/// between the two around `iterations`, linear in log2(iterations); the nearest
/// measurement beyond the ends. None without points.
pub fn dram_gb_per_s(
    points: &[PitchPoint],
    kind: RequestKind,
    pitch: u64,
    pages: u64,
    iterations: f64,
    copy_gb_per_s: f64,
) -> Option<f64> {
    let mut by_iterations: BTreeMap<u32, Vec<&PitchPoint>> = BTreeMap::new();
    for p in points {
        by_iterations.entry(p.iterations).or_default().push(p);
    }
    let curve: Vec<(f64, f64)> = by_iterations
        .iter()
        .map(|(&k, points)| {
            let rate = at_pitch_and_pages(points, kind, pitch, pages, copy_gb_per_s);
            (f64::from(k.max(1)).log2(), rate)
        })
        .collect();
    (!curve.is_empty()).then(|| interpolate(&curve, iterations.max(1.0).log2()))
}

/// [`dram_gb_per_s`] among points of one iteration count (at least one point).
fn at_pitch_and_pages(
    points: &[&PitchPoint],
    kind: RequestKind,
    pitch: u64,
    pages: u64,
    copy_gb_per_s: f64,
) -> f64 {
    // Each measured pitch: its (log2 wave pages, rate) points, one rate per page count.
    let mut columns: BTreeMap<u64, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for p in points {
        columns
            .entry(p.pitch_bytes)
            .or_default()
            .entry(p.wave_pages)
            .or_default()
            .push(p.dram_gb_per_s(kind, copy_gb_per_s));
    }
    let at_pages = |column: &BTreeMap<u64, Vec<f64>>| {
        let curve: Vec<(f64, f64)> = column
            .iter()
            .map(|(&n, rates)| (log2(n), rates.iter().sum::<f64>() / rates.len() as f64))
            .collect();
        interpolate(&curve, log2(pages))
    };
    let curve: Vec<(f64, f64)> = columns
        .iter()
        .map(|(&p, column)| (log2(p), at_pages(column)))
        .collect();
    interpolate(&curve, log2(pitch))
}

/// One stream's points of the spread sweep as (log2 spread, GB/s), by spread, one per
/// spread (the first measured where two share one); the first is the stream in order.
fn spread_curve(points: &[SpreadPoint], stream: Stream) -> Vec<(f64, f64)> {
    let mut curve: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.stream == stream)
        .map(|p| (p.spread().max(1.0).log2(), p.gb_per_s))
        .collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    curve.dedup_by(|b, a| a.0 == b.0);
    curve
}

/// `rate` of one stream's [`spread_curve`] over its rate in order, at most 1; 1 without
/// points.
fn share_of(curve: &[(f64, f64)], rate: impl FnOnce(&[(f64, f64)]) -> f64) -> f64 {
    match curve.first() {
        Some(&(_, in_order)) if in_order > 0.0 => (rate(curve) / in_order).min(1.0),
        _ => 1.0,
    }
}

/// The share of the DRAM's ceiling a kernel keeps whose first wave's reads and writes
/// spread `read_spread` and `write_spread` ([`crate::profile::spread`]): for each
/// stream, the spread sweep's rate where it spread that stream as far (linear in
/// log2(spread) between the measured points, the nearest beyond the ends) over the
/// sweep's rate in order (its least spread), at most 1; the two streams' shares
/// multiply (each one's spread costs the DRAM its own time). 1 without points.
pub fn spread_factor(points: &[SpreadPoint], read_spread: f64, write_spread: f64) -> f64 {
    let share = |stream: Stream, spread: f64| {
        share_of(&spread_curve(points, stream), |c| {
            interpolate(c, spread.max(1.0).log2())
        })
    };
    share(Stream::Reads, read_spread) * share(Stream::Writes, write_spread)
}

/// The least share [`spread_factor`] can give with these points: each stream's slowest
/// rate over its rate in order, multiplied. A kernel whose DRAM-bytes time, divided by
/// it, stays under another bound's time would be predicted the same at any spread.
pub fn least_spread_share(points: &[SpreadPoint]) -> f64 {
    let least = |stream: Stream| {
        share_of(&spread_curve(points, stream), |c| {
            c.iter()
                .map(|&(_, gb_per_s)| gb_per_s)
                .fold(f64::INFINITY, f64::min)
        })
    };
    least(Stream::Reads) * least(Stream::Writes)
}

fn log2(x: u64) -> f64 {
    (x.max(1) as f64).log2()
}

/// y at x on the piecewise-linear curve through `points` (x ascending, distinct, at
/// least one), held level beyond its ends.
fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    let (first, last) = (points[0], points[points.len() - 1]);
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        return last.1;
    }
    let i = points.iter().position(|p| p.0 >= x).unwrap_or(points.len() - 1);
    let (a, b) = (points[i - 1], points[i]);
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point whose reads run at `read` GB/s with every lane a segment of its own
    /// (64 DRAM bytes in 20 / read ns, less the sums' 4 / 2000).
    fn point(pitch: u64, pages: u64, read: f64) -> PitchPoint {
        PitchPoint {
            pitch_bytes: pitch,
            span_bytes: 1 << 30,
            wave_pages: pages,
            segment_bytes_per_lane: 64.0,
            sector_bytes_per_lane: 32.0,
            read_gb_per_s: read,
            write_gb_per_s: read / 4.0,
            update_gb_per_s: read / 2.0,
            iterations: 1,
        }
    }

    #[test]
    fn measured_points_are_their_own_rate_and_others_lie_between() {
        let sweep = [
            point(64, 9, 800.0),
            point(256, 9, 400.0),
            point(65536, 128, 1000.0),
            point(65536, 512, 500.0),
            // A second measurement of the same point: the rates' mean.
            point(65536, 512, 2000.0 / 3.0),
        ];
        let r = |pitch, pages| dram_gb_per_s(&sweep, RequestKind::Gather, pitch, pages, 1.0, 2000.0).unwrap();
        // 64 / (20 / 800 - 4 / 2000) = 64 / 0.023; at 400 GB/s 64 / 0.048.
        let (a, b) = (64.0 / 0.023, 64.0 / 0.048);
        assert!((r(64, 9) - a).abs() < 1e-9 && (r(256, 9) - b).abs() < 1e-9);
        // Halfway in log2(pitch) between 64 and 256 B.
        assert!((r(128, 9) - (a + b) / 2.0).abs() < 1e-9);
        // Beyond the ends: the nearest pitch; a pitch of one page count has that rate
        // at any pages.
        assert_eq!(r(32, 9), r(64, 9));
        assert_eq!(r(256, 4096), r(256, 9));
        // At 64 KiB: 128 pages 64 / 0.018, 512 pages the mean of 64 / 0.038 and 64 / 0.028.
        let (lo, hi) = (64.0 / 0.018, (64.0 / 0.038 + 64.0 / 0.028) / 2.0);
        assert!((r(65536, 128) - lo).abs() < 1e-9 && (r(65536, 512) - hi).abs() < 1e-9);
        assert!((r(65536, 256) - (lo + hi) / 2.0).abs() < 1e-9);
        assert_eq!(r(1 << 20, 64), r(65536, 128));
        // Each kind its own kernel's rate and DRAM bytes.
        let w = dram_gb_per_s(&sweep, RequestKind::Scatter, 64, 9, 1.0, 2000.0).unwrap();
        assert!((w - 32.0 / (16.0 / 200.0)).abs() < 1e-9);
        let u = dram_gb_per_s(&sweep, RequestKind::Update, 64, 9, 1.0, 2000.0).unwrap();
        assert!((u - 96.0 / (32.0 / 400.0)).abs() < 1e-9);
        assert_eq!(dram_gb_per_s(&[], RequestKind::Gather, 64, 9, 1.0, 2000.0), None);
        // A sweep of one iteration count has that rate at any iterations.
        assert_eq!(
            dram_gb_per_s(&sweep, RequestKind::Update, 64, 9, 3.0, 2000.0),
            Some(u)
        );
    }

    #[test]
    fn a_spread_keeps_the_share_of_the_ceiling_the_sweep_measured_as_far() {
        let at = |stream, spread: f64, gb_per_s| SpreadPoint {
            stream,
            apart: 1,
            read_spread: if stream == Stream::Reads { spread } else { 1.0 },
            write_spread: if stream == Stream::Writes { spread } else { 1.0 },
            gb_per_s,
        };
        let sweep = [
            at(Stream::Writes, 1.0, 3000.0),
            at(Stream::Writes, 4.0, 2900.0),
            at(Stream::Writes, 16.0, 2700.0),
            at(Stream::Reads, 1.0, 3000.0),
            at(Stream::Reads, 16.0, 2850.0),
        ];
        // In order, or less spread than the sweep's least: the whole ceiling.
        assert_eq!(spread_factor(&sweep, 1.0, 1.0), 1.0);
        assert_eq!(spread_factor(&sweep, 0.5, 0.9), 1.0);
        // Writes 16x spread: 2700 / 3000; 8x, halfway in log2 between 4 and 16.
        assert!((spread_factor(&sweep, 1.0, 16.0) - 0.9).abs() < 1e-12);
        assert!((spread_factor(&sweep, 1.0, 8.0) - 2800.0 / 3000.0).abs() < 1e-12);
        // More than measured: the most's share. Both streams spread: the product.
        assert!((spread_factor(&sweep, 1.0, 4096.0) - 0.9).abs() < 1e-12);
        assert!((spread_factor(&sweep, 16.0, 16.0) - 0.95 * 0.9).abs() < 1e-12);
        assert_eq!(spread_factor(&[], 1.0, 1.0), 1.0);
        // The least share: each stream's slowest over its in-order rate.
        assert!((least_spread_share(&sweep) - 0.9 * 0.95).abs() < 1e-12);
        assert_eq!(least_spread_share(&[]), 1.0);
    }

    #[test]
    fn iterations_interpolate_in_their_log2_between_those_measured() {
        let at = |k: u32, update: f64| PitchPoint {
            iterations: k,
            update_gb_per_s: update,
            ..point(65536, 128, 1000.0)
        };
        // An update of 96 DRAM bytes a float4 in 32 / 800 ns at 1 iteration, 32 / 400 at 2
        // and at 4.
        let sweep = [at(1, 800.0), at(2, 400.0), at(4, 400.0)];
        let u = |k: f64| dram_gb_per_s(&sweep, RequestKind::Update, 65536, 128, k, 2000.0).unwrap();
        let (one, two) = (96.0 / 0.04, 96.0 / 0.08);
        assert!((u(1.0) - one).abs() < 1e-9 && (u(2.0) - two).abs() < 1e-9);
        // 2^0.5 iterations: halfway; fewer than one or more than four: the ends.
        assert!((u(2f64.sqrt()) - (one + two) / 2.0).abs() < 1e-9);
        assert_eq!((u(0.5), u(16.0)), (u(1.0), u(4.0)));
        assert!((u(3.0) - two).abs() < 1e-9);
    }
}
