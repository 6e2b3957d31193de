//! Rate limits: which `[[limits.rules]]` a call matches, and whether each
//! of them still has room for it.
//!
//! Where it sits: the `limit` phase of the request path, after `authorize`
//! (a call the policies refuse costs nothing) and before `credential`.
//! Each rule keeps GCRA counters keyed by what the rule counts by — the
//! verified principal (issuer and subject), never the session, so a new
//! `initialize` does not reset anything; or the team, or each route the
//! call is on (`key`) — in this process (the `governor` crate), or, with
//! `[limits.redis]`, in Redis for every replica (`store`), falling back per
//! rule (`on_store_error`) while Redis cannot be reached. A call is refused
//! by the first matching rule without room, with the time until it would
//! have room. No HTTP here: the server maps a [`RateRejection`] to 429.

mod budget;
mod key;
mod prices;
mod store;

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tollgate_config::{OnStoreError, RateRule};

use self::budget::Budgets;
pub use self::budget::{BudgetCount, BudgetRejection, Spender, Standing, counted_as, period_bounds};
pub use self::key::Identity;
use self::key::{keys, matches};
pub use self::prices::{Priced, Prices};
use self::store::{Cell, Store, Verdict};
pub use self::store::{StoreError, StoreHealth, StoreSettings, StoreTls};

/// How many checks between sweeps of counters that are back at full
/// capacity (which then cost no memory).
const SWEEP_EVERY: u64 = 4096;

/// What the rules look at in one call (one JSON-RPC request).
#[derive(Debug, Clone, Copy, Default)]
pub struct Call<'a> {
    /// The route (server) the call runs on.
    pub route: &'a str,
    /// The virtual server it came through, if any.
    pub via: Option<&'a str>,
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name (the member's own), if any.
    pub name: Option<&'a str>,
    /// The name the virtual server exposes it under, if any.
    pub exposed: Option<&'a str>,
    /// The verified principal; `None` when anonymous.
    pub principal: Option<Identity<'a>>,
    /// The principal's team.
    pub team: Option<&'a str>,
    /// The principal's cost centre.
    pub cost_center: Option<&'a str>,
}

/// A call a rule has no room for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRejection {
    /// The rule's id.
    pub rule: Arc<str>,
    /// How long until the rule has room again.
    pub retry_after: Duration,
    /// Refused because the shared store could not be reached and the
    /// rule says `on_store_error = "deny"`.
    pub store_unavailable: bool,
}

/// The rate-limit rules of a configuration, with their counters.
#[derive(Debug, Default)]
pub struct Limiter {
    rules: Vec<Rule>,
    checks: AtomicU64,
    store: Option<Arc<Store>>,
    budgets: Budgets,
}

#[derive(Debug)]
struct Rule {
    id: Arc<str>,
    config: RateRule,
    /// The counters: the only ones without a store, the fallback of
    /// `on_store_error = "local"` with one. Shared with the same rule of
    /// the limiter a reload replaced.
    counters: Arc<DefaultKeyedRateLimiter<String>>,
    /// The quota of the local counters (the rule's share per replica).
    quota: Quota,
    /// GCRA parameters for the store: the time between calls, and how far
    /// ahead of it a burst may run.
    interval: Duration,
    tolerance: Duration,
    refused: Arc<AtomicU64>,
}

impl Limiter {
    /// The limiter of `rules` with counters in this process (validated by
    /// the configuration: a rule with a zero rate or period is skipped).
    pub fn new(rules: &[RateRule]) -> Limiter {
        Limiter {
            rules: rules.iter().filter_map(|r| Rule::new(r, 1)).collect(),
            checks: AtomicU64::new(0),
            store: None,
            budgets: Budgets::default(),
        }
    }

    /// The limiter of `rules` with counters shared in Redis by `replicas`
    /// replicas; connects in the background. Must run in a Tokio runtime.
    ///
    /// # Errors
    ///
    /// A store URL the Redis client cannot use.
    pub fn with_store(rules: &[RateRule], settings: &StoreSettings, replicas: u32) -> Result<Limiter, StoreError> {
        Limiter::with_store_from(rules, settings, replicas, None)
    }

    /// [`Limiter::with_store`], on the store of `previous` when it has the
    /// same `settings` (a configuration reload that left `[limits.redis]`
    /// unchanged keeps its connections).
    ///
    /// # Errors
    ///
    /// As [`Limiter::with_store`], when a new store is needed.
    pub fn with_store_from(
        rules: &[RateRule],
        settings: &StoreSettings,
        replicas: u32,
        previous: Option<&Limiter>,
    ) -> Result<Limiter, StoreError> {
        let kept = previous
            .and_then(|p| p.store.as_ref())
            .filter(|s| s.settings() == settings);
        let store = match kept {
            Some(store) => Arc::clone(store),
            None => Arc::new(Store::connect(settings)?),
        };
        Ok(Limiter {
            rules: rules.iter().filter_map(|r| Rule::new(r, replicas)).collect(),
            checks: AtomicU64::new(0),
            store: Some(store),
            budgets: Budgets::default(),
        })
    }

    /// This limiter, taking over from `previous` (a configuration reload):
    /// every rule whose settings did not change keeps its counters and its
    /// refusal count, and the budgets keep this period's spend, so a reload
    /// neither resets a limit nor refunds a budget.
    #[must_use]
    pub fn inherit(mut self, previous: &Limiter) -> Limiter {
        for rule in &mut self.rules {
            let same = |old: &&Rule| old.id == rule.id && old.config == rule.config && old.quota == rule.quota;
            if let Some(old) = previous.rules.iter().find(same) {
                rule.counters = Arc::clone(&old.counters);
                rule.refused = Arc::clone(&old.refused);
            }
        }
        self.budgets.inherit(&previous.budgets);
        self
    }

