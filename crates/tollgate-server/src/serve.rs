//! The serve loop: accept connections on a bound listener, serve HTTP/1.1
//! and h2 with hyper, and drain on shutdown within a grace period.
//!
//! A connection's protocol is told from its first bytes (the HTTP/2
//! preface, or anything else for HTTP/1.1) before hyper's connection of
//! that protocol takes it, so that no per-read version detection layer sits
//! on the connection for its whole life.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tower::{Service, ServiceExt as _};

pub use crate::facts::ClientAddr;

/// Connection-level settings.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Largest request head accepted by the HTTP/1 parser and h2 header
    /// list. The exact limit with a JSON-RPC 431 body is enforced by
    /// admission; this is the hard stop below it.
    pub max_header_bytes: usize,
    /// Time a client has to send its request headers.
    pub header_read_timeout: Duration,
    /// How long in-flight requests and streams may run after shutdown starts.
    pub grace: Duration,
}

/// Serve `service` on `listener` until `shutdown` completes, then stop
/// accepting, let in-flight requests and streams finish for up to
/// `opts.grace`, and return.
pub async fn serve<S>(
    listener: TcpListener,
    service: S,
    opts: ServeOptions,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let builders = Arc::new(Builders::new(&opts));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and similar: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        // Each request learns the peer address (policies' `client_ip`).
        let service = service.clone().map_request(move |req: Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(ClientAddr(peer));
            req
        });
        let service = TowerToHyperService::new(service);
        let watcher = graceful.watcher();
        let builders = builders.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let deadline = opts.header_read_timeout;
            let ended = match tls {
                None => {
                    let Ok(Ok(h2)) = tokio::time::timeout(deadline, is_h2(&stream)).await else {
                        return;
                    };
                    connection(&builders, watcher, TokioIo::new(stream), h2, service).await
                }
                Some(acceptor) => {
                    let stream = match tokio::time::timeout(deadline, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => return,
                    };
                    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                    connection(&builders, watcher, TokioIo::new(stream), h2, service).await
                }
            };
            if let Some(e) = ended {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections drained"),
        () = tokio::time::sleep(opts.grace) => tracing::warn!(grace = ?opts.grace, "grace period over; closing remaining connections"),
    }
}

/// Serve one connection with hyper's connection of its protocol, under the
/// graceful-shutdown watcher; the error it ended with, if any.
async fn connection<I, S>(
    builders: &Builders,
    watcher: hyper_util::server::graceful::Watcher,
    io: TokioIo<I>,
    h2: bool,
    service: S,
) -> Option<String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    if h2 {
        let conn = builders.http2.serve_connection(io, service);
        watcher.watch(conn).await.err().map(|e| e.to_string())
    } else {
        let conn = builders.http1.serve_connection(io, service);
        watcher.watch(conn).await.err().map(|e| e.to_string())
    }
}

/// The HTTP/2 connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether the connection opens with the HTTP/2 preface (h2 with prior
/// knowledge); its bytes stay unread for hyper.
async fn is_h2(stream: &TcpStream) -> std::io::Result<bool> {
    let mut buf = [0u8; 24];
    loop {
        let n = stream.peek(&mut buf).await?;
        if n == 0 || buf[..n] != PREFACE[..n] {
            return Ok(false);
        }
        if n == PREFACE.len() {
            return Ok(true);
        }
        // A preface split across segments (rare): wait for the rest.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The connection builders of both protocols.
struct Builders {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

impl Builders {
    fn new(opts: &ServeOptions) -> Builders {
        // Twice the configured limit plus slack: admission answers with a
        // JSON-RPC 431 below this; hyper cuts off anything larger.
        let hard_limit = opts.max_header_bytes.saturating_mul(2).max(16 * 1024) + 8 * 1024;
        let mut http1 = http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(opts.header_read_timeout)
            .max_buf_size(hard_limit)
            .keep_alive(true);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .timer(TokioTimer::new())
            .max_header_list_size(u32::try_from(hard_limit).unwrap_or(u32::MAX));
        Builders { http1, http2 }
    }
}
