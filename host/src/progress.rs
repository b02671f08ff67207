//! Progress of a long sweep: a bar on stderr when it is a terminal, nothing when
//! output goes to a file or a pipe or the user passed `--quiet`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One bar over a known number of steps; each step shows what it is doing.
pub struct Progress {
    bar: ProgressBar,
    started: bool,
}

impl Progress {
    /// A bar of `steps` steps, drawn only if `quiet` is false and stderr is a terminal.
    pub fn new(steps: u64, quiet: bool) -> Progress {
        Progress::with_target(steps, !quiet && std::io::stderr().is_terminal())
    }

    /// A bar drawn on stderr when `visible`, hidden otherwise.
    pub fn with_target(steps: u64, visible: bool) -> Progress {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(steps), target);
        // The template is a literal: it either parses or this is a bug we want to see in tests.
        let style = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {wide_msg}")
            .expect("valid progress template")
            .progress_chars("=> ");
        bar.set_style(style);
        if visible {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress { bar, started: false }
    }

    /// Starts the next step: the previous one is done.
    pub fn step(&mut self, what: &str) {
        if self.started {
            self.bar.inc(1);
        }
        self.started = true;
        self.bar.set_message(what.to_string());
    }

    /// Says what the current step is doing now, without finishing it.
    pub fn note(&mut self, what: &str) {
        self.bar.set_message(what.to_string());
    }

    /// Steps finished so far.
    pub fn done(&self) -> u64 {
        self.bar.position()
    }

    /// Marks the last step done and removes the bar, leaving the terminal clean.
    pub fn finish(&mut self) {
        if self.started {
            self.bar.inc(1);
            self.started = false;
        }
        self.bar.finish_and_clear();
    }
}

/// A time for a progress line: whole seconds under a minute, else minutes (and hours).
pub fn rough(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", (s + 30) / 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // An error in the middle of a sweep must not leave a half-drawn bar behind.
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rough_times_round_to_what_a_glance_needs() {
        assert_eq!(rough(Duration::from_millis(7_400)), "7 s");
        assert_eq!(rough(Duration::from_secs(150)), "3 min");
        assert_eq!(rough(Duration::from_secs(2 * 3600 + 5 * 60 + 9)), "2 h 5 min");
    }

    #[test]
    fn steps_count_when_hidden() {
        let mut p = Progress::with_target(3, false);
        p.step("a");
        assert_eq!(p.done(), 0, "a step is done when the next starts");
        p.step("b");
        p.step("c");
        assert_eq!(p.done(), 2);
        p.finish();
        assert_eq!(p.done(), 3);
    }
}
