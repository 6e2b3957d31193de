//! Catching up with the trail: new lines of known files, new files, and
//! files that are gone.
//!
//! Each file's indexed length is kept; an update reads from there to the
//! last complete line, in transactions of [`BATCH`] records, so an
//! interrupted update loses nothing and the next one resumes. A partial
//! last line (a write in progress) is left for the next update. The bytes
//! committed are reported as they go (`update_with_progress`), for a
//! progress bar.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use tollgate_audit::{ProgressReporter, TrailProgress, no_progress};

use crate::Index;
use crate::error::{IndexError, db};
use crate::line::CallLine;
use crate::names::Names;
use crate::schema::Order;

/// Records per transaction.
const BATCH: usize = 20_000;

/// What an update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Files read (new or grown).
    pub files: u64,
    /// Call records added.
    pub records: u64,
    /// Bytes of the trail read.
    pub bytes: u64,
    /// Files no longer in the trail whose records were dropped.
    pub removed: u64,
    /// How long it took.
    pub elapsed: Duration,
}

impl Index {
    /// Bring the index up to date with the trail in `paths` (files, or
    /// directories of `*.jsonl` files).
    ///
    /// # Errors
    ///
    /// A file that cannot be read, a malformed call line (with file and
    /// line), a file shorter than its indexed part, or a database error.
    /// What was indexed before the error stays.
    pub fn update(&mut self, paths: &[PathBuf]) -> Result<Progress, IndexError> {
        self.update_with_progress(paths, &mut no_progress)
    }

    /// [`Index::update`], reporting the bytes indexed of the bytes to
    /// index (what the files grew by since the last update) to `progress`
    /// as it goes, for a progress bar.
    ///
    /// # Errors
    ///
    /// As [`Index::update`].
    pub fn update_with_progress(
        &mut self,
        paths: &[PathBuf],
        progress: &mut dyn FnMut(TrailProgress),
    ) -> Result<Progress, IndexError> {
        let started = Instant::now();
        let files = tollgate_audit::trail_files(paths).map_err(|(path, source)| IndexError::Io { path, source })?;
        // Each file's name in the index, resolved once per update.
        let keys: Vec<String> = files.iter().map(|f| key(f)).collect();
        let mut summary = Progress {
            removed: self.drop_missing(&keys)?,
            ..Progress::default()
        };
        let mut pending = Vec::new();
        for (file, name) in files.iter().zip(&keys) {
            let size = std::fs::metadata(file)
                .map_err(|source| IndexError::Io {
                    path: file.clone(),
                    source,
                })?
                .len();
            let known = self.known(name)?;
            let from = known.as_ref().map_or(0, |k| k.offset);
            if from == size {
                continue;
            }
            if from > size {
                return Err(IndexError::Shrunk { path: file.clone() });
            }
            pending.push((file, name, known, size - from));
        }
        let mut reporter = ProgressReporter::new(pending.iter().map(|p| p.3).sum(), progress);
        for (file, name, known, _) in pending {
            let (records, bytes) = self.ingest_file(file, name, known, &mut reporter)?;
            summary.files += 1;
            summary.records += records;
            summary.bytes += bytes;
        }
        reporter.report();
        summary.elapsed = started.elapsed();
        Ok(summary)
    }

    /// Delete every record and file, then index `paths` again.
    ///
    /// # Errors
    ///
    /// As [`Index::update`].
    pub fn rebuild(&mut self, paths: &[PathBuf]) -> Result<Progress, IndexError> {
        self.rebuild_with_progress(paths, &mut no_progress)
    }

