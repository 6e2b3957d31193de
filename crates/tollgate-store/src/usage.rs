//! Fleet-wide usage summed in PostgreSQL: `tollgate usage --store` and the
//! console's spend, grouped by team, cost centre, subject, server, tool or
//! trace over `audit_usage`, the narrow row shipping writes for each
//! complete call, instead of reading every stored line.
//!
//! The report is the one `tollgate-meter` makes from the files, number for
//! number: one scan sums each group per price-deciding columns (route,
//! virtual server, name, exposed name; prices are configuration, applied
//! here in Rust per group), and counts each group's durations per
//! histogram bucket (`tollgate_meter::duration_bucket`, stored by the
//! shipper);
//! a group of at most `EXACT_DURATIONS` calls has its exact durations
//! read by a second query, as the meter keeps them exactly. Only
//! `complete` records count, as over the files: `audit_usage` holds no
//! others.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_postgres::types::ToSql;
use tollgate_limit::{Priced, Prices};
use tollgate_meter::{EXACT_DURATIONS, GroupBy, Usage, UsageReport, UsageSums};

use crate::Store;
use crate::error::{Result, StoreError};

mod activity;

pub use activity::{Activity, ActivityStep, Steps};

/// Tokens of one step of a spend series (`t`: its start, Unix seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesPoint {
    /// The step's start, Unix seconds.
    pub t: u64,
    /// Tokens of its calls.
    pub tokens: u64,
    /// Of which in catalogue responses.
    pub catalog_tokens: u64,
    /// What they cost.
    pub cost: f64,
}

/// The window and grouping of a usage question.
#[derive(Debug, Clone, Copy)]
pub struct UsageQuestion {
    /// What to group by.
    pub by: GroupBy,
    /// Calls at or after this time.
    pub since: Option<SystemTime>,
    /// Calls before this time.
    pub until: Option<SystemTime>,
    /// With a series of this many seconds a step (the console's spend).
    pub step: Option<u64>,
}

/// Which grouping set a row of the scan belongs to: `GROUPING(k, b)`, a
/// bit set for each column the set leaves out (`k` the higher).
const GROUPS: i32 = 0b01;
const BUCKETS: i32 = 0b00;
const STEPS: i32 = 0b11;

impl Store {
    /// The usage report of every replica's complete calls, as
    /// `tollgate_report::spend::report` gives it from the files, priced
    /// with `prices`; with `question.step`, the tokens per step too.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn usage(&self, question: UsageQuestion, prices: &Prices) -> Result<(UsageReport, Vec<SeriesPoint>)> {
        let client = self.client().await?;
        let window = Window::of(&question);
        let priced = prices.currency().is_some();
        let sql = scan_sql(question.by, priced, question.step, &window);
        let rows = client
            .query(&sql, &window.params())
            .await
            .map_err(StoreError::db("summing usage"))?;
        let mut usage = Usage::new(question.by);
        let mut calls: HashMap<Option<String>, u64> = HashMap::new();
        let mut steps: BTreeMap<u64, (SeriesPoint, BTreeMap<u64, u64>)> = BTreeMap::new();
        let mut buckets = Vec::new();
        for row in &rows {
            let set: i32 = row.get(0);
            let key: Option<String> = row.get(1);
            let sums = sums(row);
            match set {
                GROUPS => {
                    let sums = UsageSums {
                        per_million: price(prices, row),
                        ..sums
                    };
                    *calls.entry(key.clone()).or_default() += sums.calls;
                    usage.add_sums(key.as_deref(), &sums);
                }
                BUCKETS => buckets.push((key, row.get::<_, i64>(6), sums.calls)),
                STEPS => {
                    let t = row.get::<_, i64>(7).unsigned_abs();
                    let (point, priced) = steps.entry(t).or_default();
                    point.tokens += sums.tokens;
                    point.catalog_tokens += sums.catalog_tokens;
                    *priced.entry(price(prices, row).to_bits()).or_default() += sums.tokens;
                }
                _ => {}
            }
        }
        let exact: HashSet<Option<String>> = calls
            .iter()
            .filter(|(_, n)| **n <= EXACT_DURATIONS as u64)
            .map(|(k, _)| k.clone())
            .collect();
        for (key, bucket, n) in buckets.iter().filter(|(k, _, _)| !exact.contains(k)) {
            usage.add_duration_bucket(key.as_deref(), usize::try_from(*bucket).unwrap_or(usize::MAX), *n);
        }
        if !exact.is_empty() {
            let small: Vec<&Option<String>> = exact.iter().collect();
            for (key, d) in durations(&client, question.by, &window, &small).await? {
                usage.add_duration(key.as_deref(), d);
            }
        }
        let mut report = usage.finish();
        report.currency = prices.currency().map(str::to_owned);
        Ok((report, series(steps)))
    }
}

