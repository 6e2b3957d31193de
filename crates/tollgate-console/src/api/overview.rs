//! `GET /console/api/overview?window=15m|1h|24h`: traffic, errors,
//! denials and latency over the window, per server and per tool, and a
//! time series of 60 buckets — summed from the audit index's columns, or
//! with a fleet store from every replica's calls in PostgreSQL.
//!
//! A usage row's `errors` counts every call answered with an error, a
//! policy denial included (its JSON-RPC error); each row here also carries
//! `failed`, the errors that were not denials, so the page can show
//! failures and denials apart without changing what `errors` means.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_meter::{GroupBy, Usage, UsageReport, UsageSample};
use tollgate_store::ActivityStep;

use super::{window, with_index};
use crate::caller::Caller;
use crate::cookie::unix_secs as secs;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

const BUCKETS: u64 = 60;

#[derive(Debug, Deserialize)]
pub(crate) struct OverviewQuery {
    window: Option<String>,
}

/// What the overview shows, from either source.
pub(super) struct Counts {
    pub(super) servers: UsageReport,
    pub(super) tools: UsageReport,
    pub(super) series: Vec<ActivityStep>,
    /// Failures per server and per tool.
    pub(super) failed: (Failed, Failed),
}

/// Errors that were not denials, per group key.
#[derive(Debug, Default)]
pub(super) struct Failed(pub(super) HashMap<String, u64>);

impl Failed {
    pub(super) fn add(&mut self, by: GroupBy, sample: &UsageSample<'_>) {
        if sample.error && !sample.denied {
            *self.0.entry(by.key(sample).into_owned()).or_default() += 1;
        }
    }

    /// `rows` (usage rows) each with its `failed` count.
    pub(super) fn rows<T: serde::Serialize>(&self, rows: &[T]) -> Value {
        let mut rows = json!(rows);
        for row in rows.as_array_mut().into_iter().flatten() {
            let n = row["key"].as_str().and_then(|k| self.0.get(k)).copied().unwrap_or(0);
            row["failed"] = json!(n);
        }
        rows
    }
}

/// `GET /console/api/overview`.
pub(crate) async fn overview(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<OverviewQuery>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let name = q.window.unwrap_or_else(|| "1h".into());
    let (since, until) = window(&name)?;
    let (start, step) = (secs(since), ((secs(until) - secs(since)) / BUCKETS).max(1));
    let counts = match s.backend.store() {
        Some(store) => super::fleet::overview(&store, (since, until), (start, step, BUCKETS)).await?,
        None => indexed(&s, (since, until), (start, step)).await?,
    };
    let Counts {
        servers,
        tools,
        series,
        failed,
    } = counts;
    let series: Vec<Value> = (0..)
        .zip(series)
        .map(|(i, b): (u64, ActivityStep)| {
            json!({"t": start + i * step, "calls": b.calls, "errors": b.errors, "denied": b.denied, "failed": b.failed})
        })
        .collect();
    let mut totals = json!(servers.total);
    totals["failed"] = json!(failed.0.0.values().sum::<u64>());
    Ok(Json(json!({
        "window": name,
        "since": humantime::format_rfc3339_seconds(since).to_string(),
        "until": humantime::format_rfc3339_seconds(until).to_string(),
        "totals": totals,
        "series": series,
        "servers": failed.0.rows(&servers.rows),
        "tools": failed.1.rows(&tools.rows),
    })))
}

/// The overview from this replica's audit index.
async fn indexed(
    s: &Arc<Shared>,
    (since, until): (SystemTime, SystemTime),
    (start, step): (u64, u64),
) -> Result<Counts, ConsoleError> {
    with_index(s, move |index| {
        let mut servers = Usage::new(GroupBy::Server);
        let mut tools = Usage::new(GroupBy::Tool);
        let mut failed = (Failed::default(), Failed::default());
        let mut series = vec![ActivityStep::default(); usize::try_from(BUCKETS).unwrap_or(60)];
        index.calls(Some(since), Some(until), |c| {
            servers.add(&c.usage);
            failed.0.add(GroupBy::Server, &c.usage);
            tools.add(&c.usage);
            failed.1.add(GroupBy::Tool, &c.usage);
            let i = (secs(c.time).saturating_sub(start) / step).min(BUCKETS - 1);
            if let Some(b) = series.get_mut(usize::try_from(i).unwrap_or(0)) {
                b.calls += 1;
                b.errors += u64::from(c.usage.error);
                b.denied += u64::from(c.usage.denied);
                b.failed += u64::from(c.usage.error && !c.usage.denied);
            }
        })?;
        Ok(Counts {
            servers: servers.finish(),
            tools: tools.finish(),
            series,
            failed,
        })
    })
    .await
}
