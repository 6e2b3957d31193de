//! The authenticator: request path step 5. A bearer token in, an
//! `Arc<Principal>` out, for one route's resource URL.
//!
//! A hit in the verified-token cache costs one SHA-256 and one cache lookup
//! plus the audience check; a miss verifies the JWT against its issuer's
//! keys (or introspects an opaque token) and caches the result. Key sets are
//! refreshed in the background by [`Authenticator::spawn_refresh`];
//! [`Authenticator::is_ready`] tells whether every issuer's keys were loaded
//! at least once.

use std::sync::Arc;

use serde_json::Value;
use tokio::task::JoinHandle;
use tollgate_config::{Issuer, Secret};
use tollgate_core::Principal;

use crate::cache::{Entry, TokenCache, token_hash};
use crate::fetch::{client, unix_now};
use crate::jwks::{IssuerStatus, KeySet, refresh_loop};
use crate::token::{TokenShape, read_token};
use crate::verify::IssuerState;
use crate::{AuthError, DevIssuer, SetupError, TokenRejection, claims};

/// A local issuer's revoked grants: asked on every use of its tokens, with
/// the token's `jti`.
#[async_trait::async_trait]
pub trait Revocations: Send + Sync + std::fmt::Debug {
    /// Whether the grant of the token `token_id` was revoked.
    async fn is_revoked(&self, token_id: &str) -> Result<bool, String>;
}

/// An issuer in this process (Tollgate's authorization server): its URL,
/// its key set and its revocations.
#[derive(Debug, Clone)]
pub struct LocalIssuer {
    /// The issuer URL.
    pub issuer: String,
    /// Its public key set (`{"keys": [...]}`).
    pub jwks: Value,
    /// Its revoked grants.
    pub revocations: Arc<dyn Revocations>,
}

/// What the authenticator trusts, and how many verified tokens it keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthenticatorSettings {
    /// The trusted issuers (`[[auth.issuers]]`), in order.
    pub issuers: Vec<Issuer>,
    /// By issuer index, the client secret of an issuer that introspects
    /// opaque tokens, resolved at load.
    pub introspection_secrets: Vec<Option<Secret>>,
    /// Most verified tokens kept in memory.
    pub token_cache_entries: usize,
}

/// Validates access tokens; cheap to clone (shared state behind an `Arc`).
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

struct Inner {
    issuers: Vec<IssuerState>,
    cache: TokenCache,
    http: reqwest::Client,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("issuers", &self.issuers())
            .field("cached_tokens", &self.inner.cache.len())
            .finish()
    }
}

/// The background key refresh tasks; dropping this stops them.
#[derive(Debug)]
pub struct RefreshTasks(Vec<JoinHandle<()>>);

impl Drop for RefreshTasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl Authenticator {
    /// Build from `settings`. The development issuer, when given, is
    /// trusted too. No network access happens here.
    ///
    /// # Errors
    ///
    /// A missing introspection secret, or TLS setup failure.
    pub fn new(settings: &AuthenticatorSettings, dev: Option<&DevIssuer>) -> Result<Authenticator, SetupError> {
        Authenticator::with_local(settings, dev, None)
    }

    /// [`Authenticator::new`], trusting a local issuer too: Tollgate's own
    /// authorization server, whose keys are known and whose revoked grants
    /// are asked about on every use of its tokens.
    ///
    /// # Errors
    ///
    /// As [`Authenticator::new`], or the local key set is not a JWKS.
    pub fn with_local(
        settings: &AuthenticatorSettings,
        dev: Option<&DevIssuer>,
        local: Option<LocalIssuer>,
    ) -> Result<Authenticator, SetupError> {
        let secrets = &settings.introspection_secrets;
        let mut issuers = settings
            .issuers
            .iter()
            .enumerate()
            .map(|(i, iss)| IssuerState::from_config(iss, secrets.get(i).and_then(Option::as_ref)))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(dev) = dev {
            issuers.push(dev.issuer_state());
        }
        if let Some(local) = local {
            let keys = KeySet::from_jwks(local.jwks).map_err(|e| SetupError(format!("local issuer keys: {e}")))?;
            // Same process, same clock: no skew to allow for.
            let mut state = IssuerState::fixed(&local.issuer, jsonwebtoken::Algorithm::ES256, keys, 0);
            state.revocations = Some(local.revocations);
            issuers.insert(0, state);
        }
        Ok(Authenticator {
            inner: Arc::new(Inner {
                issuers,
                cache: TokenCache::new(settings.token_cache_entries),
                http: client()?,
            }),
        })
    }

