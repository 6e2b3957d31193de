//! Fleet-wide usage summed in PostgreSQL: `tollgate usage --store` and the
//! console's spend, grouped by team, cost centre, subject, server, tool or
//! trace over `audit_usage`, the narrow row shipping writes for each
//! complete call, instead of reading every stored line.
//!
//! The report is the one `tollgate-meter` makes from the files, number for
//! number, from scans run at once, each on a connection of its own (so a
//! question uses every core): one sums each group per price (the
//! configured prices applied in SQL as one `CASE`, `classes`), one counts
//! each group's durations per histogram bucket
//! (`tollgate_meter::duration_bucket`, stored by the shipper), and with a
//! step one sums tokens per step and price (`series`). A group of at most
//! `EXACT_DURATIONS` calls has its exact durations read afterwards, as the
//! meter keeps them exactly. Only `complete` records count, as over the
//! files: `audit_usage` holds no others.
//!
//! Bytes and tokens are summed as `float8`, the cheapest aggregate:
//! PostgreSQL sums a `bigint` into a `numeric` kept per group. A `float8`
//! sum of whole numbers is exact below 2^53 (nine petabytes, or 9·10^15
//! tokens, per group and window).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use tollgate_limit::Prices;
use tollgate_meter::{EXACT_DURATIONS, GroupBy, Usage, UsageReport, UsageSums};

use crate::Store;
use crate::error::{Result, StoreError};

mod activity;
mod classes;
mod series;

pub use activity::{Activity, ActivityStep, Steps};
use classes::Classes;
pub use series::SeriesPoint;

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

impl Store {
    /// The usage report of every replica's complete calls, as
    /// `tollgate_report::spend::report` gives it from the files, priced
    /// with `prices`; with `question.step`, the tokens per step too.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn usage(&self, question: UsageQuestion, prices: &Prices) -> Result<(UsageReport, Vec<SeriesPoint>)> {
        let window = Window::of(&question);
        let classes = Classes::of(prices, window.bounds.len() + 1);
        let by = question.by;
        let (sums, buckets, series) = tokio::try_join!(
            self.rows(
                sums_sql(by, &classes, &window),
                &window,
                Some(&classes),
                "summing usage"
            ),
            self.rows(buckets_sql(by, &window), &window, None, "counting durations"),
            self.series(question.step, &window, &classes, prices),
        )?;
        let report = self.report(by, &window, prices, &sums, &buckets).await?;
        Ok((report, series))
    }

    /// The rows of one scan of `window` (with the parameters of
    /// `classes`, when it uses them), on a connection of its own.
    async fn rows(
        &self,
        sql: String,
        window: &Window,
        classes: Option<&Classes>,
        context: &'static str,
    ) -> Result<Vec<Row>> {
        let mut params = window.params();
        params.extend(classes.into_iter().flat_map(Classes::params));
        let client = self.client().await?;
        client.query(&sql, &params).await.map_err(StoreError::db(context))
    }

    /// The report from the scans' rows: [`sums_sql`]'s and
    /// [`buckets_sql`]'s, with the exact durations of small groups.
    async fn report(
        &self,
        by: GroupBy,
        window: &Window,
        prices: &Prices,
        sums: &[Row],
        buckets: &[Row],
    ) -> Result<UsageReport> {
        let mut usage = Usage::new(by);
        let mut calls: HashMap<Option<String>, u64> = HashMap::new();
        for row in sums {
            let key: Option<String> = row.get(0);
            let sums = UsageSums {
                per_million: Classes::price(prices, row.get(1)),
                ..group_sums(row)
            };
            *calls.entry(key.clone()).or_default() += sums.calls;
            usage.add_sums(key.as_deref(), &sums);
        }
        let exact: HashSet<Option<String>> = calls
            .iter()
            .filter(|(_, n)| **n <= EXACT_DURATIONS as u64)
            .map(|(k, _)| k.clone())
            .collect();
        for row in buckets {
            let key: Option<String> = row.get(0);
            if !exact.contains(&key) {
                let (bucket, n) = (row.get::<_, i64>(1), row.get::<_, i64>(2));
                usage.add_duration_bucket(key.as_deref(), bucket.unsigned_abs(), n.unsigned_abs());
            }
        }
        if !exact.is_empty() {
            let client = self.client().await?;
            let small: Vec<&Option<String>> = exact.iter().collect();
            for (key, d) in durations(&client, by, window, &small).await? {
                usage.add_duration(key.as_deref(), d);
            }
        }
        let mut report = usage.finish();
        report.currency = prices.currency().map(str::to_owned);
        Ok(report)
    }
}

