//! Audit search, one call's story, and exports.
//!
//! `GET /console/api/audit` filters the trail through the index and reads
//! back the matching lines (with a fleet store: every replica's, from
//! PostgreSQL, `fleet`); `GET /console/api/audit/call` answers the five
//! Reconstruction-Test questions for one record and verifies the chain of
//! the file that holds it (a stored record: that replica's file as
//! stored); `GET /console/api/audit/export` returns every
//! match as JSON lines or CSV and records who exported what. Captured
//! payloads are only shown to auditors.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Entry, Filter, Outcome};

use super::{fleet, record_action, time_param, trail_file, with_index};
use crate::caller::Caller;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

/// Most records one search returns.
const MAX_LIMIT: usize = 1000;
/// Most records one export holds.
const MAX_EXPORT: usize = 100_000;

/// A search's parameters (all optional).
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct SearchQuery {
    subject: Option<String>,
    team: Option<String>,
    server: Option<String>,
    tool: Option<String>,
    decision: Option<String>,
    status: Option<String>,
    trace: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<usize>,
    /// `newest` (the default) or `oldest` first.
    order: Option<String>,
    format: Option<String>,
}

impl SearchQuery {
    /// Whether the newest records come first (the default).
    fn newest_first(&self) -> Result<bool, ConsoleError> {
        match self.order.as_deref().unwrap_or_default() {
            "" | "newest" => Ok(true),
            "oldest" => Ok(false),
            other => Err(ConsoleError::BadRequest(format!(
                "unknown order {other:?}: newest or oldest"
            ))),
        }
    }

    fn filter(&self) -> Result<Filter, ConsoleError> {
        let text = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        let decision = match text(&self.decision) {
            Some(d) => {
                Some(Outcome::parse(&d).ok_or_else(|| ConsoleError::BadRequest(format!("unknown decision {d:?}")))?)
            }
            None => None,
        };
        let status = match text(&self.status) {
            Some(s) => Some(
                s.parse()
                    .map_err(|_| ConsoleError::BadRequest(format!("status {s:?} is not an HTTP status")))?,
            ),
            None => None,
        };
        Ok(Filter {
            since: time_param("since", self.since.as_deref())?,
            until: time_param("until", self.until.as_deref())?,
            subject: text(&self.subject),
            team: text(&self.team),
            server: text(&self.server),
            tool: text(&self.tool),
            decision,
            status,
            trace: text(&self.trace),
        })
    }
}

/// A record as the caller may see it: captures only for auditors.
fn shown(caller: &Caller, mut record: CallRecord) -> CallRecord {
    if !caller.can(Role::Auditor) {
        record.capture = None;
    }
    record
}

/// Where a record is, as the call page names it.
pub(crate) fn reference(e: &Entry) -> Value {
    let file = e.file.file_name().map(|n| n.to_string_lossy().into_owned());
    json!({"file": file, "line": e.line})
}

/// `GET /console/api/audit`.
pub(crate) async fn search(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<SearchQuery>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let filter = q.filter()?;
    let newest = q.newest_first()?;
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
    let started = Instant::now();
    let (records, truncated) = if let Some(store) = s.backend.store() {
        let (found, more) = fleet::search(&store, &filter, limit, newest).await?;
        let records = found
            .into_iter()
            .map(|l| json!({"ref": fleet::reference(&l), "record": shown(&caller, l.record)}))
            .collect();
        (records, more)
    } else {
        local_search(&s, caller, filter, (limit, newest)).await?
    };
    Ok(Json(json!({
        "order": if newest { "newest" } else { "oldest" },
        "records": records,
        "truncated": truncated,
        "took_ms": started.elapsed().as_secs_f64() * 1000.0,
    })))
}

