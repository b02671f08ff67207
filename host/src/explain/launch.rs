//! What a launch adds to a kernel's own time when `run` times launch after launch
//! ([`interval_ns`]): the driver and the GPU's front end set up the next launch while
//! this one runs, so a kernel that outlasts that setup pays only the gap between one
//! kernel's end and the next one's start, and a short one the whole launch.

use crate::profile::Profile;

/// A back-to-back launch's interval, ns, for a kernel whose own work takes `work_ns`:
/// `gap + max(work, launch_ns - gap)` with the profile's `launch_ns` and
/// `launch_gap_ns` ([`crate::calibrate::launch`]). Without the gap the whole launch
/// is added (no overlap: what `run` measured on an H200, a 35 us product at 2048³
/// still paying about `launch_ns`), and without `launch_ns` nothing; each pushes the
/// line saying so to `not_modelled`.
pub fn interval_ns(work_ns: f64, profile: &Profile, not_modelled: &mut Vec<String>) -> f64 {
    let Some(launch) = profile.launch_ns else {
        not_modelled.push(format!(
            "the launch's fixed cost: the profile (schema {}) has no launch_ns; recalibrate",
            profile.schema
        ));
        return work_ns;
    };
    let gap = profile.launch_gap_ns.unwrap_or_else(|| {
        not_modelled.push(
            "the next launch's setup hidden under this one's work: the profile has no launch_gap_ns (the whole launch_ns is added); recalibrate"
                .into(),
        );
        launch
    });
    gap + work_ns.max(launch - gap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::tests::sample;

    #[test]
    fn a_long_kernel_pays_the_gap_and_a_short_one_the_launch() {
        let p = Profile {
            launch_ns: Some(3500.0),
            launch_gap_ns: Some(500.0),
            ..sample()
        };
        let mut left_out = Vec::new();
        assert_eq!(interval_ns(20_000.0, &p, &mut left_out), 20_500.0);
        assert_eq!(interval_ns(1_000.0, &p, &mut left_out), 3_500.0);
        assert!(left_out.is_empty(), "{left_out:?}");
    }

    #[test]
    fn without_the_gap_the_whole_launch_is_added_and_says_so() {
        let p = Profile {
            launch_ns: Some(3500.0),
            ..sample()
        };
        let mut left_out = Vec::new();
        assert_eq!(interval_ns(20_000.0, &p, &mut left_out), 23_500.0);
        assert_eq!(interval_ns(1_000.0, &p, &mut left_out), 4_500.0);
        assert!(left_out[0].contains("no launch_gap_ns"), "{left_out:?}");
        let bare = Profile {
            launch_ns: None,
            ..sample()
        };
        let mut left_out = Vec::new();
        assert_eq!(interval_ns(1_000.0, &bare, &mut left_out), 1_000.0);
        assert!(left_out[0].contains("no launch_ns"), "{left_out:?}");
    }
}