/// The sums of a [`sums_sql`] row (columns 2 on).
fn group_sums(row: &Row) -> UsageSums {
    let n = |i: usize| row.get::<_, Option<i64>>(i).unwrap_or(0).unsigned_abs();
    let sum = |i: usize| whole(row.get::<_, Option<f64>>(i));
    UsageSums {
        calls: n(2),
        errors: n(3),
        denied: n(4),
        bytes_in: sum(5),
        bytes_out: sum(6),
        tokens: sum(7),
        catalog_tokens: sum(8),
        per_million: 0.0,
    }
}

/// A `float8` sum of whole numbers as the number (0 for none).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a sum of non-negative whole numbers, exact below 2^53"
)]
fn whole(sum: Option<f64>) -> u64 {
    sum.filter(|s| s.is_finite() && *s > 0.0)
        .map_or(0, |s| s.round() as u64)
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
        Window::between(q.since, q.until)
    }

    /// Calls at or after `since` and before `until` (either open).
    fn between(since: Option<SystemTime>, until: Option<SystemTime>) -> Window {
        let mut conds = String::from("TRUE");
        let mut bounds = Vec::new();
        for (op, t) in [(">=", since), ("<", until)] {
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

/// Sums per group and price: the key, the price's class ([`Classes`]),
/// then calls, errors, denials, bytes in and out, tokens and catalogue
/// tokens.
fn sums_sql(by: GroupBy, classes: &Classes, window: &Window) -> String {
    format!(
        "SELECT {key}, {class}, count(*), count(*) FILTER (WHERE failed), count(*) FILTER (WHERE denied), \
         sum(bytes_in::float8), sum(bytes_out::float8), sum(tokens::float8), \
         sum(tokens::float8) FILTER (WHERE catalog) FROM audit_usage WHERE {conds} GROUP BY 1, 2",
        key = key_sql(by),
        class = classes.sql,
        conds = window.conds,
    )
}

/// Calls per group and duration bucket: the key, the bucket, the count.
fn buckets_sql(by: GroupBy, window: &Window) -> String {
    format!(
        "SELECT {key}, bucket, count(*) FROM audit_usage WHERE {conds} GROUP BY 1, 2",
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
    fn the_scans_group_by_key_and_price_and_by_key_and_bucket() {
        let q = UsageQuestion {
            by: GroupBy::Tool,
            since: None,
            until: None,
            step: None,
        };
        let window = Window::of(&q);
        let unpriced = Classes::of(&Prices::default(), 1);
        let sql = sums_sql(q.by, &unpriced, &window);
        assert!(
            sql.contains("COALESCE(name, '(' || method || ')'), -1, count(*)"),
            "{sql}"
        );
        assert!(
            sql.contains("sum(tokens::float8) FILTER (WHERE catalog) FROM audit_usage"),
            "{sql}"
        );
        assert!(sql.ends_with("WHERE TRUE GROUP BY 1, 2"), "{sql}");
        let buckets = buckets_sql(GroupBy::Team, &window);
        assert_eq!(
            buckets,
            "SELECT team, bucket, count(*) FROM audit_usage WHERE TRUE GROUP BY 1, 2"
        );
    }

    #[test]
    fn float_sums_read_back_as_whole_numbers() {
        assert_eq!(whole(Some(9_007_199_254_740_991.0)), 9_007_199_254_740_991);
        assert_eq!((whole(None), whole(Some(-0.0)), whole(Some(f64::NAN))), (0, 0, 0));
    }
}
