//! The audit index: an embedded SQLite database beside an audit trail that
//! answers `tollgate audit query` and `tollgate usage` without
//! reading every record of every file.
//!
//! The trail's JSON-lines files stay the record of truth; the index holds,
//! per call record, the fields the questions filter and sum by, and where
//! the record is (file, byte offset, line), so a query reads back exactly
//! the lines it returns. [`Index::update`] catches up with the files
//! incrementally (appended lines, new files, removed files) and is what
//! both `tollgate audit index` and the gateway's background indexer call;
//! an index can always be deleted and rebuilt from the files.
//!
//! Off the request path: the gateway's writer never waits for the index.

mod error;
mod ingest;
mod line;
mod names;
mod schema;
mod search;
mod usage;

pub use error::IndexError;
pub use ingest::Progress;
pub use search::Hits;
pub use usage::IndexedCall;

use std::path::{Path, PathBuf};

use names::Names;

/// The index file's name inside an audit directory.
pub const INDEX_FILE: &str = "index.sqlite";

/// An open audit index.
pub struct Index {
    conn: rusqlite::Connection,
    names: Names,
    order: schema::Order,
    path: PathBuf,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Index {
    /// The index of the audit directory `dir` (`dir/index.sqlite`).
    pub fn path_for(dir: &Path) -> PathBuf {
        dir.join(INDEX_FILE)
    }

    /// Open the index at `path`, creating it (empty) when missing.
    ///
    /// # Errors
    ///
    /// The database cannot be opened or created, or was made by an
    /// incompatible version (delete it and rebuild).
    pub fn open(path: &Path) -> Result<Index, IndexError> {
        let conn = schema::open(path)?;
        let names = Names::load(&conn).map_err(error::db(path))?;
        let order = schema::Order::load(&conn).map_err(error::db(path))?;
        Ok(Index {
            conn,
            names,
            order,
            path: path.to_owned(),
        })
    }
}