    /// This limiter with `budgets`, periods counted in the IANA time zone
    /// `zone`.
    #[must_use]
    pub fn with_budgets(mut self, budgets: &[tollgate_config::Budget], zone: &str) -> Limiter {
        self.budgets = Budgets::new(budgets, zone);
        self
    }

    /// Whether `who` may make a call under the budgets, and where it
    /// stands.
    ///
    /// # Errors
    ///
    /// The first budget `who` has spent this period.
    pub async fn check_budgets(&self, who: &Spender<'_>) -> Result<Option<Standing>, BudgetRejection> {
        if self.budgets.is_empty() {
            return Ok(None);
        }
        self.budgets.check(self.store.as_deref(), who).await
    }

    /// Add an answer's estimated `tokens` to the budgets `who` counts
    /// against.
    pub fn spend(&self, who: &Spender<'_>, tokens: u64) {
        if !self.budgets.is_empty() {
            self.budgets.spend(self.store.as_ref(), who, tokens);
        }
    }

    /// The budgets' latest known counts, for the metrics.
    pub fn budget_counts(&self) -> Vec<BudgetCount> {
        self.budgets.counts_seen()
    }

    /// The shared store's state; `None` without one.
    pub fn store_health(&self) -> Option<StoreHealth> {
        self.store.as_deref().map(Store::health)
    }

    /// Whether there are no rules (the phase then does nothing).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Count `call` against every rule it matches; the first rule without
    /// room refuses it (rules before it have counted it).
    ///
    /// # Errors
    ///
    /// The [`RateRejection`] of the first matching rule without room.
    pub async fn check(&self, call: &Call<'_>) -> Result<(), RateRejection> {
        if self.rules.is_empty() {
            return Ok(());
        }
        self.sweep();
        let Some(store) = &self.store else {
            return self.check_local(call);
        };
        let matched: Vec<(&Rule, String)> = self
            .rules
            .iter()
            .filter(|r| matches(&r.config, call))
            .flat_map(|r| keys(&r.config, call).into_iter().flatten().map(move |k| (r, k)))
            .collect();
        if matched.is_empty() {
            return Ok(());
        }
        let cells: Vec<Cell> = matched
            .iter()
            .map(|(r, k)| Cell {
                key: store.key(&r.id, k),
                interval: r.interval,
                tolerance: r.tolerance,
            })
            .collect();
        match store.check(&cells).await {
            Ok(Verdict::Room) => Ok(()),
            Ok(Verdict::Full(i, wait)) => match matched.get(i) {
                Some((rule, _)) => Err(rule.refuse(wait, false)),
                None => Ok(()),
            },
            Err(e) => {
                tracing::debug!(error = %e, "limit store error: rules fall back");
                degraded(&matched)
            }
        }
    }

    /// Count `call` against the counters of this process.
    fn check_local(&self, call: &Call<'_>) -> Result<(), RateRejection> {
        for rule in self.rules.iter().filter(|r| matches(&r.config, call)) {
            for key in keys(&rule.config, call).into_iter().flatten() {
                rule.check_local(&key)?;
            }
        }
        Ok(())
    }

    /// Each rule's id and the calls it refused since start.
    pub fn refusals(&self) -> impl Iterator<Item = (&str, u64)> {
        self.rules.iter().map(|r| (&*r.id, r.refused.load(Ordering::Relaxed)))
    }

    /// Drop counters that are back at full capacity, now and then.
    fn sweep(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            for rule in &self.rules {
                rule.counters.retain_recent();
                rule.counters.shrink_to_fit();
            }
        }
    }
}

impl Rule {
    /// The rule `r`, its local counters at `1 / replicas` of its rate and
    /// burst (at least one call).
    fn new(r: &RateRule, replicas: u32) -> Option<Rule> {
        let interval = r.period.checked_div(r.rate)?;
        let share = |n: u32| (n / replicas.max(1)).max(1);
        let local = r.period.checked_div(share(r.rate))?;
        let quota = Quota::with_period(local)?.allow_burst(NonZeroU32::new(share(r.burst()))?);
        Some(Rule {
            id: Arc::from(r.id.as_str()),
            config: r.clone(),
            counters: Arc::new(RateLimiter::keyed(quota)),
            quota,
            interval,
            tolerance: interval.saturating_mul(r.burst().saturating_sub(1)),
            refused: Arc::new(AtomicU64::new(0)),
        })
    }

    fn check_local(&self, key: &String) -> Result<(), RateRejection> {
        self.counters
            .check_key(key)
            .map_err(|not_until| self.refuse(not_until.wait_time_from(DefaultClock::default().now()), false))
    }

    fn refuse(&self, retry_after: Duration, store_unavailable: bool) -> RateRejection {
        self.refused.fetch_add(1, Ordering::Relaxed);
        RateRejection {
            rule: self.id.clone(),
            retry_after,
            store_unavailable,
        }
    }
}

/// The decision while the store cannot be reached: each matched rule as
/// its `on_store_error` says.
fn degraded(matched: &[(&Rule, String)]) -> Result<(), RateRejection> {
    for (rule, key) in matched {
        match rule.config.on_store_error {
            OnStoreError::Allow => {}
            OnStoreError::Deny => return Err(rule.refuse(Duration::from_secs(1), true)),
            OnStoreError::Local => rule.check_local(key)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
