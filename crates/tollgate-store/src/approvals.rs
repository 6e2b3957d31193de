//! Catalog approvals as rows of `catalog_approvals`, shared by every
//! replica: written by the console and by `tollgate catalog
//! approve|import`, read back whole as the approvals in force, and
//! announced on the channel [`CHANNEL`] so that replicas listening on it
//! read again at once.
//!
//! Rows are appended, never updated or deleted. The approval in force of
//! a definition (server, kind, name) is its row with the latest
//! `approved_at`, then the highest `id`; so importing an older lock file
//! never takes back a newer approval, and importing the same file twice
//! adds nothing (a row equal in everything but its id is not added
//! again). Every write announces itself with `pg_notify` in its own
//! transaction: PostgreSQL delivers the notification when the rows are
//! committed, never before. A row read back is checked as a lock file's
//! entry is (its definition names itself and hashes to its revision); one
//! that does not is left out and reported, so a hand-edited row approves
//! nothing.

use std::time::SystemTime;

use tokio::sync::mpsc;
use tokio_postgres::{Notification, Row};
use tollgate_catalog::{Approval, Definition, Kind, Lock, Revision};

use crate::Store;
use crate::error::{Result, StoreError};

/// The channel every write of `catalog_approvals` is announced on (the
/// payload is the new row's id, or `import` for an import).
pub const CHANNEL: &str = "tollgate_catalog_approvals";

/// Imports of lock files wait for each other, so that two at once cannot
/// both add the same row. Any number, the same in every Tollgate.
const IMPORT_LOCK: i64 = 0x7467_5f61_7070_726f; // "tg_appro"

/// The approvals in force in the store.
#[derive(Debug, Default)]
pub struct StoredApprovals {
    /// One approval per definition: its newest row.
    pub lock: Lock,
    /// Rows in force that were left out, each with the reason (a
    /// definition that does not hash to its revision, an unknown kind).
    pub refused: Vec<String>,
}

/// What [`Store::import`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    /// Approvals added as rows.
    pub added: usize,
    /// Approvals the store already held, row for row.
    pub present: usize,
}

const COLUMNS: &str = "id, server, kind, name, revision, approved_by, approved_at, note, definition";

impl Store {
    /// The approvals in force: per definition, its newest row.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn approvals(&self) -> Result<StoredApprovals> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT DISTINCT ON (server, kind, name) {COLUMNS} FROM catalog_approvals \
             ORDER BY server, kind, name, approved_at DESC, id DESC"
        );
        let rows = client
            .query(&sql, &[])
            .await
            .map_err(StoreError::db("reading catalog approvals"))?;
        let mut out = StoredApprovals::default();
        for row in &rows {
            match approval(row) {
                Ok(a) => {
                    out.lock.insert(a);
                }
                Err(e) => out.refused.push(e),
            }
        }
        Ok(out)
    }

    /// Approve `definition` of `server` as `by`, now by the store's clock
    /// (to the second, as a lock file keeps it), and announce it. The
    /// approval as stored is returned.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the row; nothing is written
    /// then.
    pub async fn approve(
        &self,
        server: &str,
        definition: &Definition,
        by: &str,
        note: Option<&str>,
    ) -> Result<Approval> {
        let text = serde_json::to_string(&definition.body).unwrap_or_default();
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StoreError::db("starting an approval"))?;
        let row = tx
            .query_one(
                "INSERT INTO catalog_approvals (server, kind, name, revision, approved_by, approved_at, note, definition) \
                 VALUES ($1, $2, $3, $4, $5, date_trunc('second', statement_timestamp()), $6, $7) \
                 RETURNING id, approved_at",
                &[
                    &server,
                    &definition.kind.as_str(),
                    &definition.key,
                    &definition.revision.as_str(),
                    &by,
                    &note,
                    &text,
                ],
            )
            .await
            .map_err(StoreError::db("writing an approval"))?;
        let (id, approved_at): (i64, SystemTime) = (row.get(0), row.get(1));
        announce(&tx, &id.to_string()).await?;
        tx.commit().await.map_err(StoreError::db("committing an approval"))?;
        Ok(Approval {
            server: server.to_owned(),
            kind: definition.kind,
            key: definition.key.clone(),
            revision: definition.revision.clone(),
            approved_by: by.to_owned(),
            approved_at,
            note: note.map(str::to_owned),
            definition: definition.body.clone(),
        })
    }

    /// Load a lock file's approvals as rows, each unless the store holds
    /// a row equal to it (same definition, revision, approver, time and
    /// note); one transaction, announced once when anything was added.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused a row; nothing is written
    /// then.
    pub async fn import(&self, lock: &Lock) -> Result<Imported> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(StoreError::db("starting an import"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&IMPORT_LOCK])
            .await
            .map_err(StoreError::db("waiting for another import"))?;
        let insert = tx
            .prepare(
                "INSERT INTO catalog_approvals (server, kind, name, revision, approved_by, approved_at, note, definition) \
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE NOT EXISTS (SELECT 1 FROM catalog_approvals \
                 WHERE server = $1 AND kind = $2 AND name = $3 AND revision = $4 AND approved_by = $5 \
                 AND approved_at = $6 AND note IS NOT DISTINCT FROM $7)",
            )
            .await
            .map_err(StoreError::db("preparing an import"))?;
        let mut done = Imported::default();
        for a in lock.iter() {
            let text = serde_json::to_string(&a.definition).unwrap_or_default();
            let n = tx
                .execute(
                    &insert,
                    &[
                        &a.server,
                        &a.kind.as_str(),
                        &a.key,
                        &a.revision.as_str(),
                        &a.approved_by,
                        &a.approved_at,
                        &a.note,
                        &text,
                    ],
                )
                .await
                .map_err(StoreError::db("importing an approval"))?;
            if n == 0 {
                done.present += 1;
            } else {
                done.added += 1;
            }
        }
        if done.added > 0 {
            announce(&tx, "import").await?;
        }
        tx.commit().await.map_err(StoreError::db("committing an import"))?;
        Ok(done)
    }

    /// Listen for new approvals, on a connection of its own (outside the
    /// pool: notifications reach only the connection that listens).
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused `LISTEN`.
    pub async fn listen_approvals(&self) -> Result<ApprovalFeed> {
        let (client, notifications) = self.dedicated.connect().await?;
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(StoreError::db("listening for approvals"))?;
        Ok(ApprovalFeed { client, notifications })
    }
}

