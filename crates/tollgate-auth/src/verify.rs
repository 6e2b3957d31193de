//! One trusted issuer and JWT verification against it (request path step
//! 5 on a cache miss): pinned algorithms, key by `kid`, signature, `iss`,
//! `exp`/`nbf` with leeway, optional `typ`, then the claim mapping. The
//! audience is checked per route by the authenticator, also on cache hits.

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind as JwtErrorKind;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde_json::{Map, Value};
use tollgate_config::{ClaimMapping, Issuer, Secret};
use tollgate_core::Principal;

use crate::introspect::Introspector;
use crate::jwks::{IssuerKeys, KeySet, KeySource};
use crate::{AuthError, SetupError, TokenRejection, claims};

/// A trusted issuer: its keys, rules and claim mapping.
pub(crate) struct IssuerState {
    pub(crate) issuer: String,
    pub(crate) keys: Arc<IssuerKeys>,
    validations: Vec<(Algorithm, Validation)>,
    audiences: Vec<String>,
    require_typ: Option<String>,
    pub(crate) claims: ClaimMapping,
    pub(crate) leeway: u64,
    pub(crate) refresh_interval: Duration,
    min_refresh: Duration,
    pub(crate) introspection: Option<Introspector>,
    /// Asked on every use of a token of this issuer (a local issuer's
    /// revoked grants).
    pub(crate) revocations: Option<Arc<dyn crate::Revocations>>,
}

impl IssuerState {
    /// Build from configuration; `secret` is the introspection client secret.
    pub(crate) fn from_config(iss: &Issuer, secret: Option<&Secret>) -> Result<IssuerState, SetupError> {
        let algorithms = iss
            .algorithms
            .iter()
            .map(|a| Algorithm::from_str(a.as_str()).map_err(|e| SetupError(format!("{}: {e}", a.as_str()))))
            .collect::<Result<Vec<_>, _>>()?;
        let introspection = match (&iss.introspection, secret) {
            (Some(cfg), Some(secret)) => Some(Introspector::new(cfg, secret.clone(), iss.allow_insecure_http)),
            (Some(_), None) => {
                return Err(SetupError(format!(
                    "issuer {}: introspection secret missing",
                    iss.issuer
                )));
            }
            (None, _) => None,
        };
        let source = KeySource::Remote {
            issuer: iss.issuer.clone(),
            jwks_uri: iss.jwks_uri.clone(),
            allow_http: iss.allow_insecure_http,
        };
        Ok(IssuerState {
            validations: validations(&iss.issuer, &algorithms, iss.leeway.as_secs()),
            issuer: iss.issuer.clone(),
            keys: Arc::new(IssuerKeys::new(source, None)),
            audiences: iss.audiences.clone(),
            require_typ: iss.require_typ.clone(),
            claims: iss.claims.clone(),
            leeway: iss.leeway.as_secs(),
            refresh_interval: iss.refresh_interval,
            min_refresh: iss.min_refresh_interval,
            introspection,
            revocations: None,
        })
    }

    /// An issuer whose keys are fixed (the development issuer, Tollgate's
    /// authorization server), with `leeway` seconds of clock skew.
    pub(crate) fn fixed(issuer: &str, algorithm: Algorithm, keys: KeySet, leeway: u64) -> IssuerState {
        IssuerState {
            issuer: issuer.to_owned(),
            keys: Arc::new(IssuerKeys::new(KeySource::Fixed, Some(keys))),
            validations: validations(issuer, &[algorithm], leeway),
            audiences: Vec::new(),
            require_typ: None,
            claims: ClaimMapping::default(),
            leeway,
            refresh_interval: Duration::from_secs(3600),
            min_refresh: Duration::from_secs(3600),
            introspection: None,
            revocations: None,
        }
    }

    /// Whether the principal's token names `resource` or a configured audience.
    pub(crate) fn accepts_audience(&self, principal: &Principal, resource: &str) -> bool {
        principal.has_audience(resource) || self.audiences.iter().any(|a| principal.has_audience(a))
    }

