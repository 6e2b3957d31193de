//! Progress of a long pass over the trail (verifying it, indexing it),
//! for a caller that shows it: bytes read so far of the bytes to read.
//!
//! The pass calls a hook with growing positions: at most once per
//! [`STEP`] bytes, and once more when it has read everything, so a hook
//! can draw a progress bar without slowing the pass down.

/// How many bytes a pass reads between two reports.
pub const STEP: u64 = 1 << 20;

/// Where a pass over the trail is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrailProgress {
    /// Bytes read so far.
    pub done: u64,
    /// Bytes the pass reads in all (at least `done`: a file that grew
    /// while it was read raises it).
    pub total: u64,
}

/// Calls a hook with a pass's positions, every [`STEP`] bytes.
pub struct ProgressReporter<'a> {
    hook: &'a mut dyn FnMut(TrailProgress),
    at: TrailProgress,
    reported: u64,
}

impl std::fmt::Debug for ProgressReporter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl<'a> ProgressReporter<'a> {
    /// A pass of `total` bytes reporting to `hook`; reports the start.
    pub fn new(total: u64, hook: &'a mut dyn FnMut(TrailProgress)) -> Self {
        let at = TrailProgress { done: 0, total };
        hook(at);
        ProgressReporter { hook, at, reported: 0 }
    }

    /// `bytes` more were read.
    pub fn advance(&mut self, bytes: u64) {
        self.at.done += bytes;
        if self.at.done - self.reported >= STEP {
            self.report();
        }
    }

    /// Report the position now (at the end of the pass).
    pub fn report(&mut self) {
        self.at.total = self.at.total.max(self.at.done);
        self.reported = self.at.done;
        (self.hook)(self.at);
    }
}

/// A hook that shows nothing.
pub fn no_progress(_: TrailProgress) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_every_step_and_at_the_end() {
        let mut seen = Vec::new();
        let mut hook = |p: TrailProgress| seen.push(p.done);
        {
            let mut r = ProgressReporter::new(3 * STEP, &mut hook);
            r.advance(STEP / 2);
            r.advance(STEP / 2);
            r.advance(STEP + 1);
            r.advance(STEP - 1);
            r.report();
        }
        assert_eq!(seen, [0, STEP, 2 * STEP + 1, 3 * STEP]);
    }

    #[test]
    fn a_file_that_grew_raises_the_total() {
        let mut last = TrailProgress::default();
        let mut hook = |p: TrailProgress| last = p;
        {
            let mut r = ProgressReporter::new(10, &mut hook);
            r.advance(15);
            r.report();
        }
        assert_eq!(last, TrailProgress { done: 15, total: 15 });
    }
}
