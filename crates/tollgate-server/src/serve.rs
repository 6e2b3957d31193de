//! The serve loop: accept connections on a bound listener, serve HTTP/1.1
//! and h2 with hyper, and drain on shutdown within a grace period.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::{Service, ServiceExt as _};

/// The peer address of the connection a request came on.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

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
pub async fn serve<S>(listener: TcpListener, service: S, opts: ServeOptions, shutdown: impl Future<Output = ()>)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let builder = builder(&opts);
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
        let conn = builder
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
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

fn builder(opts: &ServeOptions) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    // Twice the configured limit plus slack: admission answers with a
    // JSON-RPC 431 below this; hyper cuts off anything larger.
    let hard_limit = opts.max_header_bytes.saturating_mul(2).max(16 * 1024) + 8 * 1024;
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .max_buf_size(hard_limit)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(hard_limit).unwrap_or(u32::MAX));
    builder
}
