//! Load shedding: past `limits.max_concurrent_requests` calls in progress,
//! a new request is answered at once with 503 and `Retry-After` instead of
//! queueing behind slow upstreams. A call counts until its response head is
//! ready.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use futures_util::future::{Either, Ready, ready};
use http::Request;
use pin_project_lite::pin_project;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tollgate_core::ErrorKind;
use tower::{Layer, Service};

use crate::rescue::reject;

/// Sheds requests above a concurrency limit.
#[derive(Debug, Clone)]
pub(crate) struct ShedLayer {
    permits: Arc<Semaphore>,
}

impl ShedLayer {
    /// At most `max` calls at once (across every worker).
    pub(crate) fn new(max: usize) -> ShedLayer {
        ShedLayer {
            permits: Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Shed<S> {
        Shed {
            inner,
            permits: self.permits.clone(),
        }
    }
}

/// See [`ShedLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Shed<S> {
    inner: S,
    permits: Arc<Semaphore>,
}

impl<S> Service<Request<Body>> for Shed<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, Permitted<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => Either::Right(Permitted {
                inner: self.inner.call(req),
                _permit: permit,
            }),
            Err(_) => Either::Left(ready(Ok(reject(ErrorKind::Overloaded, "Server overloaded")))),
        }
    }
}

pin_project! {
    /// A call holding its permit until its response head is ready.
    pub(crate) struct Permitted<F> {
        #[pin]
        inner: F,
        _permit: OwnedSemaphorePermit,
    }
}

impl<F: Future> Future for Permitted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().inner.poll(cx)
    }
}
