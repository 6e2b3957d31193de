//! Reading the trail back: call records by time, caller, server, tool,
//! decision or trace, streamed over the files (nothing is loaded whole).
//! `tollgate audit query` and `tollgate usage` read through [`query`]; the
//! binary renders what it returns.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use crate::chain::LineKind;
use crate::error::QueryError;
use crate::files::{opened_at, trail_files};
use crate::record::{CallRecord, Outcome};

/// Which records to return; unset fields match everything, set fields must
/// match exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Records at or after this time.
    pub since: Option<SystemTime>,
    /// Records before this time.
    pub until: Option<SystemTime>,
    /// The principal's subject.
    pub subject: Option<String>,
    /// The principal's team.
    pub team: Option<String>,
    /// The route.
    pub server: Option<String>,
    /// The tool (or prompt, or resource URI).
    pub tool: Option<String>,
    /// The decision.
    pub decision: Option<Outcome>,
    /// The HTTP status answered.
    pub status: Option<u16>,
    /// The trace id.
    pub trace: Option<String>,
}

impl Filter {
    /// Whether `rec` passes.
    pub fn matches(&self, rec: &CallRecord) -> bool {
        let p = rec.principal.as_deref();
        let eq = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
        self.since.is_none_or(|t| rec.time >= t)
            && self.until.is_none_or(|t| rec.time < t)
            && eq(&self.subject, p.map(|p| p.subject.as_str()))
            && eq(&self.team, p.and_then(|p| p.team.as_deref()))
            && eq(&self.server, Some(&rec.route))
            && eq(&self.tool, rec.name.as_deref())
            && self.decision.is_none_or(|d| rec.decision.outcome == d)
            && self.status.is_none_or(|s| rec.status == Some(s))
            && eq(&self.trace, rec.trace_id.as_deref())
    }
}

/// One record found, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line.
    pub line: u64,
    /// The record.
    pub record: CallRecord,
    /// The line exactly as stored.
    pub raw: String,
}

/// Records matching a filter, in trail order; see [`query`].
pub struct Records {
    files: VecDeque<PathBuf>,
    current: Option<(PathBuf, BufReader<File>, u64)>,
    filter: Filter,
    buf: Vec<u8>,
}

/// The call records in `paths` (files, or directories of `*.jsonl`) that
/// match `filter`. Files that end before `filter.since` are skipped by
/// name.
///
/// # Errors
///
/// A path that cannot be read; the iterator yields later read errors and
/// malformed lines (with file and line).
pub fn query(paths: &[PathBuf], filter: Filter) -> Result<Records, QueryError> {
    let files = trail_files(paths).map_err(|(path, source)| QueryError::Io { path, source })?;
    let files = skip_before(files, filter.since);
    Ok(Records {
        files: files.into(),
        current: None,
        filter,
        buf: Vec::with_capacity(4096),
    })
}

/// Drop files whose successor (same writer) was opened at or before
/// `since`: every record in them was written, so started, before it.
fn skip_before(files: Vec<PathBuf>, since: Option<SystemTime>) -> Vec<PathBuf> {
    let Some(since) = since else { return files };
    let writer = |p: &Path| {
        let name = p.file_name()?.to_str()?;
        Some(name.rsplitn(3, '-').nth(2)?.to_owned())
    };
    (0..files.len())
        .filter(|&i| {
            let next = files[i + 1..].iter().find(|f| writer(f) == writer(&files[i]));
            next.and_then(|f| opened_at(f)).is_none_or(|t| t > since)
        })
        .map(|i| files[i].clone())
        .collect()
}

#[derive(Deserialize)]
struct KindOnly {
    kind: LineKind,
}

/// Whether a trail line is a call record: cheaply for lines this crate
/// wrote (the kind comes first), else by reading its `kind`.
///
/// # Errors
///
/// The line is not a JSON object with a known `kind`.
pub fn is_call_line(line: &[u8]) -> Result<bool, serde_json::Error> {
    let head = &line[..line.len().min(160)];
    if head.windows(13).any(|w| w == b"\"kind\":\"call\"") {
        return Ok(true);
    }
    Ok(serde_json::from_slice::<KindOnly>(line)?.kind == LineKind::Call)
}

/// The outcome of reading one line.
enum Step {
    EndOfFile,
    Skip,
    Item(Box<Result<Entry, QueryError>>),
}

impl Records {
    fn next_line(&mut self) -> Step {
        let Some((path, reader, line_no)) = self.current.as_mut() else {
            return Step::EndOfFile;
        };
        self.buf.clear();
        match reader.read_until(b'\n', &mut self.buf) {
            Ok(0) => {
                self.current = None;
                return Step::EndOfFile;
            }
            Ok(_) => *line_no += 1,
            Err(source) => {
                let path = path.clone();
                self.current = None;
                return Step::Item(Box::new(Err(QueryError::Io { path, source })));
            }
        }
        if self.buf.last() != Some(&b'\n') {
            // A partial last line (crash): not a record.
            return Step::Skip;
        }
        let line = &self.buf[..self.buf.len() - 1];
        let malformed = |e: serde_json::Error| QueryError::Malformed {
            file: path.clone(),
            line: *line_no,
            message: e.to_string(),
        };
        match is_call_line(line) {
            Ok(false) => return Step::Skip,
            Err(e) => return Step::Item(Box::new(Err(malformed(e)))),
            Ok(true) => {}
        }
        let record: CallRecord = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => return Step::Item(Box::new(Err(malformed(e)))),
        };
        if !self.filter.matches(&record) {
            return Step::Skip;
        }
        Step::Item(Box::new(Ok(Entry {
            file: path.clone(),
            line: *line_no,
            record,
            raw: String::from_utf8_lossy(line).into_owned(),
        })))
    }
}

impl Iterator for Records {
    type Item = Result<Entry, QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let path = self.files.pop_front()?;
                match File::open(&path) {
                    Ok(f) => self.current = Some((path, BufReader::with_capacity(256 * 1024, f), 0)),
                    Err(source) => return Some(Err(QueryError::Io { path, source })),
                }
            }
            match self.next_line() {
                Step::EndOfFile | Step::Skip => {}
                Step::Item(item) => return Some(*item),
            }
        }
    }
}

/// Parse a `--since` / `--until` value: RFC 3339 (`2026-09-01T12:00:00Z`),
/// a UTC date (`2026-09-01`), or a span back from `now` (`7d`, `24h`).
///
/// # Errors
///
/// A message saying which forms are accepted.
pub fn parse_time(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    if let Ok(t) = humantime::parse_rfc3339_weak(text) {
        return Ok(t);
    }
    if let Ok(t) = humantime::parse_rfc3339_weak(&format!("{text}T00:00:00Z")) {
        return Ok(t);
    }
    let span: Duration = humantime::parse_duration(text)
        .map_err(|_| format!("{text:?}: use 2026-09-01T12:00:00Z, 2026-09-01 or a span like 7d or 24h"))?;
    now.checked_sub(span).ok_or_else(|| format!("{text:?} is before 1970"))
}
