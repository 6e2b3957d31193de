//! The console's spend series across the fleet: tokens per step of a
//! window, priced, from `audit_usage`: a scan of its own, which
//! [`Store::usage`] runs beside the report's.

use std::collections::BTreeMap;

use tollgate_limit::Prices;

use super::{Classes, Window, whole};
use crate::Store;
use crate::error::Result;

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

impl Store {
    /// Tokens per `step` seconds of the calls in `window`, priced with
    /// `prices` (whose [`Classes`] these are); none without a step.
    pub(super) async fn series(
        &self,
        step: Option<u64>,
        window: &Window,
        classes: &Classes,
        prices: &Prices,
    ) -> Result<Vec<SeriesPoint>> {
        let Some(step) = step.filter(|s| *s > 0) else {
            return Ok(Vec::new());
        };
        let sql = format!(
            "SELECT (floor(date_part('epoch', time) / {step}) * {step})::bigint, {class}, \
             sum(tokens::float8), sum(tokens::float8) FILTER (WHERE catalog) \
             FROM audit_usage WHERE {conds} GROUP BY 1, 2",
            class = classes.sql,
            conds = window.conds,
        );
        let rows = self.rows(sql, window, Some(classes), "summing a spend series").await?;
        let mut steps: BTreeMap<u64, (SeriesPoint, BTreeMap<u64, u64>)> = BTreeMap::new();
        for row in &rows {
            let t = row.get::<_, i64>(0).unsigned_abs();
            let tokens = whole(row.get(2));
            let (point, priced) = steps.entry(t).or_default();
            point.tokens += tokens;
            point.catalog_tokens += whole(row.get(3));
            *priced.entry(Classes::price(prices, row.get(1)).to_bits()).or_default() += tokens;
        }
        Ok(points(steps))
    }
}

/// A step's points with their cost, tokens summed per price.
#[allow(clippy::cast_precision_loss, reason = "money from a token count")]
fn points(steps: BTreeMap<u64, (SeriesPoint, BTreeMap<u64, u64>)>) -> Vec<SeriesPoint> {
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
