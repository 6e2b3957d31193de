//! `GET /console/api/spend?by=…&period=day|week|month` (or `since` and
//! `until`): usage grouped by team, cost centre, user, server or tool —
//! the same report as `tollgate usage`, from the audit index (with a
//! fleet store: every replica's calls, summed by PostgreSQL) — with
//! catalogue context cost apart, a daily (or hourly) series, and each
//! budget's spend this period with its projection. `spend.csv` is the
//! report as CSV, and its export is recorded.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_meter::{GroupBy, UsageReport};
use tollgate_report::BudgetRow;

use super::{fleet, record_action, time_param, window, with_index};
use crate::caller::Caller;
use crate::cookie::unix_secs as secs;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

#[derive(Debug, Deserialize)]
pub(crate) struct SpendQuery {
    by: Option<String>,
    period: Option<String>,
    since: Option<String>,
    until: Option<String>,
}

impl SpendQuery {
    fn group(&self) -> Result<GroupBy, ConsoleError> {
        match self.by.as_deref().unwrap_or("team") {
            "team" => Ok(GroupBy::Team),
            "cost_center" => Ok(GroupBy::CostCenter),
            "subject" | "user" => Ok(GroupBy::Subject),
            "server" => Ok(GroupBy::Server),
            "tool" => Ok(GroupBy::Tool),
            other => Err(ConsoleError::BadRequest(format!("cannot group by {other:?}"))),
        }
    }

