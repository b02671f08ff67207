//! The tensor pipe's 16-bit wgmma FLOPs, at the profile's 16-bit rate for their N.

use super::*;

/// One warp's iteration of a 16-bit wgmma rung: a quarter of its warpgroup's
/// m64n256k16 and a few instructions.
fn hgemm() -> Step {
    Step {
        flops: 131072.0,
        instructions: 20.0,
        wgmma_flops: 131072.0,
        wgmma_16bit_flops: 131072.0,
        ..Step::default()
    }
}

/// `step`'s prediction over far more blocks than SMs, 8 warps each, where the
/// tensor pipe sets the pace.
fn run(step: Step, p: &Profile) -> ProductPrediction {
    predict(step.flops * 1e6, step, "SASS", launch(132 * 64, 256), p, None).unwrap()
}

/// `p` with its 16-bit wgmma rate set to `rate`.
fn with_16bit_rate(p: &Profile, rate: Option<f64>) -> Profile {
    let mut p = p.clone();
    if let Some(c) = p.compute.as_mut() {
        c.wgmma_16bit_flops_per_ns_per_sm = rate;
    }
    p
}

#[test]
fn sixteen_bit_wgmmas_take_the_tensor_pipe_at_their_own_rate() {
    let p = unpowered();
    let rates = p.compute.clone().unwrap();
    let per_scheduler = 1e6 / (132.0 * SCHEDULERS_PER_SM);
    let got = run(hgemm(), &p);
    assert_eq!(got.bound, ProductBound::Unit(Unit::TensorWgmma), "{got:?}");
    let bound = per_scheduler * demand(131072.0, rates.wgmma_16bit_flops_per_ns_per_sm.unwrap());
    let ns = got.time_ms * 1e6;
    assert!(
        ns >= bound * (1.0 - 1e-9) && ns <= bound * 1.05,
        "{ns} against {bound}"
    );
    assert!(got.not_modelled.iter().all(|w| !w.contains("16-bit")), "{got:?}");
    // The TF32 rate does not enter: another one changes nothing; half the 16-bit
    // rate, about twice the time.
    let mut other_tf32 = p.clone();
    other_tf32
        .compute
        .as_mut()
        .unwrap()
        .wgmma_tf32_flops_per_ns_per_sm = Some(1.0);
    assert!(close(run(hgemm(), &other_tf32).time_ms, got.time_ms));
    let half = with_16bit_rate(&p, Some(rates.wgmma_16bit_flops_per_ns_per_sm.unwrap() / 2.0));
    let slower = run(hgemm(), &half).time_ms;
    assert!(
        (slower / got.time_ms - 2.0).abs() < 0.05,
        "{slower} {}",
        got.time_ms
    );
    // Half the FLOPs TF32: each half at its own rate, their times added.
    let mixed = Step {
        wgmma_16bit_flops: 65536.0,
        ..hgemm()
    };
    let both = demand(65536.0, rates.wgmma_16bit_flops_per_ns_per_sm.unwrap())
        + demand(65536.0, rates.wgmma_tf32_flops_per_ns_per_sm.unwrap());
    let tensor = run(mixed, &p)
        .units
        .into_iter()
        .find(|u| u.unit == Unit::TensorWgmma)
        .unwrap();
    assert!(close(tensor.demand_ns, both), "{tensor:?}");
}

