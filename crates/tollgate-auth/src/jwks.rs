//! The signing keys of one issuer: fetched (OIDC discovery when no
//! `jwks_uri` is configured), cached, refreshed on a timer and on an unknown
//! key id (single-flight, rate limited), and kept when the issuer is
//! unreachable.
//!
//! Authentication (request path step 5) reads the current [`KeySet`] with
//! one atomic load. The key-set *generation* changes when a key disappears
//! or changes, which invalidates the verified tokens cached under it.

use std::collections::HashMap;
use std::str::FromStr as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::TokenRejection;
use crate::fetch::{check_url, get_json};
use crate::flight::SingleFlight;

/// Most keys taken from one key set.
const MAX_KEYS: usize = 64;

/// One public key usable for verification.
pub(crate) struct VerifyKey {
    pub(crate) key: DecodingKey,
    /// The key's own `alg`, when the key set names one.
    pub(crate) alg: Option<Algorithm>,
}

impl VerifyKey {
    fn fits(&self, alg: Algorithm) -> bool {
        self.key.family() == alg.family() && self.alg.is_none_or(|a| a == alg)
    }
}

/// An issuer's key set, indexed by key id.
#[derive(Default)]
pub(crate) struct KeySet {
    by_kid: HashMap<String, Arc<VerifyKey>>,
    unnamed: Vec<Arc<VerifyKey>>,
    /// The JWK of every named key, to tell a changed or removed key.
    material: HashMap<String, Value>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<Value>,
}

impl KeySet {
    /// Parse a JWKS document, skipping keys that are not signature keys
    /// or not supported (HMAC `oct` keys are never taken).
    pub(crate) fn from_jwks(doc: Value) -> Result<KeySet, String> {
        let raw: RawJwks = serde_json::from_value(doc).map_err(|e| format!("not a JWK set: {e}"))?;
        let mut set = KeySet::default();
        for jwk in raw.keys.into_iter().take(MAX_KEYS) {
            let Some(key) = verify_key(&jwk) else { continue };
            match jwk.get("kid").and_then(Value::as_str) {
                Some(kid) => {
                    set.material.insert(kid.to_owned(), jwk.clone());
                    set.by_kid.insert(kid.to_owned(), Arc::new(key));
                }
                None => set.unnamed.push(Arc::new(key)),
            }
        }
        Ok(set)
    }

    /// Number of usable keys.
    pub(crate) fn len(&self) -> usize {
        self.by_kid.len() + self.unnamed.len()
    }

    /// The keys that may have signed a token with this `kid` and `alg`.
    pub(crate) fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Result<Vec<Arc<VerifyKey>>, TokenRejection> {
        match kid {
            Some(kid) => {
                let key = self.by_kid.get(kid).ok_or(TokenRejection::UnknownKey)?;
                if key.fits(alg) {
                    Ok(vec![key.clone()])
                } else {
                    Err(TokenRejection::Algorithm)
                }
            }
            None => {
                let keys: Vec<_> = self
                    .by_kid
                    .values()
                    .chain(&self.unnamed)
                    .filter(|k| k.fits(alg))
                    .cloned()
                    .collect();
                if keys.is_empty() {
                    Err(TokenRejection::UnknownKey)
                } else {
                    Ok(keys)
                }
            }
        }
    }

    /// Whether `newer` dropped or changed a key this set has.
    fn lost_keys_in(&self, newer: &KeySet) -> bool {
        self.material
            .iter()
            .any(|(kid, jwk)| newer.material.get(kid) != Some(jwk))
            || (!self.unnamed.is_empty() && self.unnamed.len() != newer.unnamed.len())
    }
}

fn verify_key(jwk: &Value) -> Option<VerifyKey> {
    let s = |name: &str| jwk.get(name).and_then(Value::as_str);
    if s("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let key = match (s("kty")?, s("crv")) {
        ("RSA", _) => DecodingKey::from_rsa_components(s("n")?, s("e")?).ok()?,
        ("EC", Some("P-256" | "P-384")) => DecodingKey::from_ec_components(s("x")?, s("y")?).ok()?,
        ("OKP", Some("Ed25519")) => DecodingKey::from_ed_components(s("x")?).ok()?,
        _ => return None,
    };
    let alg = match s("alg") {
        Some(name) => Some(Algorithm::from_str(name).ok()?),
        None => None,
    };
    if alg.is_some_and(|a| a.family() == AlgorithmFamily::Hmac) {
        return None;
    }
    Some(VerifyKey { key, alg })
}

/// Where an issuer's keys come from.
pub(crate) enum KeySource {
    /// Fetched over HTTP.
    Remote {
        issuer: String,
        jwks_uri: Option<Url>,
        allow_http: bool,
    },
    /// Fixed at construction (the development issuer).
    Fixed,
}

/// The state of one issuer's signing keys, as the status metrics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerStatus {
    /// The issuer (`iss`) as configured.
    pub issuer: String,
    /// Signing keys in force; 0 until the first successful fetch.
    pub keys: usize,
    /// Key-set fetches since start that succeeded (0 for fixed keys).
    pub fetched: u64,
    /// Key-set fetches since start that failed; the previous keys stayed.
    pub failed: u64,
    /// False when the latest fetch failed.
    pub last_fetch_ok: bool,
}

