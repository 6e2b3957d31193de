//! Steps 1 to 3 of the request path as middleware: request metrics (outside
//! everything else, so rejections are counted), then admission: the header
//! size limit and the `Origin` allowlist.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::ORIGIN;
use tokio::time::Instant;
use tollgate_core::ErrorKind;

use crate::body::GuardedBody;
use crate::metrics::OTHER;
use crate::rescue::reject;
use crate::{CallLabels, Metrics};

/// Counts a request in flight until dropped (also when a panic unwinds
/// through the handler).
struct InFlight(Metrics);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight().dec();
    }
}

/// Records the request when its response body ends or is dropped.
struct Finish {
    in_flight: InFlight,
    labels: Option<CallLabels>,
    status: http::StatusCode,
    start: Instant,
}

impl Drop for Finish {
    fn drop(&mut self) {
        let (route, method) = match &self.labels {
            Some(l) => (&*l.route, l.method.as_str()),
            None => (OTHER, OTHER),
        };
        (self.in_flight.0).finished(route, method, self.status.as_str(), self.start.elapsed());
    }
}

/// Count and time every request, including rejected ones.
pub(crate) async fn track(State(metrics): State<Metrics>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    metrics.in_flight().inc();
    let in_flight = InFlight(metrics);
    let res = next.run(req).await;
    let finish = Finish {
        labels: res.extensions().get::<CallLabels>().cloned(),
        status: res.status(),
        in_flight,
        start,
    };
    res.map(|body| Body::new(GuardedBody::new(body, finish)))
}

/// What [`admit`] checks before a request reaches a route.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    /// Largest total size of header names and values.
    pub(crate) max_header_bytes: usize,
    /// Exact origins allowed to call.
    pub(crate) allowed_origins: Arc<[String]>,
}

/// Reject requests whose headers add up to more than the limit (431), and
/// browser requests from origins not on the allowlist (403, DNS-rebinding
/// protection). Requests without `Origin` pass the origin check. One
/// middleware for both: each `from_fn` layer costs allocations per request.
pub(crate) async fn admit(State(adm): State<Arc<Admission>>, req: Request, next: Next) -> Response {
    let size: usize = req.headers().iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if size > adm.max_header_bytes {
        return reject(ErrorKind::HeadersTooLarge, "Request header fields too large");
    }
    if let Some(origin) = req.headers().get(ORIGIN) {
        let ok = origin
            .to_str()
            .is_ok_and(|o| adm.allowed_origins.iter().any(|a| a.eq_ignore_ascii_case(o)));
        if !ok {
            return reject(ErrorKind::ForbiddenOrigin, "Forbidden: origin not allowed");
        }
    }
    next.run(req).await
}
