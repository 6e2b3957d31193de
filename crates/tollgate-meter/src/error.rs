//! The errors of this crate and their classes.

use tollgate_core::{Classify, ErrorKind};

/// A failure of metering or usage reporting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeterError {
    /// A usage grouping that does not exist (`tollgate usage --by`).
    #[error("{0:?}: use team, cost_center, subject, server, tool or trace")]
    UnknownGroup(String),
}

impl Classify for MeterError {
    fn kind(&self) -> ErrorKind {
        // Only offline tools parse groupings; no call is refused for it.
        ErrorKind::Internal
    }
}
