//! The console's overview across the fleet: calls, errors, denials and
//! failures (errors that were not denials) per step of a window, and
//! failures per server and per tool, counted in one scan of
//! `audit_usage`. The per-group sums and latencies beside them are
//! [`Store::usage`]'s.

use std::collections::HashMap;
use std::time::SystemTime;

use tokio_postgres::types::ToSql;
use tollgate_meter::{GroupBy, NONE_KEY};

use super::{Window, key_sql};
use crate::Store;
use crate::error::{Result, StoreError};

/// The counts of one step of the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActivityStep {
    /// Complete calls.
    pub calls: u64,
    /// Answered with an error (a denial's JSON-RPC error included).
    pub errors: u64,
    /// Denied by policy.
    pub denied: u64,
    /// Errors that were not denials.
    pub failed: u64,
}

/// The fleet's activity over a window, in steps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// One entry per step from the window's start.
    pub steps: Vec<ActivityStep>,
    /// Failures per server, keyed as [`GroupBy::Server`] keys a call.
    pub failed_by_server: HashMap<String, u64>,
    /// Failures per tool, keyed as [`GroupBy::Tool`] keys a call.
    pub failed_by_tool: HashMap<String, u64>,
}

/// The steps of a window: `count` of `seconds` each from `start` (Unix
/// seconds); a call's step is its whole second's offset from `start`
/// divided by `seconds`, the last step taking the remainder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steps {
    /// The first step's start, Unix seconds.
    pub start: u64,
    /// Seconds a step.
    pub seconds: u64,
    /// How many.
    pub count: u64,
}

/// `GROUPING(s, k, i)` of each grouping set: a bit for each column it
/// leaves out, `s` the highest.
const BY_SERVER: i32 = 0b011;
const BY_TOOL: i32 = 0b101;
const BY_STEP: i32 = 0b110;

impl Store {
    /// Every replica's complete calls from `since` to `until`, counted per
    /// step of `steps` and their failures per server and tool.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the query.
    pub async fn activity(&self, since: SystemTime, until: SystemTime, steps: Steps) -> Result<Activity> {
        let window = Window::between(Some(since), Some(until));
        let numbers = [steps.start, steps.seconds.max(1), steps.count.saturating_sub(1)]
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let mut params = window.params();
        params.extend(numbers.iter().map(|n| n as &(dyn ToSql + Sync)));
        let at = window.bounds.len();
        let sql = format!(
            "SELECT GROUPING(s, k, i)::int, s, k, i, count(*), count(*) FILTER (WHERE failed), \
             count(*) FILTER (WHERE denied), count(*) FILTER (WHERE failed AND NOT denied) \
             FROM (SELECT {server} AS s, {tool} AS k, \
               LEAST(GREATEST((floor(date_part('epoch', time))::bigint - ${}) / ${}, 0), ${}) AS i, failed, denied \
               FROM audit_usage WHERE {conds}) AS c \
             GROUP BY GROUPING SETS ((s), (k), (i))",
            at + 1,
            at + 2,
            at + 3,
            server = key_sql(GroupBy::Server),
            tool = key_sql(GroupBy::Tool),
            conds = window.conds,
        );
        let client = self.client().await?;
        let rows = client
            .query(&sql, &params)
            .await
            .map_err(StoreError::db("counting the fleet's activity"))?;
        let mut activity = Activity {
            steps: vec![ActivityStep::default(); usize::try_from(steps.count).unwrap_or(0)],
            ..Activity::default()
        };
        for row in &rows {
            let n = |i: usize| row.get::<_, i64>(i).unsigned_abs();
            let key = |i: usize| row.get::<_, Option<String>>(i).unwrap_or_else(|| NONE_KEY.to_owned());
            match row.get::<_, i32>(0) {
                BY_SERVER => drop(activity.failed_by_server.insert(key(1), n(7))),
                BY_TOOL => drop(activity.failed_by_tool.insert(key(2), n(7))),
                BY_STEP => {
                    let i = usize::try_from(n(3)).unwrap_or(usize::MAX);
                    if let Some(step) = activity.steps.get_mut(i) {
                        *step = ActivityStep {
                            calls: n(4),
                            errors: n(5),
                            denied: n(6),
                            failed: n(7),
                        };
                    }
                }
                _ => {}
            }
        }
        Ok(activity)
    }
}
