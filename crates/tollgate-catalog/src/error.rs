//! The catalog's errors.

use tollgate_core::{Classify, ErrorKind};

use crate::definition::Kind;

/// Result alias of this crate.
pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

/// What went wrong with a definition, a lock file or a sync.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// A definition could not be put in canonical form.
    #[error("definition cannot be canonicalized: {0}")]
    Canonical(String),
    /// A revision is not `sha256:` and 64 lowercase hex digits.
    #[error("not a revision: {0:?}")]
    Revision(String),
    /// A list entry is not a definition.
    #[error("{kind} entry: {reason}")]
    Entry {
        /// The kind of list.
        kind: Kind,
        /// What is wrong.
        reason: String,
    },
    /// The upstream could not be synced.
    #[error("sync: {0}")]
    Sync(String),
}

impl Classify for CatalogError {
    fn kind(&self) -> ErrorKind {
        match self {
            CatalogError::Sync(_) => ErrorKind::UpstreamUnavailable,
            _ => ErrorKind::Internal,
        }
    }
}
