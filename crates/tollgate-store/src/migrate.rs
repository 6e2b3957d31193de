//! The store's schema: versioned migrations embedded in the binary, applied
//! in order in one transaction under an advisory lock (replicas starting
//! together migrate once), recorded in `schema_migrations`. A database
//! migrated by a newer Tollgate is refused, never migrated down.

use std::time::SystemTime;

use crate::Store;
use crate::error::{Result, StoreError};

/// One step of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its version: 1, 2, … with no gaps.
    pub version: i32,
    /// What it does, in a word or two.
    pub name: &'static str,
    sql: &'static str,
}

/// Every migration this binary knows, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "governance",
        sql: include_str!("../migrations/0001_governance.sql"),
    },
    Migration {
        version: 2,
        name: "usage",
        sql: include_str!("../migrations/0002_usage.sql"),
    },
    Migration {
        version: 3,
        name: "hdr buckets",
        sql: include_str!("../migrations/0003_hdr_buckets.sql"),
    },
];

/// The schema version this binary writes and reads.
pub const SCHEMA_VERSION: i32 = 3;

/// Where the database's schema stands against this binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The version applied (0: an empty database).
    pub version: i32,
    /// When the latest migration was applied.
    pub applied_at: Option<SystemTime>,
    /// The newest version this binary knows.
    pub known: i32,
    /// Migrations this binary would apply, oldest first.
    pub pending: Vec<Migration>,
}

impl SchemaStatus {
    /// Whether the database is exactly at this binary's version.
    pub fn is_current(&self) -> bool {
        self.version == self.known
    }
}

/// Any number: it only has to be the same in every replica, and unlikely
/// to collide with an advisory lock another application of the same
/// database takes.
const MIGRATION_LOCK: i64 = 0x746f_6c6c_6761_7465; // "tollgate"

const CREATE_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

impl Store {
    /// The schema's version and what this binary would apply.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or read.
    pub async fn status(&self) -> Result<SchemaStatus> {
        let client = self.client().await?;
        let exists: bool = client
            .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
            .await
            .map_err(StoreError::db("reading the schema version"))?
            .get(0);
        let (version, applied_at) = if exists {
            let row = client
                .query_one(
                    "SELECT coalesce(max(version), 0), max(applied_at) FROM schema_migrations",
                    &[],
                )
                .await
                .map_err(StoreError::db("reading the schema version"))?;
            (row.get(0), row.get(1))
        } else {
            (0, None)
        };
        Ok(SchemaStatus {
            version,
            applied_at,
            known: SCHEMA_VERSION,
            pending: MIGRATIONS.iter().filter(|m| m.version > version).copied().collect(),
        })
    }

    /// Apply the pending migrations; returns those applied (none when the
    /// schema is current).
    ///
    /// # Errors
    ///
    /// [`StoreError::SchemaTooNew`] when a newer Tollgate migrated the
    /// database; a failed migration (nothing of it stays: one transaction).
    pub async fn migrate(&self) -> Result<Vec<Migration>> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StoreError::db("starting the migration"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(StoreError::db("waiting for another replica's migration"))?;
        tx.batch_execute(CREATE_MIGRATIONS)
            .await
            .map_err(StoreError::db("creating schema_migrations"))?;
        let found: i32 = tx
            .query_one("SELECT coalesce(max(version), 0) FROM schema_migrations", &[])
            .await
            .map_err(StoreError::db("reading the schema version"))?
            .get(0);
        if found > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found,
                known: SCHEMA_VERSION,
            });
        }
        let pending: Vec<Migration> = MIGRATIONS.iter().filter(|m| m.version > found).copied().collect();
        for m in &pending {
            tx.batch_execute(m.sql)
                .await
                .map_err(StoreError::db("applying a migration"))?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                &[&m.version, &m.name],
            )
            .await
            .map_err(StoreError::db("recording a migration"))?;
        }
        tx.commit().await.map_err(StoreError::db("committing the migration"))?;
        if !pending.is_empty() {
            tracing::info!(from = found, to = SCHEMA_VERSION, "store schema migrated");
        }
        Ok(pending)
    }

    /// Make the schema this binary's: apply pending migrations when
    /// `migrate`, else only check it (what a gateway does at start).
    ///
    /// # Errors
    ///
    /// As [`Store::migrate`] or [`Store::check_schema`].
    pub async fn prepare(&self, migrate: bool) -> Result<()> {
        if migrate {
            self.migrate().await.map(drop)
        } else {
            self.check_schema().await
        }
    }

    /// Check that the schema is this binary's.
    ///
    /// # Errors
    ///
    /// [`StoreError::SchemaTooNew`] or [`StoreError::SchemaTooOld`].
    pub async fn check_schema(&self) -> Result<()> {
        let status = self.status().await?;
        match status.version.cmp(&status.known) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Greater => Err(StoreError::SchemaTooNew {
                found: status.version,
                known: status.known,
            }),
            std::cmp::Ordering::Less => Err(StoreError::SchemaTooOld {
                found: status.version,
                known: status.known,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one_without_gaps_to_the_schema_version() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i32::try_from(i).unwrap() + 1, "{}", m.name);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(SCHEMA_VERSION));
    }
}
