//! The upstream credential broker: request path step 10. The client's
//! token never leaves the gateway; each upstream gets a credential issued
//! for it: none, a static header, a client credentials token (the gateway
//! itself), or an RFC 8693 token exchanged for the caller.
//!
//! Tokens are cached until shortly before they expire (exchanged tokens
//! per caller token in a bounded cache, never past its expiry); concurrent
//! requests share one token request; a client credentials refresh that
//! fails keeps a still-valid token in use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use http::{HeaderName, HeaderValue};
use quick_cache::sync::Cache;
use tokio::time::Instant;
use tollgate_config::{Credential, Secret};
use tollgate_core::Principal;

use crate::cache::{TokenHash, token_hash};
use crate::fetch::{client, unix_now};
use crate::flight::SingleFlight;
use crate::oauth::{Grant, OAuthParams, request_token};
use crate::{CredentialError, SetupError};

/// Most exchanged tokens kept per upstream.
const EXCHANGE_CACHE_ENTRIES: usize = 10_000;

/// A header to send upstream. `Debug` shows the name only.
#[derive(Clone)]
pub struct UpstreamCredential {
    /// The header name.
    pub name: HeaderName,
    /// The header value, marked sensitive (HPACK never indexes it).
    pub value: HeaderValue,
}

impl std::fmt::Debug for UpstreamCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UpstreamCredential({}: [redacted])", self.name)
    }
}

/// The authenticated caller on whose behalf a token may be exchanged.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    /// The caller's access token (the `subject_token`).
    pub token: &'a str,
    /// Its principal (the exchanged token never outlives it).
    pub principal: &'a Principal,
}

impl std::fmt::Debug for Caller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Caller({}: [redacted])", self.principal.subject)
    }
}

/// How the broker obtains each route's upstream credential.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerSettings {
    /// One entry per route; a route left out gets no credential.
    pub routes: Vec<BrokerRoute>,
}

/// One route's upstream credential.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerRoute {
    /// The route name (`[[servers]] name`).
    pub name: String,
    /// The upstream URL: the `resource` of a token exchange that names no
    /// resource or audience of its own.
    pub url: String,
    /// How the credential is obtained.
    pub credential: Credential,
    /// Its secret, resolved at load: the static header value or the client
    /// secret; `None` for [`Credential::None`].
    pub secret: Option<Secret>,
}

/// Obtains upstream credentials per route.
pub struct CredentialBroker {
    routes: HashMap<String, RouteCredential>,
    http: reqwest::Client,
}

impl std::fmt::Debug for CredentialBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: HashMap<_, _> = self.routes.iter().map(|(k, v)| (k, v.kind())).collect();
        f.debug_struct("CredentialBroker").field("routes", &kinds).finish()
    }
}

enum RouteCredential {
    None,
    Static(UpstreamCredential),
    ClientCredentials(Box<ClientCredentials>),
    TokenExchange(Box<TokenExchange>),
}

impl RouteCredential {
    fn kind(&self) -> &'static str {
        match self {
            RouteCredential::None => "none",
            RouteCredential::Static(_) => "static",
            RouteCredential::ClientCredentials(_) => "client_credentials",
            RouteCredential::TokenExchange(_) => "token_exchange",
        }
    }
}

struct Cached {
    value: HeaderValue,
    refresh_at: Instant,
    expires_at: Instant,
}

fn bearer(token: &str) -> Result<HeaderValue, String> {
    let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| "token is not a valid header value")?;
    v.set_sensitive(true);
    Ok(v)
}

/// Refresh 30 s before expiry, or at half-life for short-lived tokens;
/// `cap` bounds the expiry (the caller's token for an exchanged one).
fn cached(value: HeaderValue, lifetime: Duration, cap: Option<Instant>) -> Cached {
    let now = Instant::now();
    let expires_at = cap.map_or(now + lifetime, |c| c.min(now + lifetime));
    let margin = Duration::from_secs(30).min((expires_at - now) / 2);
    Cached {
        value,
        refresh_at: expires_at - margin,
        expires_at,
    }
}

struct ClientCredentials {
    params: OAuthParams,
    current: ArcSwapOption<Cached>,
    flight: SingleFlight<Result<Arc<Cached>, String>>,
}

/// Exchanged tokens by caller token, bounded (S3-FIFO eviction). A failure
/// is stored only for the requests that waited on its exchange.
struct TokenExchange {
    params: OAuthParams,
    tokens: Cache<TokenHash, Exchanged>,
}

type Exchanged = Result<Arc<Cached>, String>;

