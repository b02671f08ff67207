//! The comparison table `explain --against-ncu` prints.

use std::collections::BTreeMap;

use super::{Agreement, COUNT_TOLERANCE, Comparison, DRAM_TOLERANCE, Measurements, unpaired};
use crate::explain::report::ExplainReport;

/// The comparison table, with each line's agreement and a count of misses.
pub fn render(rows: &[Comparison], report: &ExplainReport, found: &Measurements) -> String {
    let mut table = vec![
        [
            "experiment/variant",
            "kernel",
            "access",
            "unit",
            "predicted",
            "measured",
            "ncu requests",
            "deviation",
            "",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let opt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    for r in rows {
        table.push(vec![
            r.variant.clone(),
            r.kernel.clone(),
            r.access.into(),
            r.unit.into(),
            opt(r.predicted),
            opt(r.measured),
            r.measured_requests
                .map(|n| format!("{n:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.deviation()
                .map(|d| format!("{:+.1}%", 100.0 * d))
                .unwrap_or_else(|| "-".into()),
            match r.agreement() {
                Agreement::Match => "ok",
                Agreement::Miss => "MISS",
                Agreement::NotMeasured => "not measured",
            }
            .into(),
        ]);
    }
    let count = |v: Agreement| rows.iter().filter(|r| r.agreement() == v).count();
    let (matched, misses) = (count(Agreement::Match), count(Agreement::Miss));
    let sampled = report
        .kernels
        .iter()
        .filter(|k| k.sampled_blocks.is_some())
        .count();
    let mut out = format!(
        "predicted (coalesce explain, model sm70, {sampled} of {} kernels from sampled blocks) against measured (Nsight Compute)\n",
        report.kernels.len()
    );
    out.push_str(&crate::columns::columns(
        &table,
        crate::columns::Layout {
            right: &[false, false, false, false, true, true, true, true, false],
            ..Default::default()
        },
    ));
    out.push_str(&format!(
        "{matched} of {} within {:.0}% ({:.0}% for DRAM bytes); {misses} miss(es); {} not measured\n",
        matched + misses,
        100.0 * COUNT_TOLERANCE,
        100.0 * DRAM_TOLERANCE,
        count(Agreement::NotMeasured)
    ));
    // Which counts each access class was measured with, and for how many kernels.
    let mut used: BTreeMap<&str, BTreeMap<[&str; 2], usize>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.measured_requests.is_some()) {
        *used
            .entry(r.access)
            .or_default()
            .entry(r.measured_as)
            .or_default() += 1;
    }
    for (access, pairs) in &used {
        let pairs: Vec<String> = pairs
            .iter()
            .map(|([n, d], count)| format!("{n} / {d} ({count})"))
            .collect();
        out.push_str(&format!("{access} measured as: {}\n", pairs.join("; ")));
    }
    let lone = unpaired(report, &found.kernels);
    if !lone.is_empty() {
        out.push_str(&format!("measured, but no prediction: {}\n", lone.join(", ")));
    }
    for problem in &found.skipped {
        out.push_str(&format!("skipped {problem}\n"));
    }
    out
}
