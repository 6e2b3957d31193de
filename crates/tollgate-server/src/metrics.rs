//! Request metrics, registered on an injected Prometheus registry: HTTP
//! requests here (counted by the `track` layer), scrape-time status gauges
//! in `status`; per-call metrics are an observer of the call summary in
//! `tollgate-meter`. `docs/metrics.md` lists them all; a test keeps it in
//! sync.
//!
//! Label values come from configuration (route names) or from bounded enums
//! (MCP method families, HTTP status codes), so cardinality is bounded: an
//! unknown route is counted as `other`.

#[cfg(test)]
mod doc_sync;
mod status;

pub(crate) use status::StatusCollector;

use std::time::Duration;

use http::StatusCode;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};

use crate::CallLabels;

/// Label for traffic that matched no configured route.
pub(crate) const OTHER: &str = "other";

/// The gateway's request metrics.
#[derive(Clone, Debug)]
pub struct Metrics {
    requests: IntCounterVec,
    duration: HistogramVec,
    in_flight: IntGauge,
}

/// Buckets for request durations, in seconds: 100 µs to 60 s.
pub(crate) const BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

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
        })
    }

    /// Record a finished request; one that matched no route is `other`.
    pub(crate) fn finished(&self, labels: Option<&CallLabels>, status: StatusCode, elapsed: Duration) {
        let (route, method) = labels.map_or((OTHER, OTHER), |l| (&*l.route, l.method.as_str()));
        self.requests.with_label_values(&[route, method, status.as_str()]).inc();
        self.duration
            .with_label_values(&[route, method])
            .observe(elapsed.as_secs_f64());
    }

    /// The in-flight gauge.
    pub fn in_flight(&self) -> &IntGauge {
        &self.in_flight
    }
}
