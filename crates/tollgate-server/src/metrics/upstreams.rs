//! Upstream resilience metrics, read when Prometheus scrapes: each route's
//! circuit breaker position, the calls awaiting it under its concurrency
//! cap, and how often the cap refused a call or the breaker opened.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};

use crate::live::Live;
use crate::upstream::Position;

/// Collects the upstream gauges at scrape time.
pub(crate) struct UpstreamCollector {
    live: Arc<Live>,
    breaker: IntGaugeVec,
    in_flight: IntGaugeVec,
    shed: IntGaugeVec,
    opened: IntGaugeVec,
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
            shed: gauge(
                "tollgate_upstream_shed",
                "Calls refused with 503 since start because the upstream's concurrency cap was full.",
            )?,
            opened: gauge(
                "tollgate_upstream_breaker_opened",
                "Times the upstream's circuit breaker opened since start.",
            )?,
        })
    }
}

impl Collector for UpstreamCollector {
    fn desc(&self) -> Vec<&Desc> {
        [&self.breaker, &self.in_flight, &self.shed, &self.opened]
            .into_iter()
            .flat_map(Collector::desc)
            .collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let gauges = [&self.breaker, &self.in_flight, &self.shed, &self.opened];
        // Only the routes in force: a route a reload removed leaves.
        gauges.iter().for_each(|g| g.reset());
        for r in &self.live.current().routes() {
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
            let (shed, opened) = guard.counts();
            self.in_flight.with_label_values(&labels).set(n(in_flight as u64));
            self.shed.with_label_values(&labels).set(n(shed));
            self.opened.with_label_values(&labels).set(n(opened));
        }
        gauges.into_iter().flat_map(Collector::collect).collect()
    }
}
