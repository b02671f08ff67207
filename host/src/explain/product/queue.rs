//! A warp scheduler as a closed queueing network, solved by mean value analysis.
//!
//! Each of an SM's four schedulers holds N warps (residency). A warp runs the hot
//! loop's iterations one after another; each iteration asks every unit of the SM for
//! some time (its **demand**: the issue slots its instructions take, the FMA pipe its
//! FFMAs, the L1 its wavefronts and lines, ...), and waits a fixed **delay** no unit
//! serves (latencies nothing of its own overlaps). A unit serves one request at a time,
//! so warps queue for it. With one warp the iteration takes the sum of the demands and
//! the delay; with many, the busiest unit sets the pace (1 / its demand). Between the
//! two, mean value analysis (Reiser and Lavenberg, 1980) gives the throughput exactly
//! for exponential service: for n = 1..N warps,
//!
//! ```text
//! R_k(n) = D_k x (1 + Q_k(n - 1))        the time an iteration spends at unit k
//! X(n)   = n / (Z + sum_k R_k(n))        iterations per ns
//! Q_k(n) = X(n) x R_k(n)                 warps at unit k
//! ```
//!
//! A fractional N (the warps of a block are split over the four schedulers) takes the
//! throughput interpolated between its two neighbouring whole numbers.

/// Iterations per ns that `customers` warps complete, each iteration asking
/// `demands_ns` of the units (one entry per unit) and waiting `delay_ns` besides.
/// Zero when there are no warps or no work.
pub fn throughput(demands_ns: &[f64], delay_ns: f64, customers: f64) -> f64 {
    if customers <= 0.0 || (demands_ns.iter().all(|d| *d <= 0.0) && delay_ns <= 0.0) {
        return 0.0;
    }
    let whole = customers.floor() as usize;
    let frac = customers - whole as f64;
    let (lower, upper) = mva(demands_ns, delay_ns, whole + usize::from(frac > 0.0));
    if frac > 0.0 {
        // X(0) = 0: a scheduler with less than one warp is busy that fraction of the time.
        lower + frac * (upper - lower)
    } else {
        upper
    }
}

/// X(n - 1) and X(n) by mean value analysis.
fn mva(demands: &[f64], delay: f64, n: usize) -> (f64, f64) {
    let mut queue = vec![0.0; demands.len()];
    let (mut previous, mut x) = (0.0, 0.0);
    for warps in 1..=n {
        let residence: Vec<f64> = demands.iter().zip(&queue).map(|(d, q)| d * (1.0 + q)).collect();
        previous = x;
        x = warps as f64 / (delay + residence.iter().sum::<f64>());
        for (q, r) in queue.iter_mut().zip(&residence) {
            *q = x * r;
        }
    }
    (previous, x)
}

/// The fraction of the time the unit of demand `demand_ns` is busy at throughput `x`.
pub fn utilisation(demand_ns: f64, x: f64) -> f64 {
    demand_ns * x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn one_warp_waits_for_every_unit_in_turn() {
        assert!(close(throughput(&[3.0, 2.0], 5.0, 1.0), 1.0 / 10.0));
    }

    #[test]
    fn many_warps_run_at_the_busiest_units_pace() {
        let x = throughput(&[3.0, 2.0], 5.0, 400.0);
        assert!(x <= 1.0 / 3.0 + 1e-12 && x > 0.99 / 3.0, "{x}");
    }

    #[test]
    fn two_warps_overlap_one_units_work_with_the_others() {
        // By hand: n = 1: R = (3, 2), X = 1/10, Q = (0.3, 0.2); n = 2: R = (3.9, 2.4),
        // X = 2 / (5 + 6.3).
        assert!(close(throughput(&[3.0, 2.0], 5.0, 2.0), 2.0 / 11.3));
    }

    #[test]
    fn more_warps_never_run_slower_and_never_pass_the_bound() {
        let demands = [4.0, 1.0, 2.5];
        let mut last = 0.0;
        for n in 1..64 {
            let x = throughput(&demands, 30.0, n as f64);
            assert!(x >= last && x <= 1.0 / 4.0 + 1e-12, "{n}: {x}");
            last = x;
        }
    }

    #[test]
    fn a_fraction_of_a_warp_interpolates() {
        let (one, two) = (throughput(&[1.0], 1.0, 1.0), throughput(&[1.0], 1.0, 2.0));
        assert!(close(throughput(&[1.0], 1.0, 1.5), (one + two) / 2.0));
        assert!(close(throughput(&[1.0], 1.0, 0.5), one / 2.0));
    }

    #[test]
    fn no_warps_or_no_work_is_no_throughput() {
        assert_eq!(throughput(&[1.0], 0.0, 0.0), 0.0);
        assert_eq!(throughput(&[0.0, 0.0], 0.0, 4.0), 0.0);
    }
}
