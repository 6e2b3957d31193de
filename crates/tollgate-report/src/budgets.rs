//! `tollgate usage --budgets`: each `[[limits.budgets]]` budget's spend
//! this period, read from the audit trail — the record of truth — with
//! what is left and where the period is heading at the current pace.
//!
//! A record counts as the gateway counts it: a complete record of a call
//! the gateway did not refuse, its `tokens`, on a route the budget covers,
//! under the budget's team, cost centre or principal. The trail's index
//! keeps no issuer, so a `per = "principal"` budget is summed here by
//! subject (two issuers' equal subjects in one row), where the gateway
//! counts each issuer's principal apart.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use tollgate_audit::{Entry, Filter, Phase, QueryError};
use tollgate_config::Budget;
use tollgate_index::{Index, IndexError, IndexedCall};
use tollgate_limit::{Identity, Spender};

use crate::Settings;

/// One budget and key this period.
#[derive(Debug)]
pub struct BudgetRow {
    /// The budget's id.
    pub budget: String,
    /// The team, cost centre or principal it counts.
    pub key: String,
    /// `day`, `week` or `month`.
    pub period: &'static str,
    /// RFC 3339, in UTC.
    pub start: String,
    /// The period's end, RFC 3339, in UTC.
    pub end: String,
    /// Tokens spent this period.
    pub spent: u64,
    /// The budget's limit, in tokens.
    pub tokens: u64,
    /// What is left of it.
    pub remaining: u64,
    /// Spend at the end of the period if it goes on at the pace so far.
    pub projected: u64,
    /// What the spend cost (`[[limits.prices]]`), and in which currency;
    /// `None` without prices.
    pub cost: Option<(f64, String)>,
}

/// The budgets of `settings` against the records in `paths`, at `now`.
///
/// # Errors
///
/// A file that cannot be read or a malformed line.
pub fn report(paths: &[PathBuf], settings: &Settings, now: SystemTime) -> Result<Vec<BudgetRow>, QueryError> {
    let Some(filter) = window(settings, now) else {
        return Ok(Vec::new());
    };
    report_entries(tollgate_audit::query(paths, filter)?, settings, now)
}

/// What the budgets of `settings` read at `now`: every record since the
/// earliest period start; `None` without budgets.
pub fn window(settings: &Settings, now: SystemTime) -> Option<Filter> {
    Some(Filter {
        since: Some(Tally::new(settings, now)?.since),
        until: Some(now),
        ..Filter::default()
    })
}

/// [`report`] over `entries` read with the [`window`] filter from any
/// source (the files, or the fleet store).
///
/// # Errors
///
/// The first error an entry carries.
pub fn report_entries<E>(
    entries: impl IntoIterator<Item = Result<Entry, E>>,
    settings: &Settings,
    now: SystemTime,
) -> Result<Vec<BudgetRow>, E> {
    let Some(mut tally) = Tally::new(settings, now) else {
        return Ok(Vec::new());
    };
    for entry in entries {
        let r = entry?.record;
        if r.phase == Phase::Complete {
            tally.add(&IndexedCall::from(&r));
        }
    }
    Ok(tally.finish())
}

/// [`report`] answered from the audit index.
///
/// # Errors
///
/// A database error.
pub fn report_indexed(index: &Index, settings: &Settings, now: SystemTime) -> Result<Vec<BudgetRow>, IndexError> {
    let Some(mut tally) = Tally::new(settings, now) else {
        return Ok(Vec::new());
    };
    index.calls(Some(tally.since), Some(now), |c| tally.add(c))?;
    Ok(tally.finish())
}

/// Each budget's spend per key so far this period.
struct Tally<'s> {
    settings: &'s Settings,
    now: SystemTime,
    /// Per budget, its period's bounds.
    periods: Vec<(SystemTime, SystemTime)>,
    /// The earliest period start.
    since: SystemTime,
    spent: BTreeMap<(usize, String), (u64, f64)>,
}

