//! One upstream MCP server: where it is, how long to wait for it, and its
//! connections ([`client`]). Built once from configuration at start.

mod client;
mod guard;

pub(crate) use client::{Pooled, SendError};
pub(crate) use guard::{Guard, GuardRejection, Position};

use std::time::Duration;

use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use tollgate_config::{Server, Timeouts, UpstreamHttp};

use client::Client;

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
    /// A file of `[[servers]] tls` cannot be used.
    #[error("server {name}: tls: {reason}")]
    TlsFiles {
        /// The server name.
        name: String,
        /// What is wrong, with the file.
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

/// One configured upstream.
#[derive(Debug)]
pub(crate) struct Upstream {
    /// `scheme://authority` for connecting.
    pub(crate) origin: Uri,
    /// Authority of the upstream URL, also sent as `Host`.
    pub(crate) authority: Authority,
    /// The request target sent upstream (origin form).
    pub(crate) path: Uri,
    /// The whole upstream URL (HTTP/2 requests carry it).
    pub(crate) absolute: Uri,
    /// The upstream URL as pages, logs and reports show it: without
    /// credentials, its query (which may hold an API key) redacted.
    pub(crate) shown: String,
    /// The `Host` header value sent upstream.
    pub(crate) host: HeaderValue,
    /// Timeouts in force.
    pub(crate) timeouts: Timeouts,
    /// The connections.
    pub(crate) client: Client,
    /// The concurrency cap and circuit breaker.
    pub(crate) guard: Guard,
}

impl Upstream {
    /// The upstream of `server`, with one connection slot per worker.
    ///
    /// # Errors
    ///
    /// [`UpstreamError`] when the URL or TLS setup is unusable.
    pub(crate) fn from_config(
        server: &Server,
        defaults: &Timeouts,
        workers: usize,
        base: &std::path::Path,
    ) -> Result<Upstream, UpstreamError> {
        let name = server.name.as_str();
        let url_err = |reason: String| UpstreamError::Url {
            name: name.to_owned(),
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
        let origin = origin(scheme.clone(), authority.clone()).map_err(|e| url_err(e.to_string()))?;
        let absolute = Uri::builder()
            .scheme(scheme)
            .authority(authority.clone())
            .path_and_query(path.clone())
            .build()
            .map_err(|e| url_err(e.to_string()))?;
        let timeouts = server.timeouts(defaults);
        let tls = server
            .tls
            .as_ref()
            .map(|t| crate::tls::upstream_config(t, base))
            .transpose()
            .map_err(|e| UpstreamError::TlsFiles {
                name: name.to_owned(),
                reason: e.to_string(),
            })?;
        let connector = connector(server.http, timeouts.connect, tls).map_err(|source| UpstreamError::Tls {
            name: name.to_owned(),
            source,
        })?;
        Ok(Upstream {
            origin,
            authority,
            path: Uri::from(path),
            absolute,
            shown: tollgate_config::redact_url(&server.url),
            host,
            timeouts,
            client: Client::new(connector, server.http, workers, server.resilience.connect_retries),
            guard: Guard::new(&server.resilience),
        })
    }

    /// The first-byte deadline.
    pub(crate) fn first_byte(&self) -> Duration {
        self.timeouts.first_byte
    }
}

fn origin(scheme: Scheme, authority: Authority) -> Result<Uri, http::Error> {
    Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query("/")
        .build()
}

fn connector(
    http: UpstreamHttp,
    connect: Duration,
    tls: Option<rustls::ClientConfig>,
) -> Result<hyper_rustls::HttpsConnector<HttpConnector>, rustls::Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(connect));
    tcp.set_keepalive(Some(Duration::from_secs(60)));
    let builder = match tls {
        Some(config) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config),
        None => hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::aws_lc_rs::default_provider())?,
    }
    .https_or_http();
    Ok(match http {
        UpstreamHttp::Http1 => builder.enable_http1().wrap_connector(tcp),
        UpstreamHttp::Http2 => builder.enable_http2().wrap_connector(tcp),
        UpstreamHttp::Auto => builder.enable_all_versions().wrap_connector(tcp),
    })
}
