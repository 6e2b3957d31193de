//! Request metrics, outside every refusal so that rejected requests are
//! counted too: requests in flight, and per route, method family and status
//! the request count and duration, recorded when the response body ends or
//! is dropped (a client that disconnects mid-stream still counts).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::response::Response;
use http::Request;
use pin_project_lite::pin_project;
use tokio::time::Instant;
use tower::{Layer, Service};

use crate::CallLabels;
use crate::body::GuardedBody;
use crate::metrics::Metrics;

/// Counts and times every request.
#[derive(Debug, Clone)]
pub(crate) struct TrackLayer {
    metrics: Metrics,
}

impl TrackLayer {
    pub(crate) fn new(metrics: Metrics) -> TrackLayer {
        TrackLayer { metrics }
    }
}

impl<S> Layer<S> for TrackLayer {
    type Service = Track<S>;

    fn layer(&self, inner: S) -> Track<S> {
        Track {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// See [`TrackLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Track<S> {
    inner: S,
    metrics: Metrics,
}

impl<S> Service<Request<Body>> for Track<S>
where
    S: Service<Request<Body>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Tracked<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        Tracked {
            inner: self.inner.call(req),
            in_flight: Some(InFlight::new(self.metrics.clone())),
            start: Instant::now(),
        }
    }
}

/// Counts a request in flight until dropped (also when a panic unwinds).
struct InFlight(Metrics);

impl InFlight {
    fn new(metrics: Metrics) -> InFlight {
        metrics.in_flight().inc();
        InFlight(metrics)
    }
}

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
        let metrics = &self.in_flight.0;
        metrics.finished(self.labels.as_ref(), self.status, self.start.elapsed());
    }
}

pin_project! {
    /// The response future of a tracked request.
    pub(crate) struct Tracked<F> {
        #[pin]
        inner: F,
        in_flight: Option<InFlight>,
        start: Instant,
    }
}

impl<F, E> Future for Tracked<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match (ready!(this.inner.poll(cx)), this.in_flight.take()) {
            (Ok(res), Some(in_flight)) => {
                let finish = Finish {
                    labels: res.extensions().get::<CallLabels>().cloned(),
                    status: res.status(),
                    in_flight,
                    start: *this.start,
                };
                Poll::Ready(Ok(res.map(|body| Body::new(GuardedBody::new(body, finish)))))
            }
            (res, _) => Poll::Ready(res),
        }
    }
}
