//! Tollgate's fleet store: the governance records every replica shares, in
//! PostgreSQL (`[store] postgres`).
//!
//! Off the request path. Each replica's audit files stay the record of
//! truth; this crate ships their lines to the store (`ship`), reads them
//! back fleet-wide with the files' own filter (`read`), keeps catalog
//! approvals as rows every replica reads and listens for (`approvals`),
//! and holds the tables the fleet's searches, spend and signed
//! checkpoints use (`migrate` owns the schema). The server maps the
//! configuration to [`StoreSettings`] and starts the shipper; the CLI
//! migrates and reports the schema. Usage and the console's overview are
//! summed in SQL (`usage`), and the console's searches and call views read here (`fleet`).
//! `docs/fleet.md` describes what is shared where and how it fails.

mod approvals;
mod checkpoint;
mod connect;
mod error;
mod fleet;
mod migrate;
mod read;
mod settings;
mod ship;
mod usage;

pub use approvals::{ApprovalFeed, CHANNEL as APPROVALS_CHANNEL, Imported, StoredApprovals};
pub use error::{Result, StoreError};
pub use fleet::{ChainCheck, Located, ReplicaShipping, StoredCall};
pub use migrate::{MIGRATIONS, Migration, SCHEMA_VERSION, SchemaStatus};
pub use read::StoredRecords;
pub use settings::{StoreSettings, StoreTls};
pub use ship::{Progress, ShipSettings, ShipStats, Shipper};
pub use usage::{Activity, ActivityStep, SeriesPoint, Steps, UsageQuestion};

use deadpool_postgres::Pool;

/// A connection pool to the store. Cloning shares the pool.
#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// Connections outside the pool (`LISTEN`).
    dedicated: connect::Dedicated,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("Store")
            .field("size", &status.size)
            .field("max_size", &status.max_size)
            .finish()
    }
}

impl Store {
    /// A store reached as `settings` say. Connections are made when first
    /// needed, so this succeeds while PostgreSQL is down.
    ///
    /// # Errors
    ///
    /// [`StoreError::Settings`]: a bad URL or TLS material.
    pub fn new(settings: &StoreSettings) -> Result<Store> {
        let (pool, dedicated) = connect::pool(settings)?;
        Ok(Store { pool, dedicated })
    }

    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Unavailable(error::chain(&e)))
    }
}
