//! The budget part of the configuration model: `[[limits.budgets]]`.
//!
//! A budget caps the estimated tokens (`[audit] bytes_per_token`) the
//! answers of one team, cost centre or principal may add up to per day,
//! week or month, counted in `[limits] time_zone`. Past `warn_at` of it a
//! call is flagged; at the cap new calls are refused until the period
//! ends. `tollgate-limit` applies budgets on the request path; this module
//! only describes them.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{KeyName, OnStoreError};

/// One budget.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Names the budget in refusals, audit records, metrics and reports.
    pub id: String,
    /// Whose spend it caps.
    #[serde(default)]
    pub per: BudgetKey,
    /// Which teams, cost centres or principals (by `per`) it applies to,
    /// each with its own count; empty: every one of them. A principal is
    /// a subject (under every trusted issuer) or `{ issuer, subject }`.
    #[serde(default)]
    pub keys: Vec<KeyName>,
    /// Server or virtual-server names whose calls count; empty: all.
    #[serde(default)]
    pub routes: Vec<String>,
    /// The period the cap is counted over.
    pub period: BudgetPeriod,
    /// The cap, in estimated tokens per period.
    pub tokens: u64,
    /// The share of `tokens` past which calls are flagged (metric, audit
    /// record, `Tollgate-Budget-Remaining`); default 0.8.
    #[serde(default = "default_warn_at")]
    pub warn_at: f64,
    /// With `[limits.redis]`, what a check does while Redis cannot be
    /// reached: `local` (this replica's own count), `allow` or `deny`.
    #[serde(default)]
    pub on_store_error: OnStoreError,
}

fn default_warn_at() -> f64 {
    0.8
}

/// One price (`[[limits.prices]]`): what a million estimated tokens of the
/// matching calls cost, in `[limits] currency`. Reports (`tollgate usage`)
/// apply the first price that matches a call; calls no price matches cost
/// nothing.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Server or virtual-server names it applies to; empty: every route.
    #[serde(default)]
    pub routes: Vec<String>,
    /// Tool or prompt name patterns (`*` matches any run of characters);
    /// empty: every call of the routes.
    #[serde(default)]
    pub tools: Vec<String>,
    /// The price of one million estimated tokens.
    pub per_million_tokens: f64,
}

impl Price {
    /// `per_million_tokens` for the calls of `routes` whose names match
    /// `tools` (either empty: any).
    pub fn new(routes: &[&str], tools: &[&str], per_million_tokens: f64) -> Price {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        Price {
            routes: owned(routes),
            tools: owned(tools),
            per_million_tokens,
        }
    }
}

/// Whose spend a budget caps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKey {
    /// Each team (the token's team claim); callers without one are not
    /// counted.
    #[default]
    Team,
    /// Each cost centre (the token's cost-centre claim).
    CostCenter,
    /// Each verified principal, by issuer and subject.
    Principal,
}

impl BudgetKey {
    /// A stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKey::Team => "team",
            BudgetKey::CostCenter => "cost_center",
            BudgetKey::Principal => "principal",
        }
    }
}

/// The calendar period of a budget, in `[limits] time_zone`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    /// From midnight to midnight.
    Day,
    /// From Monday 00:00 to the next Monday.
    Week,
    /// From the first of the month to the first of the next.
    Month,
}

impl BudgetPeriod {
    /// A stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetPeriod::Day => "day",
            BudgetPeriod::Week => "week",
            BudgetPeriod::Month => "month",
        }
    }
}
