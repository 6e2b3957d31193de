//! The request-body limit: a declared `Content-Length` above
//! `limits.max_body_bytes` is refused at once (413); any other body is
//! bounded while it is read or streamed upstream, and the phase reading it
//! answers 413 when the bound is crossed.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use futures_util::future::{Either, Ready, ready};
use http::Request;
use http::header::CONTENT_LENGTH;
use http_body_util::Limited;
use tollgate_core::ErrorKind;
use tower::{Layer, Service};

use crate::rescue::reject;

/// Bounds request bodies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimitLayer {
    max: usize,
}

impl BodyLimitLayer {
    /// A limit of `max` bytes.
    pub(crate) fn new(max: usize) -> BodyLimitLayer {
        BodyLimitLayer { max }
    }
}

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimit<S>;

    fn layer(&self, inner: S) -> BodyLimit<S> {
        BodyLimit { inner, max: self.max }
    }
}

/// See [`BodyLimitLayer`].
#[derive(Debug, Clone)]
pub(crate) struct BodyLimit<S> {
    inner: S,
    max: usize,
}

impl<S> Service<Request<Body>> for BodyLimit<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max as u64) {
            return Either::Left(ready(Ok(reject(ErrorKind::BodyTooLarge, "Request body too large"))));
        }
        let max = self.max;
        Either::Right(self.inner.call(req.map(|b| Body::new(Limited::new(b, max)))))
    }
}
