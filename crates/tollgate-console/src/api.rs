//! The console's JSON API under `/console/api`: what every page draws,
//! usable from scripts with a bearer token for the console's URL. Reads
//! of the audit trail go through the audit index, on a blocking thread,
//! or with a fleet store through PostgreSQL across every replica
//! (`fleet`).

pub(crate) mod access;
pub(crate) mod audit;
pub(crate) mod fleet;
pub(crate) mod gateway;
pub(crate) mod overview;
pub(crate) mod spend;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Json;
use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Decision, Outcome, Phase};
use tollgate_index::Index;

use crate::caller::Caller;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

/// `GET /console/api/me`.
pub(crate) async fn me(caller: Caller) -> Json<Value> {
    Json(json!({
        "subject": caller.subject,
        "team": caller.team,
        "roles": caller.roles,
        "can": {"captures": caller.can(Role::Auditor), "approve": caller.can(Role::Approver)},
    }))
}

/// Run `f` over the audit index on a blocking thread. When the gateway
/// keeps no index itself, it is brought up to date first.
pub(crate) async fn with_index<T: Send + 'static>(
    s: &Arc<Shared>,
    f: impl FnOnce(&Index) -> Result<T, ConsoleError> + Send + 'static,
) -> Result<T, ConsoleError> {
    let dir = s.backend.audit_dir().ok_or(ConsoleError::NoAuditTrail)?;
    let update = !s.backend.indexer_running();
    let shared = Arc::clone(s);
    tokio::task::spawn_blocking(move || {
        let mut index = Index::open(&Index::path_for(&dir))?;
        if update {
            // One updater at a time: SQLite has one writer.
            let _one = shared
                .update_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            index.update(std::slice::from_ref(&dir))?;
        }
        f(&index)
    })
    .await
    .map_err(|e| ConsoleError::Gateway(format!("console task failed: {e}")))?
}

/// A time window ending now: `15m`, `1h`, `24h`, `day`, `week`, `month`.
pub(crate) fn window(name: &str) -> Result<(SystemTime, SystemTime), ConsoleError> {
    let length = match name {
        "15m" => 15 * 60,
        "1h" => 3600,
        "24h" | "day" => 86_400,
        "week" => 7 * 86_400,
        "month" => 30 * 86_400,
        other => return Err(ConsoleError::BadRequest(format!("unknown window {other:?}"))),
    };
    let until = SystemTime::now();
    Ok((until - Duration::from_secs(length), until))
}

/// Parse an RFC 3339 time parameter.
pub(crate) fn time_param(name: &str, value: Option<&str>) -> Result<Option<SystemTime>, ConsoleError> {
    value
        .filter(|v| !v.is_empty())
        .map(|v| humantime::parse_rfc3339_weak(v).map_err(|e| ConsoleError::BadRequest(format!("{name}: {e}"))))
        .transpose()
}

/// Write the audit record of a console action (`console/approve`,
/// `console/export`) by `caller` on `what`; `done`: it was carried out
/// (else recorded as refused, status 422).
pub(crate) async fn record_action(
    s: &Shared,
    caller: &Caller,
    action: &'static str,
    what: String,
    done: bool,
) -> Result<(), ConsoleError> {
    let id = crate::cookie::random_token(12).unwrap_or_default();
    let mut record = CallRecord::new(SystemTime::now(), format!("console-{id}"), Arc::from("console"));
    record.phase = Phase::Admin;
    record.principal = Some(Arc::new(caller.principal()));
    record.method = Some(action.into());
    record.name = Some(what);
    record.decision = Decision {
        outcome: Outcome::Allow,
        reason: Some(format!("console role {}", roles_text(caller)).into()),
        ..Decision::default()
    };
    record.status = Some(if done { 200 } else { 422 });
    if !done {
        record.error = Some("refused".into());
    }
    s.backend.record(record).await.map_err(ConsoleError::NotRecorded)
}

fn roles_text(caller: &Caller) -> String {
    caller.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
}

/// A file of the audit directory named by a request: a bare file name of
/// a trail file, nothing else.
pub(crate) fn trail_file(dir: &Path, name: &str) -> Result<PathBuf, ConsoleError> {
    let plain = !name.is_empty()
        && name.ends_with(".jsonl")
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !name.starts_with('.');
    let path = dir.join(name);
    if plain && path.is_file() {
        Ok(path)
    } else {
        Err(ConsoleError::NotFound(format!("no audit file {name:?}")))
    }
}
