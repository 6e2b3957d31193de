//! Request metrics, registered on an injected Prometheus registry: HTTP
//! requests here (counted by the `track` layer), scrape-time status gauges
//! in `status`; per-call metrics are an observer of the call summary in
//! `tollgate-meter`. `docs/metrics.md` lists them all; a test keeps it in
//! sync.
//!
//! Label values come from configuration (route names) or from bounded enums
//! (MCP method families, HTTP status codes), so cardinality is bounded: an
//! unknown route is counted as `other`.

mod catalog;
#[cfg(test)]
mod doc_sync;
mod limits;
mod shipping;
mod status;
mod totals;
mod upstreams;
mod vault;
mod virtual_servers;

pub(crate) use catalog::CatalogCollector;
pub(crate) use limits::LimitCollector;
pub(crate) use shipping::ShipCollector;
pub(crate) use status::StatusCollector;
pub(crate) use upstreams::UpstreamCollector;
pub(crate) use vault::VaultCollector;
pub(crate) use virtual_servers::VirtualCollector;

use std::time::Duration;

use http::StatusCode;
use std::sync::Arc;

use dashmap::DashMap;
use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry};
use tollgate_core::McpMethod;
use tollgate_meter::BUCKETS;

use crate::CallLabels;

/// Label for traffic that matched no configured route.
pub(crate) const OTHER: &str = "other";

/// The gateway's request metrics.
#[derive(Clone, Debug)]
pub struct Metrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    in_flight: IntGauge,
    /// The handles of each (route, method, status) seen, so that counting
    /// a request is one map lookup, not two label-string hashes and locks.
    handles: Arc<DashMap<HandleKey, (IntCounter, Histogram)>>,
}

/// Route, method family and HTTP status of a request.
type HandleKey = (Arc<str>, McpMethod, u16);

impl Metrics {
    /// Create the metrics and register them on `registry`.
    ///
    /// # Errors
    ///
    /// When a metric of the same name is already registered.
    pub fn register(registry: &Registry) -> prometheus::Result<Metrics> {
        let requests = IntCounterVec::new(
            Opts::new(
                "tollgate_requests_total",
                "MCP HTTP requests by route, MCP method and HTTP status.",
            ),
            &["route", "method", "status"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "tollgate_request_duration_seconds",
                "Time from request received to the end of the response body, by route and MCP method.",
            )
            .buckets(BUCKETS.to_vec()),
            &["route", "method"],
        )?;
        let in_flight = IntGauge::new(
            "tollgate_requests_in_flight",
            "Requests whose response has not finished.",
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(in_flight.clone()))?;
        Ok(Metrics {
            requests,
            duration,
            in_flight,
            handles: Arc::default(),
        })
    }

    /// Record a finished request; one that matched no route is `other`.
    pub(crate) fn finished(&self, labels: Option<&CallLabels>, status: StatusCode, elapsed: Duration) {
        let Some(labels) = labels else {
            self.requests.with_label_values(&[OTHER, OTHER, status.as_str()]).inc();
            self.duration
                .with_label_values(&[OTHER, OTHER])
                .observe(elapsed.as_secs_f64());
            return;
        };
        let key = (labels.route.clone(), labels.method, status.as_u16());
        let handles = self.handles.entry(key).or_insert_with(|| {
            let (route, method) = (&*labels.route, labels.method.as_str());
            (
                self.requests.with_label_values(&[route, method, status.as_str()]),
                self.duration.with_label_values(&[route, method]),
            )
        });
        handles.0.inc();
        handles.1.observe(elapsed.as_secs_f64());
    }

    /// The in-flight gauge.
    pub fn in_flight(&self) -> &IntGauge {
        &self.in_flight
    }
}
