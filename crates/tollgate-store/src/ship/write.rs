//! Writing a batch: its lines, the usage rows of its complete calls and
//! the file's new position in one transaction, so that what is shipped and
//! where shipping resumes never disagree. The lines are copied in binary
//! (`COPY … FROM STDIN`) into a temporary table of the connection, then
//! moved into `audit_records` and `audit_usage` by one statement. Lines
//! already there (a batch shipped before a lost commit acknowledgement)
//! are skipped by `ON CONFLICT DO NOTHING`, after checking that they carry
//! the same hash.

use std::collections::HashMap;
use std::sync::OnceLock;

use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};

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

/// The statements of a batch, made once from the column lists.
struct Sql {
    /// Create the staging table `ship_batch` unless the connection has it.
    stage: String,
    /// `COPY ship_batch … FROM STDIN (FORMAT binary)`.
    copy: String,
    /// Its column types, in order.
    types: Vec<Type>,
    /// Move the staged lines (`$1` replica, `$2` file) into both tables;
    /// returns how many lines were new.
    insert: String,
}

/// The columns of `audit_usage` selected from the staged lines: complete
/// calls only, their values ready to sum.
const USAGE_INSERT: &str = "INSERT INTO audit_usage SELECT time, $1::text, $2::text, line_no, team, \
     cost_center, subject, trace_id, route, virtual_server, name, exposed_name, method, COALESCE(catalog, false), \
     COALESCE(status, 0) >= 400 OR rpc_error IS NOT NULL, decision IS NOT DISTINCT FROM 'deny', \
     COALESCE(tokens, 0), COALESCE(bytes_in, 0), COALESCE(bytes_out, 0), GREATEST(COALESCE(duration_us, 0), 0), \
     bucket FROM ship_batch WHERE kind = 'call' AND (phase IS NULL OR phase = 'complete') ON CONFLICT DO NOTHING";

fn sql() -> &'static Sql {
    static SQL: OnceLock<Sql> = OnceLock::new();
    SQL.get_or_init(|| {
        let mut names = vec!["line_no", "time", "seq", "kind", "hash", "line"];
        let mut types = vec![
            Type::INT8,
            Type::TIMESTAMPTZ,
            Type::INT8,
            Type::TEXT,
            Type::BYTEA,
            Type::TEXT,
        ];
        names.extend(TEXT_COLUMNS);
        types.extend([Type::TEXT; 13]);
        names.push("status");
        types.push(Type::INT4);
        names.extend(INT_COLUMNS);
        types.extend([Type::INT8; 5]);
        names.push("catalog");
        types.push(Type::BOOL);
        let records = names.join(", ");
        names.extend(["exposed_name", "bucket"]);
        types.extend([Type::TEXT, Type::INT2]);
        let defs: Vec<String> = names
            .iter()
            .zip(&types)
            .map(|(n, t)| format!("{n} {}", t.name()))
            .collect();
        Sql {
            stage: format!(
                "SET LOCAL client_min_messages = warning; \
                 CREATE TEMP TABLE IF NOT EXISTS ship_batch ({}) ON COMMIT DELETE ROWS",
                defs.join(", ")
            ),
            copy: format!("COPY ship_batch ({}) FROM STDIN (FORMAT binary)", names.join(", ")),
            types,
            insert: format!(
                "WITH r AS (INSERT INTO audit_records (replica, file, {records}) SELECT $1::text, $2::text, \
                 {records} FROM ship_batch ON CONFLICT DO NOTHING RETURNING 1), u AS ({USAGE_INSERT}) \
                 SELECT count(*) FROM r"
            ),
        }
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
    let sql = sql();
    let tx = client
        .transaction()
        .await
        .map_err(StoreError::db("starting a shipping batch"))?;
    tx.batch_execute(&sql.stage)
        .await
        .map_err(StoreError::db("preparing a shipping batch"))?;
    copy(&tx, sql, c).await?;
    let inserted: i64 = tx
        .query_one(&sql.insert, &[&replica, &file])
        .await
        .map_err(StoreError::db("shipping audit lines"))?
        .get(0);
    if inserted.unsigned_abs() < c.len() as u64 {
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

/// Copy the batch's rows into `ship_batch`.
async fn copy(tx: &deadpool_postgres::Transaction<'_>, sql: &Sql, c: &Columns) -> Result<()> {
    let sink = tx
        .copy_in(&sql.copy)
        .await
        .map_err(StoreError::db("copying audit lines"))?;
    let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &sql.types));
    let (t, i) = (&c.text, &c.ints);
    for r in 0..c.len() {
        let mut row: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(sql.types.len());
        row.extend([
            &c.line_no[r] as &(dyn ToSql + Sync),
            &c.time[r],
            &c.seq[r],
            &c.kind[r],
            &c.hash[r],
        ]);
        row.push(&c.line[r]);
        row.extend(t.iter().map(|col| &col[r] as &(dyn ToSql + Sync)));
        row.push(&c.status[r]);
        row.extend(i.iter().map(|col| &col[r] as &(dyn ToSql + Sync)));
        row.extend([&c.catalog[r] as &(dyn ToSql + Sync), &c.exposed_name[r], &c.bucket[r]]);
        writer
            .as_mut()
            .write(&row)
            .await
            .map_err(StoreError::db("copying audit lines"))?;
    }
    writer
        .finish()
        .await
        .map_err(StoreError::db("copying audit lines"))
        .map(drop)
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
