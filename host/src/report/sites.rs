//! What the emulator recorded at each access site of a kernel, as the report page shows it
//! beside the source line: kept in a report's results (the predict stage emulates
//! every kernel it predicts), so `report --from` draws the page with no emulation.

use serde::{Deserialize, Serialize};

use crate::explain::KernelReport;
use crate::explain::emulate::analyse::{Memory, SiteStats};

/// One access site: a load or store at one source location, per warp request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteNote {
    /// The source file as the emulator names it (`kernels/src/transpose.rs`).
    pub file: String,
    pub line: u32,
    /// `load`, `store`, `cp.async`, `tma load` or `tma store`.
    pub op: String,
    /// `global` or `shared`.
    pub space: String,
    /// The kernel argument a global site accesses, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<String>,
    /// Warp requests recorded (each thread's first executions of the site).
    pub requests: u64,
    /// Global: 32-byte sectors (transactions of the model) per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sectors_per_request: Option<f64>,
    /// Distinct bytes the lanes asked for, per request.
    pub useful_bytes: f64,
    /// Global: bytes the sectors move, per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_bytes: Option<f64>,
    /// Shared: wavefronts (passes) per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wavefronts: Option<f64>,
    /// Shared: bank-conflict ways per request (1: conflict-free) and the worst request's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_ways: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_ways_max: Option<u64>,
    /// How most requests' addresses fall (`coalesced`, `strided`, `bank conflicts`...).
    pub pattern: String,
}

/// Rounds to 2 decimals: what the page shows, and what results.json keeps.
fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

impl SiteNote {
    pub fn of(s: &SiteStats) -> SiteNote {
        let op = s.op_label();
        let per = |total: u64| r2(total as f64 / s.requests.max(1) as f64);
        let global = s.space == Memory::Global;
        let pattern = if s.pattern_share >= 0.995 {
            s.pattern.to_string()
        } else {
            format!("{} ({:.0}% of requests)", s.pattern, 100.0 * s.pattern_share)
        };
        SiteNote {
            file: s.file.clone(),
            line: s.line,
            op: op.into(),
            space: if global { "global" } else { "shared" }.into(),
            array: s.buffer.clone().filter(|_| global),
            requests: s.requests,
            sectors_per_request: global.then(|| r2(s.transactions_per_request())),
            useful_bytes: per(s.useful_bytes),
            fetched_bytes: global.then(|| per(s.fetched_bytes)),
            wavefronts: (!global).then(|| per(s.wavefronts)),
            bank_ways: (!global).then(|| r2(s.ways_per_request())),
            bank_ways_max: (!global).then_some(s.bank_ways_max),
            pattern,
        }
    }

    /// Every site of an explained kernel.
    pub fn of_kernel(k: &KernelReport) -> Vec<SiteNote> {
        k.sites.iter().map(SiteNote::of).collect()
    }

    /// The share of what the site moves beyond the least its bytes need, 0 to 1:
    /// global, its sectors beyond the fewest that hold its useful bytes (a broadcast,
    /// one sector for a warp's one word, wastes none); shared, the passes beyond the
    /// first.
    pub fn waste(&self) -> f64 {
        match (self.sectors_per_request, self.bank_ways) {
            (Some(s), _) if s > 0.0 => {
                let fewest = (self.useful_bytes / 32.0).max(1.0);
                (1.0 - fewest / s).clamp(0.0, 1.0)
            }
            (_, Some(w)) if w > 0.0 => (1.0 - 1.0 / w).clamp(0.0, 1.0),
            _ => 0.0,
        }
    }

    /// The site in words: `store dst: 32 sectors/req, 4 of 128 B useful (3%)`.
    pub fn describe(&self) -> String {
        let what = match &self.array {
            Some(a) => format!("{} {a}", self.op),
            None => format!("{} {}", self.op, self.space),
        };
        match (self.sectors_per_request, self.fetched_bytes) {
            (Some(s), Some(f)) => format!(
                "{what}: {} sectors/req, {} of {} B useful ({}%)",
                num(s),
                num(self.useful_bytes),
                num(f),
                num(if f > 0.0 {
                    100.0 * self.useful_bytes / f
                } else {
                    0.0
                })
            ),
            _ => format!(
                "{what}: {} wavefronts/req, {}-way banks{}, {} B/req",
                num(self.wavefronts.unwrap_or(0.0)),
                num(self.bank_ways.unwrap_or(1.0)),
                match self.bank_ways_max {
                    Some(m) if (m as f64 - self.bank_ways.unwrap_or(1.0)).abs() > 1e-9 =>
                        format!(" (max {m})"),
                    _ => String::new(),
                },
                num(self.useful_bytes)
            ),
        }
    }
}

/// How wasteful, in four classes the palette colours and the text names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Waste {
    /// Under 10% wasted.
    None,
    Some,
    Much,
    /// 75% or more wasted.
    Most,
}

impl Waste {
    pub fn of(waste: f64) -> Waste {
        match waste {
            w if w < 0.1 => Waste::None,
            w if w < 0.5 => Waste::Some,
            w if w < 0.75 => Waste::Much,
            _ => Waste::Most,
        }
    }

    /// The CSS class the palette colours.
    pub fn class(self) -> &'static str {
        match self {
            Waste::None => "w0",
            Waste::Some => "w1",
            Waste::Much => "w2",
            Waste::Most => "w3",
        }
    }
}

/// A number with up to 2 decimals, trailing zeros dropped (`32`, `4.5`, `3.33`).
pub fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(sectors: f64, useful: f64, fetched: f64) -> SiteNote {
        SiteNote {
            file: "kernels/src/x.rs".into(),
            line: 1,
            op: "store".into(),
            space: "global".into(),
            array: Some("dst".into()),
            requests: 8,
            sectors_per_request: Some(sectors),
            useful_bytes: useful,
            fetched_bytes: Some(fetched),
            wavefronts: None,
            bank_ways: None,
            bank_ways_max: None,
            pattern: "strided".into(),
        }
    }

    #[test]
    fn waste_is_what_was_fetched_and_not_asked_for() {
        let strided = global(32.0, 128.0, 1024.0);
        assert_eq!(Waste::of(strided.waste()), Waste::Most);
        assert_eq!(
            strided.describe(),
            "store dst: 32 sectors/req, 128 of 1024 B useful (12.5%)"
        );
        let coalesced = global(4.0, 128.0, 128.0);
        assert_eq!(Waste::of(coalesced.waste()), Waste::None);
        // Every lane on one word: one sector, the fewest there can be.
        let broadcast = global(1.0, 4.0, 32.0);
        assert_eq!(broadcast.waste(), 0.0);
        assert_eq!(
            broadcast.describe(),
            "store dst: 1 sectors/req, 4 of 32 B useful (12.5%)"
        );
        // Contiguous but straddling a sector: one of five.
        assert!((global(5.0, 128.0, 160.0).waste() - 0.2).abs() < 1e-12);
        let shared = SiteNote {
            space: "shared".into(),
            array: None,
            sectors_per_request: None,
            fetched_bytes: None,
            wavefronts: Some(32.0),
            bank_ways: Some(32.0),
            bank_ways_max: Some(32),
            ..global(0.0, 128.0, 0.0)
        };
        assert_eq!(Waste::of(shared.waste()), Waste::Most);
        assert_eq!(
            shared.describe(),
            "store shared: 32 wavefronts/req, 32-way banks, 128 B/req"
        );
        assert_eq!(num(3.333), "3.33");
        assert_eq!(num(4.0), "4");
    }
}