impl CredentialBroker {
    /// Build from `settings`. No network access happens here.
    ///
    /// # Errors
    ///
    /// A credential whose secret is missing or not a valid header value,
    /// or TLS setup failure.
    pub fn new(settings: &BrokerSettings) -> Result<CredentialBroker, SetupError> {
        let mut routes = HashMap::new();
        for route in &settings.routes {
            let name = route.name.as_str();
            let secret = || -> Result<Secret, SetupError> {
                route
                    .secret
                    .clone()
                    .ok_or_else(|| SetupError(format!("server {name}: credential secret missing")))
            };
            let credential = match &route.credential {
                // Each user's own grant comes from the vault, not the broker.
                Credential::None | Credential::UserOauth(_) | Credential::IdJag(_) => RouteCredential::None,
                Credential::Static(st) => {
                    let header = HeaderName::from_bytes(st.header.as_bytes())
                        .map_err(|_| SetupError(format!("server {name}: invalid header name")))?;
                    let mut value = HeaderValue::from_bytes(secret()?.expose())
                        .map_err(|_| SetupError(format!("server {name}: invalid static credential value")))?;
                    value.set_sensitive(true);
                    RouteCredential::Static(UpstreamCredential { name: header, value })
                }
                Credential::ClientCredentials(c) => RouteCredential::ClientCredentials(Box::new(ClientCredentials {
                    params: OAuthParams::new(c, secret()?, None),
                    current: ArcSwapOption::empty(),
                    flight: SingleFlight::new(),
                })),
                Credential::TokenExchange(c) => RouteCredential::TokenExchange(Box::new(TokenExchange {
                    params: OAuthParams::new(c, secret()?, Some(route.url.as_str())),
                    tokens: Cache::new(EXCHANGE_CACHE_ENTRIES),
                })),
            };
            routes.insert(name.to_owned(), credential);
        }
        Ok(CredentialBroker {
            routes,
            http: client()?,
        })
    }

    /// The credential mode of a route (`none` for unknown routes), for the
    /// audit record.
    pub fn kind(&self, server: &str) -> &'static str {
        self.routes.get(server).map_or("none", RouteCredential::kind)
    }

    /// The header to add to a request for `server`, if any. `caller` is
    /// required for token exchange.
    ///
    /// # Errors
    ///
    /// The token endpoint failed and no still-valid token is cached, or
    /// token exchange without a caller.
    pub async fn credential(
        &self,
        server: &str,
        caller: Option<Caller<'_>>,
    ) -> Result<Option<UpstreamCredential>, CredentialError> {
        let endpoint_error = |reason: String| CredentialError::TokenEndpoint {
            server: server.to_owned(),
            reason,
        };
        let value = match self.routes.get(server) {
            None | Some(RouteCredential::None) => return Ok(None),
            Some(RouteCredential::Static(c)) => return Ok(Some(c.clone())),
            Some(RouteCredential::ClientCredentials(cc)) => cc.get(&self.http).await.map_err(endpoint_error)?,
            Some(RouteCredential::TokenExchange(tx)) => {
                let caller = caller.ok_or_else(|| CredentialError::NoSubjectToken {
                    server: server.to_owned(),
                })?;
                tx.get(&self.http, caller).await.map_err(endpoint_error)?
            }
        };
        Ok(Some(UpstreamCredential {
            name: http::header::AUTHORIZATION,
            value,
        }))
    }
}

impl ClientCredentials {
    async fn get(&self, http: &reqwest::Client) -> Result<HeaderValue, String> {
        let current = self.current.load_full();
        if let Some(c) = current.as_ref().filter(|c| Instant::now() < c.refresh_at) {
            return Ok(c.value.clone());
        }
        // Coalesce concurrent refreshes; a failure is reused for a second.
        let fetched = self
            .flight
            .run(Duration::from_secs(1), || async {
                let issued = request_token(http, &self.params, Grant::ClientCredentials).await?;
                let c = Arc::new(cached(bearer(&issued.access_token)?, issued.lifetime, None));
                self.current.store(Some(c.clone()));
                Ok(c)
            })
            .await;
        match (fetched, current) {
            (Ok(c), _) => Ok(c.value.clone()),
            (Err(_), Some(old)) if Instant::now() < old.expires_at => Ok(old.value.clone()),
            (Err(e), _) => Err(e),
        }
    }
}

impl TokenExchange {
    /// The caller's exchanged token: cached, or exchanged once for all the
    /// requests that need it now (the cache's placeholder makes the others
    /// wait for the first).
    async fn get(&self, http: &reqwest::Client, caller: Caller<'_>) -> Result<HeaderValue, String> {
        let key = token_hash(caller.token);
        let mut refreshing = false;
        let guard = loop {
            match self.tokens.get_value_or_guard_async(&key).await {
                Err(guard) => break guard,
                Ok(Ok(c)) if refreshing || Instant::now() < c.refresh_at => return Ok(c.value.clone()),
                // The exchange this request waited for failed.
                Ok(Err(e)) => return Err(e),
                Ok(Ok(stale)) => {
                    // Due for refresh: drop it (unless replaced meanwhile),
                    // then exchange, or join the exchange another started.
                    let same = |v: &Exchanged| v.as_ref().is_ok_and(|c| Arc::ptr_eq(c, &stale));
                    self.tokens.remove_if(&key, same);
                    refreshing = true;
                }
            }
        };
        let result = self.exchange(http, caller).await;
        // Waiting requests take the result from the placeholder.
        let _ = guard.insert(result.clone());
        if result.is_err() {
            // Do not keep failures: the next request asks again.
            self.tokens.remove_if(&key, Result::is_err);
        }
        result.map(|c| c.value.clone())
    }

    async fn exchange(&self, http: &reqwest::Client, caller: Caller<'_>) -> Exchanged {
        let left = caller.principal.expires_at.saturating_sub(unix_now());
        let cap = Instant::now() + Duration::from_secs(left);
        let grant = Grant::TokenExchange {
            subject_token: caller.token,
        };
        let issued = request_token(http, &self.params, grant).await?;
        Ok(Arc::new(cached(
            bearer(&issued.access_token)?,
            issued.lifetime,
            Some(cap),
        )))
    }
}
