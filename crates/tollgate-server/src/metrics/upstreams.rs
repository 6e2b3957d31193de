//! Upstream resilience metrics, read when Prometheus scrapes: each route's
//! circuit breaker position, the calls awaiting it under its concurrency
//! cap, and how often the cap refused a call or the breaker opened.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};

use super::totals::Totals;
use crate::live::Live;
use crate::upstream::Position;

/// Collects the upstream gauges and totals at scrape time.
pub(crate) struct UpstreamCollector {
    live: Arc<Live>,
    breaker: IntGaugeVec,
    in_flight: IntGaugeVec,
    shed: Totals,
    opened: Totals,
}

fn gauge(name: &str, help: &str) -> prometheus::Result<IntGaugeVec> {
    IntGaugeVec::new(Opts::new(name, help), &["route"])
}

impl UpstreamCollector {
    pub(crate) fn new(live: Arc<Live>) -> prometheus::Result<Self> {
        Ok(UpstreamCollector {
            live,
            breaker: gauge(
                "tollgate_upstream_breaker_state",
                "The upstream's circuit breaker: 0 closed, 1 half open (probing), 2 open (calls refused with 503).",
            )?,
            in_flight: gauge(
                "tollgate_upstream_in_flight",
                "Calls sent to the upstream awaiting its answer's head, under resilience.max_concurrent.",
            )?,
            shed: Totals::new(
                "tollgate_upstream_shed_total",
                "Calls refused with 503 because the upstream's concurrency cap was full.",
                &["route"],
            )?,
            opened: Totals::new(
                "tollgate_upstream_breaker_opened_total",
                "Times the upstream's circuit breaker opened.",
                &["route"],
            )?,
        })
    }
}

impl UpstreamCollector {
    fn collectors(&self) -> [&dyn Collector; 4] {
        [&self.breaker, &self.in_flight, &self.shed, &self.opened]
    }
}

impl Collector for UpstreamCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.collectors().into_iter().flat_map(Collector::desc).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        // Only the routes in force: a route a reload removed leaves.
        self.breaker.reset();
        self.in_flight.reset();
        let routes = self.live.current().routes();
        let mut shed = Vec::with_capacity(routes.len());
        let mut opened = Vec::with_capacity(routes.len());
        for r in &routes {
            let guard = &r.upstream.guard;
            let labels = [&*r.name];
            if let Some(p) = guard.position() {
                let state = match p {
                    Position::Closed => 0,
                    Position::HalfOpen => 1,
                    Position::Open => 2,
                };
                self.breaker.with_label_values(&labels).set(state);
            }
            let (in_flight, _) = guard.in_flight();
            self.in_flight.with_label_values(&labels).set(n(in_flight as u64));
            let (s, o) = guard.counts();
            shed.push((vec![&*r.name], s));
            opened.push((vec![&*r.name], o));
        }
        self.shed.update(shed);
        self.opened.update(opened);
        self.collectors().into_iter().flat_map(Collector::collect).collect()
    }
}
