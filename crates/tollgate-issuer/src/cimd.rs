//! Client ID Metadata Documents: an MCP client whose `client_id` is an
//! `https` URL is described by the JSON document served at that URL
//! (draft-ietf-oauth-client-id-metadata-document; MCP authorization,
//! 2025-11-25). This module fetches, validates and caches those documents.
//!
//! Not on the request path: `authorize` and `token` call
//! [`CimdFetcher::fetch`] when [`is_metadata_url`] says a client_id is a
//! URL, instead of looking up a registration; most calls are answered from
//! memory.
//!
//! The URL is chosen by whoever sends the authorization request, so the
//! fetch is a server-side request forgery vector and is guarded
//! (`cimd/guard.rs`): `https` only, an optional host allowlist, and no
//! connection to loopback, private, link-local or other special-use
//! addresses — checked on the addresses the connection actually uses,
//! through the HTTP client's own resolver. Redirects are never followed by
//! the HTTP client; up to [`CimdSettings::max_redirects`] are followed here,
//! each hop checked like the first URL. Responses are bounded in size and
//! time.
//!
//! Caching (`cimd/cache.rs`): a document lives for its `Cache-Control` lifetime
//! clamped to `[min_cache, max_cache]`; `no-store`, `no-cache` or no
//! lifetime at all get `min_cache`. A failure that needed the network is
//! remembered for [`FAILURE_TTL`], so that a bad client_id cannot make
//! Tollgate hammer a host. Concurrent fetches of one URL share one request.

mod cache;
mod document;
mod error;
mod guard;
#[cfg(test)]
mod tests;
mod transport;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::StatusCode;
use http::header::ACCEPT;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use url::Url;

use cache::{Cache, Outcome};
pub use error::CimdError;
use transport::{check_content_type, http_client, is_redirect, next_hop, read_body, transport_error};

/// How long a failed fetch is remembered (and returned without a new
/// request).
pub const FAILURE_TTL: Duration = Duration::from_secs(10);

/// In-flight fetch slots kept before abandoned ones are swept.
const MAX_INFLIGHT: usize = 1024;

/// How documents are fetched and kept.
#[derive(Debug, Clone)]
pub struct CimdSettings {
    /// Allow `http://` URLs and loopback or private addresses (tests,
    /// `make run`). Never in production.
    pub development: bool,
    /// Host patterns a client_id (and every redirect hop) must match:
    /// `example.com` exactly or `*.example.com` for any name below it,
    /// case-insensitive. Empty allows any host that passes the address
    /// checks.
    pub allowed_hosts: Vec<String>,
    /// Bound on a whole fetch, redirects and body included.
    pub timeout: Duration,
    /// Largest document read.
    pub max_bytes: usize,
    /// Redirects followed (each hop re-checked); past it, a fetch fails.
    pub max_redirects: usize,
    /// Shortest time a document is kept, whatever its `Cache-Control`.
    pub min_cache: Duration,
    /// Longest time a document is kept, whatever its `Cache-Control`.
    pub max_cache: Duration,
    /// PEM-encoded CA certificates trusted besides the Web PKI roots.
    pub extra_roots: Vec<Vec<u8>>,
}

impl Default for CimdSettings {
    fn default() -> Self {
        Self {
            development: false,
            allowed_hosts: Vec::new(),
            timeout: Duration::from_secs(5),
            max_bytes: 64 * 1024,
            max_redirects: 3,
            min_cache: Duration::from_secs(60),
            max_cache: Duration::from_secs(24 * 60 * 60),
            extra_roots: Vec::new(),
        }
    }
}

/// A client as its validated metadata document describes it (RFC 7591
/// member names; defaults filled in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientMetadata {
    /// The URL the document was fetched from, equal to its `client_id`.
    pub client_id: String,
    /// Name shown on the consent page (unverified).
    pub client_name: Option<String>,
    /// The client's home page (`https`).
    pub client_uri: Option<String>,
    /// The client's logo (`https`).
    pub logo_uri: Option<String>,
    /// Registered redirect URIs, compared exactly; never empty.
    pub redirect_uris: Vec<String>,
    /// Grant types; `["authorization_code"]` when absent.
    pub grant_types: Vec<String>,
    /// Response types; `["code"]` when absent.
    pub response_types: Vec<String>,
    /// Token endpoint authentication; `none` when absent, never a
    /// `client_secret_*` method.
    pub token_endpoint_auth_method: String,
    /// Scopes the client may ask for, space-separated.
    pub scope: Option<String>,
    /// The client software's identifier.
    pub software_id: Option<String>,
    /// The client software's version.
    pub software_version: Option<String>,
}

/// Whether a client_id is a URL to fetch rather than a registration to look
/// up: it starts with `https://` (or `http://`, so that development setups
/// work and production gets [`CimdError::NotHttps`] rather than "unknown
/// client"). [`CimdFetcher::fetch`] applies the full URL rules.
pub fn is_metadata_url(client_id: &str) -> bool {
    let head = client_id.get(..8).unwrap_or(client_id).to_ascii_lowercase();
    head.starts_with("https://") || head.starts_with("http://")
}

