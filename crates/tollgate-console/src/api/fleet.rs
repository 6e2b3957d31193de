//! The fleet view: when the gateway has a fleet store (`[store] postgres`),
//! the overview, audit search, call view, export, spend and budgets read every
//! replica's records in PostgreSQL instead of this replica's index, and
//! `GET /console/api/fleet` reports how far each replica has shipped and
//! its newest signed checkpoint.
//!
//! The handlers in `audit` and `spend` ask [`crate::Backend::store`] and
//! come here when there is one; what they answer keeps its shape, with
//! each record's `ref` naming its `replica` beside its file and line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Checkpoint, CheckpointKeys, Filter};
use tollgate_meter::{GroupBy, UsageReport};
use tollgate_store::{Located, Steps, Store, StoreError, StoredCall, UsageQuestion};

use super::overview::{Counts, Failed};

use crate::caller::Caller;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

/// Where a stored record is, as the call page names it.
pub(crate) fn reference(l: &Located) -> Value {
    json!({"replica": l.replica, "file": l.file, "line": l.line})
}

/// At most `limit` records matching `filter` across the fleet (the
/// newest first with `newest`), and whether more match.
pub(crate) async fn search(
    store: &Store,
    filter: &Filter,
    limit: usize,
    newest: bool,
) -> Result<(Vec<Located>, bool), ConsoleError> {
    Ok(store.search(filter, limit, newest).await?)
}

/// The call on `line` of `replica`'s `file`, with that file's chain as
/// stored up to it.
pub(crate) async fn call(store: &Store, replica: &str, file: &str, line: u64) -> Result<StoredCall, ConsoleError> {
    store
        .call(replica, file, line)
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("no call record at {replica}/{file}:{line} in the fleet store")))
}

/// The chain of a stored call's file, as the call page shows it.
pub(crate) fn chain_json(c: &StoredCall) -> Value {
    let l = &c.call;
    json!({
        "replica": l.replica,
        "file": l.file,
        "source": "store",
        "verified": c.chain.problem.is_none(),
        "lines": c.chain.lines,
        "records": c.chain.records,
        "error": c.chain.problem,
    })
}

/// The report over `since..until` from the store, and its series.
pub(crate) async fn spend(
    store: &Store,
    settings: &tollgate_report::Settings,
    by: GroupBy,
    (since, until): (SystemTime, SystemTime),
    step: u64,
) -> Result<(UsageReport, Vec<Value>), ConsoleError> {
    let question = UsageQuestion {
        by,
        since: Some(since),
        until: Some(until),
        step: Some(step),
    };
    let (report, points) = store.usage(question, &settings.prices).await?;
    let series = points
        .iter()
        .map(|p| json!({"t": p.t, "tokens": p.tokens, "catalog_tokens": p.catalog_tokens, "cost": p.cost}))
        .collect();
    Ok((report, series))
}

/// The overview of `since..until` from the store: servers and tools as
/// `usage` reports them (unpriced) and the activity counts, in
/// `steps` (start, seconds, count).
pub(super) async fn overview(
    store: &Store,
    (since, until): (SystemTime, SystemTime),
    (start, seconds, count): (u64, u64, u64),
) -> Result<Counts, ConsoleError> {
    let question = |by| UsageQuestion {
        by,
        since: Some(since),
        until: Some(until),
        step: None,
    };
    let unpriced = tollgate_limit::Prices::default();
    let (servers, _) = store.usage(question(GroupBy::Server), &unpriced).await?;
    let (tools, _) = store.usage(question(GroupBy::Tool), &unpriced).await?;
    let steps = Steps { start, seconds, count };
    let activity = store.activity(since, until, steps).await?;
    Ok(Counts {
        servers,
        tools,
        series: activity.steps,
        failed: (Failed(activity.failed_by_server), Failed(activity.failed_by_tool)),
    })
}

/// Each budget's spend this period across the fleet: the period's stored
/// records, read as they are summed (on a blocking thread).
pub(crate) async fn budgets(
    store: &Store,
    settings: tollgate_report::Settings,
) -> Result<Vec<tollgate_report::BudgetRow>, ConsoleError> {
    let now = SystemTime::now();
    let Some(filter) = tollgate_report::budgets::window(&settings, now) else {
        return Ok(Vec::new());
    };
    let mut records = store.records(filter).await?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let entries = std::iter::from_fn(|| runtime.block_on(records.next()));
        tollgate_report::budgets::report_entries::<StoreError>(entries, &settings, now)
    })
    .await
    .map_err(|e| ConsoleError::Gateway(format!("console task failed: {e}")))?
    .map_err(ConsoleError::Store)
}

/// A stored record as an entry of the exports (its line exactly as
/// written, and the record).
pub(crate) fn exported(l: Located) -> (String, CallRecord) {
    (l.raw, l.record)
}

/// `GET /console/api/fleet`: each replica's shipping as the store has it
/// and its newest signed checkpoint, its signature checked against the
/// configured public keys.
pub(crate) async fn fleet(State(s): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let Some(store) = s.backend.store() else {
        return Ok(Json(json!({"store": false, "replicas": []})));
    };
    let keys = CheckpointKeys::parse(&s.backend.checkpoint_public_keys()).unwrap_or_default();
    let mut replicas: BTreeMap<String, Value> = BTreeMap::new();
    for r in store.shipping().await? {
        replicas.insert(
            r.replica.clone(),
            json!({
                "replica": r.replica,
                "files": r.files,
                "lines": r.lines,
                "updated_at": humantime::format_rfc3339_seconds(r.updated_at).to_string(),
                "checkpoint": null,
            }),
        );
    }
    for cp in store.latest_checkpoints().await? {
        let entry = replicas
            .entry(cp.replica.clone())
            .or_insert_with(|| json!({"replica": cp.replica, "files": 0, "lines": 0, "updated_at": null}));
        entry["checkpoint"] = checkpoint_json(&cp, &keys);
    }
    Ok(Json(
        json!({"store": true, "replicas": replicas.into_values().collect::<Vec<_>>()}),
    ))
}

/// A replica's newest checkpoint as the fleet view shows it: where, when,
/// by which key, and whether one of the configured keys signed it.
fn checkpoint_json(cp: &Checkpoint, keys: &CheckpointKeys) -> Value {
    let signature = match cp.verify_signature(keys) {
        Ok(()) => json!({"valid": true}),
        Err(problem) => json!({"valid": false, "problem": problem}),
    };
    json!({
        "time": humantime::format_rfc3339_seconds(cp.time).to_string(),
        "file": cp.head.file,
        "line": cp.head.line,
        "seq": cp.head.seq,
        "key_id": cp.key_id,
        "signature": signature,
    })
}
