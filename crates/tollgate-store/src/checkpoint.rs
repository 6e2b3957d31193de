//! Signed checkpoints in the store (`audit_checkpoints`): each replica
//! writes the checkpoints it signs; `tollgate audit verify --checkpoints`
//! reads one replica's back, and the console the newest of each.
//!
//! A checkpoint is keyed by where its line is (replica, file, line), so
//! writing one twice (a retry after a lost answer) is harmless.

use std::time::SystemTime;

use tollgate_audit::{ChainHead, Checkpoint, Hash};

use crate::Store;
use crate::error::{Result, StoreError};

/// The columns a checkpoint is read from, in [`checkpoint`]'s order.
const COLUMNS: &str = "replica, file, line_no, seq, head, signature, key_id, time";

impl Store {
    /// Store `checkpoint` (again: no change).
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the row.
    pub async fn put_checkpoint(&self, checkpoint: &Checkpoint) -> Result<()> {
        let h = &checkpoint.head;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO audit_checkpoints (replica, file, line_no, seq, head, signature, key_id, time) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
                &[
                    &checkpoint.replica,
                    &h.file,
                    &as_i64(h.line),
                    &as_i64(h.seq),
                    &h.hash.0.as_slice(),
                    &checkpoint.signature,
                    &checkpoint.key_id,
                    &checkpoint.time,
                ],
            )
            .await
            .map_err(StoreError::db("storing a checkpoint"))?;
        Ok(())
    }

    /// Every checkpoint of `replica`, oldest first.
    ///
    /// # Errors
    ///
    /// The store cannot be reached, or a row is not a checkpoint.
    pub async fn checkpoints(&self, replica: &str) -> Result<Vec<Checkpoint>> {
        let client = self.client().await?;
        let sql = format!("SELECT {COLUMNS} FROM audit_checkpoints WHERE replica = $1 ORDER BY seq, time");
        let rows = client
            .query(&sql, &[&replica])
            .await
            .map_err(StoreError::db("reading checkpoints"))?;
        rows.iter().map(checkpoint).collect()
    }

    /// The newest checkpoint of each replica, by replica.
    ///
    /// # Errors
    ///
    /// The store cannot be reached, or a row is not a checkpoint.
    pub async fn latest_checkpoints(&self) -> Result<Vec<Checkpoint>> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT DISTINCT ON (replica) {COLUMNS} FROM audit_checkpoints ORDER BY replica, time DESC, seq DESC"
        );
        let rows = client
            .query(&sql, &[])
            .await
            .map_err(StoreError::db("reading checkpoints"))?;
        rows.iter().map(checkpoint).collect()
    }

    /// The replicas with checkpoints on any of `files` (by file name).
    ///
    /// # Errors
    ///
    /// The store cannot be reached.
    pub async fn replicas_checkpointing(&self, files: &[String]) -> Result<Vec<String>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT replica FROM audit_checkpoints WHERE file = ANY($1) ORDER BY replica",
                &[&files],
            )
            .await
            .map_err(StoreError::db("reading checkpoints"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

/// A row as the checkpoint it stores.
fn checkpoint(row: &tokio_postgres::Row) -> Result<Checkpoint> {
    let replica: String = row.get(0);
    let file: String = row.get(1);
    let line_no: i64 = row.get(2);
    let head: Vec<u8> = row.get(4);
    let hash = <[u8; 32]>::try_from(head.as_slice()).map_err(|_| StoreError::Malformed {
        place: format!("checkpoint {replica}/{file}:{line_no}"),
        message: format!("its head has {} bytes, not 32", head.len()),
    })?;
    let seq: i64 = row.get(3);
    let time: SystemTime = row.get(7);
    Ok(Checkpoint {
        head: ChainHead {
            file,
            line: line_no.unsigned_abs(),
            seq: seq.unsigned_abs(),
            hash: Hash(hash),
        },
        replica,
        time,
        key_id: row.get(6),
        signature: row.get(5),
    })
}

/// A count as PostgreSQL's `bigint` (counts never reach 2^63).
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