/// Fetches, validates and caches Client ID Metadata Documents. Share it in
/// an `Arc`; its HTTP client and cache are internal.
pub struct CimdFetcher {
    settings: CimdSettings,
    http: reqwest::Client,
    cache: Cache,
    inflight: Mutex<HashMap<String, Arc<OnceCell<Outcome>>>>,
}

impl fmt::Debug for CimdFetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CimdFetcher")
            .field("development", &self.settings.development)
            .field("allowed_hosts", &self.settings.allowed_hosts)
            .field("cached", &self.cache.len())
            .finish_non_exhaustive()
    }
}

impl CimdFetcher {
    /// A fetcher with its own HTTP client (rustls with the aws-lc-rs
    /// provider, Web PKI roots plus `extra_roots`, the guarded resolver, no
    /// proxy, no automatic redirects).
    ///
    /// # Errors
    ///
    /// [`CimdError::Setup`]: inconsistent settings (`min_cache` above
    /// `max_cache`, a zero `max_bytes` or `timeout`), an unreadable extra
    /// root, or TLS setup failure.
    pub fn new(settings: CimdSettings) -> Result<CimdFetcher, CimdError> {
        if settings.min_cache > settings.max_cache {
            return Err(CimdError::Setup("min_cache exceeds max_cache".into()));
        }
        if settings.max_bytes == 0 || settings.timeout.is_zero() {
            return Err(CimdError::Setup("max_bytes and timeout must be positive".into()));
        }
        Ok(CimdFetcher {
            http: http_client(&settings)?,
            settings,
            cache: Cache::default(),
            inflight: Mutex::default(),
        })
    }

    /// The validated metadata of the client whose client_id is `client_id`,
    /// from memory while fresh, else fetched.
    ///
    /// # Errors
    ///
    /// The URL breaks a rule, the fetch fails or is refused by the guard,
    /// or the document is invalid; see [`CimdError`]. Errors that needed
    /// the network are returned again for [`FAILURE_TTL`].
    pub async fn fetch(&self, client_id: &str) -> Result<Arc<ClientMetadata>, CimdError> {
        let url = guard::check_client_id(client_id, &self.settings)?;
        if let Some(hit) = self.cache.get(client_id, Instant::now()) {
            return hit;
        }
        let cell = {
            let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
            if inflight.len() >= MAX_INFLIGHT {
                inflight.retain(|_, cell| Arc::strong_count(cell) > 1);
            }
            Arc::clone(inflight.entry(client_id.to_owned()).or_default())
        };
        let outcome = cell
            .get_or_init(|| self.fetch_and_remember(client_id, url))
            .await
            .clone();
        let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        if inflight.get(client_id).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            inflight.remove(client_id);
        }
        outcome
    }

    /// Fetch within the timeout and remember the outcome.
    async fn fetch_and_remember(&self, client_id: &str, url: Url) -> Outcome {
        if let Some(hit) = self.cache.get(client_id, Instant::now()) {
            return hit;
        }
        let after = self.settings.timeout;
        let fetched = tokio::time::timeout(after, self.fetch_uncached(client_id, url))
            .await
            .unwrap_or_else(|_| {
                Err(CimdError::Timeout {
                    url: client_id.to_owned(),
                    after,
                })
            });
        let (outcome, life) = match fetched {
            Ok((metadata, life)) => (Ok(metadata), life),
            Err(e) => {
                tracing::debug!(error = %e, "client metadata document refused");
                (Err(e), FAILURE_TTL)
            }
        };
        let now = Instant::now();
        self.cache.insert(client_id, outcome.clone(), now, now + life);
        outcome
    }

    /// Fetch the document, following redirects by hand; the document and
    /// its cache lifetime.
    async fn fetch_uncached(
        &self,
        client_id: &str,
        mut url: Url,
    ) -> Result<(Arc<ClientMetadata>, Duration), CimdError> {
        let mut redirects = 0;
        let res = loop {
            let res = self.send(&url).await?;
            let status = res.status();
            if !is_redirect(status) {
                break res;
            }
            if redirects == self.settings.max_redirects {
                let limit = self.settings.max_redirects;
                return Err(CimdError::TooManyRedirects {
                    url: client_id.to_owned(),
                    limit,
                });
            }
            redirects += 1;
            url = next_hop(&url, res.headers(), &self.settings)?;
        };
        if res.status() != StatusCode::OK {
            return Err(CimdError::Status {
                url: url.to_string(),
                status: res.status().as_u16(),
            });
        }
        check_content_type(&url, res.headers())?;
        let life = cache::lifetime(res.headers(), self.settings.min_cache, self.settings.max_cache);
        let body = read_body(&url, res, self.settings.max_bytes).await?;
        let metadata = document::parse(client_id, &body, self.settings.development)?;
        Ok((Arc::new(metadata), life))
    }

    async fn send(&self, url: &Url) -> Result<reqwest::Response, CimdError> {
        let request = self.http.get(url.clone()).header(ACCEPT, "application/json");
        request.send().await.map_err(|e| transport_error(url, &e))
    }
}