    /// [`Index::rebuild`], reporting to `progress` as
    /// [`Index::update_with_progress`] does.
    ///
    /// # Errors
    ///
    /// As [`Index::update`].
    pub fn rebuild_with_progress(
        &mut self,
        paths: &[PathBuf],
        progress: &mut dyn FnMut(TrailProgress),
    ) -> Result<Progress, IndexError> {
        self.conn
            .execute_batch(
                "DELETE FROM calls; DELETE FROM files; DELETE FROM names; DELETE FROM meta WHERE key <> 'schema';",
            )
            .map_err(db(&self.path))?;
        self.names = Names::default();
        self.order = Order::default();
        self.update_with_progress(paths, progress)
    }

    /// Where indexing of the file named `name` stopped, if it was started.
    fn known(&self, name: &str) -> Result<Option<Cursor>, IndexError> {
        self.conn
            .query_row("SELECT id, indexed, lines FROM files WHERE name = ?1", [name], |r| {
                Ok(Cursor {
                    file: r.get(0)?,
                    offset: r.get::<_, i64>(1)?.unsigned_abs(),
                    line: r.get::<_, i64>(2)?.unsigned_abs(),
                })
            })
            .optional()
            .map_err(db(&self.path))
    }

    /// Drop the records of indexed files that are gone: not among the
    /// files named `present` and no longer on disk (a file merely left out
    /// of `paths` keeps its records).
    fn drop_missing(&mut self, present: &[String]) -> Result<u64, IndexError> {
        let err = db(&self.path);
        let present: std::collections::HashSet<&str> = present.iter().map(String::as_str).collect();
        let mut gone = Vec::new();
        {
            let mut stmt = self.conn.prepare("SELECT id, name FROM files").map_err(&err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                .map_err(&err)?;
            for row in rows {
                let (id, name) = row.map_err(&err)?;
                if !present.contains(name.as_str()) && !Path::new(&name).exists() {
                    gone.push(id);
                }
            }
        }
        let tx = self.conn.transaction().map_err(&err)?;
        for id in &gone {
            tx.execute("DELETE FROM calls WHERE file = ?1", [id]).map_err(&err)?;
            tx.execute("DELETE FROM files WHERE id = ?1", [id]).map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(gone.len() as u64)
    }

    /// Index `file` (named `name` in the index) from where `known` stopped,
    /// or from its start; returns records and bytes.
    fn ingest_file(
        &mut self,
        file: &Path,
        name: &str,
        known: Option<Cursor>,
        progress: &mut ProgressReporter<'_>,
    ) -> Result<(u64, u64), IndexError> {
        let io = |source| IndexError::Io {
            path: file.to_owned(),
            source,
        };
        let err = db(&self.path);
        let mut cursor = match known {
            Some(cursor) => cursor,
            None => {
                self.conn
                    .execute("INSERT INTO files (name, indexed, lines) VALUES (?1, 0, 0)", [name])
                    .map_err(&err)?;
                Cursor {
                    file: self.conn.last_insert_rowid(),
                    offset: 0,
                    line: 0,
                }
            }
        };
        let mut reader = BufReader::with_capacity(1 << 20, File::open(file).map_err(io)?);
        reader.seek(SeekFrom::Start(cursor.offset)).map_err(io)?;
        let (mut records, start) = (0u64, cursor.offset);
        let mut buf = Vec::with_capacity(4096);
        loop {
            let tx = self.conn.transaction().map_err(&err)?;
            let mut sink = Sink {
                tx: &tx,
                names: &mut self.names,
                order: &mut self.order,
            };
            let batch_start = cursor.offset;
            let batch = read_batch(&mut sink, &mut reader, &mut buf, &mut cursor, file);
            let (added, done) = match batch {
                Ok(b) => b,
                Err(e) => {
                    drop(tx);
                    self.names.reload(&self.conn).map_err(&err)?;
                    self.order = Order::load(&self.conn).map_err(&err)?;
                    return Err(e);
                }
            };
            self.order.save(&tx).map_err(&err)?;
            tx.execute(
                "UPDATE files SET indexed = ?1, lines = ?2 WHERE id = ?3",
                params![cursor.offset as i64, cursor.line as i64, cursor.file],
            )
            .map_err(&err)?;
            tx.commit().map_err(&err)?;
            progress.advance(cursor.offset - batch_start);
            records += added;
            if done {
                return Ok((records, cursor.offset - start));
            }
        }
    }
}

/// Where reading of a file is (or stopped): its id, the byte offset of the
/// next line and the number of lines read.
struct Cursor {
    file: i64,
    offset: u64,
    line: u64,
}

/// Where a batch's rows go: the open transaction, with the names and the
/// time order it updates.
struct Sink<'t> {
    tx: &'t Connection,
    names: &'t mut Names,
    order: &'t mut Order,
}

/// Read up to [`BATCH`] records into the sink; `true` when the file's
/// complete lines are all read.
fn read_batch(
    sink: &mut Sink<'_>,
    reader: &mut BufReader<File>,
    buf: &mut Vec<u8>,
    at: &mut Cursor,
    file: &Path,
) -> Result<(u64, bool), IndexError> {
    let err = |source| IndexError::Database {
        path: file.to_owned(),
        source,
    };
    let mut added = 0u64;
    while (added as usize) < BATCH {
        buf.clear();
        let n = reader.read_until(b'\n', buf).map_err(|source| IndexError::Io {
            path: file.to_owned(),
            source,
        })?;
        if n == 0 || buf.last() != Some(&b'\n') {
            return Ok((added, true));
        }
        let offset = at.offset;
        at.offset += n as u64;
        at.line += 1;
        let line = &buf[..n - 1];
        // Not a call (or not a JSON object with a known kind): not indexed.
        if !tollgate_audit::is_call_line(line).unwrap_or(false) {
            continue;
        }
        let call: CallLine<'_> = serde_json::from_slice(line).map_err(|e| IndexError::Malformed {
            path: file.to_owned(),
            line: at.line,
            message: e.to_string(),
        })?;
        insert(sink, &call, (at.file, offset, at.line)).map_err(err)?;
        added += 1;
    }
    Ok((added, false))
}

