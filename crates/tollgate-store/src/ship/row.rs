//! One audit line as a row of `audit_records`: its place, hash and exact
//! text, and for call records the columns searches and spend use, borrowed
//! from the line where JSON allows; for a complete call, its row of
//! `audit_usage` too, with the values usage sums made summable here, the
//! one place they are derived. A batch is kept column by column.

use std::borrow::Cow;
use std::time::SystemTime;

use serde::Deserialize;
use tollgate_audit::Hash;

/// What shipping reads of a line; every field optional, so that a line of a
/// kind this version does not know (or not JSON at all) is still shipped.
#[derive(Debug, Default, Deserialize)]
struct Fields<'a> {
    #[serde(default)]
    seq: Option<i64>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    time: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    request_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    trace_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    principal: Option<Principal<'a>>,
    #[serde(default, borrow)]
    route: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    virtual_server: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    exposed_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    decision: Option<Decision<'a>>,
    #[serde(default)]
    status: Option<i32>,
    #[serde(default)]
    rpc_error: Option<i64>,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
    #[serde(default)]
    bytes_in: Option<i64>,
    #[serde(default)]
    bytes_out: Option<i64>,
    #[serde(default)]
    tokens: Option<i64>,
    #[serde(default)]
    catalog: Option<bool>,
    #[serde(default)]
    duration_us: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
struct Principal<'a> {
    #[serde(default, borrow)]
    issuer: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    subject: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    team: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    cost_center: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct Decision<'a> {
    #[serde(borrow)]
    outcome: Cow<'a, str>,
}

/// A batch of lines of one file, column by column.
#[derive(Debug, Default)]
pub(crate) struct Columns {
    pub(crate) line_no: Vec<i64>,
    pub(crate) time: Vec<SystemTime>,
    pub(crate) seq: Vec<i64>,
    pub(crate) kind: Vec<String>,
    pub(crate) hash: Vec<Vec<u8>>,
    pub(crate) line: Vec<String>,
    /// `phase`, `request_id`, `trace_id`, `issuer`, `subject`, `team`,
    /// `cost_center`, `route`, `virtual_server`, `method`, `name`,
    /// `decision`, `error`: in [`TEXT_COLUMNS`] order.
    pub(crate) text: [Vec<Option<String>>; 13],
    pub(crate) status: Vec<Option<i32>>,
    /// `rpc_error`, `bytes_in`, `bytes_out`, `tokens`, `duration_us`: in
    /// [`INT_COLUMNS`] order.
    pub(crate) ints: [Vec<Option<i64>>; 5],
    pub(crate) catalog: Vec<Option<bool>>,
    /// The `audit_usage` rows of the batch's complete calls.
    pub(crate) usage: Vec<UsageRow>,
}

/// What `audit_usage` holds of a complete call beyond the columns it
/// shares with its line's row (`at`, its index in the batch): missing
/// numbers as 0, `failed` (status 400 or above, or a JSON-RPC error),
/// `denied` (decision deny), the exposed name only through a virtual
/// server (it decides a price there) and the duration's histogram bucket
/// (`tollgate_meter::duration_bucket`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsageRow {
    pub(crate) at: usize,
    pub(crate) exposed_name: Option<String>,
    pub(crate) catalog: bool,
    pub(crate) failed: bool,
    pub(crate) denied: bool,
    pub(crate) tokens: i64,
    pub(crate) bytes_in: i64,
    pub(crate) bytes_out: i64,
    pub(crate) duration_us: i64,
    pub(crate) bucket: i64,
}

/// The optional text columns, in [`Columns::text`] order.
pub(crate) const TEXT_COLUMNS: [&str; 13] = [
    "phase",
    "request_id",
    "trace_id",
    "issuer",
    "subject",
    "team",
    "cost_center",
    "route",
    "virtual_server",
    "method",
    "name",
    "decision",
    "error",
];

/// The optional integer columns, in [`Columns::ints`] order.
pub(crate) const INT_COLUMNS: [&str; 5] = ["rpc_error", "bytes_in", "bytes_out", "tokens", "duration_us"];

impl Columns {
    /// Rows in the batch.
    pub(crate) fn len(&self) -> usize {
        self.line_no.len()
    }

