//! `coalesce calibrate` (a GPU's profile for `explain --profile`) and `coalesce
//! refit` (the profiles' fits again, for maintainers).

use std::path::{Path, PathBuf};

use crate::args::CalibrateArgs;
use crate::error::{Error, Result};
use crate::output::{self, Human};
use crate::profile::Profile;
use crate::progress::Progress;
use crate::run_table;

use super::{Opener, Outcome};

/// Where `calibrate --out` puts the profile.
enum ProfileOut {
    /// That file (`-`: standard output).
    File(PathBuf),
    /// `<gpu>.json` in that folder, the name host/profiles/ gives each GPU's profile.
    Folder(PathBuf),
    /// `coalesce-profile-<gpu>.json` in the current folder.
    Default,
}

impl ProfileOut {
    /// `--out` read, and checked as far as it can be before the GPU names the file.
    fn checked(out: Option<&Path>) -> Result<ProfileOut> {
        use crate::calibrate::default_path;
        let Some(out) = out else {
            // The default name needs the device's name: its folder is checked.
            output::check_file(&default_path(""))?;
            return Ok(ProfileOut::Default);
        };
        if out.is_dir() {
            output::check_dir(out)?;
            return Ok(ProfileOut::Folder(out.to_path_buf()));
        }
        if out.as_os_str().to_string_lossy().ends_with('/') {
            return Err(Error::Write {
                path: out.display().to_string(),
                source: std::io::Error::other(format!("the folder {} does not exist", out.display())),
            });
        }
        output::check_file(out)?;
        Ok(ProfileOut::File(out.to_path_buf()))
    }

    /// The file, once the GPU's name is known.
    fn path(self, device: &str) -> PathBuf {
        match self {
            ProfileOut::File(path) => path,
            ProfileOut::Folder(dir) => dir.join(format!("{}.json", crate::device::slug(device))),
            ProfileOut::Default => crate::calibrate::default_path(device),
        }
    }
}

/// `coalesce calibrate`: measures the profile and writes it, or, when a kernel fails
/// validation, says which and writes nothing.
pub fn calibrate(args: CalibrateArgs, open: Opener) -> Result<Outcome> {
    use crate::calibrate::{self as cal, Effort};
    // An unwritable file fails now, not after minutes of measuring (nor after the
    // GPU is opened).
    let out = ProfileOut::checked(args.out.as_deref())?;
    let human = Human::beside(args.out.as_deref());
    let gpu = open(args.device)?;
    let path = out.path(&gpu.info.name);
    output::check_file(&path)?;
    human.line(&format!(
        "calibrating {}",
        run_table::device_line(&gpu.info, &run_table::ptx_loaded(&gpu.info))
    ));
    let effort = Effort { quick: args.quick };
    let mut progress = Progress::new(effort.steps(), args.quiet);
    let c = cal::calibrate(&gpu, effort, |msg| progress.step(msg))?;
    progress.finish();
    if !c.failures.is_empty() {
        for f in &c.failures {
            human.line(&format!("NOT VALIDATED {f}"));
        }
        return Ok(Outcome::Invalid(c.failures.len()));
    }
    human.print(&cal::summary(&c.profile, &c.notes));
    // What the loader would refuse is refused here, before a file exists.
    let text = serde_json::to_string(&c.profile)?;
    Profile::parse(&text, &path.display().to_string())?;
    output::write_json(&path, &c.profile)?;
    let note = if args.quick {
        " (--quick: a smoke test)"
    } else {
        ""
    };
    let written = if output::is_stdout(&path) {
        "written to standard output".to_string()
    } else {
        path.display().to_string()
    };
    human.line(&format!("profile: {written}{note}"));
    Ok(Outcome::Ok)
}

/// `coalesce refit`: every file read and refitted before any is written, so a bad one
/// leaves them all as they were; then each written as `calibrate` writes a profile.
pub fn refit(paths: &[PathBuf]) -> Result<Outcome> {
    let refitted = paths
        .iter()
        .map(|path| {
            let before = Profile::load_as_written(path)?;
            let mut after = before.clone();
            crate::profile::refit(&mut after);
            output::check_file(path)?;
            Ok((path, before, after))
        })
        .collect::<Result<Vec<_>>>()?;
    for (path, before, after) in refitted {
        output::write_json(path, &after)?;
        let l2 = match (&before.l2_resident, &after.l2_resident) {
            (Some(b), Some(a)) => format!(
                ", l2_resident loaded_latency_ns {:.3} -> {:.3}, queueing_latency_ns {:.3} -> {:.3}",
                b.loaded_latency_ns, a.loaded_latency_ns, b.queueing_latency_ns, a.queueing_latency_ns
            ),
            _ => String::new(),
        };
        Human::STDOUT.line(&format!(
            "{}: dram_read_granularity {} -> {} B, loaded_latency_ns {:.3} -> {:.3}, queueing_latency_ns {:.3} -> {:.3}{l2}{}",
            path.display(),
            before.dram_read_granularity,
            after.dram_read_granularity,
            before.loaded_latency_ns,
            after.loaded_latency_ns,
            before.queueing_latency_ns,
            after.queueing_latency_ns,
            if before == after { " (unchanged)" } else { "" }
        ));
    }
    Ok(Outcome::Ok)
}
