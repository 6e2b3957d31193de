//! One audit line as a row of `audit_records`: its place, hash and exact
//! text, and for call records the columns searches and spend use, borrowed
//! from the line where JSON allows. A batch is kept column by column, the
//! shape `INSERT … SELECT FROM unnest(…)` takes.

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
    /// For `audit_usage`: the name a virtual server exposed the tool as
    /// (only through one), and the duration's histogram bucket.
    pub(crate) exposed_name: Vec<Option<String>>,
    pub(crate) bucket: Vec<i16>,
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
        let exposed = f.exposed_name.filter(|_| f.virtual_server.is_some());
        self.exposed_name.push(own(&exposed));
        let d = f.duration_us.filter(|_| call).unwrap_or(0).max(0).unsigned_abs();
        self.bucket
            .push(i16::try_from(tollgate_meter::duration_bucket(d)).unwrap_or(i16::MAX));
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
        assert_eq!(
            c.bucket[0],
            i16::try_from(tollgate_meter::duration_bucket(1500)).unwrap()
        );
        assert_eq!(
            c.exposed_name[0], None,
            "exposed names count only through a virtual server"
        );
    }
}
