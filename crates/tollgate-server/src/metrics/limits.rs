//! Rate-limit metrics, read when Prometheus scrapes: the calls each
//! `[[limits.rules]]` rule refused since start. Nothing on the request
//! path touches them beyond the limiter's own counter.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};
use tollgate_limit::Limiter;

/// Collects the rate-limit gauges at scrape time.
pub(crate) struct LimitCollector {
    limiter: Arc<Limiter>,
    refusals: IntGaugeVec,
}

impl LimitCollector {
    pub(crate) fn new(limiter: Arc<Limiter>) -> prometheus::Result<Self> {
        let refusals = IntGaugeVec::new(
            Opts::new(
                "tollgate_rate_limit_refusals",
                "Calls a rate-limit rule refused with 429 since start, by rule id.",
            ),
            &["rule"],
        )?;
        Ok(LimitCollector { limiter, refusals })
    }
}

impl Collector for LimitCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.refusals.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        for (rule, n) in self.limiter.refusals() {
            self.refusals
                .with_label_values(&[rule])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.refusals.collect()
    }
}
