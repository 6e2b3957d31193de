//! Fleet-wide reads: the call records every replica shipped that match a
//! [`Filter`] — the same filter `tollgate audit query` applies to files —
//! as [`Entry`]s holding the exact stored line, so that whatever a caller
//! prints or sums from files it prints or sums alike from the store.
//!
//! The SQL narrows by the columns shipping copied out of each call
//! (indexed: a subject's or a team's window reads one partition's index);
//! the line is then parsed and [`Filter::matches`] decides, so the store
//! and the files cannot disagree on what matches. Records come in the
//! order `audit query` reads the replicas' directories in: by file name
//! (chain order), then replica, then line — byte order, whatever the
//! database's collation.

use std::path::PathBuf;
use std::pin::Pin;

use futures_util::StreamExt as _;
use tokio_postgres::RowStream;
use tokio_postgres::types::ToSql;
use tollgate_audit::{CallRecord, Entry, Filter};

use crate::Store;
use crate::error::{Result, StoreError};

/// A query parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// The records matching a filter, read as they are asked for; see
/// [`Store::records`].
pub struct StoredRecords {
    /// The connection the rows arrive on, kept until the last row.
    _client: deadpool_postgres::Object,
    rows: Pin<Box<RowStream>>,
    filter: Filter,
}

impl std::fmt::Debug for StoredRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredRecords").field("filter", &self.filter).finish()
    }
}

impl Store {
    /// Every replica's call records that match `filter`, by file name,
    /// replica and line.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn records(&self, filter: Filter) -> Result<StoredRecords> {
        let (sql, params) = select(&filter);
        let client = self.client().await?;
        let rows = client
            .query_raw(&sql, params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)))
            .await
            .map_err(StoreError::db("querying audit records"))?;
        Ok(StoredRecords {
            _client: client,
            rows: Box::pin(rows),
            filter,
        })
    }
}

impl StoredRecords {
    /// The next matching record, `None` after the last.
    ///
    /// # Errors
    ///
    /// The connection failed, or a stored call line is not a call record
    /// ([`StoreError::Malformed`]).
    pub async fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            let row = match self.rows.next().await? {
                Ok(row) => row,
                Err(e) => return Some(Err(StoreError::db("reading audit records")(e))),
            };
            match entry(&row) {
                Ok(e) if !self.filter.matches(&e.record) => {}
                other => return Some(other),
            }
        }
    }
}

/// A row as the entry the files would give: the line parsed, its place
/// named `replica/file`.
fn entry(row: &tokio_postgres::Row) -> Result<Entry> {
    let (replica, file): (String, String) = (row.get(0), row.get(1));
    let line_no: i64 = row.get(2);
    let raw: String = row.get(3);
    let record: CallRecord = serde_json::from_str(&raw).map_err(|e| StoreError::Malformed {
        place: format!("{replica}/{file}:{line_no}"),
        message: e.to_string(),
    })?;
    Ok(Entry {
        file: PathBuf::from(replica).join(file),
        line: line_no.unsigned_abs(),
        record,
        raw,
    })
}

/// Files (their names sort in chain order), then replicas, then lines,
/// compared as bytes as the files' reader does.
const ORDER: &str = r#"file COLLATE "C", replica COLLATE "C", line_no"#;

/// The SQL that narrows `filter` by the shipped columns, and its
/// parameters.
fn select(filter: &Filter) -> (String, Vec<Param>) {
    let (conds, params) = conditions(filter);
    let sql = format!("SELECT replica, file, line_no, line FROM audit_records WHERE {conds} ORDER BY {ORDER}");
    (sql, params)
}

/// The `WHERE` conditions that narrow `filter` to call lines by the
/// shipped columns, and their parameters (`$1` on).
pub(crate) fn conditions(filter: &Filter) -> (String, Vec<Param>) {
    let mut conds = vec!["kind = 'call'".to_owned()];
    let mut params: Vec<Param> = Vec::new();
    let mut add = |cond: &str, value: Param| {
        params.push(value);
        conds.push(format!("{cond} ${}", params.len()));
    };
    if let Some(t) = filter.since {
        add("time >=", Box::new(t));
    }
    if let Some(t) = filter.until {
        add("time <", Box::new(t));
    }
    for (column, wanted) in [
        ("subject =", &filter.subject),
        ("team =", &filter.team),
        ("route =", &filter.server),
        ("name =", &filter.tool),
        ("trace_id =", &filter.trace),
    ] {
        if let Some(text) = wanted {
            add(column, Box::new(text.clone()));
        }
    }
    if let Some(d) = filter.decision {
        add("decision =", Box::new(d.as_str().to_owned()));
    }
    if let Some(s) = filter.status {
        add("status =", Box::new(i32::from(s)));
    }
    (conds.join(" AND "), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_filter_narrows_by_its_column_in_order() {
        let filter = Filter {
            subject: Some("alice".into()),
            decision: Some(tollgate_audit::Outcome::Deny),
            status: Some(403),
            ..Filter::default()
        };
        let (sql, params) = select(&filter);
        assert_eq!(
            sql,
            "SELECT replica, file, line_no, line FROM audit_records WHERE kind = 'call' AND subject = $1 \
             AND decision = $2 AND status = $3 ORDER BY file COLLATE \"C\", replica COLLATE \"C\", line_no"
        );
        assert_eq!(params.len(), 3);
        let (all, none) = select(&Filter::default());
        assert!(all.contains("WHERE kind = 'call' ORDER BY"), "{all}");
        assert!(none.is_empty());
    }
}
