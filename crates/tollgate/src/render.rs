//! What `tollgate audit query` and `tollgate usage` print: the query table
//! (or the stored lines), and the usage report as a table, CSV or JSON.
//!
//! The libraries return data (`tollgate-audit` records, `tollgate-meter`
//! reports); the text people and spreadsheets read is made here, off the
//! request path. `docs/audit.md` shows each format.

use std::fmt::Write as _;
use std::io::{self, Write};

use tollgate_audit::{CallRecord, Entry, QueryError};
use tollgate_meter::{UsageReport, UsageRow};

/// How `tollgate audit query` prints records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueryFormat {
    /// Aligned columns for people.
    Table,
    /// The stored JSON lines, unchanged.
    Json,
    /// The table's columns as CSV (neutralised against formulas).
    Csv,
}

/// Which records `tollgate audit query` prints, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Selection {
    /// At most this many (the newest ones with `newest_first`, else the
    /// oldest).
    pub(crate) limit: Option<usize>,
    /// Newest first (the trail's order is oldest first).
    pub(crate) newest_first: bool,
}

/// Why printing stopped.
#[derive(Debug)]
pub(crate) enum RenderError<E = QueryError> {
    /// Reading the trail (or the store) failed, or a line is not a record.
    Read(E),
    /// Writing the output failed.
    Write(io::Error),
}

/// Print `records` to `out`; returns how many were printed.
///
/// # Errors
///
/// The first read error, malformed line or write error.
pub(crate) fn query<E>(
    records: impl Iterator<Item = Result<Entry, E>>,
    format: QueryFormat,
    selection: Selection,
    out: &mut dyn Write,
) -> Result<u64, RenderError<E>> {
    match format {
        QueryFormat::Table => writeln!(out, "{}", table_row(&TABLE_HEADER.map(String::from))),
        QueryFormat::Csv => out.write_all(&csv_row(TABLE_HEADER.map(String::from))),
        QueryFormat::Json => Ok(()),
    }
    .map_err(RenderError::Write)?;
    let mut n = 0;
    let mut print = |entry: Result<Entry, E>| -> Result<(), RenderError<E>> {
        let entry = entry.map_err(RenderError::Read)?;
        match format {
            QueryFormat::Json => writeln!(out, "{}", entry.raw),
            QueryFormat::Table => writeln!(out, "{}", table_row(&table_cells(&entry.record))),
            QueryFormat::Csv => out.write_all(&csv_row(table_cells(&entry.record))),
        }
        .map_err(RenderError::Write)?;
        n += 1;
        Ok(())
    };
    let limit = selection.limit.unwrap_or(usize::MAX);
    if selection.newest_first {
        newest(records, limit).into_iter().try_for_each(&mut print)?;
    } else {
        records.take(limit).try_for_each(&mut print)?;
    }
    Ok(n)
}

/// The last `limit` of `records`, newest first (the trail's order is
/// oldest first); a read error ends the reading and comes first.
fn newest<T, E>(records: impl Iterator<Item = Result<T, E>>, limit: usize) -> Vec<Result<T, E>> {
    let mut kept = std::collections::VecDeque::new();
    for r in records {
        if r.is_err() {
            return std::iter::once(r).chain(kept.into_iter().rev()).collect();
        }
        kept.push_back(r);
        if kept.len() > limit {
            kept.pop_front();
        }
    }
    kept.into_iter().rev().collect()
}

/// One CSV line of cells (formula-neutralised, RFC 4180 quoting).
fn csv_row<const N: usize>(cells: [String; N]) -> Vec<u8> {
    let mut w = tollgate_report::csv::Writer::new();
    match w.row(cells).and_then(|()| w.finish()) {
        Ok(text) => text.into_bytes(),
        Err(_) => Vec::new(),
    }
}

const TABLE_HEADER: [&str; 11] = [
    "TIME", "SUBJECT", "TEAM", "SERVER", "METHOD", "NAME", "DECISION", "STATUS", "MS", "TOKENS", "POLICIES",
];
/// Column widths; the last column (policy ids) is never cut.
const TABLE_WIDTHS: [usize; 10] = [27, 16, 12, 12, 14, 24, 13, 11, 8, 8];

