//! Errors of the sink, verification and queries, and their classes.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use tollgate_core::{Classify, ErrorKind};

/// A failure of the audit sink.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The audit directory or its first file could not be set up.
    #[error("cannot set up the audit trail in {}: {source}", path.display())]
    Setup {
        /// The directory or file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Arc<io::Error>,
    },
    /// A record could not be written or synced.
    #[error("cannot write the audit file {}: {source}", path.display())]
    Write {
        /// The file, or the directory when no file could be opened.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Arc<io::Error>,
    },
    /// A record could not be encoded (a bug).
    #[error("cannot encode an audit record: {0}")]
    Encode(String),
    /// The writer has stopped (shutdown).
    #[error("the audit writer has stopped")]
    Closed,
}

impl Classify for AuditError {
    fn kind(&self) -> ErrorKind {
        match self {
            // Strict mode fails closed: refuse the call with 503 until the
            // audit files can be written again.
            AuditError::Write { .. } => ErrorKind::Overloaded,
            AuditError::Closed => ErrorKind::ShuttingDown,
            AuditError::Setup { .. } | AuditError::Encode(_) => ErrorKind::Internal,
        }
    }
}

/// Why a trail failed verification.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// No audit file was given or found.
    #[error("no audit files found")]
    NoFiles,
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The first record that breaks the chain.
    #[error("{0}")]
    Tampered(Box<Tampering>),
}

impl Classify for VerifyError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Internal
    }
}

/// Where the chain first breaks, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tampering {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line of the first record that cannot be trusted.
    pub line: u64,
    /// What is wrong there.
    pub problem: Problem,
}

impl fmt::Display for Tampering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.problem)
    }
}

/// What is wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// Not a JSON audit line.
    Malformed(String),
    /// Written by a schema version this build does not know.
    UnknownVersion(u32),
    /// The file does not start with a genesis record.
    NoGenesis,
    /// The record's bytes do not hash to the next record's `prev`: this
    /// record (or the next one's `prev`) was changed.
    Edited,
    /// Records are missing before this one (`missing` by sequence number).
    Deleted {
        /// How many sequence numbers are skipped.
        missing: u64,
    },
    /// This record was moved or inserted.
    OutOfOrder,
    /// The file ends inside a record (`bytes` after the last newline) and
    /// no later file accounts for it.
    Truncated {
        /// Length of the partial record.
        bytes: u64,
    },
    /// This file's genesis does not continue the previous file: records at
    /// its end, or whole files, are missing or were changed.
    Discontinuity {
        /// The file the genesis names as its predecessor.
        expected_previous: Option<String>,
    },
    /// The last file has no seal, and a sealed trail was required.
    NotSealed,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Malformed(why) => write!(f, "not an audit record ({why})"),
            Problem::UnknownVersion(v) => write!(f, "unknown record schema version {v}"),
            Problem::NoGenesis => f.write_str("the file does not start with a genesis record"),
            Problem::Edited => f.write_str("record was edited (its hash does not match the next record's prev)"),
            Problem::Deleted { missing } => write!(f, "{missing} record(s) deleted before this one"),
            Problem::OutOfOrder => f.write_str("record is out of order or was inserted"),
            Problem::Truncated { bytes } => write!(f, "file truncated inside a record ({bytes} bytes)"),
            Problem::Discontinuity { expected_previous } => match expected_previous {
                Some(prev) => write!(
                    f,
                    "does not continue the previous file: {prev} is missing, truncated or changed"
                ),
                None => f.write_str("does not continue the previous file: records or files are missing"),
            },
            Problem::NotSealed => f.write_str("the trail ends without a seal (truncated, or still being written)"),
        }
    }
}

/// A failure reading records for a query or usage report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A line is not a valid audit record.
    #[error("{}:{line}: not an audit record: {message}", file.display())]
    Malformed {
        /// The file.
        file: PathBuf,
        /// The 1-based line.
        line: u64,
        /// The parse error.
        message: String,
    },
}

impl Classify for QueryError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Internal
    }
}
