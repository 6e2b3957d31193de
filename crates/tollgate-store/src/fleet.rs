//! What the console reads from the store when the gateway has one: a
//! search across every replica's calls (by time, with a limit), one call
//! by its place (replica, file, line) with its file's chain checked as
//! stored, and how far each replica has shipped.
//!
//! The chain check reads the file's stored lines up to the call and
//! checks what `tollgate audit verify` checks within a file: lines 1 to N
//! all there, the first a genesis, each line's hash the SHA-256 of its
//! text, each `prev` the hash of the line before and each `seq` one more.
//! It proves the store holds the file's lines unchanged since they were
//! written and chained; the files themselves are verified where they are.

use std::time::SystemTime;

use serde::Deserialize;
use tokio_postgres::types::ToSql;
use tollgate_audit::{CallRecord, Filter, Hash, LineKind};

use crate::Store;
use crate::error::{Result, StoreError};
use crate::read::{Param, conditions};

/// A stored call record and its place.
#[derive(Debug, Clone)]
pub struct Located {
    /// The replica that wrote it.
    pub replica: String,
    /// Its file's name on that replica.
    pub file: String,
    /// Its 1-based line.
    pub line: u64,
    /// The line as written.
    pub raw: String,
    /// The record.
    pub record: CallRecord,
}

/// One call with its file's chain up to it, as stored.
#[derive(Debug, Clone)]
pub struct StoredCall {
    /// The call.
    pub call: Located,
    /// Whether the chain links up to it.
    pub chain: ChainCheck,
}

/// The outcome of checking a file's chain as stored, up to a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainCheck {
    /// Lines checked (1 to the call's).
    pub lines: u64,
    /// Of which call records.
    pub records: u64,
    /// The first problem, `None` when every line links.
    pub problem: Option<String>,
}

/// How far one replica has shipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaShipping {
    /// The replica.
    pub replica: String,
    /// Its files in the store.
    pub files: u64,
    /// Lines shipped.
    pub lines: u64,
    /// When it last shipped a batch.
    pub updated_at: SystemTime,
}

impl Store {
    /// At most `limit` of every replica's call records matching `filter`,
    /// oldest first (then by replica, file and line), or with `newest`
    /// that order reversed; `true` when more match.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query, or a stored call
    /// line is not a call record.
    pub async fn search(&self, filter: &Filter, limit: usize, newest: bool) -> Result<(Vec<Located>, bool)> {
        let (conds, mut params) = conditions(filter);
        params.push(Box::new(i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1)));
        let order = if newest { "DESC" } else { "" };
        let sql = format!(
            "SELECT replica, file, line_no, line FROM audit_records WHERE {conds} \
             ORDER BY time {order}, replica COLLATE \"C\" {order}, file COLLATE \"C\" {order}, \
             line_no {order} LIMIT ${}",
            params.len()
        );
        let client = self.client().await?;
        let rows = client
            .query(&sql, &refs(&params))
            .await
            .map_err(StoreError::db("searching audit records"))?;
        let mut out = Vec::new();
        for row in &rows {
            let found = located(row.get(0), row.get(1), row.get(2), row.get(3))?;
            if filter.matches(&found.record) {
                out.push(found);
            }
        }
        let more = out.len() > limit;
        out.truncate(limit);
        Ok((out, more))
    }

    /// The call record on line `line` of `replica`'s file `file`, with
    /// that file's chain checked as stored up to it; `None` when the store
    /// has no call record there.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query, or the line is
    /// not a call record.
    pub async fn call(&self, replica: &str, file: &str, line: u64) -> Result<Option<StoredCall>> {
        let client = self.client().await?;
        let last = i64::try_from(line).unwrap_or(i64::MAX);
        let rows = client
            .query(
                "SELECT line_no, hash, line FROM audit_records WHERE replica = $1 AND file = $2 AND line_no <= $3 \
                 ORDER BY line_no",
                &[&replica, &file, &last],
            )
            .await
            .map_err(StoreError::db("reading a file's stored lines"))?;
        let Some(found) = rows.last().filter(|r| r.get::<_, i64>(0) == last) else {
            return Ok(None);
        };
        let raw: String = found.get(2);
        if !tollgate_audit::is_call_line(raw.as_bytes()).unwrap_or(false) {
            return Ok(None);
        }
        let call = located(replica.to_owned(), file.to_owned(), last, raw)?;
        let lines = rows
            .iter()
            .map(|r| (r.get::<_, i64>(0), r.get::<_, &[u8]>(1), r.get::<_, &str>(2)));
        let chain = check_chain(lines);
        Ok(Some(StoredCall { call, chain }))
    }

    /// Each replica's shipping: files, lines and when it last shipped.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn shipping(&self) -> Result<Vec<ReplicaShipping>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT replica, count(*), sum(shipped_lines)::bigint, max(updated_at) FROM audit_shipping \
                 GROUP BY replica ORDER BY replica COLLATE \"C\"",
                &[],
            )
            .await
            .map_err(StoreError::db("reading the shipping positions"))?;
        Ok(rows
            .iter()
            .map(|r| ReplicaShipping {
                replica: r.get(0),
                files: r.get::<_, i64>(1).unsigned_abs(),
                lines: r.get::<_, Option<i64>>(2).unwrap_or(0).unsigned_abs(),
                updated_at: r.get(3),
            })
            .collect())
    }
}

fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect()
}

fn located(replica: String, file: String, line_no: i64, raw: String) -> Result<Located> {
    let record: CallRecord = serde_json::from_str(&raw).map_err(|e| StoreError::Malformed {
        place: format!("{replica}/{file}:{line_no}"),
        message: e.to_string(),
    })?;
    Ok(Located {
        replica,
        file,
        line: line_no.unsigned_abs(),
        raw,
        record,
    })
}

/// What links a line to the one before it.
#[derive(Deserialize)]
struct Link {
    seq: u64,
    prev: Hash,
    kind: LineKind,
}

/// Check stored lines `(line_no, hash, text)` of one file, in order from
/// line 1.
fn check_chain<'a>(lines: impl Iterator<Item = (i64, &'a [u8], &'a str)>) -> ChainCheck {
    let mut check = ChainCheck {
        lines: 0,
        records: 0,
        problem: None,
    };
    let mut before: Option<(u64, Hash)> = None;
    for (n, stored, text) in lines {
        let problem = link_problem(n, stored, text, check.lines + 1, before);
        match problem {
            Ok(link) => {
                check.lines += 1;
                check.records += u64::from(link.kind == LineKind::Call);
                before = Some((link.seq, Hash::of_line(text.as_bytes())));
            }
            Err(p) => {
                check.problem = Some(p);
                break;
            }
        }
    }
    check
}

fn link_problem(n: i64, stored: &[u8], text: &str, want: u64, before: Option<(u64, Hash)>) -> Result<Link, String> {
    if n.unsigned_abs() != want {
        return Err(format!("line {want} is missing from the store"));
    }
    if stored != Hash::of_line(text.as_bytes()).0 {
        return Err(format!("line {n}: its stored hash is not the hash of its text"));
    }
    let link: Link = serde_json::from_str(text).map_err(|e| format!("line {n}: not an audit line: {e}"))?;
    match before {
        None if link.kind != LineKind::Genesis => Err("line 1 is not a genesis line".to_owned()),
        Some((_, hash)) if link.prev != hash => Err(format!("line {n}: prev is not the hash of line {}", n - 1)),
        Some((seq, _)) if link.seq != seq + 1 => Err(format!("line {n}: seq {} does not follow {seq}", link.seq)),
        _ => Ok(link),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, prev: Hash, kind: &str) -> String {
        format!(r#"{{"v":1,"seq":{seq},"prev":"{prev}","kind":"{kind}","time":"2026-09-01T00:00:00Z"}}"#)
    }

    #[test]
    fn a_chain_links_until_a_line_changes_or_goes_missing() {
        let genesis = line(0, Hash::ZERO, "genesis");
        let call = line(1, Hash::of_line(genesis.as_bytes()), "call");
        let seal = line(2, Hash::of_line(call.as_bytes()), "seal");
        let hashes: Vec<[u8; 32]> = [&genesis, &call, &seal].map(|l| Hash::of_line(l.as_bytes()).0).into();
        let rows = |skip: Option<usize>| -> Vec<(i64, &[u8], &str)> {
            [&genesis, &call, &seal]
                .into_iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != skip)
                .map(|(i, l)| (i as i64 + 1, &hashes[i][..], l.as_str()))
                .collect()
        };
        let ok = check_chain(rows(None).into_iter());
        assert_eq!((ok.lines, ok.records, ok.problem), (3, 1, None));
        let gap = check_chain(rows(Some(1)).into_iter());
        assert_eq!(gap.problem.as_deref(), Some("line 2 is missing from the store"));
        let edited = call.replace("call", "gap");
        let mut changed = rows(None);
        changed[1].2 = &edited;
        let bad = check_chain(changed.into_iter());
        assert_eq!(bad.lines, 1);
        assert!(bad.problem.unwrap().contains("stored hash"));
    }
}
