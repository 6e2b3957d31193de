//! HTTP side: mounts rmcp's Streamable HTTP service at `/mcp`, adds a one-line
//! access log, and runs the listener until shutdown.
//!
//! Both protocol eras are served by one [`StreamableHttpService`] with
//! `legacy_session_mode` on (rmcp's default): rmcp classifies every POST. An
//! `initialize`, or a request without 2026-07-28 `_meta`, gets the legacy
//! session path (`Mcp-Session-Id`, GET SSE stream, DELETE). A request whose
//! `params._meta` names `2026-07-28` with client capabilities, and
//! `server/discover`, are served statelessly, with `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` checked against the body.

use std::{future::Future, io, sync::Arc, time::Duration, time::Instant};

use axum::{
    Router,
    extract::Request,
    http::{HeaderMap, StatusCode},
    middleware::{self, Next},
    response::Response,
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::net::TcpListener;

use crate::server::DemoServer;

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// How long in-flight requests may take to finish after shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Settings for [`serve_with`]; [`Default`] matches `tollgate-demo` without flags.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DemoConfig {
    /// `Host` values accepted besides rmcp's defaults (`localhost`,
    /// `127.0.0.1`, `::1`, any port). A value may carry a port.
    pub extra_allowed_hosts: Vec<String>,
    /// Accept any `Host` header, turning off DNS-rebinding protection.
    pub allow_any_host: bool,
    /// Browser origins accepted in an `Origin` header, e.g.
    /// `http://localhost:*`. Empty (the default) turns Origin checks off;
    /// otherwise a request with any other `Origin` gets 403.
    pub allowed_origins: Vec<String>,
    /// Answer simple 2026-07-28 requests with `application/json` rather than
    /// SSE. A request whose handler sends notifications first (a `countdown`
    /// with a progress token) still gets an SSE stream.
    pub json_response: bool,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            extra_allowed_hosts: Vec::new(),
            allow_any_host: false,
            allowed_origins: Vec::new(),
            json_response: true,
        }
    }
}

/// Serves the demo MCP server on `listener` with default settings until
/// `shutdown` completes.
///
/// # Errors
///
/// Returns the I/O error that stopped the accept loop.
pub async fn serve(listener: TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> io::Result<()> {
    serve_with(listener, DemoConfig::default(), shutdown).await
}

/// Serves the demo MCP server on `listener` until `shutdown` completes.
///
/// On shutdown all MCP sessions and SSE streams are closed, then in-flight
/// requests get a short grace period before the function returns.
///
/// # Errors
///
/// Returns the I/O error that stopped the accept loop.
pub async fn serve_with(
    listener: TcpListener,
    config: DemoConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let mcp_config = mcp_config(&config);
    let cancel = mcp_config.cancellation_token.clone();
    run(listener, router(mcp_config), move || cancel.cancel(), shutdown).await
}

/// Serves `app` on `listener` until `shutdown` completes, then calls
/// `close_streams` (which must end every MCP session and SSE stream, so the
/// drain can finish) and gives in-flight requests a short grace period.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    close_streams: impl FnOnce() + Send + 'static,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let (draining_tx, draining_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down: closing MCP sessions and streams");
        close_streams();
        let _ = draining_tx.send(());
    });
    let grace = async {
        if draining_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = server.into_future() => result,
        () = grace => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "grace period over; dropping open connections");
            Ok(())
        }
    }
}

pub(crate) fn mcp_config(config: &DemoConfig) -> StreamableHttpServerConfig {
    // legacy_session_mode stays true (the default): legacy clients get
    // sessions, 2026-07-28 requests are stateless regardless.
    let mut base = StreamableHttpServerConfig::default().with_json_response(config.json_response);
    if !config.allowed_origins.is_empty() {
        base = base.with_allowed_origins(config.allowed_origins.iter().cloned());
    }
    if config.allow_any_host {
        return base.disable_allowed_hosts();
    }
    let mut hosts = base.allowed_hosts.clone();
    hosts.extend(config.extra_allowed_hosts.iter().cloned());
    base.with_allowed_hosts(hosts)
}

/// Builds the axum router: the MCP service at [`MCP_PATH`], a hint elsewhere.
fn router(config: StreamableHttpServerConfig) -> Router {
    let tasks = rmcp::task_manager::TaskManager::new();
    let service: StreamableHttpService<DemoServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(DemoServer::new(tasks.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(MCP_PATH, service)
        .fallback(not_found)
        .layer(middleware::from_fn(access_log))
}

async fn not_found() -> (StatusCode, &'static str) {
    (StatusCode::NOT_FOUND, "tollgate-demo: the MCP endpoint is /mcp\n")
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("-")
}

/// Logs one line per HTTP exchange once the response head is ready.
pub(crate) async fn access_log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let headers = request.headers();
    let mcp_method = header(headers, "mcp-method").to_owned();
    let mcp_name = header(headers, "mcp-name").to_owned();
    let version = header(headers, "mcp-protocol-version").to_owned();
    let session = headers.contains_key("mcp-session-id");
    let response = next.run(request).await;
    tracing::info!(
        http.method = %method,
        path,
        status = response.status().as_u16(),
        mcp.method = mcp_method,
        mcp.name = mcp_name,
        mcp.protocol_version = version,
        session,
        elapsed_ms = started.elapsed().as_millis(),
        "request"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::{DemoConfig, mcp_config};

    #[test]
    fn defaults_keep_rmcp_loopback_hosts_and_json_responses() {
        let config = mcp_config(&DemoConfig::default());
        assert_eq!(config.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
        assert!(config.allowed_origins.is_empty());
        assert!(config.legacy_session_mode);
        assert!(config.json_response);
    }

    #[test]
    fn extra_hosts_extend_the_defaults() {
        let demo = DemoConfig {
            extra_allowed_hosts: vec!["demo:3001".to_owned()],
            ..DemoConfig::default()
        };
        let config = mcp_config(&demo);
        assert_eq!(config.allowed_hosts, ["localhost", "127.0.0.1", "::1", "demo:3001"]);
    }

    #[test]
    fn allow_any_host_empties_the_list() {
        let demo = DemoConfig {
            allow_any_host: true,
            allowed_origins: vec!["http://localhost:*".to_owned()],
            ..DemoConfig::default()
        };
        let config = mcp_config(&demo);
        assert!(config.allowed_hosts.is_empty());
        assert_eq!(config.allowed_origins, ["http://localhost:*"]);
    }
}
