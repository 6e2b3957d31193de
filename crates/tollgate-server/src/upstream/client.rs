//! The connections to one upstream (request path step 11, "forward").
//!
//! Built on hyper's connection-level client, not a pooled legacy client: a
//! request goes to an idle connection of the calling worker thread, or a
//! new one, with no pool task or cross-thread hand-off in between. Each
//! worker thread has its own small stack of idle HTTP/1.1 connections (or
//! one shared HTTP/2 connection) per upstream, so a connection's I/O stays
//! on the thread that uses it. An HTTP/1.1 connection goes back to its
//! stack when the response body has been read to the end; a response cut
//! short (the client went away) closes the connection, which the upstream
//! sees as the cancellation. A request refused by a connection that turned
//! out closed before anything was written is retried once on a new
//! connection: nothing reached the upstream, so this is safe even for
//! `tools/call`.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response, Uri, Version};
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::{Connection as _, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use pin_project_lite::pin_project;
use tokio::time::Instant;
use tollgate_config::UpstreamHttp;
use tower::Service as _;

use crate::runtime::worker_index;

/// Most idle HTTP/1.1 connections kept per worker thread and upstream.
const MAX_IDLE: usize = 64;

/// Why a request could not be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// No connection could be made (refused, DNS, TLS, connect timeout).
    #[error("connect: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The connection failed while the request was sent or the response
    /// head awaited.
    #[error("request: {0}")]
    Request(#[source] hyper::Error),
}

impl SendError {
    /// Whether the connection attempt timed out.
    pub(crate) fn is_timeout(&self) -> bool {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = cur {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            {
                return true;
            }
            cur = e.source();
        }
        false
    }
}

/// An idle HTTP/1.1 connection.
struct Idle {
    send: http1::SendRequest<Body>,
    since: Instant,
}

/// The connections of one worker thread to one upstream.
#[derive(Default)]
struct Slot {
    idle: Vec<Idle>,
    h2: Option<http2::SendRequest<Body>>,
}

/// The idle connections of every worker thread, shared with the response
/// bodies that give their connection back.
struct Slots {
    slots: Box<[Mutex<Slot>]>,
}

impl Slots {
    /// The slot of the calling thread (workers have one each; every other
    /// thread shares the last).
    fn mine(&self) -> &Mutex<Slot> {
        let i = worker_index().min(self.slots.len() - 1);
        &self.slots[i]
    }

    /// Put an HTTP/1.1 connection back after its response ended.
    fn checkin(&self, send: http1::SendRequest<Body>) {
        if send.is_closed() {
            return;
        }
        if let Ok(mut slot) = self.mine().lock()
            && slot.idle.len() < MAX_IDLE
        {
            slot.idle.push(Idle {
                send,
                since: Instant::now(),
            });
        }
    }
}

/// A connection taken for one request; `H1`'s flag says it was reused.
enum Conn {
    H1(http1::SendRequest<Body>, bool),
    H2(http2::SendRequest<Body>),
}

/// What a failed send gives back: the error, and the request when it was
/// not written.
type Failed = (hyper::Error, Option<Request<Body>>);

/// The client of one upstream.
pub(crate) struct Client {
    connector: HttpsConnector<HttpConnector>,
    http: UpstreamHttp,
    idle_timeout: Duration,
    slots: Arc<Slots>,
    /// New connection attempts after a connect failure.
    connect_retries: u32,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client speaking `http` through `connector`, with one slot per
    /// worker thread (plus one for every other thread).
    pub(crate) fn new(
        connector: HttpsConnector<HttpConnector>,
        http: UpstreamHttp,
        workers: usize,
        connect_retries: u32,
    ) -> Client {
        let slots = (0..=workers).map(|_| Mutex::new(Slot::default())).collect();
        Client {
            connector,
            http,
            idle_timeout: Duration::from_secs(90),
            slots: Arc::new(Slots { slots }),
            connect_retries,
        }
    }

    /// Send `req` (origin-form URI, `Host` set) and return the response
    /// with its body wrapped so that the connection is reused once the
    /// body has been read to the end. `origin` is the upstream's
    /// `scheme://authority/` (where to connect) and `absolute` the full
    /// request URI (HTTP/2 requests carry it).
    ///
    /// # Errors
    ///
    /// [`SendError`] when no connection could be made or the connection
    /// failed before the response head arrived.
    pub(crate) async fn send(
        &self,
        origin: &Uri,
        absolute: &Uri,
        mut req: Request<Body>,
    ) -> Result<Response<Pooled>, SendError> {
        let mut conn = match self.checkout() {
            Some(conn) => conn,
            // Boxed: a new connection is the rare path, and its future
            // (TCP, TLS, handshake) is large.
            None => Box::pin(self.connect_retrying(origin)).await?,
        };
        loop {
            let reused = matches!(conn, Conn::H1(_, true));
            if matches!(conn, Conn::H2(_)) {
                *req.uri_mut() = absolute.clone();
                *req.version_mut() = Version::HTTP_2;
            }
            match self.try_send(conn, req).await {
                Ok(res) => return Ok(res),
                Err((e, Some(back))) if reused => {
                    tracing::debug!(error = %e, "idle upstream connection was closed; retrying on a new one");
                    req = back;
                    conn = Box::pin(self.connect(origin)).await?;
                }
                Err((e, _)) => return Err(SendError::Request(e)),
            }
        }
    }

    async fn try_send(&self, conn: Conn, req: Request<Body>) -> Result<Response<Pooled>, Failed> {
        match conn {
            Conn::H1(mut send, _) => match send.try_send_request(req).await {
                Ok(res) => Ok(res.map(|body| Pooled::new(body, Some((send, self.slots.clone()))))),
                Err(mut e) => {
                    let back = e.take_message();
                    Err((e.into_error(), back))
                }
            },
            Conn::H2(mut send) => match send.try_send_request(req).await {
                Ok(res) => Ok(res.map(|body| Pooled::new(body, None))),
                Err(mut e) => {
                    let back = e.take_message();
                    Err((e.into_error(), back))
                }
            },
        }
    }

    /// An idle connection of this thread, if one is still open.
    fn checkout(&self) -> Option<Conn> {
        let mut slot = self.slots.mine().lock().ok()?;
        if let Some(h2) = &slot.h2 {
            if h2.is_ready() {
                return Some(Conn::H2(h2.clone()));
            }
            slot.h2 = None;
        }
        let now = Instant::now();
        while let Some(idle) = slot.idle.pop() {
            if idle.send.is_ready() && now.duration_since(idle.since) < self.idle_timeout {
                return Some(Conn::H1(idle.send, true));
            }
        }
        None
    }

    /// A new connection, HTTP/2 when configured or negotiated by ALPN.
    /// Connect, trying again `connect_retries` times (50 ms, then 100 ms…
    /// apart) when a connection could not be made: nothing of the call has
    /// reached the upstream then, so trying again cannot repeat it.
    async fn connect_retrying(&self, origin: &Uri) -> Result<Conn, SendError> {
        let mut pause = Duration::from_millis(50);
        let mut left = self.connect_retries;
        loop {
            match self.connect(origin).await {
                Err(e @ SendError::Connect(_)) if left > 0 && !e.is_timeout() => {
                    tracing::debug!(error = %e, "upstream connection failed; trying again");
                    left -= 1;
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                other => return other,
            }
        }
    }

    async fn connect(&self, origin: &Uri) -> Result<Conn, SendError> {
        let stream = self
            .connector
            .clone()
            .call(origin.clone())
            .await
            .map_err(SendError::Connect)?;
        if self.http == UpstreamHttp::Http2 || stream.connected().is_negotiated_h2() {
            let (send, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(stream)
                .await
                .map_err(SendError::Request)?;
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "upstream h2 connection ended");
                }
            });
            if let Ok(mut slot) = self.slots.mine().lock() {
                slot.h2 = Some(send.clone());
            }
            return Ok(Conn::H2(send));
        }
        let (send, conn) = http1::Builder::new()
            .handshake(stream)
            .await
            .map_err(SendError::Request)?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "upstream connection ended");
            }
        });
        Ok(Conn::H1(send, false))
    }
}

pin_project! {
    /// An upstream response body; at its end the HTTP/1.1 connection it
    /// came on is returned for the next request. Dropped before its end,
    /// the connection is closed (hyper does not reuse it).
    pub(crate) struct Pooled {
        #[pin]
        inner: Incoming,
        ret: Option<(http1::SendRequest<Body>, Arc<Slots>)>,
    }
}

impl Pooled {
    fn new(inner: Incoming, ret: Option<(http1::SendRequest<Body>, Arc<Slots>)>) -> Pooled {
        let mut pooled = Pooled { inner, ret };
        if pooled.inner.is_end_stream() {
            pooled.give_back();
        }
        pooled
    }

    fn give_back(&mut self) {
        if let Some((send, slots)) = self.ret.take() {
            slots.checkin(send);
        }
    }
}

impl http_body::Body for Pooled {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        // The server stops polling once `is_end_stream` says so: the end is
        // either `None` or a last frame after which the body is at its end.
        let ended = match &frame {
            None => true,
            Some(Ok(_)) => this.inner.is_end_stream(),
            Some(Err(_)) => {
                this.ret.take();
                false
            }
        };
        if ended && let Some((send, slots)) = this.ret.take() {
            slots.checkin(send);
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