/// Announce a write of `catalog_approvals`, delivered on commit.
async fn announce(tx: &tokio_postgres::Transaction<'_>, payload: &str) -> Result<()> {
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
        .await
        .map_err(StoreError::db("announcing an approval"))
        .map(drop)
}

/// A row as an approval, checked as a lock file's entry is.
fn approval(row: &Row) -> std::result::Result<Approval, String> {
    let id: i64 = row.get(0);
    let (server, kind, name): (String, String, String) = (row.get(1), row.get(2), row.get(3));
    let place = format!("catalog_approvals row {id} ({server} {kind} {name:?})");
    let bad = |message: String| format!("{place}: {message}");
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind)
        .ok_or_else(|| bad(format!("unknown kind {kind:?}")))?;
    let revision = Revision::parse(row.get(4)).map_err(|e| bad(e.to_string()))?;
    let text: String = row.get(8);
    let body: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("definition: {e}")))?;
    let definition = Definition::new(kind, body).map_err(|e| bad(format!("definition: {e}")))?;
    if definition.key != name || definition.revision != revision {
        return Err(bad(format!(
            "the definition is {:?} at {}, not the row's name and revision",
            definition.key, definition.revision
        )));
    }
    Ok(Approval {
        server,
        kind,
        key: name,
        revision,
        approved_by: row.get(5),
        approved_at: row.get(6),
        note: row.get(7),
        definition: definition.body,
    })
}

/// New approvals as the store announces them; see
/// [`Store::listen_approvals`].
pub struct ApprovalFeed {
    client: tokio_postgres::Client,
    notifications: mpsc::Receiver<Notification>,
}

impl std::fmt::Debug for ApprovalFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalFeed")
            .field("closed", &self.client.is_closed())
            .finish()
    }
}

impl ApprovalFeed {
    /// Wait until approvals were written (one or more: those announced
    /// meanwhile are taken too); `None` once the connection has ended.
    pub async fn changed(&mut self) -> Option<()> {
        self.notifications.recv().await?;
        while self.notifications.try_recv().is_ok() {}
        Some(())
    }

    /// Check that the connection still answers (a connection whose peer
    /// vanished without closing it would otherwise wait forever).
    ///
    /// # Errors
    ///
    /// The connection is closed or the query failed.
    pub async fn ping(&self) -> Result<()> {
        self.client
            .simple_query("SELECT 1")
            .await
            .map(drop)
            .map_err(StoreError::db("checking the listening connection"))
    }
}