/// At most `limit` records matching `filter` from this replica's index,
/// the newest first with `newest` (the index reads them from the end).
async fn local_search(
    s: &Arc<Shared>,
    caller: Caller,
    filter: Filter,
    (limit, newest): (usize, bool),
) -> Result<(Vec<Value>, bool), ConsoleError> {
    with_index(s, move |index| {
        let mut hits = if newest {
            index.query_newest(filter)?
        } else {
            index.query(filter)?
        };
        let mut out = Vec::new();
        for entry in hits.by_ref() {
            let entry = entry?;
            if out.len() == limit {
                return Ok((out, true));
            }
            out.push(json!({"ref": reference(&entry), "record": shown(&caller, entry.record)}));
        }
        Ok((out, false))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub(crate) struct CallQuery {
    /// The replica that wrote it (with a fleet store); else this one.
    replica: Option<String>,
    file: String,
    line: u64,
}

/// `GET /console/api/audit/call`.
pub(crate) async fn call(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<CallQuery>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let (reference, record, chain) = match (s.backend.store(), q.replica.as_deref().filter(|r| !r.is_empty())) {
        (Some(store), Some(replica)) => {
            let found = fleet::call(&store, replica, &q.file, q.line).await?;
            let chain = fleet::chain_json(&found);
            (fleet::reference(&found.call), found.call.record, chain)
        }
        _ => {
            let (record, chain) = local_call(&s, &q.file, q.line).await?;
            (json!({"file": q.file, "line": q.line}), record, chain)
        }
    };
    let prices = s.backend.report_settings().prices;
    let cost = tollgate_report::spend::cost(&record, &prices);
    let policies: Vec<Value> = record
        .decision
        .policies
        .iter()
        .map(|id| json!({"id": id, "source": s.backend.policy_source(id)}))
        .collect();
    let answers = super::gateway::answers(&record, policies, (cost, prices.currency()));
    let capture = record.capture.clone().filter(|_| caller.can(Role::Auditor));
    Ok(Json(json!({
        "ref": reference,
        "record": shown(&caller, record),
        "chain": chain,
        "answers": answers,
        "capture": capture,
    })))
}

/// The call record on line `line` of this replica's audit file `name`,
/// and whether that file's chain verifies.
async fn local_call(s: &Shared, name: &str, line: u64) -> Result<(CallRecord, Value), ConsoleError> {
    let dir = s.backend.audit_dir().ok_or(ConsoleError::NoAuditTrail)?;
    let file = trail_file(&dir, name)?;
    tokio::task::spawn_blocking(move || {
        let record = read_line(&file, line)?;
        Ok::<_, ConsoleError>((record, chain_of(&file)))
    })
    .await
    .map_err(|e| ConsoleError::Gateway(format!("console task failed: {e}")))?
}

/// The call record on 1-based line `line` of `file`.
fn read_line(file: &Path, line: u64) -> Result<CallRecord, ConsoleError> {
    let n = usize::try_from(line.saturating_sub(1)).unwrap_or(usize::MAX);
    let reader = BufReader::new(std::fs::File::open(file).map_err(|e| ConsoleError::NotFound(e.to_string()))?);
    let text = reader
        .lines()
        .nth(n)
        .ok_or_else(|| ConsoleError::NotFound(format!("no line {line}")))?
        .map_err(|e| ConsoleError::NotFound(e.to_string()))?;
    let not_call = || ConsoleError::NotFound(format!("line {line} is not a call record"));
    match tollgate_audit::is_call_line(text.as_bytes()) {
        Ok(true) => serde_json::from_str(&text).map_err(|_| not_call()),
        _ => Err(not_call()),
    }
}

/// Whether the hash chain of `file` verifies.
fn chain_of(file: &Path) -> Value {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
    match tollgate_audit::verify(&[file.to_owned()]) {
        Ok(report) => json!({"file": name, "verified": true, "records": report.records}),
        Err(e) => json!({"file": name, "verified": false, "error": e.to_string()}),
    }
}

/// `GET /console/api/audit/export?format=jsonl|csv&...`.
pub(crate) async fn export(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<SearchQuery>,
) -> Result<Response, ConsoleError> {
    caller.need(Role::Viewer)?;
    let csv = match q.format.as_deref().unwrap_or("jsonl") {
        "jsonl" => false,
        "csv" => true,
        other => return Err(ConsoleError::BadRequest(format!("unknown export format {other:?}"))),
    };
    let filter = q.filter()?;
    let what = format!("audit {} {}", if csv { "csv" } else { "jsonl" }, describe(&q));
    let captures = caller.can(Role::Auditor);
    let (body, rows) = if let Some(store) = s.backend.store() {
        // Exports keep the trail's order, oldest first.
        let (found, _) = fleet::search(&store, &filter, MAX_EXPORT, false).await?;
        let records = found.into_iter().map(|l| Ok(fleet::exported(l)));
        if csv {
            csv_export(records)?
        } else {
            jsonl_export(records, captures)?
        }
    } else {
        with_index(&s, move |index| {
            let records = index
                .query(filter)?
                .take(MAX_EXPORT)
                .map(|e| e.map(|e| (e.raw, e.record)).map_err(ConsoleError::from));
            if csv {
                csv_export(records)
            } else {
                jsonl_export(records, captures)
            }
        })
        .await?
    };
    record_action(&s, &caller, "console/export", format!("{what} ({rows} records)"), true).await?;
    let (kind, name) = if csv {
        ("text/csv; charset=utf-8", "tollgate-audit.csv")
    } else {
        ("application/jsonl", "tollgate-audit.jsonl")
    };
    let disposition = format!("attachment; filename=\"{name}\"");
    Ok((
        [(CONTENT_TYPE, kind.to_owned()), (CONTENT_DISPOSITION, disposition)],
        body,
    )
        .into_response())
}

/// The lines as stored (so each still verifies against the chain), except
/// that non-auditors get them without captures.
fn jsonl_export(
    records: impl Iterator<Item = Result<(String, CallRecord), ConsoleError>>,
    captures: bool,
) -> Result<(Vec<u8>, usize), ConsoleError> {
    let mut out = Vec::new();
    let mut n = 0;
    for r in records {
        let (raw, record) = r?;
        if captures || record.capture.is_none() {
            out.extend_from_slice(raw.trim_end().as_bytes());
        } else {
            // The line without its capture (its chain fields kept; it no
            // longer verifies, which is the point of leaving it out).
            let mut line: Value = serde_json::from_str(&raw).unwrap_or_default();
            if let Some(fields) = line.as_object_mut() {
                fields.remove("capture");
            }
            out.extend_from_slice(line.to_string().as_bytes());
        }
        out.push(b'\n');
        n += 1;
    }
    Ok((out, n))
}

/// The columns of the CSV export.
const CSV_HEADER: [&str; 19] = [
    "time",
    "request_id",
    "subject",
    "team",
    "cost_center",
    "server",
    "virtual_server",
    "method",
    "name",
    "decision",
    "policies",
    "status",
    "rpc_error",
    "error",
    "bytes_in",
    "bytes_out",
    "tokens",
    "duration_us",
    "trace_id",
];

/// The records as CSV, one row each, through the shared writer (no cell
/// reads as a formula: names, subjects and errors come from callers and
/// upstreams).
fn csv_export(
    records: impl Iterator<Item = Result<(String, CallRecord), ConsoleError>>,
) -> Result<(Vec<u8>, usize), ConsoleError> {
    let fail = |e: tollgate_report::csv::CsvError| ConsoleError::Gateway(format!("CSV: {e}"));
    let mut w = tollgate_report::csv::Writer::new();
    w.row(CSV_HEADER).map_err(fail)?;
    let mut n = 0;
    for r in records {
        let (_, r) = r?;
        w.row(csv_row(&r)).map_err(fail)?;
        n += 1;
    }
    Ok((w.finish().map_err(fail)?.into_bytes(), n))
}

/// A record's cells, in [`CSV_HEADER`]'s order.
fn csv_row(r: &CallRecord) -> [String; 19] {
    let p = r.principal.as_deref();
    let opt = |v: Option<&str>| v.unwrap_or_default().to_owned();
    let num = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    [
        humantime::format_rfc3339_micros(r.time).to_string(),
        r.request_id.clone(),
        opt(p.map(|p| p.subject.as_str())),
        opt(p.and_then(|p| p.team.as_deref())),
        opt(p.and_then(|p| p.cost_center.as_deref())),
        r.route.to_string(),
        opt(r.virtual_server.as_deref()),
        opt(r.method.as_deref()),
        opt(r.name.as_deref()),
        r.decision.outcome.as_str().to_owned(),
        r.decision.policies.iter().map(|p| &**p).collect::<Vec<_>>().join(" "),
        num(r.status.map(i64::from)),
        num(r.rpc_error),
        opt(r.error.as_deref()),
        r.bytes_in.to_string(),
        r.bytes_out.to_string(),
        r.tokens.to_string(),
        r.duration_us.to_string(),
        opt(r.trace_id.as_deref()),
    ]
}

/// The filters of an export, for its audit record.
fn describe(q: &SearchQuery) -> String {
    let fields = [
        ("subject", &q.subject),
        ("team", &q.team),
        ("server", &q.server),
        ("tool", &q.tool),
        ("decision", &q.decision),
        ("status", &q.status),
        ("trace", &q.trace),
        ("since", &q.since),
        ("until", &q.until),
    ];
    let set: Vec<String> = fields
        .iter()
        .filter_map(|(k, v)| v.as_deref().filter(|v| !v.is_empty()).map(|v| format!("{k}={v}")))
        .collect();
    if set.is_empty() {
        "(all records)".into()
    } else {
        set.join(" ")
    }
}