/// A step's points with their cost, tokens summed per price.
#[allow(clippy::cast_precision_loss, reason = "money from a token count")]
fn series(steps: BTreeMap<u64, (SeriesPoint, BTreeMap<u64, u64>)>) -> Vec<SeriesPoint> {
    steps
        .into_iter()
        .map(|(t, (point, priced))| SeriesPoint {
            t,
            cost: priced
                .iter()
                .map(|(p, tokens)| f64::from_bits(*p) * *tokens as f64 / 1_000_000.0)
                .sum(),
            ..point
        })
        .collect()
}

/// The sums of a scan row (columns 8 on; a byte or token sum as its high
/// and low parts, see [`split_sum`]).
fn sums(row: &tokio_postgres::Row) -> UsageSums {
    let n = |i: usize| row.get::<_, Option<i64>>(i).unwrap_or(0);
    let split = |i: usize| {
        let whole = i128::from(n(i)) * (1 << 31) + i128::from(n(i + 1));
        i64::try_from(whole).unwrap_or(i64::MAX).unsigned_abs()
    };
    UsageSums {
        calls: n(8).unsigned_abs(),
        errors: n(9).unsigned_abs(),
        denied: n(10).unsigned_abs(),
        bytes_in: split(11),
        bytes_out: split(13),
        tokens: split(15),
        catalog_tokens: split(17),
        per_million: 0.0,
    }
}

/// The exact sum of the bigint `column` as two sums of integers, its bits
/// above and below the 31st: PostgreSQL sums integers in a plain 64-bit
/// state, but bigints in a wider one allocated per group, which made the
/// scan a third slower. `high * 2^31 + low` is the sum.
fn split_sum(column: &str, filter: &str) -> String {
    format!("sum(({column} >> 31)::int){filter}, sum(({column} & 2147483647)::int){filter}")
}

/// The price per million tokens of the calls of a scan row (columns 2 to
/// 5: route, virtual server, name, exposed name).
fn price(prices: &Prices, row: &tokio_postgres::Row) -> f64 {
    let text = |i: usize| row.get::<_, Option<&str>>(i);
    let call = Priced {
        route: text(2).unwrap_or_default(),
        via: text(3),
        name: text(4),
        exposed: text(5),
    };
    prices.per_million(&call).unwrap_or(0.0)
}

/// The time window as SQL conditions on `time` and their parameters:
/// bounds rounded up to the microsecond, the store's precision (a
/// record's time has microseconds, so none moves across a bound).
struct Window {
    conds: String,
    bounds: Vec<SystemTime>,
}

impl Window {
    fn of(q: &UsageQuestion) -> Window {
        let mut conds = String::from("TRUE");
        let mut bounds = Vec::new();
        for (op, t) in [(">=", q.since), ("<", q.until)] {
            if let Some(t) = t {
                bounds.push(ceil_micros(t));
                conds.push_str(&format!(" AND time {op} ${}", bounds.len()));
            }
        }
        Window { conds, bounds }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.bounds.iter().map(|t| t as &(dyn ToSql + Sync)).collect()
    }
}

fn ceil_micros(t: SystemTime) -> SystemTime {
    let Ok(d) = t.duration_since(UNIX_EPOCH) else { return t };
    let micros = d.as_nanos().div_ceil(1000);
    UNIX_EPOCH + Duration::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
}

/// The group key of a call, as `GroupBy::key` makes it (NULL: none).
fn key_sql(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Team => "team",
        GroupBy::CostCenter => "cost_center",
        GroupBy::Subject => "subject",
        GroupBy::Server => "COALESCE(route, '')",
        GroupBy::Tool => "COALESCE(route, '') || '/' || COALESCE(name, '(' || method || ')')",
        GroupBy::Trace => "trace_id",
    }
}

