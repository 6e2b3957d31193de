//! Audit shipping metrics (`[store] postgres`), read when Prometheus
//! scrapes: how far behind the fleet store is, what was shipped and what
//! failed since start. The lag is computed at the scrape, so it keeps
//! growing while a pass hangs on a store that does not answer.

use std::sync::Arc;
use std::time::SystemTime;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, IntGauge};

use super::totals::Totals;
use crate::shipping::ShipStatus;

/// Collects the shipper's status at scrape time.
pub(crate) struct ShipCollector {
    status: Arc<ShipStatus>,
    lag: Gauge,
    lines: Totals,
    pending: IntGauge,
    failures: Totals,
    healthy: IntGauge,
}

impl ShipCollector {
    pub(crate) fn new(status: Arc<ShipStatus>) -> prometheus::Result<Self> {
        Ok(ShipCollector {
            status,
            lag: Gauge::new(
                "tollgate_store_ship_lag_seconds",
                "How long since the fleet store last held every line of this replica's audit files (0 when it does).",
            )?,
            lines: Totals::new(
                "tollgate_store_shipped_lines_total",
                "Audit lines shipped to the fleet store.",
                &[],
            )?,
            pending: IntGauge::new(
                "tollgate_store_ship_pending_bytes",
                "Bytes of the audit files not shipped yet, at the last pass.",
            )?,
            failures: Totals::new(
                "tollgate_store_ship_failures_total",
                "Shipping passes that failed (the store down, a batch refused).",
                &[],
            )?,
            healthy: IntGauge::new(
                "tollgate_store_ship_healthy",
                "1 while audit lines are being shipped, 0 when the last pass failed or the store's schema is not usable.",
            )?,
        })
    }

    fn gauges(&self) -> [&dyn Collector; 5] {
        [&self.lag, &self.lines, &self.pending, &self.failures, &self.healthy]
    }
}

impl Collector for ShipCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.gauges().into_iter().flat_map(Collector::desc).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let stats = &self.status.stats;
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.lag.set(stats.lag(SystemTime::now()).as_secs_f64());
        self.lines.set(stats.lines());
        self.pending.set(int(stats.pending_bytes()));
        self.failures.set(stats.failures());
        self.healthy.set(i64::from(self.status.healthy()));
        self.gauges().into_iter().flat_map(Collector::collect).collect()
    }
}