fn table_cells(r: &CallRecord) -> [String; 11] {
    let p = r.principal.as_deref();
    let status = match (r.status, r.rpc_error) {
        (Some(s), Some(c)) => format!("{s}/{c}"),
        (Some(s), None) => s.to_string(),
        (None, Some(c)) => c.to_string(),
        (None, None) => "-".into(),
    };
    let dash = |v: Option<&str>| v.unwrap_or("-").to_owned();
    let policies = if r.decision.policies.is_empty() {
        "-".to_owned()
    } else {
        r.decision.policies.join(",")
    };
    [
        humantime::format_rfc3339_micros(r.time).to_string(),
        dash(p.map(|p| p.subject.as_str())),
        dash(p.and_then(|p| p.team.as_deref())),
        r.route.to_string(),
        dash(r.method.as_deref()),
        dash(r.name.as_deref()),
        r.decision.outcome.as_str().to_owned(),
        status,
        format!("{:.1}", r.duration_us as f64 / 1000.0),
        r.tokens.to_string(),
        policies,
    ]
}

fn table_row(cells: &[String; 11]) -> String {
    let mut line = String::new();
    for (i, cell) in cells.iter().enumerate() {
        let Some(&width) = TABLE_WIDTHS.get(i) else {
            line.push_str(cell);
            break;
        };
        let shown: String = if cell.chars().count() > width {
            cell.chars().take(width - 1).chain(['…']).collect()
        } else {
            cell.clone()
        };
        let _ = write!(line, "{shown:<width$} ");
    }
    line.trim_end().to_owned()
}

const USAGE_COLUMNS: [&str; 9] = [
    "calls",
    "errors",
    "denied",
    "bytes_in",
    "bytes_out",
    "tokens",
    "catalog_tokens",
    "p50_ms",
    "p99_ms",
];

fn usage_cells(r: &UsageRow) -> [String; 9] {
    let ms = |us: u64| format!("{:.1}", us as f64 / 1000.0);
    [
        r.calls.to_string(),
        r.errors.to_string(),
        r.denied.to_string(),
        r.bytes_in.to_string(),
        r.bytes_out.to_string(),
        r.tokens.to_string(),
        r.catalog_tokens.to_string(),
        ms(r.p50_us),
        ms(r.p99_us),
    ]
}

fn usage_header(report: &UsageReport) -> Vec<String> {
    let cost = report.currency.as_ref().map(|c| format!("cost_{}", c.to_lowercase()));
    std::iter::once(report.by.as_str())
        .chain(USAGE_COLUMNS)
        .map(str::to_owned)
        .chain(cost)
        .collect()
}

/// A row's cells after its key: the usage columns, and its cost when the
/// report is priced.
fn row_cells(report: &UsageReport, r: &UsageRow) -> Vec<String> {
    let cost = report.currency.as_ref().map(|_| format!("{:.2}", r.cost));
    usage_cells(r).into_iter().chain(cost).collect()
}

/// Aligned columns (the key left, numbers right), with a `TOTAL` line.
pub(crate) fn usage_table(report: &UsageReport) -> String {
    let header = usage_header(report);
    let body: Vec<Vec<String>> = report
        .rows
        .iter()
        .chain([&report.total])
        .map(|r| std::iter::once(r.key.clone()).chain(row_cells(report, r)).collect())
        .collect();
    let numbers: Vec<usize> = (1..header.len()).collect();
    crate::table::aligned(&header, &body, &numbers)
}

/// CSV with a header line (RFC 4180 quoting, no cell that reads as a
/// formula: `tollgate_report::csv`), ending with the `TOTAL` line as the
/// table does.
pub(crate) fn usage_csv(report: &UsageReport) -> Result<String, tollgate_report::csv::CsvError> {
    let mut w = tollgate_report::csv::Writer::new();
    w.row(usage_header(report))?;
    for r in report.rows.iter().chain([&report.total]) {
        w.row(std::iter::once(r.key.clone()).chain(row_cells(report, r)))?;
    }
    w.finish()
}

/// JSON: `{"by": …, "rows": [...], "total": {...}}`, with a final newline.
pub(crate) fn usage_json(report: &UsageReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests;
