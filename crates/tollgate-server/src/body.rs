//! Body wrappers: an idle deadline for upstream bodies, a guard that records
//! a request's metrics when its response body ends or is dropped (a client
//! that disconnects mid-stream still counts), and a byte counter for request
//! bodies forwarded unread (chunked, on `upstream`-trust routes).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

/// The error an idle upstream body ends with.
#[derive(Debug, thiserror::Error)]
#[error("upstream body idle for longer than {0:?}")]
pub(crate) struct IdleTimeout(pub Duration);

pin_project! {
    /// Fails the body when no frame arrives within `idle`. Each frame is
    /// passed on as soon as it arrives: nothing is buffered.
    pub(crate) struct IdleBody<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
        idle: Duration,
    }
}

impl<B> IdleBody<B> {
    /// Wrap `inner` with an idle deadline.
    pub(crate) fn new(inner: B, idle: Duration) -> IdleBody<B> {
        IdleBody {
            inner,
            sleep: tokio::time::sleep(idle),
            idle,
        }
    }
}

impl<B> Body for IdleBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        match this.inner.poll_frame(cx) {
            Poll::Ready(frame) => {
                let idle = *this.idle;
                this.sleep.as_mut().reset(Instant::now() + idle);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                ready!(this.sleep.poll(cx));
                Poll::Ready(Some(Err(Box::new(IdleTimeout(*this.idle)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project! {
    /// Holds `guard` until the body ends or is dropped.
    pub(crate) struct GuardedBody<B, G> {
        #[pin]
        inner: B,
        guard: Option<G>,
    }
}

impl<B, G> GuardedBody<B, G> {
    /// Attach `guard` to `inner`.
    pub(crate) fn new(inner: B, guard: G) -> GuardedBody<B, G> {
        GuardedBody {
            inner,
            guard: Some(guard),
        }
    }
}

impl<B: Body, G> Body for GuardedBody<B, G> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if !matches!(frame, Some(Ok(_))) {
            // End of stream or error: release the guard now, not at drop.
            this.guard.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project! {
    /// Counts the data bytes of `inner` into a shared counter as they pass:
    /// the audit reads it when the call's records are written.
    pub(crate) struct CountedBody<B> {
        #[pin]
        inner: B,
        count: Arc<AtomicU64>,
    }
}

impl<B> CountedBody<B> {
    /// Count the bytes of `inner` into `count`.
    pub(crate) fn new(inner: B, count: Arc<AtomicU64>) -> CountedBody<B> {
        CountedBody { inner, count }
    }
}

impl<B: Body<Data = Bytes>> Body for CountedBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()).and_then(Frame::data_ref) {
            this.count.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
