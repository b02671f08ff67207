//! `coalesce explain`: the emulator's analysis, or predictions set beside a run or
//! beside Nsight Compute's counts.

use crate::args::ExplainArgs;
use crate::error::Result;
use crate::experiments::{self, Selection};
use crate::explain::{self, emulate::model::Model, ncu};
use crate::output::{self, Human};
use crate::progress::Progress;
use crate::report;

use super::{Outcome, check_shape, report::profile_named};

/// Variants in a selection: one progress step each.
fn variant_count(selection: &[Selection]) -> u64 {
    selection.iter().map(|s| s.count() as u64).sum()
}

/// Emulates `selection` with a progress bar.
fn emulate(selection: &[Selection], opts: &explain::Options, quiet: bool) -> Result<explain::ExplainReport> {
    let mut progress = Progress::new(variant_count(selection), quiet);
    let report = explain::explain(selection, opts, |event| match event {
        explain::ExplainEvent::Blocks {
            variant,
            done,
            of,
            left,
        } => {
            // The time left, once it is more than a glance.
            let left = if left.as_secs() >= 5 {
                format!(", about {} left", crate::progress::rough(left))
            } else {
                String::new()
            };
            progress.note(&format!("emulating {variant}: block {done} of {of}{left}"))
        }
        explain::ExplainEvent::Explained(variant) => progress.step(&format!("emulated {variant}")),
    });
    progress.finish();
    report
}

pub fn explain_command(args: ExplainArgs) -> Result<Outcome> {
    // A --json path that cannot be written fails now, not after the analysis.
    if let Some(path) = &args.json {
        output::check_file(path)?;
    }
    if let Some(path) = &args.html {
        output::check_file(path)?;
    }
    // Standard output holds one of them; the human text then goes to stderr.
    let (json, html) = (
        args.json.as_deref().filter(|p| output::is_stdout(p)),
        args.html.as_deref().filter(|p| output::is_stdout(p)),
    );
    if json.is_some() && html.is_some() {
        return Err(crate::Error::BadArgument(
            "--json and --html both name standard output, which holds one of them; give one a file".into(),
        ));
    }
    let human = Human::beside(json.or(html));
    let mut opts = explain::Options {
        size: args.size,
        shape: args.shape.map(|s| s.0),
        model: args.model,
        blocks: args.blocks as usize,
        profile: args.profile.as_deref().map(profile_named).transpose()?,
        memory_limit: explain::EMULATION_BYTES,
    };
    if let Some(dir) = &args.against_ncu {
        let found = ncu::read_dir(dir)?;
        let selection = experiments::select(&ncu::variants(&found.kernels))?;
        // ncu counts 32-byte sectors: compare with the sm70 rules whatever --model says.
        opts.model = Model::Sm70;
        let report = emulate(&selection, &opts, args.quiet)?;
        let rows = ncu::compare(&report, &found.kernels);
        human.print(&ncu::render(&rows, &report, &found));
        if let Some(path) = &args.json {
            output::write_json(path, &rows)?;
        }
        return Ok(Outcome::Ok);
    }
    let selection = experiments::select(&args.experiments)?;
    check_shape(&selection, opts.shape.as_deref())?;
    // The run to compare with is read before the analysis, so a bad file fails first.
    let run = match &args.against_run {
        Some(path) => {
            let mut all = report::from_files::load(path)?;
            if all.len() != 1 {
                return Err(crate::Error::BadResults {
                    path: path.display().to_string(),
                    why: "holds several GPUs' runs; give one".into(),
                });
            }
            Some((all.remove(0).run, path.display().to_string()))
        }
        None => None,
    };
    let report = emulate(&selection, &opts, args.quiet)?;
    if let Some((run, origin)) = run {
        let rows = explain::against_run::against(&report, &run, &origin)?;
        let products = explain::against_run::against_products(&report, &run, &origin)?;
        if !rows.is_empty() || products.is_empty() {
            human.print(&explain::against_run::render(&rows, &run.device.name));
        }
        if !products.is_empty() {
            human.print(&explain::against_run::render_products(
                &products,
                &run.device.name,
            ));
        }
        if let Some(path) = &args.json {
            output::write_json(
                path,
                &serde_json::json!({ "bandwidth": rows, "products": products }),
            )?;
        }
        return Ok(Outcome::Ok);
    }
    human.print(&explain::render::render(&report));
    if let Some(path) = &args.json {
        output::write_json(path, &report)?;
    }
    if let Some(path) = &args.html {
        // The SASS of the profile's GPU, else of the H100 explain sizes for.
        let sm = opts.profile.as_ref().and_then(|p| p.sm.as_ref()).map_or_else(
            || "sm_90".to_string(),
            |sm| {
                let [major, minor] = sm.compute_capability;
                format!("sm_{major}{minor}")
            },
        );
        output::write_file(path, &report::html::render_explain(&report, &sm))?;
    }
    Ok(Outcome::Ok)
}
