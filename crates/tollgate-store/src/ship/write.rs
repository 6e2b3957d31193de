//! Writing a batch: its lines, the usage rows of its complete calls and
//! the file's new position in one transaction, so that what is shipped and where shipping resumes never
//! disagree. Lines already there (a batch shipped before a lost commit
//! acknowledgement) are skipped by `ON CONFLICT DO NOTHING`, after checking
//! that they carry the same hash.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::row::{Columns, INT_COLUMNS, TEXT_COLUMNS};
use crate::error::{Result, StoreError};

/// Where shipping of a file stands: bytes and lines shipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) bytes: u64,
    pub(crate) lines: u64,
}

/// The positions of every file of `replica` in the store.
pub(crate) async fn positions(client: &deadpool_postgres::Object, replica: &str) -> Result<HashMap<String, Position>> {
    let rows = client
        .query(
            "SELECT file, shipped_bytes, shipped_lines FROM audit_shipping WHERE replica = $1",
            &[&replica],
        )
        .await
        .map_err(StoreError::db("reading the shipping positions"))?;
    Ok(rows
        .iter()
        .map(|r| {
            let bytes: i64 = r.get(1);
            let lines: i64 = r.get(2);
            let position = Position {
                bytes: bytes.unsigned_abs(),
                lines: lines.unsigned_abs(),
            };
            (r.get::<_, String>(0), position)
        })
        .collect())
}

/// The columns of `audit_usage` selected from a batch's rows (`u`):
/// complete calls only, their values ready to sum.
const USAGE_INSERT: &str = "INSERT INTO audit_usage SELECT time, replica, file, line_no, team, \
     cost_center, subject, trace_id, route, virtual_server, name, exposed_name, method, COALESCE(catalog, false), \
     COALESCE(status, 0) >= 400 OR rpc_error IS NOT NULL, decision IS NOT DISTINCT FROM 'deny', \
     COALESCE(tokens, 0), COALESCE(bytes_in, 0), COALESCE(bytes_out, 0), GREATEST(COALESCE(duration_us, 0), 0), \
     bucket FROM u WHERE kind = 'call' AND (phase IS NULL OR phase = 'complete') ON CONFLICT DO NOTHING";

/// The batch as rows `u` (`unnest(…)` of its columns), inserted into
/// `audit_records` (`RETURNING line_no`: those not there before) and its
/// complete calls into `audit_usage`, in one statement.
fn insert_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let mut names = vec!["line_no", "time", "seq", "kind", "hash", "line"];
        let mut types = vec!["bigint", "timestamptz", "bigint", "text", "bytea", "text"];
        names.extend(TEXT_COLUMNS);
        types.extend(["text"; 13]);
        names.push("status");
        types.push("integer");
        names.extend(INT_COLUMNS);
        types.extend(["bigint"; 5]);
        names.push("catalog");
        types.push("boolean");
        let records = names.join(", ");
        names.extend(["exposed_name", "bucket"]);
        types.extend(["text", "smallint"]);
        let arrays: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("${}::{t}[]", i + 3))
            .collect();
        format!(
            "WITH u AS (SELECT $1::text AS replica, $2::text AS file, u.* FROM unnest({}) AS u ({})), \
             r AS (INSERT INTO audit_records (replica, file, {records}) SELECT replica, file, {records} FROM u \
             ON CONFLICT DO NOTHING RETURNING line_no), \
             c AS ({USAGE_INSERT}) SELECT line_no FROM r",
            arrays.join(", "),
            names.join(", "),
        )
    })
}

/// Ship `columns` (lines of `file`) and move the file's position to `to`.
pub(crate) async fn write_batch(
    client: &mut deadpool_postgres::Object,
    replica: &str,
    file: &str,
    columns: &Columns,
    to: Position,
) -> Result<()> {
    let c = columns;
    let tx = client
        .transaction()
        .await
        .map_err(StoreError::db("starting a shipping batch"))?;
    let t = &c.text;
    let i = &c.ints;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 30] = [
        &replica,
        &file,
        &c.line_no,
        &c.time,
        &c.seq,
        &c.kind,
        &c.hash,
        &c.line,
        &t[0],
        &t[1],
        &t[2],
        &t[3],
        &t[4],
        &t[5],
        &t[6],
        &t[7],
        &t[8],
        &t[9],
        &t[10],
        &t[11],
        &t[12],
        &c.status,
        &i[0],
        &i[1],
        &i[2],
        &i[3],
        &i[4],
        &c.catalog,
        &c.exposed_name,
        &c.bucket,
    ];
    let inserted = tx
        .query(insert_sql(), &params)
        .await
        .map_err(StoreError::db("shipping audit lines"))?;
    if inserted.len() < c.len() {
        check_present(&tx, replica, file, c).await?;
    }
    tx.execute(
        "INSERT INTO audit_shipping (replica, file, shipped_bytes, shipped_lines) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (replica, file) DO UPDATE SET shipped_bytes = EXCLUDED.shipped_bytes, \
         shipped_lines = EXCLUDED.shipped_lines, updated_at = now() \
         WHERE audit_shipping.shipped_bytes <= EXCLUDED.shipped_bytes",
        &[&replica, &file, &as_i64(to.bytes), &as_i64(to.lines)],
    )
    .await
    .map_err(StoreError::db("recording the shipping position"))?;
    tx.commit().await.map_err(StoreError::db("committing a shipping batch"))
}

/// Lines of the batch that were there already must be the same lines.
async fn check_present(tx: &deadpool_postgres::Transaction<'_>, replica: &str, file: &str, c: &Columns) -> Result<()> {
    let rows = tx
        .query(
            "SELECT line_no, hash FROM audit_records WHERE replica = $1 AND file = $2 AND line_no = ANY($3)",
            &[&replica, &file, &c.line_no],
        )
        .await
        .map_err(StoreError::db("checking lines shipped before"))?;
    let stored: HashMap<i64, Vec<u8>> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    for (line_no, hash) in c.line_no.iter().zip(&c.hash) {
        if stored.get(line_no).is_some_and(|h| h != hash) {
            return Err(StoreError::Conflict {
                replica: replica.to_owned(),
                file: file.to_owned(),
                line: line_no.unsigned_abs(),
            });
        }
    }
    Ok(())
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
