//! The errors of a refused lock file: each names the file, line, column and
//! key, as configuration errors do, so an editor can jump to it.

use std::fmt;
use std::path::PathBuf;

/// One problem in a lock file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LockError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// The key path, e.g. `approval[2].revision`; empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)?;
        if !self.key.is_empty() {
            write!(f, ": key `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in one lock file (never empty), in file order;
/// displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LockErrors(pub Vec<LockError>);

impl fmt::Display for LockErrors {
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
