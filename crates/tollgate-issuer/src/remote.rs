//! Another issuer's keys and discovery document, fetched when first
//! needed: the identity provider's (ID tokens) and each trusted assertion
//! issuer's (ID-JAG). Keys are fetched again on an unknown key id, at most
//! every ten seconds.

use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use tollgate_auth::get_json;

use crate::time::unix_now;

/// Algorithms accepted on ID tokens and assertions: asymmetric only.
const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Shortest time between two key fetches.
const MIN_REFETCH: u64 = 10;

/// The parts of an OpenID Connect discovery document Tollgate reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Discovery {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<Url>,
    pub(crate) token_endpoint: Option<Url>,
    pub(crate) jwks_uri: Url,
}

/// An issuer's discovery document and keys, cached.
#[derive(Debug)]
pub(crate) struct RemoteIssuer {
    pub(crate) issuer: String,
    jwks_uri: Option<Url>,
    /// Allow `http://` on a loopback host (development).
    allow_http: bool,
    http: reqwest::Client,
    discovery: tokio::sync::OnceCell<Discovery>,
    keys: Mutex<(Option<JwkSet>, u64)>,
}

impl RemoteIssuer {
    pub(crate) fn new(issuer: &str, jwks_uri: Option<Url>, allow_http: bool, http: reqwest::Client) -> RemoteIssuer {
        RemoteIssuer {
            issuer: issuer.to_owned(),
            jwks_uri,
            allow_http,
            http,
            discovery: tokio::sync::OnceCell::new(),
            keys: Mutex::new((None, 0)),
        }
    }

    /// The issuer's discovery document (its `issuer` checked).
    pub(crate) async fn discovery(&self) -> Result<&Discovery, String> {
        self.discovery
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.issuer.trim_end_matches('/'));
                let url = Url::parse(&url).map_err(|e| format!("{url}: {e}"))?;
                let doc: Discovery = get_json(&self.http, &url, self.allow_http).await?;
                if doc.issuer != self.issuer {
                    return Err(format!("{url}: names issuer {:?}, not {:?}", doc.issuer, self.issuer));
                }
                Ok(doc)
            })
            .await
    }

    async fn jwks_uri(&self) -> Result<Url, String> {
        match &self.jwks_uri {
            Some(u) => Ok(u.clone()),
            None => Ok(self.discovery().await?.jwks_uri.clone()),
        }
    }

    /// The key for `kid`, fetching the key set when it is unknown.
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, String> {
        let mut cached = self.keys.lock().await;
        let find = |set: &JwkSet| match kid {
            Some(k) => set.find(k).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        if let Some(jwk) = cached.0.as_ref().and_then(find) {
            return DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string());
        }
        let now = unix_now();
        if cached.0.is_some() && now < cached.1 + MIN_REFETCH {
            return Err(format!("no key {kid:?} in the key set of {}", self.issuer));
        }
        let url = self.jwks_uri().await?;
        let set: JwkSet = get_json(&self.http, &url, self.allow_http).await?;
        *cached = (Some(set), now);
        let jwk = cached
            .0
            .as_ref()
            .and_then(find)
            .ok_or_else(|| format!("no key {kid:?} at {url}"))?;
        DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())
    }

    /// Verify `token`'s signature, issuer, expiry and audience (`aud`),
    /// and its JOSE `typ` when `typ` is given; its claims.
    pub(crate) async fn verify(&self, token: &str, aud: &str, typ: Option<&str>) -> Result<Value, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("not a JWT: {e}"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(format!("algorithm {:?} is not accepted", header.alg));
        }
        if let Some(typ) = typ
            && !header.typ.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(typ))
        {
            return Err(format!("JOSE typ {:?}, expected {typ}", header.typ));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[aud]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.leeway = 30;
        let data = jsonwebtoken::decode::<Value>(token, &key, &v).map_err(|e| format!("{e}"))?;
        Ok(data.claims)
    }
}

/// A string claim by name or dotted path.
pub(crate) fn claim_str(claims: &Value, name: &str) -> Option<String> {
    claim(claims, name).and_then(|v| v.as_str().map(str::to_owned))
}

/// A list claim: an array of strings, or one space-separated string.
pub(crate) fn claim_list(claims: &Value, name: &str) -> Vec<String> {
    match claim(claims, name) {
        Some(Value::Array(items)) => items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

fn claim<'a>(claims: &'a Value, name: &str) -> Option<&'a Value> {
    claims
        .get(name)
        .or_else(|| name.split('.').try_fold(claims, |v, part| v.get(part)))
}

/// Timeout of one identity provider exchange.
pub(crate) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
