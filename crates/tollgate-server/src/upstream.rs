//! Upstream MCP servers: one pooled HTTP client per upstream.
//!
//! Built once from configuration at start. The client speaks HTTP/1.1 and
//! h2 (ALPN over TLS, or prior knowledge when configured), with the
//! connect timeout applied by the connector; first-byte and idle timeouts
//! are applied per request by the forwarder.

use std::time::Duration;

use axum::body::Body;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderValue, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tollgate_config::{HeaderTrust, Server, Timeouts, UpstreamHttp};

/// The HTTP client type used for every upstream.
pub(crate) type UpstreamClient = Client<HttpsConnector<HttpConnector>, Body>;

/// One configured upstream MCP server.
#[derive(Debug)]
pub struct Upstream {
    /// The route name (`/mcp/{name}`).
    pub name: String,
    /// The route name as a cheaply cloned metrics label.
    pub label: std::sync::Arc<str>,
    /// Scheme of the upstream URL.
    pub scheme: Scheme,
    /// Authority of the upstream URL, also sent as `Host`.
    pub authority: Authority,
    /// Path and query of the upstream URL.
    pub path: PathAndQuery,
    /// The `Host` header value sent upstream.
    pub host: HeaderValue,
    /// How far modern-era headers are trusted.
    pub trust: HeaderTrust,
    /// Whether legacy clients are served.
    pub legacy: bool,
    /// Timeouts in force.
    pub timeouts: Timeouts,
    /// HTTP versions spoken upstream.
    pub http: UpstreamHttp,
    /// The route's OAuth protected resource, when callers must authenticate.
    pub(crate) resource: Option<tollgate_auth::ProtectedResource>,
    /// The pooled client.
    pub(crate) client: UpstreamClient,
    /// What the audit records of this route say about the upstream.
    pub(crate) audit: tollgate_audit::RouteAudit,
}

/// Why an upstream could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The URL cannot be used as an HTTP request target.
    #[error("server {name}: invalid upstream url: {reason}")]
    Url {
        /// The server name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// TLS setup failed.
    #[error("server {name}: TLS setup failed: {source}")]
    Tls {
        /// The server name.
        name: String,
        /// The cause.
        #[source]
        source: rustls::Error,
    },
}

impl Upstream {
    /// Build the upstream and its client from configuration.
    ///
    /// # Errors
    ///
    /// [`UpstreamError`] when the URL or TLS setup is unusable.
    pub fn from_config(server: &Server, defaults: &Timeouts) -> Result<Upstream, UpstreamError> {
        let name = server.name.as_str().to_owned();
        let url_err = |reason: String| UpstreamError::Url {
            name: name.clone(),
            reason,
        };
        let uri: Uri = server
            .url
            .as_str()
            .parse()
            .map_err(|e: http::uri::InvalidUri| url_err(e.to_string()))?;
        let parts = uri.into_parts();
        let scheme = parts.scheme.ok_or_else(|| url_err("no scheme".into()))?;
        let authority = parts.authority.ok_or_else(|| url_err("no host".into()))?;
        let path = parts.path_and_query.unwrap_or_else(|| PathAndQuery::from_static("/"));
        let host = HeaderValue::from_str(authority.as_str()).map_err(|e| url_err(e.to_string()))?;
        let timeouts = server.timeouts(defaults);
        let client = build_client(server.http, timeouts.connect).map_err(|source| UpstreamError::Tls {
            name: name.clone(),
            source,
        })?;
        Ok(Upstream {
            label: name.as_str().into(),
            name,
            scheme,
            authority,
            path,
            host,
            trust: server.header_trust,
            legacy: server.legacy,
            timeouts,
            http: server.http,
            resource: None,
            client,
            audit: tollgate_audit::RouteAudit::from_config(server, &tollgate_config::Audit::default()),
        })
    }

    /// The upstream request URI.
    pub fn uri(&self) -> Uri {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(self.scheme.clone());
        parts.authority = Some(self.authority.clone());
        parts.path_and_query = Some(self.path.clone());
        // All three parts come from a URI that already parsed.
        Uri::from_parts(parts).unwrap_or_default()
    }
}

fn build_client(http: UpstreamHttp, connect: Duration) -> Result<UpstreamClient, rustls::Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(connect));
    tcp.set_keepalive(Some(Duration::from_secs(60)));
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(provider)?
        .https_or_http();
    let connector = match http {
        UpstreamHttp::Http1 => builder.enable_http1().wrap_connector(tcp),
        UpstreamHttp::Http2 => builder.enable_http2().wrap_connector(tcp),
        UpstreamHttp::Auto => builder.enable_all_versions().wrap_connector(tcp),
    };
    let mut client = Client::builder(TokioExecutor::new());
    client
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .http2_only(http == UpstreamHttp::Http2);
    Ok(client.build(connector))
}
