//! The database: its settings and tables.
//!
//! Strings that repeat (subjects, teams, routes, tools, methods) are kept
//! once in `names` and referred to by id, which keeps rows and their
//! indexes small. Times are microseconds since the Unix epoch. `calls`
//! rows are inserted in trail order, so ordering by row id is trail
//! order within a writer's files, and row ids follow time closely: a
//! record is late by at most `meta.lateness` (the most any record's time
//! fell behind the latest time indexed before it), which lets a time
//! window be read as one range of rows (see `usage`).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use crate::error::{IndexError, db};

/// Bumped when the tables change; an older index is refused, not migrated
/// (rebuilding from the trail is the migration).
pub(crate) const SCHEMA_VERSION: i64 = 2;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    indexed INTEGER NOT NULL,
    lines INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS calls (
    time INTEGER NOT NULL,
    file INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    line INTEGER NOT NULL,
    complete INTEGER NOT NULL,
    subject INTEGER,
    team INTEGER,
    cost_center INTEGER,
    route INTEGER NOT NULL,
    via INTEGER,
    name INTEGER,
    exposed INTEGER,
    method INTEGER,
    trace TEXT,
    decision INTEGER NOT NULL,
    status INTEGER,
    error INTEGER NOT NULL,      -- 1: an error answer; 2: the gateway rejected or failed the call
    bytes_in INTEGER NOT NULL,
    bytes_out INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    catalog INTEGER NOT NULL,
    duration_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_time ON calls (time);
CREATE INDEX IF NOT EXISTS calls_subject ON calls (subject, time);
CREATE INDEX IF NOT EXISTS calls_team ON calls (team, time);
CREATE INDEX IF NOT EXISTS calls_route ON calls (route, time);
CREATE INDEX IF NOT EXISTS calls_name ON calls (name, time);
CREATE INDEX IF NOT EXISTS calls_trace ON calls (trace) WHERE trace IS NOT NULL;
";

/// Open (or create) the index at `path` and check its schema version.
pub(crate) fn open(path: &Path) -> Result<Connection, IndexError> {
    let err = db(path);
    let conn = Connection::open(path).map_err(&err)?;
    // WAL lets readers (a query, a report) run while the indexer
    // writes; NORMAL sync is enough for a file that can be rebuilt.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         PRAGMA temp_store = MEMORY; PRAGMA cache_size = -262144; PRAGMA busy_timeout = 5000;",
    )
    .map_err(&err)?;
    conn.execute_batch(TABLES).map_err(&err)?;
    let found: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| r.get(0))
        .optional()
        .map_err(&err)?;
    match found {
        None => {
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?1)", [SCHEMA_VERSION])
                .map_err(&err)?;
        }
        Some(v) if v == SCHEMA_VERSION => {}
        Some(older) if older < SCHEMA_VERSION => {
            // Made by an earlier version: the index is derived from the
            // trail, so it starts again empty and the next update rebuilds it.
            conn.execute_batch("DROP TABLE calls; DROP TABLE names; DROP TABLE files; DROP TABLE meta;")
                .map_err(&err)?;
            conn.execute_batch(TABLES).map_err(&err)?;
            conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?1)", [SCHEMA_VERSION])
                .map_err(&err)?;
        }
        Some(found) => {
            return Err(IndexError::Schema {
                path: path.to_owned(),
                found,
                expected: SCHEMA_VERSION,
            });
        }
    }
    Ok(conn)
}

/// How far row order strays from time order: the latest time indexed, and
/// the most a record's time fell behind the latest before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) max_time: i64,
    pub(crate) lateness: i64,
}

impl Order {
    pub(crate) fn load(conn: &Connection) -> rusqlite::Result<Order> {
        let get = |key: &str| {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get::<_, i64>(0))
                .optional()
                .map(Option::unwrap_or_default)
        };
        Ok(Order {
            max_time: get("max_time")?,
            lateness: get("lateness")?,
        })
    }

    pub(crate) fn save(self, conn: &Connection) -> rusqlite::Result<()> {
        conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('max_time', ?1), ('lateness', ?2)")?
            .execute([self.max_time, self.lateness])?;
        Ok(())
    }

    /// Account for a record at `time` indexed next.
    pub(crate) fn see(&mut self, time: i64) {
        if time >= self.max_time {
            self.max_time = time;
        } else {
            self.lateness = self.lateness.max(self.max_time - time);
        }
    }
}
