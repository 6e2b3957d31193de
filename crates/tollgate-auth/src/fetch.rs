//! Outbound HTTP for the identity layer: issuer discovery, key sets,
//! introspection and token endpoints. Never on the request path's common
//! case (cache hits); used on key refresh, cache misses of opaque tokens and
//! upstream credential refresh.
//!
//! One client with rustls (aws-lc-rs provider, Web PKI roots), bounded
//! timeouts, no redirects (a redirect could lead from `https://` to
//! `http://`), and bounded response bodies.

use std::sync::Arc;
use std::time::Duration;

use url::{Host, Url};

use crate::SetupError;

/// Largest response body read from an identity endpoint.
pub(crate) const MAX_BODY: usize = 1024 * 1024;

/// Build an HTTP client for identity endpoints (also the console's, for
/// its token endpoint).
///
/// # Errors
///
/// TLS configuration failure.
pub fn client() -> Result<reqwest::Client, SetupError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("tollgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| SetupError(format!("HTTP client setup: {e}")))
}

/// Whether the URL's host is `localhost` or a loopback address.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Refuse URLs the configuration would refuse: `https://`, or `http://`
/// to a loopback host when allowed. Applied to discovered URLs too.
///
/// # Errors
///
/// The URL is refused, with why.
pub fn check_url(url: &Url, allow_http: bool) -> Result<(), String> {
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if allow_http && is_loopback(url) => Ok(()),
        _ => Err(format!("refusing to fetch {url}: https:// required")),
    }
}

/// Read a response body of at most [`MAX_BODY`] bytes.
pub(crate) async fn read_body(mut res: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| format!("reading the response: {e}"))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!("response larger than {MAX_BODY} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// GET a JSON document of at most 1 MiB from a URL [`check_url`] accepts.
///
/// # Errors
///
/// The URL is refused, the request failed, or the answer is not JSON.
pub async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
    allow_http: bool,
) -> Result<T, String> {
    check_url(url, allow_http)?;
    let res = http
        .get(url.clone())
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = res.status();
    if !status.is_success() {
        return Err(format!("GET {url}: HTTP {status}"));
    }
    let body = read_body(res).await?;
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: invalid JSON: {e}"))
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
