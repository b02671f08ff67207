use std::collections::BTreeMap;

use super::*;

#[test]
fn shared_counts_prefer_the_sass_level_ones_where_the_csv_has_them() {
    // sgemm/async-128x128x8 on the H100 (one launch): the l1tex counter's shared
    // load wavefronts over every issued shared load, 6 per tile of them the
    // never-executed `@!PT LDS RZ, [RZ]` ptxas puts before LDGSTS groups.
    let mut m = KernelCounts {
        variant: "sgemm/async-128x128x8".into(),
        kernel: "sgemm_async_128x128x8".into(),
        launches: 1,
        metrics: BTreeMap::from([
            (SLD_WAVEFRONTS.to_string(), 6_291_456.0),
            (SLD_INSTRUCTIONS.to_string(), 2_490_368.0),
        ]),
        first: BTreeMap::new(),
    };
    let (load, ldgsts) = (&CLASSES[2], &CLASSES[4]);
    let (ratio, requests, with) = counted(&m, load);
    assert_eq!(with, [SLD_WAVEFRONTS, SLD_INSTRUCTIONS]);
    assert_eq!(requests, Some(2_490_368.0));
    assert!((ratio.unwrap() - 2.526).abs() < 1e-3);
    // Without them (2,490,368 less 6 for each of the 65,536 tiles of a warp, counted
    // in the SASS): 3 per LDS.128.
    m.metrics.insert(SLD_INSTRUCTIONS_ON.into(), 2_097_152.0);
    assert_eq!(counted(&m, load).0, Some(3.0));
    m.metrics.insert(SLD_WAVEFRONTS_SASS.into(), 6_291_456.0);
    assert_eq!(counted(&m, load).2, [SLD_WAVEFRONTS_SASS, SLD_INSTRUCTIONS_ON]);
    // The shared writes of cp.async are measured only where ncu counted LDGSTS
    // (here made-up counts: 5 LDGSTS per tile of a warp, 1.6 wavefronts each).
    assert_eq!(counted(&m, ldgsts).0, None);
    m.metrics.insert(LDGSTS_WAVEFRONTS.into(), 524_288.0);
    m.metrics.insert(LDGSTS_INSTRUCTIONS.into(), 327_680.0);
    assert_eq!(
        counted(&m, ldgsts),
        (
            Some(1.6),
            Some(327_680.0),
            [LDGSTS_WAVEFRONTS, LDGSTS_INSTRUCTIONS]
        )
    );
}
