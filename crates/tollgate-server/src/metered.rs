//! The response body as the call's observers see it: bytes counted frame
//! by frame as they stream to the client (nothing is held back), the start
//! of the answer kept aside (frames are shared, not copied) for the error
//! codes, the learners and opt-in result capture, and the call finished
//! when the body ends or the client goes away.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::facts::Facts;
use crate::rescue::Rejection;
use crate::route::Route;
use crate::summary::{self, Ledger, Sent};

/// What finishes a call when its response body ends.
pub(crate) struct Completion {
    route: Arc<Route>,
    facts: Option<Box<Facts>>,
    rejection: Option<Rejection>,
    sent: Sent,
    /// How many bytes of the answer to keep aside.
    tee_limit: usize,
    kept: usize,
}

impl Completion {
    /// Finish `facts`'s call once a response of `status` has been sent,
    /// keeping up to `tee_limit` bytes of it aside.
    pub(crate) fn new(
        route: Arc<Route>,
        facts: Box<Facts>,
        rejection: Option<Rejection>,
        status: u16,
        sse: bool,
        tee_limit: usize,
    ) -> Completion {
        Completion {
            route,
            facts: Some(facts),
            rejection,
            sent: Sent {
                status,
                sse,
                complete: true,
                ..Sent::default()
            },
            tee_limit,
            kept: 0,
        }
    }

    fn observe(&mut self, data: &Bytes) {
        self.sent.bytes = self.sent.bytes.saturating_add(data.len() as u64);
        if self.sent.sse && crate::learn::announces_change(data) {
            self.route.catalog.wake();
        }
        let room = self.tee_limit - self.kept;
        if room == 0 {
            self.sent.complete &= data.is_empty();
            return;
        }
        let take = room.min(data.len());
        self.sent.tee.push(data.slice(..take));
        self.kept += take;
        self.sent.complete &= take == data.len();
    }

    /// The answer broke off: the upstream's body failed before its end.
    fn cut(&mut self) {
        self.sent.cut = true;
        self.finish(false);
    }

    fn finish(&mut self, ended: bool) {
        let Some(facts) = self.facts.take() else { return };
        self.sent.aborted = !ended;
        self.sent.complete &= ended;
        let sent = std::mem::take(&mut self.sent);
        crate::learn::from_answer(&self.route, &facts, &sent);
        let payload = summary::payload(&self.route, &facts, &sent);
        summary::finish(&Ledger::of(&self.route), facts, self.rejection.as_ref(), &sent, payload);
    }
}

pin_project! {
    /// Counts the bytes of `inner` and finishes the call at its end.
    pub(crate) struct MeteredBody<B: Body> {
        #[pin]
        inner: B,
        completion: Completion,
    }

    impl<B: Body> PinnedDrop for MeteredBody<B> {
        fn drop(this: Pin<&mut Self>) {
            // Dropped before its end: the client went away. A body that was
            // empty from the start may never be polled at all.
            let this = this.project();
            let ended = this.inner.is_end_stream();
            this.completion.finish(ended);
        }
    }
}

impl<B: Body> MeteredBody<B> {
    pub(crate) fn new(inner: B, completion: Completion) -> MeteredBody<B> {
        MeteredBody { inner, completion }
    }
}

impl<B: Body<Data = Bytes>> Body for MeteredBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                if let Some(data) = f.data_ref() {
                    this.completion.observe(data);
                }
                if this.inner.is_end_stream() {
                    this.completion.finish(true);
                }
            }
            None => this.completion.finish(true),
            Some(Err(_)) => this.completion.cut(),
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
