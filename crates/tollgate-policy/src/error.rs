//! Errors of loading a policy set, each pointing at a file and line, and the
//! crate's error type.
//!
//! None of these happen on the request path: a decision never fails (an
//! evaluation error is a denial, see [`crate::Reason::Error`]). They come
//! from start, reload, `tollgate policy validate` and the file watcher.

use std::fmt;
use std::path::PathBuf;

use tollgate_core::{Classify, ErrorKind};

/// One problem in a policy directory, located as precisely as Cedar allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The file the problem is in (the directory for a directory problem).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The policy it concerns, when known (its `@id`).
    pub policy: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl SourceError {
    pub(crate) fn new(file: impl Into<PathBuf>, message: impl Into<String>) -> SourceError {
        SourceError {
            file: file.into(),
            line: None,
            column: None,
            policy: None,
            message: message.into(),
        }
    }

    pub(crate) fn at(mut self, line_col: Option<(usize, usize)>) -> SourceError {
        if let Some((line, column)) = line_col {
            self.line = Some(line);
            self.column = Some(column);
        }
        self
    }

    pub(crate) fn policy(mut self, id: impl Into<String>) -> SourceError {
        self.policy = Some(id.into());
        self
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(id) = &self.policy {
            write!(f, ": policy `{id}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SourceError {}

/// Every problem found in a policy directory (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadErrors(pub Vec<SourceError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

impl From<SourceError> for LoadErrors {
    fn from(e: SourceError) -> LoadErrors {
        LoadErrors(vec![e])
    }
}

/// The error type of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The policy set is invalid; the old one (if any) stays in force.
    #[error("invalid policy set:\n{0}")]
    Invalid(#[from] LoadErrors),
    /// The policy directory cannot be watched for changes.
    #[error("cannot watch {path} for policy changes: {source}")]
    Watch {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: notify::Error,
    },
    /// A built-in name of the Cedar model does not parse (a bug).
    #[error("internal: {0}")]
    Internal(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        // None of these is caused by a caller: they are start-up or reload
        // failures of the gateway's own configuration.
        match self {
            Error::Invalid(_) | Error::Watch { .. } | Error::Internal(_) => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_file_line_column_and_policy() {
        let e = SourceError::new("p/a.cedar", "unknown attribute `x`")
            .at(Some((3, 7)))
            .policy("team-rule");
        assert_eq!(
            e.to_string(),
            "p/a.cedar:3:7: policy `team-rule`: unknown attribute `x`"
        );
        let plain = SourceError::new("p", "no schema");
        assert_eq!(LoadErrors(vec![e, plain]).to_string().lines().count(), 2);
        let err = Error::Internal("x".into());
        assert_eq!(err.kind(), ErrorKind::Internal);
    }
}
