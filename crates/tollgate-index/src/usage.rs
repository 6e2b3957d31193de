//! Reading the calls a usage report sums: the complete records of a time
//! window, straight from the index's columns (no file is read).

use std::time::SystemTime;

use rusqlite::params;
use tollgate_audit::{CallRecord, Outcome};
use tollgate_meter::UsageSample;

use crate::Index;
use crate::error::{IndexError, db};
use crate::line::{ERROR, REFUSED, from_micros, micros, outcome_code};

/// One complete call as the index holds it, names resolved: what a usage
/// report sums, and what pricing reads beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IndexedCall<'a> {
    /// The call as usage sees it; its `per_million` is 0 (the caller prices it).
    pub usage: UsageSample<'a>,
    /// The virtual server it came through.
    pub via: Option<&'a str>,
    /// The name a virtual server exposes it under.
    pub exposed: Option<&'a str>,
    /// When the call arrived.
    pub time: SystemTime,
    /// The gateway rejected or failed it (its error class is set): budgets
    /// do not count it.
    pub refused: bool,
}

impl<'a> From<&'a CallRecord> for IndexedCall<'a> {
    /// A record's fields as the index keeps them (for sums that read the
    /// files and the index alike).
    fn from(r: &'a CallRecord) -> IndexedCall<'a> {
        let p = r.principal.as_deref();
        IndexedCall {
            usage: UsageSample {
                team: p.and_then(|p| p.team.as_deref()),
                cost_center: p.and_then(|p| p.cost_center.as_deref()),
                subject: p.map(|p| p.subject.as_str()),
                server: &r.route,
                name: r.name.as_deref(),
                method: r.method.as_deref(),
                trace: r.trace_id.as_deref(),
                error: r.is_error(),
                denied: r.decision.outcome == Outcome::Deny,
                bytes_in: r.bytes_in,
                bytes_out: r.bytes_out,
                tokens: r.tokens,
                catalog: r.catalog,
                duration_us: r.duration_us,
                per_million: 0.0,
            },
            via: r.virtual_server.as_deref(),
            exposed: r.exposed_name.as_deref(),
            time: r.time,
            refused: r.error.is_some(),
        }
    }
}

impl Index {
    /// Call `each` with every complete call from `since` (inclusive) to
    /// `until` (exclusive), in trail order.
    ///
    /// # Errors
    ///
    /// A database error.
    pub fn calls(
        &self,
        since: Option<SystemTime>,
        until: Option<SystemTime>,
        mut each: impl FnMut(&IndexedCall<'_>),
    ) -> Result<(), IndexError> {
        let err = db(&self.path);
        let from = since.and_then(micros).unwrap_or(i64::MIN);
        let to = until.and_then(micros).unwrap_or(i64::MAX);
        let (first, last) = self.rows_between(from, to).map_err(&err)?;
        // One range of the table, read in row order: no index lookups.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT subject, team, cost_center, route, via, name, exposed, method, trace, error, decision, \
                 bytes_in, bytes_out, tokens, catalog, duration_us, time \
                 FROM calls NOT INDEXED \
                 WHERE rowid BETWEEN ?3 AND ?4 AND complete = 1 AND time >= ?1 AND time < ?2",
            )
            .map_err(&err)?;
        let mut rows = stmt.query(params![from, to, first, last]).map_err(&err)?;
        let n = &self.names;
        let u = |v: i64| v.unsigned_abs();
        while let Some(r) = rows.next().map_err(&err)? {
            let id = |i: usize| r.get::<_, Option<i64>>(i);
            let flags: i64 = r.get(9).map_err(&err)?;
            let call = IndexedCall {
                usage: UsageSample {
                    subject: n.text(id(0).map_err(&err)?),
                    team: n.text(id(1).map_err(&err)?),
                    cost_center: n.text(id(2).map_err(&err)?),
                    server: n.text(id(3).map_err(&err)?).unwrap_or(""),
                    name: n.text(id(5).map_err(&err)?),
                    method: n.text(id(7).map_err(&err)?),
                    trace: r.get_ref(8).map_err(&err)?.as_str_or_null().ok().flatten(),
                    error: flags & ERROR != 0,
                    denied: r.get::<_, i64>(10).map_err(&err)? == outcome_code("deny"),
                    bytes_in: u(r.get(11).map_err(&err)?),
                    bytes_out: u(r.get(12).map_err(&err)?),
                    tokens: u(r.get(13).map_err(&err)?),
                    catalog: r.get(14).map_err(&err)?,
                    duration_us: u(r.get(15).map_err(&err)?),
                    per_million: 0.0,
                },
                via: n.text(id(4).map_err(&err)?),
                exposed: n.text(id(6).map_err(&err)?),
                time: from_micros(r.get(16).map_err(&err)?),
                refused: flags & REFUSED != 0,
            };
            each(&call);
        }
        Ok(())
    }

    /// The range of row ids that holds every record from `from` to `to`.
    /// Rows follow time except for records late by at most `lateness`
    /// (see `schema`): a record at or after `from` inserted before the
    /// first one in time order is within `lateness` of it, and likewise
    /// at the end.
    fn rows_between(&self, from: i64, to: i64) -> rusqlite::Result<(i64, i64)> {
        let late = self.order.lateness;
        let first: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT min(rowid) FROM calls WHERE time >= ?1 \
             AND time <= (SELECT min(time) FROM calls WHERE time >= ?1) + ?2",
            )?
            .query_row(params![from, late], |r| r.get(0))?;
        let last: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT max(rowid) FROM calls WHERE time < ?1 \
             AND time >= (SELECT max(time) FROM calls WHERE time < ?1) - ?2",
            )?
            .query_row(params![to, late], |r| r.get(0))?;
        Ok((first.unwrap_or(1), last.unwrap_or(0)))
    }
}
