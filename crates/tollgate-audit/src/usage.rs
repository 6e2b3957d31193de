//! `tollgate usage`: calls, errors, bytes, estimated tokens and latency
//! percentiles from the audit trail, grouped by team, cost centre, subject,
//! server, tool or trace, as a table, CSV or JSON.
//!
//! Only `complete` records count (a strict-mode `forwarding` record is not a
//! second call). Tokens of `tools/list` responses are also shown apart as
//! catalogue context cost.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::SystemTime;

use serde::Serialize;

use crate::error::QueryError;
use crate::percentile::Distribution;
use crate::query::{Filter, query};
use crate::record::{CallRecord, Outcome, Phase};

/// What usage is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The principal's team.
    Team,
    /// The principal's cost centre.
    CostCenter,
    /// The principal's subject.
    Subject,
    /// The route.
    Server,
    /// The tool, prompt or resource; `(method)` for calls without a name.
    Tool,
    /// The trace id (one user instruction).
    Trace,
}

impl FromStr for GroupBy {
    type Err = String;
    fn from_str(s: &str) -> Result<GroupBy, String> {
        match s.replace('-', "_").as_str() {
            "team" => Ok(GroupBy::Team),
            "cost_center" | "cost_centre" => Ok(GroupBy::CostCenter),
            "subject" | "user" => Ok(GroupBy::Subject),
            "server" | "route" => Ok(GroupBy::Server),
            "tool" => Ok(GroupBy::Tool),
            "trace" => Ok(GroupBy::Trace),
            _ => Err(format!("{s:?}: use team, cost_center, subject, server, tool or trace")),
        }
    }
}

/// Key used for records without a value for the grouping.
pub const NONE_KEY: &str = "(none)";

impl GroupBy {
    fn key(self, r: &CallRecord) -> String {
        let p = r.principal.as_deref();
        let value = match self {
            GroupBy::Team => p.and_then(|p| p.team.clone()),
            GroupBy::CostCenter => p.and_then(|p| p.cost_center.clone()),
            GroupBy::Subject => p.map(|p| p.subject.clone()),
            GroupBy::Server => Some(r.route.to_string()),
            GroupBy::Tool => r.name.clone().or_else(|| r.method.as_ref().map(|m| format!("({m})"))),
            GroupBy::Trace => r.trace_id.clone(),
        };
        value.unwrap_or_else(|| NONE_KEY.to_owned())
    }
}

/// Usage of one group.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageRow {
    /// The group's key.
    pub key: String,
    /// Calls.
    pub calls: u64,
    /// Calls answered with an HTTP error status or a JSON-RPC error.
    pub errors: u64,
    /// Calls denied by policy.
    pub denied: u64,
    /// Request bytes.
    pub bytes_in: u64,
    /// Response bytes.
    pub bytes_out: u64,
    /// Estimated tokens of all responses.
    pub tokens: u64,
    /// Of which in catalogue responses (`tools/list`).
    pub catalog_tokens: u64,
    /// Median duration, microseconds.
    pub p50_us: u64,
    /// 99th percentile duration, microseconds.
    pub p99_us: u64,
}

/// A usage report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// The grouping.
    pub by: GroupBy,
    /// Groups, most tokens first.
    pub rows: Vec<UsageRow>,
    /// All groups together.
    pub total: UsageRow,
}

#[derive(Default)]
struct Acc {
    row: UsageRow,
    durations: Distribution,
}

impl Acc {
    fn add(&mut self, r: &CallRecord) {
        let row = &mut self.row;
        row.calls += 1;
        row.errors += u64::from(r.is_error());
        row.denied += u64::from(r.decision.outcome == Outcome::Deny);
        row.bytes_in += r.bytes_in;
        row.bytes_out += r.bytes_out;
        row.tokens += r.tokens;
        if r.catalog {
            row.catalog_tokens += r.tokens;
        }
        self.durations.add(r.duration_us);
    }

    fn finish(mut self, key: String) -> UsageRow {
        self.row.key = key;
        self.row.p50_us = self.durations.percentile(0.5);
        self.row.p99_us = self.durations.percentile(0.99);
        self.row
    }
}

/// Sum the call records in `paths` from `since` to `until`, grouped `by`.
///
/// # Errors
///
/// A file that cannot be read or a malformed line.
pub fn usage(
    paths: &[PathBuf],
    by: GroupBy,
    since: Option<SystemTime>,
    until: Option<SystemTime>,
) -> Result<UsageReport, QueryError> {
    let filter = Filter {
        since,
        until,
        ..Filter::default()
    };
    let mut groups: HashMap<String, Acc> = HashMap::new();
    let mut total = Acc::default();
    for entry in query(paths, filter)? {
        let r = entry?.record;
        if r.phase != Phase::Complete {
            continue;
        }
        groups.entry(by.key(&r)).or_default().add(&r);
        total.add(&r);
    }
    let mut rows: Vec<UsageRow> = groups.into_iter().map(|(k, acc)| acc.finish(k)).collect();
    rows.sort_by(|a, b| b.tokens.cmp(&a.tokens).then_with(|| a.key.cmp(&b.key)));
    Ok(UsageReport {
        by,
        rows,
        total: total.finish("TOTAL".to_owned()),
    })
}

const COLUMNS: [&str; 9] = [
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

fn cells(r: &UsageRow) -> [String; 9] {
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

impl UsageReport {
    fn group_name(&self) -> String {
        serde_json::to_value(self.by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Aligned columns, with a total line.
    pub fn to_table(&self) -> String {
        let header: Vec<String> = std::iter::once(self.group_name())
            .chain(COLUMNS.iter().map(|c| (*c).to_owned()))
            .collect();
        let body: Vec<Vec<String>> = self
            .rows
            .iter()
            .chain([&self.total])
            .map(|r| std::iter::once(r.key.clone()).chain(cells(r)).collect())
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                std::iter::once(&header)
                    .chain(&body)
                    .map(|row| row[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&body) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                let w = widths[i];
                let _ = if i == 0 {
                    write!(line, "{cell:<w$}  ")
                } else {
                    write!(line, "{cell:>w$}  ")
                };
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// CSV with a header line (RFC 4180 quoting); no total line.
    pub fn to_csv(&self) -> String {
        let mut out = std::iter::once(self.group_name())
            .chain(COLUMNS.iter().map(|c| (*c).to_owned()))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for r in &self.rows {
            out.push_str(&csv_field(&r.key));
            for c in cells(r) {
                out.push(',');
                out.push_str(&c);
            }
            out.push('\n');
        }
        out
    }

    /// JSON: `{"by": …, "rows": [...], "total": {...}}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}
