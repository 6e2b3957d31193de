//! Enterprise-managed authorization (the MCP `ext-auth` extension): an
//! Identity Assertion JWT Authorization Grant (ID-JAG, JOSE `typ`
//! `oauth-id-jag+jwt`) issued by a trusted enterprise IdP is redeemed at
//! the token endpoint with the JWT bearer grant (RFC 7523) for a route
//! token, with no browser step. Checked: the issuer is trusted and signed
//! it, `aud` is this authorization server, `client_id` is the client
//! presenting it, `exp`, the `resource` is a route served here, and its
//! `jti` was never redeemed before. No refresh token is issued: the client
//! asks its IdP for a new assertion.

use std::time::Duration;

use serde_json::Value;
use tollgate_config::UserClaims;
use url::Url;

use crate::error::OAuthError;
use crate::identity::user_from;
use crate::records::{Grant, ns};
use crate::remote::{RemoteIssuer, claim_list, claim_str};
use crate::state::Issuer;
use crate::time::{random, unix_now};
use crate::token::TokenForm;

/// JOSE `typ` of an identity assertion.
pub const ID_JAG_TYP: &str = "oauth-id-jag+jwt";

/// A trusted assertion issuer.
#[derive(Debug, Clone)]
pub struct AssertionSettings {
    /// Its issuer.
    pub issuer: String,
    /// Its keys (default: from its discovery document).
    pub jwks_uri: Option<Url>,
    /// Which claims make up the user.
    pub claims: UserClaims,
    /// Allow an `http://` issuer on a loopback host (development).
    pub allow_http: bool,
}

/// The trusted assertion issuers.
#[derive(Debug)]
pub(crate) struct Assertions(Vec<(RemoteIssuer, UserClaims)>);

impl Assertions {
    pub(crate) fn new(settings: Vec<AssertionSettings>, http: reqwest::Client) -> Assertions {
        Assertions(
            settings
                .into_iter()
                .map(|s| {
                    (
                        RemoteIssuer::new(&s.issuer, s.jwks_uri, s.allow_http, http.clone()),
                        s.claims,
                    )
                })
                .collect(),
        )
    }
}

fn refused(why: impl std::fmt::Display) -> OAuthError {
    OAuthError::invalid_grant(format!("identity assertion refused: {why}"))
}

/// The unverified `iss` of a JWT, to pick the issuer's keys.
fn issuer_of(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

impl Issuer {
    /// Redeem an identity assertion presented by `client_id`.
    pub(crate) async fn redeem_assertion(&self, form: &TokenForm, client_id: &str) -> Result<Value, OAuthError> {
        let assertion = form
            .assertion
            .as_deref()
            .ok_or_else(|| OAuthError::invalid_request("assertion is required"))?;
        let iss = issuer_of(assertion).ok_or_else(|| refused("not a JWT with an issuer"))?;
        let (remote, names) = self
            .assertions
            .0
            .iter()
            .find(|(r, _)| r.issuer == iss)
            .ok_or_else(|| refused(format!("{iss} is not a trusted assertion issuer")))?;
        let claims = remote
            .verify(assertion, &self.settings.issuer, Some(ID_JAG_TYP))
            .await
            .map_err(refused)?;
        if claim_str(&claims, "client_id").as_deref() != Some(client_id) {
            return Err(refused("it was issued for another client (client_id)"));
        }
        let jti = claim_str(&claims, "jti").ok_or_else(|| refused("no jti"))?;
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        let ttl = Duration::from_secs(exp.saturating_sub(unix_now()) + 60);
        let fresh = self
            .store
            .put_new(ns::JTI, &format!("{iss}\u{1f}{jti}"), &true, ttl)
            .await
            .map_err(crate::clients::unavailable)?;
        if !fresh {
            return Err(refused("it was redeemed before (jti)"));
        }
        let mut resources = claim_list(&claims, "resource");
        if resources.is_empty() {
            resources = form.resources.clone();
        }
        let scope = claim_str(&claims, "scope").or_else(|| form.scope.clone());
        let (resources, scopes) = self.check_resources(&resources, scope.as_deref())?;
        let user = user_from(&iss, &claims, names).ok_or_else(|| refused("no subject"))?;
        let grant = Grant {
            id: random(18).ok_or_else(|| OAuthError::server_error("no randomness"))?,
            client_id: client_id.to_owned(),
            user,
            scopes: scopes.clone(),
            resources: resources.clone(),
            created: unix_now(),
            via: "jwt-bearer".into(),
        };
        self.put_grant(&grant).await?;
        tracing::info!(client_id, subject = %grant.user.subject, issuer = %iss, "identity assertion redeemed");
        self.answer(&grant, &resources, &scopes, false).await
    }
}
