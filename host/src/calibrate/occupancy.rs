//! The register allocation unit, fitted against the driver's occupancy calculator.
//! Apart from the other fits because it runs explain's residency formula: the
//! profile reads the fits, and the residency formula reads the profile.

/// One kernel's residency as the driver's occupancy calculator gives it, with the
/// registers and static shared bytes the driver's own compilation assigned it.
#[derive(Clone, Debug, PartialEq)]
pub struct OccupancySample {
    pub kernel: String,
    pub threads_per_block: u32,
    pub registers: u32,
    pub shared_bytes: u32,
    /// cuOccupancyMaxActiveBlocksPerMultiprocessor (no dynamic shared memory).
    pub driver_blocks: u32,
}

/// The register allocation units tried, most common first: the first of equally good
/// ones is kept.
pub const ALLOCATION_UNITS: [u32; 4] = [256, 128, 512, 64];

/// The register allocation unit: the one of [`ALLOCATION_UNITS`] with which the
/// residency formula ([`crate::explain::residency::residency`], with the SM's other
/// limits `sm`) gives the driver's blocks per SM for the most samples. Returns it and
/// how many samples agree; `None` without samples.
pub fn register_allocation_unit(
    samples: &[OccupancySample],
    max_threads_per_sm: u32,
    sm: &crate::profile::SmLimits,
) -> Option<(u32, usize)> {
    use crate::explain::residency::{Resources, residency};
    if samples.is_empty() {
        return None;
    }
    let agreeing = |unit: u32| {
        let limits = crate::profile::SmLimits {
            register_allocation_unit: unit,
            ..sm.clone()
        };
        samples
            .iter()
            .filter(|s| {
                let r = Resources {
                    registers: s.registers,
                    shared_bytes: s.shared_bytes,
                };
                residency(s.threads_per_block, 0, max_threads_per_sm, Some(&limits), Some(r)).blocks
                    == s.driver_blocks
            })
            .count()
    };
    ALLOCATION_UNITS
        .iter()
        .map(|&u| (u, agreeing(u)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocation_unit_is_the_one_that_agrees_with_the_driver() {
        let sm = crate::profile::tests::sample().sm.unwrap();
        let sample = |registers, driver_blocks| OccupancySample {
            kernel: "k".into(),
            threads_per_block: 256,
            registers,
            shared_bytes: 0,
            driver_blocks,
        };
        // 42 registers: 5 blocks at a unit of 256 (1536 per warp), 6 at 64 (1344).
        let driver = [sample(42, 5), sample(8, 8), sample(64, 4)];
        assert_eq!(register_allocation_unit(&driver, 2048, &sm), Some((256, 3)));
        let at_64 = [sample(42, 6), sample(8, 8)];
        assert_eq!(register_allocation_unit(&at_64, 2048, &sm), Some((64, 2)));
        // Samples no unit tells apart keep the first.
        assert_eq!(
            register_allocation_unit(&[sample(8, 8)], 2048, &sm),
            Some((256, 1))
        );
        assert_eq!(register_allocation_unit(&[], 2048, &sm), None);
    }
}
