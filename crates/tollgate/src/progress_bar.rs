//! A progress bar on stderr for the long passes over the audit trail
//! (`audit verify`, `audit index`, the index catch-up of `audit query` and
//! `usage`): bytes read of the bytes to read, with rate and time left.
//!
//! Drawn only when stderr is a terminal: in a pipe, a file, a test or CI
//! nothing is written, so stderr carries only warnings and errors.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tollgate_audit::TrailProgress;

/// How long a pass runs before its bar appears: quick ones never show.
const DELAY: Duration = Duration::from_millis(300);

/// The bar of one pass, hidden when stderr is not a terminal.
pub(crate) struct TrailBar {
    bar: Option<ProgressBar>,
}

impl TrailBar {
    /// A bar titled `what` ("verifying", "indexing").
    pub(crate) fn new(what: &'static str) -> TrailBar {
        TrailBar::to(what, std::io::stderr().is_terminal())
    }

    /// A bar drawn on stderr when `terminal`, else nothing.
    fn to(what: &'static str, terminal: bool) -> TrailBar {
        let bar = terminal.then(|| {
            let style = ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec}, {eta} left",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(style);
            bar.set_message(what);
            bar
        });
        TrailBar { bar }
    }

    /// Move the bar to `at`; the first call after [`DELAY`] shows it.
    pub(crate) fn show(&mut self, at: TrailProgress) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(at.total);
        bar.set_position(at.done);
        if bar.is_hidden() && bar.elapsed() >= DELAY {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// The hook a pass reports to.
    pub(crate) fn hook(&mut self) -> impl FnMut(TrailProgress) + '_ {
        |at| self.show(at)
    }
}

impl Drop for TrailBar {
    /// The pass is over (done or failed): the bar leaves the terminal.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_there_is_no_bar() {
        let mut bar = TrailBar::to("indexing", false);
        assert!(bar.bar.is_none());
        (bar.hook())(TrailProgress { done: 1, total: 2 });
    }

    #[test]
    fn a_bar_follows_the_pass() {
        let mut bar = TrailBar::to("verifying", true);
        (bar.hook())(TrailProgress { done: 5, total: 10 });
        let inner = bar.bar.as_ref().map(|b| (b.position(), b.length()));
        assert_eq!(inner, Some((5, Some(10))));
    }
}