    fn window(&self) -> Result<(SystemTime, SystemTime), ConsoleError> {
        let (since, until) = window(self.period.as_deref().unwrap_or("month"))?;
        Ok((
            time_param("since", self.since.as_deref())?.unwrap_or(since),
            time_param("until", self.until.as_deref())?.unwrap_or(until),
        ))
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Day {
    tokens: u64,
    catalog_tokens: u64,
    cost: f64,
}

/// The report over `since..until`, and its series (hourly for a day or
/// less, else daily) with a point for every interval of the period, so
/// the chart spans the whole period however little of it had calls.
async fn report(
    s: &Arc<Shared>,
    by: GroupBy,
    (since, until): (SystemTime, SystemTime),
) -> Result<(UsageReport, Vec<Value>), ConsoleError> {
    let step = if secs(until) - secs(since) <= 86_400 {
        3600
    } else {
        86_400
    };
    let (report, series) = report_points(s, by, (since, until), step).await?;
    Ok((report, spanned(series, (secs(since), secs(until)), step)))
}

/// Most points a series is filled to (a window asked for by a script
/// may be years long).
const MAX_POINTS: u64 = 2000;

/// `series` with a zero point for each interval from `since` to `until`
/// that had no calls.
fn spanned(series: Vec<Value>, (since, until): (u64, u64), step: u64) -> Vec<Value> {
    if until.saturating_sub(since) / step > MAX_POINTS {
        return series;
    }
    let mut had: std::collections::BTreeMap<u64, Value> =
        series.into_iter().filter_map(|p| Some((p["t"].as_u64()?, p))).collect();
    let first = since / step * step;
    let mut t = first;
    while t < until.max(first + 1) {
        had.entry(t)
            .or_insert_with(|| json!({"t": t, "tokens": 0, "catalog_tokens": 0, "cost": 0.0}));
        t += step;
    }
    had.into_values().collect()
}

/// The report over `since..until` and the intervals of `step` seconds
/// that had calls.
async fn report_points(
    s: &Arc<Shared>,
    by: GroupBy,
    (since, until): (SystemTime, SystemTime),
    step: u64,
) -> Result<(UsageReport, Vec<Value>), ConsoleError> {
    if let Some(store) = s.backend.store() {
        return fleet::spend(&store, &s.backend.report_settings(), by, (since, until), step).await;
    }
    let prices = s.backend.report_settings().prices;
    with_index(s, move |index| {
        let mut days: std::collections::BTreeMap<u64, Day> = std::collections::BTreeMap::new();
        let window = (Some(since), Some(until));
        let report = tollgate_report::spend::report_indexed_with(index, by, window, &prices, |c, sample| {
            let d = days.entry(secs(c.time) / step * step).or_default();
            d.tokens += sample.tokens;
            d.catalog_tokens += if sample.catalog { sample.tokens } else { 0 };
            d.cost += sample.cost();
        })?;
        let series = days
            .into_iter()
            .map(|(t, d)| json!({"t": t, "tokens": d.tokens, "catalog_tokens": d.catalog_tokens, "cost": d.cost}))
            .collect();
        Ok((report, series))
    })
    .await
}

/// `GET /console/api/spend`.
pub(crate) async fn spend(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<SpendQuery>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let (since, until) = q.window()?;
    let (report, series) = report(&s, q.group()?, (since, until)).await?;
    let budgets = budgets(&s).await?;
    let total = &report.total;
    #[allow(clippy::cast_precision_loss, reason = "a share")]
    let share = if total.tokens > 0 {
        total.catalog_tokens as f64 / total.tokens as f64
    } else {
        0.0
    };
    Ok(Json(json!({
        "by": report.by.as_str(),
        "since": humantime::format_rfc3339_seconds(since).to_string(),
        "until": humantime::format_rfc3339_seconds(until).to_string(),
        "currency": report.currency,
        "prices": report.currency.is_some(),
        "rows": report.rows,
        "total": report.total,
        "catalog": {"tokens": total.catalog_tokens, "share": share},
        "series": series,
        "budgets": budgets,
    })))
}

/// Each budget's spend this period, from the audit index (or the fleet
/// store).
async fn budgets(s: &Arc<Shared>) -> Result<Vec<Value>, ConsoleError> {
    let settings = s.backend.report_settings();
    if let Some(store) = s.backend.store() {
        return Ok(fleet::budgets(&store, settings)
            .await?
            .iter()
            .map(budget_json)
            .collect());
    }
    let rows = with_index(s, move |index| {
        Ok(tollgate_report::budgets::report_indexed(
            index,
            &settings,
            SystemTime::now(),
        )?)
    })
    .await?;
    Ok(rows.iter().map(budget_json).collect())
}

fn budget_json(r: &BudgetRow) -> Value {
    json!({
        "budget": r.budget, "key": r.key, "period": r.period, "start": r.start, "end": r.end,
        "spent": r.spent, "limit": r.tokens, "remaining": r.remaining, "projected": r.projected,
        "cost": r.cost.as_ref().map(|c| c.0), "currency": r.cost.as_ref().map(|c| &c.1),
    })
}

/// The columns of `spend.csv`: a usage row's fields (`docs/console.md`).
const USAGE_HEADER: [&str; 11] = [
    "key",
    "calls",
    "errors",
    "denied",
    "bytes_in",
    "bytes_out",
    "tokens",
    "catalog_tokens",
    "p50_us",
    "p99_us",
    "cost",
];

/// The rows and the total as CSV, through the shared writer (keys are
/// subjects, teams and tool names: no cell reads as a formula).
fn usage_csv(report: &UsageReport) -> Result<String, tollgate_report::csv::CsvError> {
    let mut w = tollgate_report::csv::Writer::new();
    w.row(USAGE_HEADER)?;
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        let counts = [
            r.calls,
            r.errors,
            r.denied,
            r.bytes_in,
            r.bytes_out,
            r.tokens,
            r.catalog_tokens,
            r.p50_us,
            r.p99_us,
        ];
        // `{:?}` keeps the decimal point of a whole cost (`0.0`), as JSON does.
        let cost = format!("{:?}", r.cost);
        w.row(
            std::iter::once(r.key.clone())
                .chain(counts.map(|c| c.to_string()))
                .chain([cost]),
        )?;
    }
    w.finish()
}

/// `GET /console/api/spend.csv`.
pub(crate) async fn spend_csv(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    Query(q): Query<SpendQuery>,
) -> Result<Response, ConsoleError> {
    caller.need(Role::Viewer)?;
    let (since, until) = q.window()?;
    let (report, _) = report(&s, q.group()?, (since, until)).await?;
    let body = usage_csv(&report).map_err(|e| ConsoleError::Gateway(format!("CSV: {e}")))?;
    let what = format!(
        "spend csv by {} from {} to {}",
        report.by.as_str(),
        humantime::format_rfc3339_seconds(since),
        humantime::format_rfc3339_seconds(until)
    );
    record_action(&s, &caller, "console/export", what, true).await?;
    let disposition = "attachment; filename=\"tollgate-spend.csv\"";
    Ok((
        [
            (CONTENT_TYPE, "text/csv; charset=utf-8"),
            (CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response())
}