    /// Add the line `text` (without its newline), line `line_no` of its
    /// file; `fallback` is its time when the line has none. Returns the
    /// time used.
    pub(crate) fn push(&mut self, line_no: u64, text: &str, fallback: SystemTime) -> SystemTime {
        let f: Fields<'_> = serde_json::from_str(text).unwrap_or_default();
        let time = f.time.as_deref().and_then(parse_time).unwrap_or(fallback);
        let kind = f.kind.as_deref().unwrap_or("unreadable");
        self.line_no.push(i64::try_from(line_no).unwrap_or(i64::MAX));
        self.time.push(time);
        self.seq.push(f.seq.unwrap_or(-1));
        self.kind.push(kind.to_owned());
        self.hash.push(Hash::of_line(text.as_bytes()).0.to_vec());
        self.line.push(text.to_owned());
        let call = kind == "call";
        let own = |v: &Option<Cow<'_, str>>| v.as_deref().filter(|_| call).map(str::to_owned);
        let p = f.principal.unwrap_or_default();
        let decision = f.decision.map(|d| d.outcome);
        let text_values = [
            &f.phase,
            &f.request_id,
            &f.trace_id,
            &p.issuer,
            &p.subject,
            &p.team,
            &p.cost_center,
            &f.route,
            &f.virtual_server,
            &f.method,
            &f.name,
            &decision,
            &f.error,
        ];
        for (column, value) in self.text.iter_mut().zip(text_values) {
            column.push(own(value));
        }
        let int_values = [f.rpc_error, f.bytes_in, f.bytes_out, f.tokens, f.duration_us];
        for (column, value) in self.ints.iter_mut().zip(int_values) {
            column.push(value.filter(|_| call));
        }
        self.status.push(f.status.filter(|_| call));
        self.catalog.push(f.catalog.filter(|_| call));
        if call && f.phase.as_deref().is_none_or(|p| p == "complete") {
            let exposed = f.exposed_name.filter(|_| f.virtual_server.is_some());
            let duration_us = f.duration_us.unwrap_or(0).max(0);
            self.usage.push(UsageRow {
                at: self.line_no.len() - 1,
                exposed_name: exposed.map(Cow::into_owned),
                catalog: f.catalog.unwrap_or(false),
                failed: f.status.unwrap_or(0) >= 400 || f.rpc_error.is_some(),
                denied: decision.as_deref() == Some("deny"),
                tokens: f.tokens.unwrap_or(0),
                bytes_in: f.bytes_in.unwrap_or(0),
                bytes_out: f.bytes_out.unwrap_or(0),
                duration_us,
                bucket: i64::try_from(tollgate_meter::duration_bucket(duration_us.unsigned_abs())).unwrap_or(i64::MAX),
            });
        }
        time
    }
}

/// An RFC 3339 time as written by the audit writer.
fn parse_time(text: &str) -> Option<SystemTime> {
    let t: jiff::Timestamp = text.parse().ok()?;
    Some(SystemTime::from(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_line_fills_its_columns_and_other_lines_only_their_place() {
        let call = r#"{"v":1,"seq":3,"prev":"00","kind":"call","time":"2026-09-01T12:00:00.000001Z","request_id":"r1","principal":{"kind":"user","issuer":"https://idp","subject":"alice","team":"payments"},"route":"github","method":"tools/call","name":"create_issue","decision":{"outcome":"allow","mode":"enforce"},"status":200,"bytes_in":10,"bytes_out":350,"tokens":100,"duration_us":1500}"#;
        let seal =
            r#"{"v":1,"seq":4,"prev":"11","kind":"seal","time":"2026-09-01T12:00:01Z","reason":"rotate","records":1}"#;
        let mut c = Columns::default();
        let t = c.push(4, call, SystemTime::UNIX_EPOCH);
        assert_eq!(t, parse_time("2026-09-01T12:00:00.000001Z").unwrap());
        c.push(5, seal, SystemTime::UNIX_EPOCH);
        c.push(6, "not json", t);
        assert_eq!(c.len(), 3);
        assert_eq!(c.kind, ["call", "seal", "unreadable"]);
        assert_eq!(c.seq, [3, 4, -1]);
        assert_eq!(c.time[2], t, "a line without a time takes the fallback");
        assert_eq!(c.hash[0], Hash::of_line(call.as_bytes()).0.to_vec());
        let col = |name: &str| &c.text[TEXT_COLUMNS.iter().position(|n| *n == name).unwrap()];
        assert_eq!(col("subject")[0].as_deref(), Some("alice"));
        assert_eq!(col("decision")[0].as_deref(), Some("allow"));
        assert_eq!(col("route")[1], None, "a seal has no call columns");
        assert_eq!(c.ints[3], [Some(100), None, None]);
        assert_eq!(c.status, [Some(200), None, None]);
        assert_eq!(c.line[1], seal);
        assert_eq!(c.usage.len(), 1, "only the complete call has a usage row");
        let u = &c.usage[0];
        assert_eq!((u.at, u.tokens, u.duration_us), (0, 100, 1500));
        assert!(!u.failed && !u.denied && !u.catalog);
        assert_eq!(u.bucket, i64::try_from(tollgate_meter::duration_bucket(1500)).unwrap());
        assert_eq!(
            u.exposed_name, None,
            "exposed names count only through a virtual server"
        );
    }

    #[test]
    fn usage_rows_are_complete_calls_with_their_values_made_summable() {
        let started = r#"{"seq":1,"kind":"call","phase":"started","route":"a","method":"tools/call"}"#;
        let denied = r#"{"seq":2,"kind":"call","phase":"complete","route":"a","virtual_server":"v","exposed_name":"x","decision":{"outcome":"deny"},"rpc_error":-32003,"status":200,"catalog":true,"duration_us":-5}"#;
        let failed = r#"{"seq":3,"kind":"call","route":"a","exposed_name":"x","status":502}"#;
        let mut c = Columns::default();
        for (i, line) in [started, denied, failed].into_iter().enumerate() {
            c.push(i as u64 + 1, line, SystemTime::UNIX_EPOCH);
        }
        let rows: Vec<_> = c.usage.iter().map(|u| (u.at, u.failed, u.denied, u.catalog)).collect();
        assert_eq!(rows, [(1, true, true, true), (2, true, false, false)]);
        assert_eq!(
            c.usage[0].exposed_name.as_deref(),
            Some("x"),
            "through a virtual server"
        );
        assert_eq!(c.usage[1].exposed_name, None, "named only where it decides a price");
        assert_eq!((c.usage[0].duration_us, c.usage[1].tokens), (0, 0), "summable numbers");
    }
}
