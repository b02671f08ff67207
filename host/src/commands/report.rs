//! `coalesce report` (live, or `--from` saved results) and the `--profile`s that set
//! predictions beside the measurements (`explain --profile` reads them the same way).

use std::path::Path;
use std::time::Instant;

use crate::args::ReportArgs;
use crate::error::Result;
use crate::output::{self, Human};
use crate::profile::Profile;
use crate::progress::Progress;
use crate::report::{self, Results};
use crate::run_table;

use super::{Opener, Outcome, outcome, run_comparison, run_suite, suite_options};

/// `report --profile` (repeatable): each profile's predictions for the results of
/// its GPU (one GPU's results with another's profile is refused; with several GPUs,
/// each profile goes to its own GPU's results and must match one of them), with a
/// progress bar over the kernels emulated.
fn with_predictions(all: &mut [Results], profiles: Vec<(Profile, String)>, quiet: bool) -> Result<()> {
    let several = all.len() > 1;
    let applies = |r: &Results, p: &Profile| !several || r.run.device.name == p.device;
    let steps = profiles
        .iter()
        .flat_map(|(p, _)| {
            all.iter()
                .filter(move |r| applies(r, p))
                .map(move |r| report::predicted::steps(r, p) + report::sweep::steps(r, p))
        })
        .sum();
    let mut progress = Progress::new(steps, quiet);
    for (profile, origin) in profiles {
        let mut used = false;
        for r in all.iter_mut() {
            if !applies(r, &profile) {
                continue;
            }
            let device = r.run.device.name.clone();
            r.predicted = report::predicted::predict(r, profile.clone(), &origin, |kernel| {
                progress.step(&format!("predicted {kernel} on {device}"))
            })?;
            report::sweep::predict(r, &profile, &origin, |kernel| {
                progress.step(&format!("predicted {kernel} on {device} at another size"))
            })?;
            used = true;
        }
        if !used {
            return Err(crate::Error::BadProfile {
                path: origin,
                why: format!(
                    "measured on {}, which none of the results come from",
                    profile.device
                ),
            });
        }
    }
    progress.finish();
    Ok(())
}

/// A GPU no profile predicted for gets the emulation alone, so that its page still
/// sets each line's accesses beside the source.
fn emulate_unpredicted(all: &mut [Results], quiet: bool) -> Result<()> {
    let bare = |r: &Results| r.predicted.is_empty();
    let steps = all
        .iter()
        .filter(|r| bare(r))
        .map(report::predicted::emulate_steps)
        .sum();
    if steps == 0 {
        return Ok(());
    }
    let mut progress = Progress::new(steps, quiet);
    for r in all.iter_mut().filter(|r| bare(r)) {
        let device = r.run.device.name.clone();
        r.emulated = report::predicted::emulate(r, |kernel| {
            progress.step(&format!("emulated {kernel} for the page ({device})"))
        })?;
    }
    progress.finish();
    Ok(())
}

