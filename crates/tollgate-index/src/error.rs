//! The index's errors.

use std::path::PathBuf;

/// Why the index could not be built or read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The database failed.
    #[error("audit index {path}: {source}")]
    Database {
        /// The index file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// An audit file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line is not an audit record.
    #[error("{path}:{line}: not an audit record: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A file is shorter than what was indexed of it: the trail was
    /// rewritten under the index.
    #[error(
        "{path} is shorter than its indexed part: the trail changed; rebuild the index (tollgate audit index --rebuild)"
    )]
    Shrunk {
        /// The file.
        path: PathBuf,
    },
    /// The index was made by another version of Tollgate.
    #[error("audit index {path} has schema {found}, this Tollgate uses {expected}: delete it and rebuild")]
    Schema {
        /// The index file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// This version's.
        expected: i64,
    },
}

/// Tag a database error with the index path.
pub(crate) fn db(path: &std::path::Path) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
    move |source| IndexError::Database {
        path: path.to_owned(),
        source,
    }
}
