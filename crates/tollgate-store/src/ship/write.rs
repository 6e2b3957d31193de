//! Writing a batch: its lines, the usage rows of its complete calls and
//! the file's new position in one transaction, so that what is shipped and
//! where shipping resumes never disagree. Both are copied in binary
//! (`COPY … FROM STDIN`) straight into `audit_records` and `audit_usage`:
//! the position commits with the lines, so a batch is new unless something
//! else wrote the same place (a lost commit acknowledgement the position
//! did not see, a second shipper under the same replica name). Then the
//! copy fails on the key, and the batch is written again through staging
//! tables of the connection with `ON CONFLICT DO NOTHING`, after checking
//! that the lines there carry the same hash.

use std::collections::HashMap;
use std::sync::OnceLock;

use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::error::SqlState;
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

/// A `COPY` of one table: its column list and their types.
struct CopyInto {
    columns: String,
    types: Vec<Type>,
}

impl CopyInto {
    fn new(columns: &[(&str, Type)]) -> CopyInto {
        CopyInto {
            columns: columns.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            types: columns.iter().map(|(_, t)| t.clone()).collect(),
        }
    }

    fn sql(&self, table: &str) -> String {
        format!("COPY {table} ({}) FROM STDIN (FORMAT binary)", self.columns)
    }
}

/// The columns of both copies, made once.
struct Sql {
    records: CopyInto,
    usage: CopyInto,
}

/// Create the staging tables unless the connection has them.
const STAGE: &str = "SET LOCAL client_min_messages = warning; \
     CREATE TEMP TABLE IF NOT EXISTS ship_records (LIKE audit_records) ON COMMIT DELETE ROWS; \
     CREATE TEMP TABLE IF NOT EXISTS ship_usage (LIKE audit_usage) ON COMMIT DELETE ROWS";

/// Move the staged rows into both tables, skipping what is there; returns
/// how many lines were new.
const MERGE: &str = "WITH r AS (INSERT INTO audit_records SELECT * FROM ship_records ON CONFLICT DO NOTHING \
     RETURNING 1), u AS (INSERT INTO audit_usage SELECT * FROM ship_usage ON CONFLICT DO NOTHING) \
     SELECT count(*) FROM r";

fn sql() -> &'static Sql {
    static SQL: OnceLock<Sql> = OnceLock::new();
    SQL.get_or_init(|| {
        let mut records = vec![
            ("replica", Type::TEXT),
            ("file", Type::TEXT),
            ("line_no", Type::INT8),
            ("time", Type::TIMESTAMPTZ),
            ("seq", Type::INT8),
            ("kind", Type::TEXT),
            ("hash", Type::BYTEA),
            ("line", Type::TEXT),
        ];
        records.extend(TEXT_COLUMNS.map(|n| (n, Type::TEXT)));
        records.push(("status", Type::INT4));
        records.extend(INT_COLUMNS.map(|n| (n, Type::INT8)));
        records.push(("catalog", Type::BOOL));
        let mut usage = vec![
            ("time", Type::TIMESTAMPTZ),
            ("replica", Type::TEXT),
            ("file", Type::TEXT),
            ("line_no", Type::INT8),
        ];
        usage.extend(USAGE_TEXT.map(|n| (n, Type::TEXT)));
        usage.extend([("exposed_name", Type::TEXT), ("catalog", Type::BOOL)]);
        usage.extend([("failed", Type::BOOL), ("denied", Type::BOOL)]);
        usage.extend(["tokens", "bytes_in", "bytes_out", "duration_us"].map(|n| (n, Type::INT8)));
        usage.push(("bucket", Type::INT8));
        Sql {
            records: CopyInto::new(&records),
            usage: CopyInto::new(&usage),
        }
    })
}

/// The text columns `audit_usage` shares with `audit_records`.
const USAGE_TEXT: [&str; 8] = [
    "team",
    "cost_center",
    "subject",
    "trace_id",
    "route",
    "virtual_server",
    "name",
    "method",
];

/// Ship `columns` (lines of `file`) and move the file's position to `to`:
/// copied straight into the tables, or through the staging tables when a
/// line's place is taken.
pub(crate) async fn write_batch(
    client: &mut deadpool_postgres::Object,
    replica: &str,
    file: &str,
    columns: &Columns,
    to: Position,
) -> Result<()> {
    let batch = Batch {
        replica,
        file,
        columns,
        to,
    };
    match batch.write(client, false).await {
        Err(StoreError::Database { source, .. }) if source.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            tracing::debug!(replica, file, "lines shipped before; merging the batch");
            batch.write(client, true).await
        }
        result => result,
    }
}

