//! The request layer: every request gets an `x-request-id` (kept when the
//! client sent a usable one) that goes upstream and back to the client, and
//! a `tracing` span carrying it, so every log line of the request names it.
//! The phases add the route, era, method and name to the span as they learn
//! them.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, Request};
use pin_project_lite::pin_project;
use tower::{Layer, Service};
use tracing::Instrument as _;
use tracing::instrument::Instrumented;

pub(crate) use crate::facts::REQUEST_ID;

/// Longest client-sent request id kept; longer ones are replaced.
const MAX_ID_LEN: usize = 128;

/// Adds the request id and span.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestLayer;

impl<S> Layer<S> for RequestLayer {
    type Service = Requests<S>;

    fn layer(&self, inner: S) -> Requests<S> {
        Requests { inner }
    }
}

/// See [`RequestLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Requests<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for Requests<S>
where
    S: Service<Request<Body>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<Instrumented<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let id = match req.headers().get(&REQUEST_ID) {
            Some(v) if !v.is_empty() && v.len() <= MAX_ID_LEN && v.to_str().is_ok() => v.clone(),
            _ => {
                let id = new_id();
                req.headers_mut().insert(REQUEST_ID, id.clone());
                id
            }
        };
        let span = tracing::info_span!(
            "request",
            request_id = %id.to_str().unwrap_or_default(),
            route = tracing::field::Empty,
            era = tracing::field::Empty,
            method = tracing::field::Empty,
            name = tracing::field::Empty,
        );
        let future = {
            let _entered = span.enter();
            self.inner.call(req)
        };
        ResponseFuture {
            inner: future.instrument(span),
            id: Some(id),
        }
    }
}

/// A fresh request id: a random UUID.
fn new_id() -> HeaderValue {
    let mut buf = uuid::Uuid::encode_buffer();
    let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("-"))
}

pin_project! {
    /// Puts the request id on the response.
    pub(crate) struct ResponseFuture<F> {
        #[pin]
        inner: F,
        id: Option<HeaderValue>,
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut res = ready!(this.inner.poll(cx));
        if let (Ok(res), Some(id)) = (&mut res, this.id.take()) {
            res.headers_mut().insert(REQUEST_ID, id);
        }
        Poll::Ready(res)
    }
}