    /// The trusted issuers, for a route's `authorization_servers`.
    pub fn issuers(&self) -> Vec<String> {
        self.inner.issuers.iter().map(|i| i.issuer.clone()).collect()
    }

    /// Whether every issuer's signing keys have been loaded at least once.
    pub fn is_ready(&self) -> bool {
        self.inner.issuers.iter().all(|i| i.keys.current().is_some())
    }

    /// Each issuer's keys and fetch counts, in configuration order.
    pub fn issuer_status(&self) -> Vec<IssuerStatus> {
        self.inner.issuers.iter().map(|i| i.keys.status(&i.issuer)).collect()
    }

    /// Fetch every issuer's keys once, concurrently; returns
    /// [`Authenticator::is_ready`]. Failures are logged, not fatal.
    pub async fn refresh_now(&self) -> bool {
        let mut fetches = tokio::task::JoinSet::new();
        for issuer in self.inner.issuers.iter().filter(|i| i.keys.is_remote()) {
            let (keys, http, name) = (issuer.keys.clone(), self.inner.http.clone(), issuer.issuer.clone());
            fetches.spawn(async move {
                if let Err(error) = keys.refresh(&http, std::time::Duration::ZERO).await {
                    tracing::warn!(issuer = %name, %error, "cannot load signing keys");
                }
            });
        }
        while fetches.join_next().await.is_some() {}
        self.is_ready()
    }

    /// Start refreshing every issuer's keys in the background: now, then
    /// every `refresh_interval`. Needs a Tokio runtime.
    pub fn spawn_refresh(&self) -> RefreshTasks {
        let tasks = self
            .inner
            .issuers
            .iter()
            .filter(|i| i.keys.is_remote())
            .map(|i| {
                let keys = i.keys.clone();
                let http = self.inner.http.clone();
                tokio::spawn(refresh_loop(keys, http, i.issuer.clone(), i.refresh_interval))
            })
            .collect();
        RefreshTasks(tasks)
    }

    /// Number of tokens in the verified-token cache.
    pub fn cached_tokens(&self) -> usize {
        self.inner.cache.len()
    }

    /// Validate `token` for the route whose resource URL is `resource_url`.
    ///
    /// # Errors
    ///
    /// [`AuthError::InvalidToken`] with the reason, or
    /// [`AuthError::Unavailable`] when the token's issuer cannot be
    /// consulted (keys never loaded, introspection failing).
    pub async fn authenticate(&self, token: &str, resource_url: &str) -> Result<Arc<Principal>, AuthError> {
        let entry = self.verified(token).await?;
        let issuer = &self.inner.issuers[entry.issuer];
        if !issuer.accepts_audience(&entry.principal, resource_url) {
            return Err(AuthError::InvalidToken(TokenRejection::Audience));
        }
        if let Some(revocations) = &issuer.revocations {
            match revocations
                .is_revoked(entry.principal.token_id.as_deref().unwrap_or(""))
                .await
            {
                Ok(false) => {}
                Ok(true) => return Err(AuthError::InvalidToken(TokenRejection::Revoked)),
                Err(error) => {
                    tracing::warn!(issuer = %issuer.issuer, %error, "cannot tell whether a grant was revoked");
                    return Err(AuthError::Unavailable {
                        issuer: issuer.issuer.clone(),
                    });
                }
            }
        }
        Ok(entry.principal)
    }