fn insert(sink: &mut Sink<'_>, c: &CallLine<'_>, (file, offset, line): (i64, u64, u64)) -> rusqlite::Result<()> {
    let tx = sink.tx;
    let time = c.time_us().unwrap_or(0);
    sink.order.see(time);
    let names = &mut *sink.names;
    let mut id = |s: Option<&str>| s.map(|s| names.intern(tx, s)).transpose();
    let p = c.principal.as_ref();
    let row = (
        id(p.and_then(|p| p.subject.as_deref()))?,
        id(p.and_then(|p| p.team.as_deref()))?,
        id(p.and_then(|p| p.cost_center.as_deref()))?,
        id(Some(c.route.as_deref().unwrap_or("")))?,
        id(c.virtual_server.as_deref())?,
        id(c.name.as_deref())?,
        id(c.exposed_name.as_deref())?,
        id(c.method.as_deref())?,
    );
    tx.prepare_cached(
        "INSERT INTO calls (time, file, offset, line, complete, subject, team, cost_center, route, via, name, \
         exposed, method, trace, decision, status, error, bytes_in, bytes_out, tokens, catalog, duration_us) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
    )?
    .execute(params![
        time,
        file,
        offset as i64,
        line as i64,
        c.is_complete(),
        row.0,
        row.1,
        row.2,
        row.3,
        row.4,
        row.5,
        row.6,
        row.7,
        c.trace_id.as_deref(),
        c.decision_code(),
        c.status,
        c.error_flags(),
        c.bytes_in as i64,
        c.bytes_out as i64,
        c.tokens as i64,
        c.catalog,
        c.duration_us as i64,
    ])?;
    Ok(())
}

/// How a file is named in the index: its absolute path.
pub(crate) fn key(file: &Path) -> String {
    std::fs::canonicalize(file)
        .unwrap_or_else(|_| file.to_owned())
        .display()
        .to_string()
}
