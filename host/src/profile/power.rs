//! The power of a profile (schema 7): what the board may draw, and the energy each
//! kind of work takes, measured by `coalesce calibrate` ([`crate::calibrate::power`])
//! from the board's energy counter while its compute microbenchmarks run for a second
//! or more each. A product whose work would draw more than the limit at its predicted
//! pace runs slower: the GPU lowers its clock to stay under the limit.

use serde::{Deserialize, Serialize};

/// One microbenchmark's run for the power fit: the board's mean power and the work
/// done per second, each over the same window of the energy counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerRun {
    /// The run, named by [`Energy::run`]: its kernel's name (`fma_latency`, the base,
    /// ...), or `l2_read_dram` for `l2_read` over 8 x the L2.
    pub kernel: String,
    pub watts: f64,
    /// Units a second, in its microbenchmark's units of work (warp FFMAs, warp
    /// `mma.sync`s, wgmma FLOPs, bytes).
    pub units_per_s: f64,
    pub seconds: f64,
}

/// The board's limit and the energy of each kind of work, per unit the product model
/// counts ([`crate::explain::product::Step`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerRates {
    /// The power limit the board enforces (NVML), W.
    pub limit_w: f64,
    /// The board's power while every SM runs one warp's dependent FFMA chain
    /// (`fma_latency`): clocked up and all but idle, W.
    pub base_w: f64,
    /// pJ per warp FFMA: `fma_throughput`'s power above the base over its FFMAs a second.
    pub ffma_pj: f64,
    /// pJ per warp `mma.sync` m16n8k8 TF32 (`mma_tf32_throughput`); None below sm_80.
    pub mma_tf32_pj: Option<f64>,
    /// pJ per FLOP of `wgmma` TF32, its operands read from shared memory
    /// (`wgmma_tf32_throughput`); None but on sm_90.
    pub wgmma_tf32_pj_per_flop: Option<f64>,
    /// pJ per FLOP of `wgmma` in BF16 (FP16 taken to cost the same), its operands read
    /// from shared memory (`wgmma_bf16_throughput`); None but on sm_90, and in profiles
    /// calibrated before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wgmma_16bit_pj_per_flop: Option<f64>,
    /// pJ per byte the L2 serves (`l2_read`, L2-resident).
    pub l2_pj_per_byte: f64,
    /// pJ per byte the L2 serves to the copy engine (`l2_bulk_read`); None but on sm_90.
    pub l2_bulk_pj_per_byte: Option<f64>,
    /// pJ per byte the DRAM reads, beyond its L2 energy (`l2_read` over 8 x the L2).
    pub dram_pj_per_byte: f64,
    /// The runs behind the fit, for the record.
    pub runs: Vec<PowerRun>,
}

/// What one power run prices: the base, or the energy of one kind of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Energy {
    /// The board's power while every SM runs one warp's dependent FFMA chain.
    Base,
    /// A warp FFMA.
    Ffma,
    /// A warp `mma.sync` m16n8k8 TF32.
    MmaTf32,
    /// A FLOP of `wgmma` TF32.
    WgmmaTf32,
    /// A FLOP of `wgmma` BF16 or FP16.
    Wgmma16Bit,
    /// A byte the L2 serves to loads.
    L2,
    /// A byte the L2 serves to the copy engine.
    L2Bulk,
    /// A byte the DRAM reads, beyond its L2 energy.
    Dram,
}

impl Energy {
    /// The runs [`fit`] needs, in the order calibrate makes them: the base first.
    pub const ALL: [Energy; 8] = [
        Energy::Base,
        Energy::Ffma,
        Energy::MmaTf32,
        Energy::WgmmaTf32,
        Energy::Wgmma16Bit,
        Energy::L2,
        Energy::L2Bulk,
        Energy::Dram,
    ];

    /// Its run's name in a profile ([`PowerRun::kernel`]): the kernel's, or
    /// `l2_read_dram` for the L2 kernel over 8 x the L2.
    pub const fn run(self) -> &'static str {
        match self {
            Energy::Base => "fma_latency",
            Energy::Ffma => "fma_throughput",
            Energy::MmaTf32 => "mma_tf32_throughput",
            Energy::WgmmaTf32 => "wgmma_tf32_throughput",
            Energy::Wgmma16Bit => "wgmma_bf16_throughput",
            Energy::L2 => "l2_read",
            Energy::L2Bulk => "l2_bulk_read",
            Energy::Dram => "l2_read_dram",
        }
    }
}

/// Fits the energies: each run's power above the base over its work a second; the
/// DRAM's after the L2 energy of the same bytes. Runs of kernels this GPU lacks (the
/// tensor cores' before sm_80 and sm_90) are left out and their energy is None.
pub fn fit(limit_w: f64, runs: Vec<PowerRun>) -> Result<PowerRates, String> {
    let find = |e: Energy| runs.iter().find(|r| r.kernel == e.run());
    let base = find(Energy::Base)
        .ok_or_else(|| format!("no base run ({})", Energy::Base.run()))?
        .watts;
    let above = |e: Energy, less: f64| -> Result<Option<f64>, String> {
        let Some(r) = find(e) else { return Ok(None) };
        let pj = (r.watts - base - less * r.units_per_s) / r.units_per_s * 1e12;
        if pj.is_finite() && pj > 0.0 {
            Ok(Some(pj))
        } else {
            Err(format!(
                "{} drew {:.0} W against the base's {base:.0} W: no energy to fit",
                e.run(),
                r.watts
            ))
        }
    };
    // The energies every GPU has a run for.
    let need = |e: Energy, less: f64| above(e, less)?.ok_or_else(|| format!("no {} run", e.run()));
    let l2 = need(Energy::L2, 0.0)?;
    let rates = PowerRates {
        limit_w,
        base_w: base,
        ffma_pj: need(Energy::Ffma, 0.0)?,
        mma_tf32_pj: above(Energy::MmaTf32, 0.0)?,
        wgmma_tf32_pj_per_flop: above(Energy::WgmmaTf32, 0.0)?,
        wgmma_16bit_pj_per_flop: above(Energy::Wgmma16Bit, 0.0)?,
        l2_pj_per_byte: l2,
        l2_bulk_pj_per_byte: above(Energy::L2Bulk, 0.0)?,
        dram_pj_per_byte: need(Energy::Dram, l2 * 1e-12)?,
        runs,
    };
    rates.check()?;
    Ok(rates)
}