    /// Verify a JWT whose header is `header`.
    pub(crate) async fn verify_jwt(
        &self,
        http: &reqwest::Client,
        token: &str,
        header: &Header,
    ) -> Result<Principal, AuthError> {
        let invalid = AuthError::InvalidToken;
        let validation = self
            .validations
            .iter()
            .find(|(a, _)| *a == header.alg)
            .map(|(_, v)| v)
            .ok_or(invalid(TokenRejection::Algorithm))?;
        if let Some(required) = &self.require_typ
            && !typ_matches(header.typ.as_deref(), required)
        {
            return Err(invalid(TokenRejection::Type));
        }
        let kid = header.kid.as_deref();
        let mut candidates = self.keys_for(kid, header.alg);
        if matches!(candidates, Ok(None) | Err(TokenRejection::UnknownKey)) && self.keys.is_remote() {
            // Unknown key id, or keys never loaded: fetch again (rate limited).
            if let Err(error) = self.keys.refresh(http, self.min_refresh).await {
                tracing::warn!(issuer = %self.issuer, %error, "cannot fetch signing keys");
            }
            candidates = self.keys_for(kid, header.alg);
        }
        let keys = candidates.map_err(invalid)?.ok_or_else(|| AuthError::Unavailable {
            issuer: self.issuer.clone(),
        })?;
        let mut last = TokenRejection::Signature;
        for key in keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, validation) {
                Ok(data) => return claims::principal(&self.issuer, &data.claims, &self.claims, None).map_err(invalid),
                Err(e) => {
                    last = rejection(e.kind());
                    if last != TokenRejection::Signature {
                        break;
                    }
                }
            }
        }
        Err(invalid(last))
    }

    /// `Ok(None)`: keys never loaded.
    fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<Vec<Arc<crate::jwks::VerifyKey>>>, TokenRejection> {
        match self.keys.current() {
            None => Ok(None),
            Some(set) => set.candidates(kid, alg).map(Some),
        }
    }
}

fn validations(issuer: &str, algorithms: &[Algorithm], leeway: u64) -> Vec<(Algorithm, Validation)> {
    algorithms
        .iter()
        .map(|alg| {
            let mut v = Validation::new(*alg);
            v.leeway = leeway;
            v.validate_exp = true;
            v.validate_nbf = true;
            // The audience depends on the route: checked by the authenticator.
            v.validate_aud = false;
            v.set_issuer(&[issuer]);
            v.set_required_spec_claims(&["exp", "iss"]);
            (*alg, v)
        })
        .collect()
}

/// `typ` compared case-insensitively, with an optional `application/` prefix
/// (RFC 7515 §4.1.9).
fn typ_matches(typ: Option<&str>, required: &str) -> bool {
    let norm = |t: &str| {
        let t = t.trim();
        let lower = t.to_ascii_lowercase();
        lower.strip_prefix("application/").map(str::to_owned).unwrap_or(lower)
    };
    typ.is_some_and(|t| norm(t) == norm(required))
}

fn rejection(kind: &JwtErrorKind) -> TokenRejection {
    match kind {
        JwtErrorKind::InvalidSignature | JwtErrorKind::InvalidEcdsaKey | JwtErrorKind::InvalidRsaKey(_) => {
            TokenRejection::Signature
        }
        JwtErrorKind::ExpiredSignature => TokenRejection::Expired,
        JwtErrorKind::ImmatureSignature => TokenRejection::NotYetValid,
        JwtErrorKind::InvalidIssuer => TokenRejection::UnknownIssuer,
        JwtErrorKind::InvalidAlgorithm | JwtErrorKind::InvalidAlgorithmName => TokenRejection::Algorithm,
        JwtErrorKind::MissingRequiredClaim(_) | JwtErrorKind::InvalidClaimFormat(_) => TokenRejection::MissingClaim,
        _ => TokenRejection::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typ_comparison_follows_rfc_7515() {
        assert!(typ_matches(Some("at+jwt"), "at+jwt"));
        assert!(typ_matches(Some("application/AT+JWT"), "at+jwt"));
        assert!(!typ_matches(Some("JWT"), "at+jwt"));
        assert!(!typ_matches(None, "at+jwt"));
    }
}
