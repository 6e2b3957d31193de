//! What the audit trail and `tollgate usage` say: the truth the browser's
//! pages are checked against.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Entry, Filter};
use tollgate_e2e::audit_support::{Exchange, records, wait_record};
use tollgate_e2e::children::tollgate_cli;

/// Every call record of the trail with where it is, in trail order.
pub(crate) fn entries(dir: &Path, filter: Filter) -> Vec<Entry> {
    tollgate_audit::query(&[dir.to_owned()], filter)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The single entry of the request `ex`, once the audit writer has it.
pub(crate) async fn entry_of(dir: &Path, ex: &Exchange) -> Entry {
    wait_record(dir, ex).await;
    let mut found: Vec<Entry> = entries(dir, Filter::default())
        .into_iter()
        .filter(|e| e.record.request_id == ex.request_id)
        .collect();
    assert_eq!(found.len(), 1, "one record of {ex:?}");
    found.pop().unwrap()
}

/// The number of call records in the trail once it has stopped growing.
pub(crate) async fn settled(dir: &Path) -> usize {
    let mut last = records(dir).len();
    let mut still = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = records(dir).len();
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still == 3 {
            return now;
        }
    }
    panic!("the audit trail kept growing for 10 s");
}

/// Where a record is, as the console's call page names it.
pub(crate) fn reference(e: &Entry) -> Value {
    json!({"file": e.file.file_name().unwrap().to_str().unwrap(), "line": e.line})
}

pub(crate) fn text<T: ToString + ?Sized>(v: Option<&T>) -> String {
    v.map(ToString::to_string).unwrap_or_default()
}

/// What the five answers of the call page must show for `r`: per answer
/// section, `data-field` → `data-value`.
pub(crate) fn answers(r: &CallRecord) -> Value {
    let p = r.principal.as_deref().expect("a principal");
    json!({
        "answer-server": {
            "route": &*r.route,
            "version": text(r.server_version.as_deref()),
            "approved_by": text(r.approved_by.as_deref()),
        },
        "answer-tool": {
            "method": text(r.method.as_deref()),
            "name": text(r.name.as_deref()),
            "revision": text(r.definition_hash.as_deref()),
            "approved_by": text(r.definition_approved_by.as_deref()),
        },
        "answer-principal": {
            "subject": p.subject,
            "team": text(p.team.as_deref()),
            "issuer": p.issuer,
        },
        "answer-policies": {
            "outcome": r.decision.outcome.as_str(),
        },
        "answer-outcome": {
            "status": text(r.status.as_ref()),
            "tokens": r.tokens.to_string(),
            "bytes_out": r.bytes_out.to_string(),
        },
    })
}

/// The JSON of `tollgate usage --by team --format json` over `since..until`.
pub(crate) async fn usage(dir: &Path, since: &str, until: &str) -> Value {
    let out = tollgate_cli(&[
        "usage",
        dir.to_str().unwrap(),
        "--by",
        "team",
        "--format",
        "json",
        "--since",
        since,
        "--until",
        until,
    ])
    .await;
    assert!(
        out.status.success(),
        "tollgate usage failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "tollgate usage printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