/// A batch and where it goes.
struct Batch<'a> {
    replica: &'a str,
    file: &'a str,
    columns: &'a Columns,
    to: Position,
}

impl Batch<'_> {
    /// One transaction: both copies, (`staged`: the merge and the check of
    /// lines there before), the position.
    async fn write(&self, client: &mut deadpool_postgres::Object, staged: bool) -> Result<()> {
        let (sql, db) = (sql(), StoreError::db("shipping audit lines"));
        let tx = client.transaction().await.map_err(&db)?;
        let (records, usage) = if staged {
            tx.batch_execute(STAGE).await.map_err(&db)?;
            ("ship_records", "ship_usage")
        } else {
            ("audit_records", "audit_usage")
        };
        copy(&tx, &sql.records, records, self.record_rows())
            .await
            .map_err(&db)?;
        copy(&tx, &sql.usage, usage, self.usage_rows()).await.map_err(&db)?;
        if staged {
            let inserted: i64 = tx.query_one(MERGE, &[]).await.map_err(&db)?.get(0);
            if inserted.unsigned_abs() < self.columns.len() as u64 {
                check_present(&tx, self.replica, self.file, self.columns).await?;
            }
        }
        let to = self.to;
        tx.execute(
            "INSERT INTO audit_shipping (replica, file, shipped_bytes, shipped_lines) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (replica, file) DO UPDATE SET shipped_bytes = EXCLUDED.shipped_bytes, \
             shipped_lines = EXCLUDED.shipped_lines, updated_at = now() \
             WHERE audit_shipping.shipped_bytes <= EXCLUDED.shipped_bytes",
            &[&self.replica, &self.file, &as_i64(to.bytes), &as_i64(to.lines)],
        )
        .await
        .map_err(StoreError::db("recording the shipping position"))?;
        tx.commit().await.map_err(StoreError::db("committing a shipping batch"))
    }

    /// The lines' rows, in [`Sql::records`] order.
    fn record_rows(&self) -> impl Iterator<Item = Vec<&(dyn ToSql + Sync)>> {
        let (c, place) = (self.columns, [&self.replica as &(dyn ToSql + Sync), &self.file]);
        (0..c.len()).map(move |r| {
            let mut row = Vec::with_capacity(32);
            row.extend(place);
            row.extend([
                &c.line_no[r] as &(dyn ToSql + Sync),
                &c.time[r],
                &c.seq[r],
                &c.kind[r],
                &c.hash[r],
                &c.line[r],
            ]);
            row.extend(c.text.iter().map(|col| &col[r] as &(dyn ToSql + Sync)));
            row.push(&c.status[r]);
            row.extend(c.ints.iter().map(|col| &col[r] as &(dyn ToSql + Sync)));
            row.push(&c.catalog[r]);
            row
        })
    }

    /// The usage rows, in [`Sql::usage`] order.
    fn usage_rows(&self) -> impl Iterator<Item = Vec<&(dyn ToSql + Sync)>> {
        let c = self.columns;
        let text = USAGE_TEXT.map(|n| TEXT_COLUMNS.iter().position(|t| *t == n).unwrap_or(0));
        c.usage.iter().map(move |u| {
            let mut row = Vec::with_capacity(24);
            row.extend([
                &c.time[u.at] as &(dyn ToSql + Sync),
                &self.replica,
                &self.file,
                &c.line_no[u.at],
            ]);
            row.extend(text.iter().map(|&i| &c.text[i][u.at] as &(dyn ToSql + Sync)));
            row.extend([&u.exposed_name as &(dyn ToSql + Sync), &u.catalog, &u.failed, &u.denied]);
            row.extend([
                &u.tokens as &(dyn ToSql + Sync),
                &u.bytes_in,
                &u.bytes_out,
                &u.duration_us,
                &u.bucket,
            ]);
            row
        })
    }
}

/// Copy `rows` into `table`.
async fn copy<'a>(
    tx: &deadpool_postgres::Transaction<'_>,
    into: &CopyInto,
    table: &str,
    rows: impl Iterator<Item = Vec<&'a (dyn ToSql + Sync)>>,
) -> std::result::Result<(), tokio_postgres::Error> {
    let sink = tx.copy_in(&into.sql(table)).await?;
    let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &into.types));
    for row in rows {
        writer.as_mut().write(&row).await?;
    }
    writer.finish().await.map(drop)
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