    /// Validate `token` for a client that trusts one issuer and names its
    /// own audiences (the console): the token must be `issuer`'s and its
    /// `aud` must name one of `audiences`. An issuer's `audiences` from
    /// `[[auth.issuers]]` do not count: they admit access tokens for every
    /// MCP route, which are not tokens for this client.
    ///
    /// # Errors
    ///
    /// As [`Authenticator::authenticate`]; a token of any other trusted
    /// issuer is `UnknownIssuer` (a JWT's keys are then not consulted).
    pub async fn authenticate_for(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
    ) -> Result<Arc<Principal>, AuthError> {
        let invalid = AuthError::InvalidToken;
        if let TokenShape::Jwt { issuer: named, .. } = read_token(token)?
            && named != issuer
        {
            return Err(invalid(TokenRejection::UnknownIssuer));
        }
        let entry = self.verified(token).await?;
        if self.inner.issuers[entry.issuer].issuer != issuer {
            return Err(invalid(TokenRejection::UnknownIssuer));
        }
        if !audiences.iter().any(|a| entry.principal.has_audience(a)) {
            return Err(invalid(TokenRejection::Audience));
        }
        Ok(entry.principal)
    }

    /// The verified token: from the cache, else verified and cached. The
    /// audience is the caller's to check.
    async fn verified(&self, token: &str) -> Result<Entry, AuthError> {
        let inner = &*self.inner;
        let hash = token_hash(token);
        let now = unix_now();
        if let Some(entry) = inner.cache.get(&hash, now, |i| inner.issuers[i].keys.generation()) {
            return Ok(entry);
        }
        let entry = self.verify(token, now).await?;
        inner.cache.insert(hash, entry.clone());
        Ok(entry)
    }

    async fn verify(&self, token: &str, now: u64) -> Result<Entry, AuthError> {
        let (header, iss) = match read_token(token)? {
            TokenShape::Opaque => return self.introspect(token, now).await,
            TokenShape::Jwt { header, issuer } => (header, issuer),
        };
        let (index, issuer) = self
            .inner
            .issuers
            .iter()
            .enumerate()
            .find(|(_, i)| i.issuer == iss)
            .ok_or(AuthError::InvalidToken(TokenRejection::UnknownIssuer))?;
        // Read the generation before verifying: a rotation during the
        // check then invalidates the entry instead of being missed.
        let generation = issuer.keys.generation();
        let principal = issuer.verify_jwt(&self.inner.http, token, &header).await?;
        Ok(Entry {
            valid_until: principal.expires_at.saturating_add(issuer.leeway),
            principal: Arc::new(principal),
            issuer: index,
            generation: Some(generation),
        })
    }

    async fn introspect(&self, token: &str, now: u64) -> Result<Entry, AuthError> {
        let mut unavailable = None;
        for (index, issuer) in self.inner.issuers.iter().enumerate() {
            let Some(intro) = &issuer.introspection else { continue };
            let claims = match intro.introspect(&self.inner.http, token).await {
                Ok(Some(claims)) => claims,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(issuer = %issuer.issuer, %error, "introspection failed");
                    unavailable = Some(issuer.issuer.clone());
                    continue;
                }
            };
            if claims
                .get("iss")
                .and_then(Value::as_str)
                .is_some_and(|i| i != issuer.issuer)
            {
                return Err(AuthError::InvalidToken(TokenRejection::UnknownIssuer));
            }
            let ttl_end = now + intro.cache_ttl.as_secs();
            if claims
                .get("exp")
                .and_then(Value::as_u64)
                .is_some_and(|exp| exp + issuer.leeway <= now)
            {
                return Err(AuthError::InvalidToken(TokenRejection::Expired));
            }
            let principal = claims::principal(&issuer.issuer, &claims, &issuer.claims, Some(ttl_end))
                .map_err(AuthError::InvalidToken)?;
            return Ok(Entry {
                valid_until: principal.expires_at.min(ttl_end),
                principal: Arc::new(principal),
                issuer: index,
                generation: None,
            });
        }
        match unavailable {
            Some(issuer) => Err(AuthError::Unavailable { issuer }),
            None if self.inner.issuers.iter().any(|i| i.introspection.is_some()) => {
                Err(AuthError::InvalidToken(TokenRejection::Inactive))
            }
            None => Err(AuthError::InvalidToken(TokenRejection::Malformed)),
        }
    }
}

/// No configured issuer: the tests of the development issuer, which is
/// trusted besides them.
#[cfg(test)]
pub(crate) fn no_issuers() -> AuthenticatorSettings {
    AuthenticatorSettings {
        issuers: Vec::new(),
        introspection_secrets: Vec::new(),
        token_cache_entries: 100,
    }
}