/// The keys of one issuer and how to refresh them.
pub(crate) struct IssuerKeys {
    source: KeySource,
    set: ArcSwapOption<KeySet>,
    generation: AtomicU64,
    flight: SingleFlight<Result<(), String>>,
    discovered: ArcSwapOption<Url>,
    /// Fetches since start that installed a key set.
    fetched: AtomicU64,
    /// Fetches since start that failed (the previous keys kept serving).
    failed: AtomicU64,
    /// Whether the latest fetch failed.
    last_failed: AtomicBool,
}

impl IssuerKeys {
    pub(crate) fn new(source: KeySource, initial: Option<KeySet>) -> IssuerKeys {
        IssuerKeys {
            source,
            set: ArcSwapOption::new(initial.map(Arc::new)),
            generation: AtomicU64::new(0),
            flight: SingleFlight::new(),
            discovered: ArcSwapOption::empty(),
            fetched: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            last_failed: AtomicBool::new(false),
        }
    }

    /// The current key set; `None` until loaded once.
    pub(crate) fn current(&self) -> Option<Arc<KeySet>> {
        self.set.load_full()
    }

    /// Changes whenever a key is removed or replaced.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether the keys are fetched (and so need refreshing).
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.source, KeySource::Remote { .. })
    }

    /// Fetch the key set, sharing a fetch started less than `fresh` ago.
    /// On failure the previous keys stay in use.
    pub(crate) async fn refresh(&self, http: &reqwest::Client, fresh: Duration) -> Result<(), String> {
        if !self.is_remote() {
            return Ok(());
        }
        self.flight
            .run(fresh, || async {
                let fetched = self.fetch(http).await;
                let counter = if fetched.is_ok() { &self.fetched } else { &self.failed };
                counter.fetch_add(1, Ordering::Relaxed);
                self.last_failed.store(fetched.is_err(), Ordering::Relaxed);
                self.install(fetched?);
                Ok(())
            })
            .await
    }

    /// Keys loaded and fetch counts, for the status metrics.
    pub(crate) fn status(&self, issuer: &str) -> IssuerStatus {
        IssuerStatus {
            issuer: issuer.to_owned(),
            keys: self.current().map_or(0, |set| set.len()),
            fetched: self.fetched.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            last_fetch_ok: !self.last_failed.load(Ordering::Relaxed),
        }
    }

    fn install(&self, set: KeySet) {
        if let Some(old) = self.set.load_full()
            && old.lost_keys_in(&set)
        {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        self.set.store(Some(Arc::new(set)));
    }

    async fn fetch(&self, http: &reqwest::Client) -> Result<KeySet, String> {
        let KeySource::Remote {
            issuer,
            jwks_uri,
            allow_http,
        } = &self.source
        else {
            return Err("fixed key set".into());
        };
        let uri = match (jwks_uri, self.discovered.load_full()) {
            (Some(uri), _) => uri.clone(),
            (None, Some(found)) => (*found).clone(),
            (None, None) => {
                let found = discover(http, issuer, *allow_http).await?;
                self.discovered.store(Some(Arc::new(found.clone())));
                found
            }
        };
        let result = get_json::<Value>(http, &uri, *allow_http)
            .await
            .and_then(KeySet::from_jwks);
        if result.is_err() && jwks_uri.is_none() {
            // The issuer may have moved its keys: discover again next time.
            self.discovered.store(None);
        }
        let set = result?;
        tracing::debug!(issuer = %issuer, keys = set.len(), "loaded signing keys");
        Ok(set)
    }
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: Url,
}

/// Find the issuer's `jwks_uri`: OpenID Connect discovery, then RFC 8414.
async fn discover(http: &reqwest::Client, issuer: &str, allow_http: bool) -> Result<Url, String> {
    let base = Url::parse(issuer).map_err(|e| format!("issuer {issuer}: {e}"))?;
    let oidc = Url::parse(&format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    ));
    let path = base.path().trim_end_matches('/');
    let rfc8414 = Url::parse(&format!(
        "{}/.well-known/oauth-authorization-server{path}",
        base.origin().ascii_serialization()
    ));
    let mut last = String::from("no discovery URL");
    for url in [oidc, rfc8414].into_iter().flatten() {
        match get_json::<Discovery>(http, &url, allow_http).await {
            Ok(doc) if doc.issuer == issuer => {
                check_url(&doc.jwks_uri, allow_http)?;
                return Ok(doc.jwks_uri);
            }
            Ok(doc) => last = format!("{url} names issuer {:?}, not {issuer:?}", doc.issuer),
            Err(e) => last = e,
        }
    }
    Err(format!("discovery failed: {last}"))
}

/// Keep an issuer's keys fresh: fetch now, then every `every`; after a
/// failure retry with back-off (1 s doubling up to a minute, never longer
/// than `every`), keeping the old keys meanwhile.
pub(crate) async fn refresh_loop(keys: Arc<IssuerKeys>, http: reqwest::Client, issuer: String, every: Duration) {
    let mut backoff = Duration::from_secs(1);
    loop {
        match keys.refresh(&http, Duration::ZERO).await {
            Ok(()) => {
                backoff = Duration::from_secs(1);
                tokio::time::sleep(every).await;
            }
            Err(error) => {
                tracing::warn!(issuer = %issuer, %error, "cannot refresh signing keys; keeping the previous ones");
                tokio::time::sleep(backoff.min(every)).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
}
