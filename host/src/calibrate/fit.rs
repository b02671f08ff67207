//! The pure arithmetic behind `coalesce calibrate` besides the fits of the sweeps a
//! profile keeps ([`crate::profile::fit`]): an inflight copy's bytes in flight, the
//! chase's cycle, per-SM rates; tested without a GPU.

pub use crate::profile::SweepPoint;

/// Elements of the chase buffer between consecutive slots: 128 bytes of `u32`, so
/// every hop lands in a 128-byte line (and so a sector and a DRAM burst) of its own.
pub const CHASE_SPACING: usize = 128 / 4;

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

/// A per-SM rate from a microbenchmark that handled `units` (lines, wavefronts) in
/// `time_ms` on `sm_count` SMs: units per ns per SM. `None` for a time that is zero
/// or not finite.
pub fn per_sm_rate(units: u64, time_ms: f64, sm_count: u32) -> Option<f64> {
    let rate = units as f64 / (time_ms * 1e6) / f64::from(sm_count.max(1));
    (time_ms > 0.0 && rate.is_finite() && rate > 0.0).then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn rates_are_per_ns_per_sm() {
        // 132 SMs, 2.64e6 lines in 1 ms: 2.64e6 / 1e6 ns / 132 = 0.02 per ns per SM.
        assert!((per_sm_rate(2_640_000, 1.0, 132).unwrap() - 0.02).abs() < 1e-15);
        assert_eq!(per_sm_rate(1, 0.0, 132), None);
        assert_eq!(per_sm_rate(1, f64::NAN, 132), None);
    }
}
