//! Finding records: a [`Filter`] turned into one indexed SQL query, and
//! each hit read back from its file at the stored offset, so what a query
//! returns is the trail's own line.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;

use rusqlite::types::Value;
use tollgate_audit::{CallRecord, Entry, Filter, QueryError};

use crate::Index;
use crate::error::{IndexError, db};
use crate::line::{micros, outcome_code};

/// Hits fetched per round trip to the database.
const PAGE: usize = 4096;

/// Where one hit is.
struct Hit {
    rowid: i64,
    file: i64,
    offset: u64,
    line: u64,
}

/// The records matching a filter, in trail order (or reversed), read from
/// the files as they are iterated; see [`Index::query`].
pub struct Hits<'i> {
    index: &'i Index,
    filter: Filter,
    sql: String,
    params: Vec<Value>,
    after: i64,
    page: VecDeque<Hit>,
    exhausted: bool,
    files: HashMap<i64, (PathBuf, BufReader<File>)>,
}

impl Index {
    /// The call records matching `filter`. An unknown subject, team,
    /// server or tool matches nothing without reading anything.
    ///
    /// # Errors
    ///
    /// A database error.
    pub fn query(&self, filter: Filter) -> Result<Hits<'_>, IndexError> {
        self.query_ordered(filter, false)
    }

    /// The call records matching `filter`, newest first (trail order
    /// reversed), read page by page from the end: the newest few of a
    /// large trail cost no more than the oldest few.
    ///
    /// # Errors
    ///
    /// A database error.
    pub fn query_newest(&self, filter: Filter) -> Result<Hits<'_>, IndexError> {
        self.query_ordered(filter, true)
    }

    fn query_ordered(&self, filter: Filter, newest: bool) -> Result<Hits<'_>, IndexError> {
        let (after, order) = if newest {
            ("rowid < ?1", "DESC")
        } else {
            ("rowid > ?1", "")
        };
        let mut conds = vec![after.to_owned()];
        let mut params = vec![Value::Integer(0)];
        let mut add = |cond: &str, value: Value| {
            params.push(value);
            conds.push(format!("{cond} ?{}", params.len()));
        };
        let mut unknown = false;
        for (column, wanted) in [
            ("subject =", &filter.subject),
            ("team =", &filter.team),
            ("route =", &filter.server),
            ("name =", &filter.tool),
        ] {
            if let Some(text) = wanted {
                match self.names.id(text) {
                    Some(id) => add(column, Value::Integer(id)),
                    None => unknown = true,
                }
            }
        }
        if let Some(t) = filter.since.and_then(micros) {
            add("time >=", Value::Integer(t));
        }
        if let Some(t) = filter.until.and_then(micros) {
            add("time <", Value::Integer(t));
        }
        if let Some(d) = filter.decision {
            add("decision =", Value::Integer(outcome_code(d.as_str())));
        }
        if let Some(status) = filter.status {
            add("status =", Value::Integer(status.into()));
        }
        if let Some(trace) = &filter.trace {
            add("trace =", Value::Text(trace.clone()));
        }
        let sql = format!(
            "SELECT rowid, file, offset, line FROM calls WHERE {} ORDER BY rowid {order} LIMIT {PAGE}",
            conds.join(" AND ")
        );
        Ok(Hits {
            index: self,
            filter,
            sql,
            params,
            after: if newest { i64::MAX } else { 0 },
            page: VecDeque::new(),
            exhausted: unknown,
            files: HashMap::new(),
        })
    }
}

impl Hits<'_> {
    fn fetch(&mut self) -> Result<(), IndexError> {
        let err = db(&self.index.path);
        self.params[0] = Value::Integer(self.after);
        let mut stmt = self.index.conn.prepare_cached(&self.sql).map_err(&err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(self.params.iter()), |r| {
                Ok(Hit {
                    rowid: r.get(0)?,
                    file: r.get(1)?,
                    offset: r.get::<_, i64>(2)?.unsigned_abs(),
                    line: r.get::<_, i64>(3)?.unsigned_abs(),
                })
            })
            .map_err(&err)?;
        for row in rows {
            self.page.push_back(row.map_err(&err)?);
        }
        self.exhausted = self.page.len() < PAGE;
        if let Some(last) = self.page.back() {
            self.after = last.rowid;
        }
        Ok(())
    }

    fn read(&mut self, hit: &Hit) -> Result<Entry, QueryError> {
        let (path, reader) = match self.files.get_mut(&hit.file) {
            Some(open) => open,
            None => {
                let path = self.file_path(hit.file)?;
                let file = File::open(&path).map_err(|source| QueryError::Io {
                    path: path.clone(),
                    source,
                })?;
                self.files.entry(hit.file).or_insert((path, BufReader::new(file)))
            }
        };
        let io = |source| QueryError::Io {
            path: path.clone(),
            source,
        };
        reader.seek(SeekFrom::Start(hit.offset)).map_err(io)?;
        let mut raw = String::new();
        reader.read_line(&mut raw).map_err(io)?;
        if raw.ends_with('\n') {
            raw.pop();
        }
        let line = hit.line;
        let record: CallRecord = serde_json::from_str(&raw).map_err(|e| QueryError::Malformed {
            file: path.clone(),
            line,
            message: e.to_string(),
        })?;
        Ok(Entry {
            file: path.clone(),
            line,
            record,
            raw,
        })
    }

    fn file_path(&self, id: i64) -> Result<PathBuf, QueryError> {
        self.index
            .conn
            .query_row("SELECT name FROM files WHERE id = ?1", [id], |r| r.get::<_, String>(0))
            .map(PathBuf::from)
            .map_err(|e| QueryError::Io {
                path: self.index.path.clone(),
                source: std::io::Error::other(e),
            })
    }
}

impl Iterator for Hits<'_> {
    type Item = Result<Entry, QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.page.is_empty() {
                if self.exhausted {
                    return None;
                }
                if let Err(e) = self.fetch() {
                    self.exhausted = true;
                    return Some(Err(QueryError::Io {
                        path: self.index.path.clone(),
                        source: std::io::Error::other(e),
                    }));
                }
                if self.page.is_empty() {
                    return None;
                }
            }
            let hit = self.page.pop_front()?;
            match self.read(&hit) {
                Ok(entry) if self.filter.matches(&entry.record) => return Some(Ok(entry)),
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