impl PowerRates {
    /// The first value no measurement gives, or a base at or above the limit.
    pub(crate) fn check(&self) -> Result<(), String> {
        let named = [
            ("limit_w", Some(self.limit_w)),
            ("base_w", Some(self.base_w)),
            ("ffma_pj", Some(self.ffma_pj)),
            ("mma_tf32_pj", self.mma_tf32_pj),
            ("wgmma_tf32_pj_per_flop", self.wgmma_tf32_pj_per_flop),
            ("wgmma_16bit_pj_per_flop", self.wgmma_16bit_pj_per_flop),
            ("l2_pj_per_byte", Some(self.l2_pj_per_byte)),
            ("l2_bulk_pj_per_byte", self.l2_bulk_pj_per_byte),
            ("dram_pj_per_byte", Some(self.dram_pj_per_byte)),
        ];
        super::all_positive("power.", named)?;
        if self.base_w >= self.limit_w {
            return Err(format!(
                "power.base_w ({}) is not below power.limit_w ({})",
                self.base_w, self.limit_w
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn run(kernel: &str, watts: f64, units_per_s: f64) -> PowerRun {
        PowerRun {
            kernel: kernel.into(),
            watts,
            units_per_s,
            seconds: 1.5,
        }
    }

    /// Plausible H100 runs: 200 W at rest, each kernel's work priced in round numbers.
    pub(crate) fn sample_runs() -> Vec<PowerRun> {
        vec![
            run("fma_latency", 200.0, 1e6),
            // 1e12 warp FFMAs a second at 200 pJ each: 200 W.
            run("fma_throughput", 400.0, 1e12),
            run("mma_tf32_throughput", 500.0, 3e13),
            // 5e14 FLOPs a second at 0.8 pJ: 400 W.
            run("wgmma_tf32_throughput", 600.0, 5e14),
            // 1e15 FLOPs a second at 0.3 pJ: 300 W.
            run("wgmma_bf16_throughput", 500.0, 1e15),
            // 8e12 bytes a second at 25 pJ: 200 W.
            run("l2_read", 400.0, 8e12),
            // 1e13 bytes a second to the copy engine at 10 pJ: 100 W.
            run("l2_bulk_read", 300.0, 1e13),
            // 3e12 bytes: 75 W of L2 and 150 W of DRAM (50 pJ a byte).
            run("l2_read_dram", 425.0, 3e12),
        ]
    }

    pub(crate) fn sample() -> PowerRates {
        fit(700.0, sample_runs()).unwrap()
    }

    #[test]
    fn each_energy_is_its_power_above_the_base_over_its_work() {
        let p = sample();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        assert_eq!(p.base_w, 200.0);
        assert!(near(p.ffma_pj, 200.0), "{}", p.ffma_pj);
        assert!(near(p.mma_tf32_pj.unwrap(), 10.0), "{:?}", p.mma_tf32_pj);
        assert!(near(p.wgmma_tf32_pj_per_flop.unwrap(), 0.8));
        assert!(near(p.wgmma_16bit_pj_per_flop.unwrap(), 0.3));
        assert!(near(p.l2_pj_per_byte, 25.0));
        assert!(near(p.l2_bulk_pj_per_byte.unwrap(), 10.0));
        // The DRAM run's bytes pass the L2 too: its energy is what is left.
        assert!(near(p.dram_pj_per_byte, 50.0), "{}", p.dram_pj_per_byte);
    }

    #[test]
    fn a_gpu_without_tensor_cores_has_none_and_a_bad_run_is_refused() {
        let older: Vec<_> = sample_runs()
            .into_iter()
            .filter(|r| !r.kernel.contains("mma") && r.kernel != "l2_bulk_read")
            .collect();
        let p = fit(300.0, older).unwrap();
        assert_eq!((p.mma_tf32_pj, p.wgmma_tf32_pj_per_flop), (None, None));
        assert_eq!(p.wgmma_16bit_pj_per_flop, None);
        assert_eq!(p.l2_bulk_pj_per_byte, None);
        let mut flat = sample_runs();
        flat[1].watts = 190.0;
        assert_eq!(
            fit(700.0, flat).unwrap_err(),
            "fma_throughput drew 190 W against the base's 200 W: no energy to fit"
        );
        assert!(
            fit(700.0, sample_runs()[1..].to_vec())
                .unwrap_err()
                .contains("no base run")
        );
        assert!(
            fit(150.0, sample_runs())
                .unwrap_err()
                .contains("not below power.limit_w")
        );
    }
}