impl<'s> Tally<'s> {
    fn new(settings: &'s Settings, now: SystemTime) -> Option<Tally<'s>> {
        let periods: Vec<(SystemTime, SystemTime)> = settings
            .budgets
            .iter()
            .map(|b| tollgate_limit::period_bounds(b.period, &settings.time_zone, now).unwrap_or((now, now)))
            .collect();
        let since = periods.iter().map(|p| p.0).min()?;
        Some(Tally {
            settings,
            now,
            periods,
            since,
            spent: BTreeMap::new(),
        })
    }

    /// Count a complete call as the gateway counts it: not when the
    /// gateway refused or failed it.
    fn add(&mut self, c: &IndexedCall<'_>) {
        if c.refused {
            return;
        }
        for (i, (b, (start, _))) in self.settings.budgets.iter().zip(&self.periods).enumerate() {
            if c.time >= *start
                && let Some(key) = key_of(b, c)
            {
                let sum = self.spent.entry((i, key.into_owned())).or_default();
                sum.0 += c.usage.tokens;
                sum.1 += crate::spend::indexed_cost(c, &self.settings.prices);
            }
        }
    }

    fn finish(self) -> Vec<BudgetRow> {
        let (budgets, prices) = (&self.settings.budgets, &self.settings.prices);
        self.spent
            .into_iter()
            .filter_map(|((i, key), (spent, cost))| {
                let b = budgets.get(i)?;
                let (start, end) = *self.periods.get(i)?;
                let mut row = row(b, key, spent, (start, end), self.now);
                row.cost = prices.currency().map(|c| (cost, c.to_owned()));
                Some(row)
            })
            .collect()
    }
}

/// The key `c` counts under in `b`, if it counts: as the gateway counts.
fn key_of<'r>(b: &Budget, c: &IndexedCall<'r>) -> Option<std::borrow::Cow<'r, str>> {
    // The audit index keeps no issuer: a principal is known here by its
    // subject alone (`Identity` with an empty issuer).
    let who = Spender {
        route: c.usage.server,
        via: c.via,
        principal: Some(Identity {
            issuer: "",
            subject: c.usage.subject?,
        }),
        team: c.usage.team,
        cost_center: c.usage.cost_center,
    };
    tollgate_limit::counted_as(b, &who)
}

fn row(b: &Budget, key: String, spent: u64, (start, end): (SystemTime, SystemTime), now: SystemTime) -> BudgetRow {
    let elapsed = now.duration_since(start).unwrap_or_default().as_secs_f64();
    let length = end.duration_since(start).unwrap_or_default().as_secs_f64();
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a projection"
    )]
    let projected = if elapsed > 0.0 {
        (spent as f64 * length / elapsed) as u64
    } else {
        spent
    };
    BudgetRow {
        budget: b.id.clone(),
        key,
        period: b.period.as_str(),
        start: rfc3339(start),
        end: rfc3339(end),
        spent,
        tokens: b.tokens,
        remaining: b.tokens.saturating_sub(spent),
        projected,
        cost: None,
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The rows as an aligned table; a `COST` column when they are priced.
pub fn table(rows: &[BudgetRow]) -> String {
    let currency = rows.iter().find_map(|r| r.cost.as_ref().map(|c| c.1.as_str()));
    let mut out = format!(
        "{:<24} {:<20} {:<6} {:>14} {:>14} {:>14} {:>14}  {:<20}",
        "BUDGET", "KEY", "PERIOD", "SPENT", "LIMIT", "REMAINING", "PROJECTED", "ENDS"
    );
    if let Some(c) = currency {
        out.push_str(&format!(" {:>14}", format!("COST {c}")));
    }
    out = out.trim_end().to_owned() + "\n";
    for r in rows {
        let mut line = format!(
            "{:<24} {:<20} {:<6} {:>14} {:>14} {:>14} {:>14}  {:<20}",
            r.budget, r.key, r.period, r.spent, r.tokens, r.remaining, r.projected, r.end
        );
        if let Some((cost, _)) = &r.cost {
            line.push_str(&format!(" {cost:>14.2}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The rows as a JSON document: `{"budgets": [...]}`.
pub fn json(rows: &[BudgetRow]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "budget": r.budget, "key": r.key, "period": r.period,
                "start": r.start, "end": r.end, "spent": r.spent, "tokens": r.tokens,
                "remaining": r.remaining, "projected": r.projected,
                "cost": r.cost.as_ref().map(|c| c.0), "currency": r.cost.as_ref().map(|c| &c.1),
            })
        })
        .collect();
    serde_json::json!({ "budgets": rows }).to_string()
}

/// The rows as CSV ([`crate::csv`]: no cell reads as a formula).
///
/// # Errors
///
/// None in practice ([`crate::csv::Writer::finish`]).
pub fn csv(rows: &[BudgetRow]) -> Result<String, crate::csv::CsvError> {
    let mut w = crate::csv::Writer::new();
    w.row([
        "budget",
        "key",
        "period",
        "start",
        "end",
        "spent",
        "tokens",
        "remaining",
        "projected",
        "cost",
        "currency",
    ])?;
    for r in rows {
        let (cost, currency) = r
            .cost
            .as_ref()
            .map_or((String::new(), ""), |(cost, c)| (format!("{cost:.6}"), c.as_str()));
        w.row([
            r.budget.as_str(),
            &r.key,
            r.period,
            &r.start,
            &r.end,
            &r.spent.to_string(),
            &r.tokens.to_string(),
            &r.remaining.to_string(),
            &r.projected.to_string(),
            &cost,
            currency,
        ])?;
    }
    w.finish()
}
