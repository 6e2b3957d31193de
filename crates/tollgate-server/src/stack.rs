//! The public service and its layers, defined once, in reading order
//! (outermost first).

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use futures_util::FutureExt as _;
use http::Request;
use tollgate_config::Limits;
use tollgate_core::ErrorKind;
use tower::{Service, ServiceBuilder};

use crate::layer::body_limit::{BodyLimit, BodyLimitLayer};
use crate::layer::request::{RequestLayer, Requests};
use crate::layer::shed::{Shed, ShedLayer};
use crate::layer::track::{Track, TrackLayer};
use crate::live::Live;
use crate::metrics::Metrics;
use crate::rescue::reject;

/// The public listener's service.
pub(crate) type Public = Requests<Track<Shed<BodyLimit<FrontService>>>>;

/// Build the public service around the configuration in force, `live`.
pub(crate) fn build(live: Arc<Live>, metrics: Metrics, limits: &Limits) -> Public {
    ServiceBuilder::new()
        // Every request gets an x-request-id, echoed to the client and sent
        // upstream, and a span naming it, so that every log line of the
        // request (refusals included) carries it.
        .layer(RequestLayer)
        // Metrics sit outside the refusals so that rejected requests count.
        .layer(TrackLayer::new(metrics))
        // Past the concurrency limit, requests are shed at once with 503
        // instead of queueing behind slow upstreams.
        .layer(ShedLayer::new(limits.max_concurrent_requests))
        // A body declared too large is refused before anything reads it;
        // any other body is bounded while it is read or streamed.
        .layer(BodyLimitLayer::new(limits.max_body_bytes))
        // Admission (header size, Origin), routing, then the phases.
        .service(FrontService(live))
}

/// The front of the configuration in force as a service: each request
/// keeps the front it started on until it ends, across reloads. A panic in
/// the request path becomes a JSON-RPC 500 instead of a dropped connection.
#[derive(Debug, Clone)]
pub(crate) struct FrontService(pub(crate) Arc<Live>);

impl Service<Request<Body>> for FrontService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let front = self.0.front();
        Box::pin(async move {
            let answer = AssertUnwindSafe(async move { front.call(req).await })
                .catch_unwind()
                .await;
            Ok(answer.unwrap_or_else(|_| {
                tracing::error!("request handler panicked");
                reject(ErrorKind::Internal, "Internal error")
            }))
        })
    }
}
