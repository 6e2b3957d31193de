//! What can go wrong between a replica and the fleet store.

use std::path::PathBuf;

use tollgate_core::{Classify, ErrorKind};

/// `Result` with this crate's [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The settings cannot describe a connection (a bad URL, unreadable
    /// TLS material).
    #[error("store settings: {0}")]
    Settings(String),
    /// No connection could be had from the pool (PostgreSQL down,
    /// unreachable, refusing the credentials, or the pool exhausted).
    #[error("cannot reach the store: {0}")]
    Unavailable(String),
    /// PostgreSQL refused or failed a statement.
    #[error("store: {context}: {source}")]
    Database {
        /// What was being done.
        context: &'static str,
        /// The error PostgreSQL's client reported.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database's schema was migrated by a newer Tollgate than this
    /// one: this binary does not know its tables and refuses to touch them.
    #[error(
        "the store's schema is at version {found}, newer than this Tollgate knows ({known}): \
         upgrade Tollgate on this replica (a schema is never migrated down)"
    )]
    SchemaTooNew {
        /// The version in `schema_migrations`.
        found: i32,
        /// The newest version this binary has.
        known: i32,
    },
    /// The database's schema is older than this binary needs and was not
    /// migrated (`tollgate store migrate`, or start with migrations on).
    #[error("the store's schema is at version {found}, this Tollgate needs {known}: run `tollgate store migrate`")]
    SchemaTooOld {
        /// The version in `schema_migrations`.
        found: i32,
        /// The newest version this binary has.
        known: i32,
    },
    /// An audit file could not be read for shipping.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// An audit file is shorter than what was shipped of it: it was
    /// truncated or replaced after shipping.
    #[error("{} is shorter than the {shipped} bytes shipped of it: it was truncated or replaced", path.display())]
    Shrunk {
        /// The file.
        path: PathBuf,
        /// Bytes shipped.
        shipped: u64,
    },
    /// A line in the store has the same place (replica, file, line) as a
    /// line being shipped but another hash: the file was rewritten after it
    /// was shipped, or two replicas share one replica id.
    #[error(
        "{file}:{line} was shipped by replica {replica:?} with another hash: the file was rewritten since, \
         or two replicas share the replica id"
    )]
    Conflict {
        /// The replica id.
        replica: String,
        /// The file name.
        file: String,
        /// The 1-based line.
        line: u64,
    },
    /// A call line in the store is not a call record this Tollgate can
    /// read.
    #[error("{place}: not an audit call record: {message}")]
    Malformed {
        /// `replica/file:line`.
        place: String,
        /// What the parser said.
        message: String,
    },
}

impl StoreError {
    /// Whether this is the schema refusing this binary (too new or too
    /// old): waiting does not help, a person must act.
    pub fn is_schema(&self) -> bool {
        matches!(self, StoreError::SchemaTooNew { .. } | StoreError::SchemaTooOld { .. })
    }

    /// A database error while doing `context`.
    pub(crate) fn db(context: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
        move |source| StoreError::Database { context, source }
    }
}

impl Classify for StoreError {
    fn kind(&self) -> ErrorKind {
        // The store is never on the request path: these surface in
        // background tasks, the CLI and the console, which report the
        // message; the class only matters if a caller is ever answered.
        ErrorKind::Internal
    }
}

/// An error and its sources, as one line (the pool's and the client's
/// errors keep the useful part, e.g. PostgreSQL's message, in a source).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}
