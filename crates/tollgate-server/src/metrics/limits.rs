//! Rate-limit metrics, read when Prometheus scrapes: the calls each
//! `[[limits.rules]]` rule refused since start, and the state of the
//! shared store (`[limits.redis]`) when there is one. Nothing on the
//! request path touches them beyond the limiter's own counters.

use std::sync::Arc;

use super::totals::Totals;
use crate::live::Live;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, IntGaugeVec, Opts};

/// Collects the rate-limit gauges and totals at scrape time.
pub(crate) struct LimitCollector {
    live: Arc<Live>,
    refusals: Totals,
    store_up: IntGauge,
    store_errors: Totals,
    budget_spent: IntGaugeVec,
    budget_tokens: IntGaugeVec,
}

impl LimitCollector {
    pub(crate) fn new(live: Arc<Live>) -> prometheus::Result<Self> {
        let refusals = Totals::new(
            "tollgate_rate_limit_refusals_total",
            "Calls a rate-limit rule refused with 429, by rule id.",
            &["rule"],
        )?;
        let store_up = IntGauge::new(
            "tollgate_limit_store_up",
            "1 while the shared limit store ([limits.redis]) answers, 0 while rules follow on_store_error.",
        )?;
        let store_errors = Totals::new(
            "tollgate_limit_store_errors_total",
            "Limit decisions the shared store could not make (timeouts, no connection, errors).",
            &[],
        )?;
        let budget_spent = IntGaugeVec::new(
            Opts::new(
                "tollgate_budget_spent_tokens",
                "Estimated tokens spent this period under a [[limits.budgets]] budget, by budget and key (team, cost centre or principal), as last seen by this replica.",
            ),
            &["budget", "key"],
        )?;
        let budget_tokens = IntGaugeVec::new(
            Opts::new(
                "tollgate_budget_limit_tokens",
                "The cap of a [[limits.budgets]] budget per period, by budget and key.",
            ),
            &["budget", "key"],
        )?;
        Ok(LimitCollector {
            live,
            refusals,
            store_up,
            store_errors,
            budget_spent,
            budget_tokens,
        })
    }
}

impl Collector for LimitCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut desc = self.refusals.desc();
        desc.extend(self.budget_spent.desc());
        desc.extend(self.budget_tokens.desc());
        desc.extend(self.store_up.desc());
        desc.extend(self.store_errors.desc());
        desc
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let g = self.live.current();
        let limiter = &g.shared.limiter;
        // Only the rules and budgets in force: one a reload removed leaves.
        for v in [&self.budget_spent, &self.budget_tokens] {
            v.reset();
        }
        self.refusals
            .update(limiter.refusals().map(|(rule, n)| (vec![rule], n)));
        let mut out = self.refusals.collect();
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for c in limiter.budget_counts() {
            let labels = [&*c.budget, c.key.as_str()];
            self.budget_spent.with_label_values(&labels).set(gauge(c.spent));
            self.budget_tokens.with_label_values(&labels).set(gauge(c.tokens));
        }
        out.extend(self.budget_spent.collect());
        out.extend(self.budget_tokens.collect());
        if let Some(h) = limiter.store_health() {
            self.store_up.set(i64::from(h.up));
            self.store_errors.set(h.errors);
            out.extend(self.store_up.collect());
            out.extend(self.store_errors.collect());
        }
        out
    }
}