#[test]
fn without_a_16_bit_rate_the_prediction_says_so() {
    let p = with_16bit_rate(&sample(), None);
    let got = run(hgemm(), &p);
    let said: Vec<&String> = got
        .not_modelled
        .iter()
        .filter(|w| w.contains("16-bit wgmma"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", got.not_modelled);
    assert!(said[0].contains("coalesce calibrate"), "{said:?}");
    // No rate invented: the tensor pipe takes no time it was not measured at.
    assert!(got.units.iter().all(|u| u.unit != Unit::TensorWgmma), "{got:?}");
    // A profile whose power lacks the 16-bit energy says that too.
    let mut p = sample();
    p.power.as_mut().unwrap().wgmma_16bit_pj_per_flop = None;
    let got = run(hgemm(), &p);
    assert!(
        got.not_modelled.iter().any(|w| w.contains("16-bit wgmma FLOP")),
        "{:?}",
        got.not_modelled
    );
}

/// [`hgemm`] with its wgmma 128 wide: a quarter of an m64n128k16, twice.
fn narrow() -> Step {
    Step {
        wgmma_16bit_n128_flops: 131072.0,
        ..hgemm()
    }
}

/// The tensor pipe's demand in `got`.
fn tensor_ns(got: &ProductPrediction) -> f64 {
    got.units
        .iter()
        .find(|u| u.unit == Unit::TensorWgmma)
        .map(|u| u.demand_ns)
        .unwrap()
}

#[test]
fn a_128_wide_wgmma_runs_at_the_n128_rate_where_the_profile_has_it() {
    let p = unpowered();
    let rates = p.compute.clone().unwrap();
    let n128 = rates.wgmma_16bit_n128_flops_per_ns_per_sm.unwrap();
    let n256 = rates.wgmma_16bit_flops_per_ns_per_sm.unwrap();
    assert_ne!(n128, n256, "the sample's two rates must differ for this test");
    let got = run(narrow(), &p);
    assert_eq!(got.bound, ProductBound::Unit(Unit::TensorWgmma), "{got:?}");
    assert!(close(tensor_ns(&got), demand(131072.0, n128)), "{got:?}");
    assert!(got.not_modelled.iter().all(|w| !w.contains("16-bit")), "{got:?}");
    // The time follows the N = 128 rate, not the N = 256 one.
    let per_scheduler = 1e6 / (132.0 * SCHEDULERS_PER_SM);
    let bound = per_scheduler * demand(131072.0, n128);
    let ns = got.time_ms * 1e6;
    assert!(
        ns >= bound * (1.0 - 1e-9) && ns <= bound * 1.05,
        "{ns} against {bound}"
    );
    let mut other_n256 = p.clone();
    other_n256
        .compute
        .as_mut()
        .unwrap()
        .wgmma_16bit_flops_per_ns_per_sm = Some(n256 / 2.0);
    assert!(close(run(narrow(), &other_n256).time_ms, got.time_ms));
    // Half the iteration's FLOPs 128 wide, half 256: each at its rate, added.
    let mixed = Step {
        wgmma_16bit_n128_flops: 65536.0,
        ..hgemm()
    };
    let both = demand(65536.0, n128) + demand(65536.0, n256);
    assert!(close(tensor_ns(&run(mixed, &p)), both));
    // A 256-wide wgmma keeps the N = 256 rate.
    assert!(close(tensor_ns(&run(hgemm(), &p)), demand(131072.0, n256)));
}

#[test]
fn without_an_n128_rate_a_128_wide_wgmma_runs_at_the_n256_rate_and_says_so() {
    let mut p = unpowered();
    p.compute.as_mut().unwrap().wgmma_16bit_n128_flops_per_ns_per_sm = None;
    let n256 = p
        .compute
        .as_ref()
        .unwrap()
        .wgmma_16bit_flops_per_ns_per_sm
        .unwrap();
    let got = run(narrow(), &p);
    assert!(close(tensor_ns(&got), demand(131072.0, n256)), "{got:?}");
    let said: Vec<&String> = got
        .not_modelled
        .iter()
        .filter(|w| w.contains("N = 128"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", got.not_modelled);
    assert!(said[0].contains("coalesce calibrate"), "{said:?}");
    // A 256-wide one has nothing to say.
    let wide = run(hgemm(), &p);
    assert!(
        wide.not_modelled.iter().all(|w| !w.contains("N = 128")),
        "{wide:?}"
    );
    // Without either 16-bit rate: the one line that there is none, no N = 128 line.
    let none = with_16bit_rate(&p, None);
    let got = run(narrow(), &none);
    assert!(got.not_modelled.iter().all(|w| !w.contains("N = 128")), "{got:?}");
    assert!(
        got.not_modelled.iter().any(|w| w.contains("16-bit wgmma")),
        "{got:?}"
    );
}

#[test]
fn only_the_warps_that_run_the_loop_feed_the_tensor_pipe() {
    let p = unpowered();
    // A block of one producer and one consumer warpgroup, one block an SM: the
    // consumer's 4 warps are one a scheduler, the producer's copies another loop.
    let step = hgemm();
    let size = launch(132, 256);
    let of = |computing_warps| {
        let work = LaunchFlops {
            computing_warps,
            ..LaunchFlops::from(step.flops * 1e6)
        };
        predict(work, step, "SASS", size, &p, None).unwrap()
    };
    let (both, consumers) = (of(None), of(Some(4.0)));
    assert!(close(both.warps_per_scheduler, 2.0) && close(consumers.warps_per_scheduler, 1.0));
    // One warp a scheduler waits for its issue and its wgmmas in turn: the pipe idles
    // while it issues, where a second warp would have kept it busy.
    let busy = |got: &ProductPrediction| {
        let tensor = got.units.iter().find(|u| u.unit == Unit::TensorWgmma).unwrap();
        tensor.busy
    };
    assert!(busy(&consumers) < busy(&both), "{consumers:?}");
    assert!(consumers.time_ms > both.time_ms);
    // One warp's iteration: the issue slots' demand, then the pipe's.
    let rates = p.compute.clone().unwrap();
    let issue = demand(step.instructions, rates.issue_per_ns_per_sm);
    let pipe = demand(step.flops, rates.wgmma_16bit_flops_per_ns_per_sm.unwrap());
    assert!(
        close(busy(&consumers), pipe / (issue + pipe)),
        "{}",
        busy(&consumers)
    );
}