/// One scan: sums per group and price-deciding columns, duration counts
/// per group and bucket, and (with `step`) tokens per step and price.
fn scan_sql(by: GroupBy, priced: bool, step: Option<u64>, window: &Window) -> String {
    let pricing = if priced {
        "route, virtual_server, name, exposed_name"
    } else {
        "NULL::text, NULL::text, NULL::text, NULL::text"
    };
    let t = step.map_or_else(
        || "NULL::bigint".to_owned(),
        |s| format!("(floor(date_part('epoch', time) / {s}) * {s})::bigint"),
    );
    let (steps, t_out) = if step.is_some() {
        (", (t, r, v, n, x)", "t")
    } else {
        ("", "NULL::bigint")
    };
    format!(
        "SELECT GROUPING(k, b)::int, k, r, v, n, x, b::bigint, {t_out}, count(*), sum(failed::int), \
         sum(denied::int), {}, {}, {}, {} \
         FROM (SELECT {key} AS k, {pricing}, bucket AS b, {t} AS t, failed, denied, bytes_in, bytes_out, tokens, \
           catalog FROM audit_usage WHERE {conds}) AS c (k, r, v, n, x, b, t, failed, denied, bytes_in, bytes_out, \
           tokens, catalog) \
         GROUP BY GROUPING SETS ((k, r, v, n, x), (k, b){steps})",
        split_sum("bytes_in", ""),
        split_sum("bytes_out", ""),
        split_sum("tokens", ""),
        split_sum("tokens", " FILTER (WHERE catalog)"),
        key = key_sql(by),
        conds = window.conds,
    )
}

/// The exact durations of the calls of the groups `keys` (small groups).
async fn durations(
    client: &deadpool_postgres::Object,
    by: GroupBy,
    window: &Window,
    keys: &[&Option<String>],
) -> Result<Vec<(Option<String>, u64)>> {
    let named: Vec<&str> = keys.iter().filter_map(|k| k.as_deref()).collect();
    let none = keys.iter().any(|k| k.is_none());
    let at = window.bounds.len();
    let sql = format!(
        "SELECT k, d FROM (SELECT {key} AS k, duration_us AS d FROM audit_usage \
         WHERE {conds}) AS c WHERE k = ANY(${}) OR (k IS NULL AND ${})",
        at + 1,
        at + 2,
        key = key_sql(by),
        conds = window.conds,
    );
    let mut params = window.params();
    params.push(&named);
    params.push(&none);
    let rows = client
        .query(&sql, &params)
        .await
        .map_err(StoreError::db("reading durations"))?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get::<_, i64>(1).unsigned_abs()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_rounds_up_to_the_stores_microseconds() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_500);
        assert_eq!(ceil_micros(t), UNIX_EPOCH + Duration::from_micros(2));
        let exact = UNIX_EPOCH + Duration::from_micros(7);
        assert_eq!(ceil_micros(exact), exact);
        let q = UsageQuestion {
            by: GroupBy::Team,
            since: Some(exact),
            until: None,
            step: None,
        };
        let w = Window::of(&q);
        assert!(w.conds.ends_with("AND time >= $1"), "{}", w.conds);
        assert_eq!(w.bounds.len(), 1);
    }

    #[test]
    fn the_scan_groups_by_key_and_price_and_by_key_and_bucket() {
        let q = UsageQuestion {
            by: GroupBy::Tool,
            since: None,
            until: None,
            step: Some(3600),
        };
        let sql = scan_sql(q.by, true, q.step, &Window::of(&q));
        assert!(sql.contains("COALESCE(name, '(' || method || ')') AS k"), "{sql}");
        assert!(
            sql.contains("GROUPING SETS ((k, r, v, n, x), (k, b), (t, r, v, n, x))"),
            "{sql}"
        );
        assert!(sql.contains("exposed_name") && sql.contains("FROM audit_usage"));
        assert!(sql.contains("sum((tokens >> 31)::int) FILTER (WHERE catalog)"), "{sql}");
        let plain = scan_sql(GroupBy::Team, false, None, &Window::of(&q));
        assert!(!plain.contains("exposed_name") && plain.ends_with("(k, b))"), "{plain}");
    }
}