/// Every `--profile` of a report, read before any work: `None` when none is given,
/// no profile for `--profile none`.
fn profiles_named(names: &[String]) -> Result<Option<Vec<(Profile, String)>>> {
    if names.is_empty() {
        return Ok(None);
    }
    if names.iter().any(|n| n == "none") {
        if names.len() > 1 {
            return Err(crate::Error::BadProfile {
                path: "none".into(),
                why: "--profile none leaves predictions out; it takes no other --profile".into(),
            });
        }
        return Ok(Some(Vec::new()));
    }
    names
        .iter()
        .map(|n| Ok((profile_named(n)?, n.clone())))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// A live report's profiles when none is named: the one that ships for each GPU
/// that ran, where one does (the driver's exact name).
fn shipped_profiles(devices: &[&str]) -> Result<Vec<(Profile, String)>> {
    let mut out: Vec<(Profile, String)> = Vec::new();
    for &device in devices {
        if out.iter().any(|(p, _)| p.device == device) {
            continue;
        }
        if let Some((name, text)) = crate::profile::SHIPPED.iter().find(|(name, _)| *name == device) {
            let origin = format!("the shipped profile of {name}");
            out.push((Profile::parse(text, &origin)?, origin));
        }
    }
    Ok(out)
}

/// Whether a `--profile` that names nothing there was meant as a file: it has a
/// folder or ends in `.json`. A missing file is then a file that cannot be read
/// (exit 1), not an unknown GPU name (exit 2).
fn names_a_file(what: &str) -> bool {
    what.contains('/') || what.to_ascii_lowercase().ends_with(".json")
}

/// `--profile`: a file, or a shipped profile by its GPU's name.
pub(super) fn profile_named(what: &str) -> Result<Profile> {
    use crate::profile::SHIPPED;
    let path = Path::new(what);
    if path.exists() || names_a_file(what) {
        return Profile::load(path);
    }
    Profile::shipped(what).unwrap_or_else(|| {
        let shipped: Vec<&str> = SHIPPED.iter().map(|(name, _)| *name).collect();
        Err(crate::Error::BadProfile {
            path: what.to_string(),
            why: format!(
                "no such file, and no profile ships for a GPU of that name (shipped: {})",
                if shipped.is_empty() {
                    "none yet".to_string()
                } else {
                    shipped.join(", ")
                }
            ),
        })
    })
}

/// `report --from`: saved results rendered, nothing run.
fn report_from(args: &ReportArgs) -> Result<Outcome> {
    let s = &args.suite;
    if !s.experiments.is_empty() || s.size.is_some() || s.shape.is_some() || args.rust_only {
        return Err(crate::Error::BadArgument(
            "--from renders saved results as they are; it takes no experiments, --size, --shape or --rust-only"
                .into(),
        ));
    }
    output::check_dir(&args.out)?;
    // Saved results are rendered as they are: predictions only where asked for.
    let profiles = profiles_named(&args.profile)?.unwrap_or_default();
    let mut all = report::from_files::load_all(&args.from)?;
    with_predictions(&mut all, profiles, args.suite.quiet)?;
    let files = report::write_from(&args.out, &all)?;
    Human::STDOUT.line(&format!(
        "report: {} ({} files, from {} results file(s))",
        files[0].display(),
        files.len(),
        args.from.len()
    ));
    Ok(outcome(all.iter().map(Results::failures).sum()))
}

pub fn write_report(args: ReportArgs, open: Opener) -> Result<Outcome> {
    if !args.from.is_empty() {
        return report_from(&args);
    }
    let (selection, opts) = suite_options(&args.suite)?;
    // A bad --out or --profile fails now, not after the whole suite has run; nothing
    // is made until there is something to write.
    output::check_dir(&args.out)?;
    let profiles = profiles_named(&args.profile)?;
    let human = Human::STDOUT;
    let mut all = Vec::new();
    for d in args.suite.device.ordinals()? {
        let start = Instant::now();
        all.push(if args.rust_only {
            let run = run_suite(&args.suite, d, &selection, &opts, open)?;
            human.print(&run_table::render(&run));
            Results {
                elapsed_s: start.elapsed().as_secs_f64(),
                run,
                compare: None,
                predicted: Vec::new(),
                emulated: Vec::new(),
                other_sizes: Vec::new(),
            }
        } else {
            // The comparison times the same Rust kernels through the same harness
            // (and falls back to them alone where NVRTC is missing), so it replaces
            // the run.
            let c = run_comparison(&args.suite, d, &selection, &opts, None, open)?;
            human.print(&crate::compare::render::render(&c));
            Results::of_comparison(start.elapsed().as_secs_f64(), c)
        });
    }
    let profiles = match profiles {
        Some(named) => named,
        None => {
            let devices: Vec<&str> = all.iter().map(|r| r.run.device.name.as_str()).collect();
            shipped_profiles(&devices)?
        }
    };
    with_predictions(&mut all, profiles, args.suite.quiet)?;
    emulate_unpredicted(&mut all, args.suite.quiet)?;
    let files = report::write_live(&args.out, &all)?;
    let took: f64 = all.iter().map(|r| r.elapsed_s).sum();
    human.line(&format!(
        "\nreport: {} ({} files, run took {took:.0} s)",
        files[0].display(),
        files.len()
    ));
    Ok(outcome(all.iter().map(Results::failures).sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_report_predicts_with_the_profile_that_ships_for_its_gpu() {
        let h100 = "NVIDIA H100 80GB HBM3";
        let got = shipped_profiles(&[h100, "NVIDIA B300", h100]).unwrap();
        assert_eq!(got.len(), 1, "one profile per GPU model");
        assert_eq!(got[0].0.device, h100);
        assert_eq!(got[0].1, format!("the shipped profile of {h100}"));
        // Only the exact name: a GPU named like a shipped one is another GPU.
        assert!(shipped_profiles(&["NVIDIA H100 PCIe"]).unwrap().is_empty());
        assert_eq!(shipped_profiles(&[h100, "NVIDIA H200"]).unwrap().len(), 2);
    }

    #[test]
    fn profile_none_means_no_predictions() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(profiles_named(&[]).unwrap().is_none());
        assert!(profiles_named(&names(&["none"])).unwrap().unwrap().is_empty());
        let named = profiles_named(&names(&["H200"])).unwrap().unwrap();
        assert_eq!(named[0].0.device, "NVIDIA H200");
        let e = profiles_named(&names(&["none", "H100"])).unwrap_err().to_string();
        assert!(e.contains("--profile none leaves predictions out"), "{e}");
    }

    #[test]
    fn a_missing_profile_file_is_unreadable_and_an_unknown_name_is_a_bad_argument() {
        let e = profile_named("no/such/profile.json").unwrap_err();
        assert!(
            e.to_string().starts_with("cannot read no/such/profile.json"),
            "{e}"
        );
        assert_eq!(e.exit_code(), 1);
        let e = profile_named("gpu.JSON").unwrap_err();
        assert_eq!(e.exit_code(), 1, "{e}");
        let e = profile_named("NVIDIA B300").unwrap_err();
        assert!(e.to_string().contains("no profile ships"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
}
