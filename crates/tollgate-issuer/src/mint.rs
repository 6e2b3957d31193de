//! Route tokens: JWT access tokens (RFC 9068, JOSE `typ` `at+jwt`) for
//! exactly the route URLs granted (`aud`), carrying the user as the
//! routes' authenticator maps claims by default — `sub`, `client_id`,
//! `scope`, `team`, `cost_center`, `groups`, `email` — and the grant's id
//! (`sid`), so that revoking the grant stops its tokens.

use serde_json::{Value, json};

use crate::error::OAuthError;
use crate::records::Grant;
use crate::state::Issuer;
use crate::time::{random, unix_now};

/// JOSE `typ` of access tokens.
pub(crate) const AT_JWT: &str = "at+jwt";

impl Issuer {
    /// An access token of `grant` for `resources` and `scopes`.
    pub(crate) fn mint(&self, grant: &Grant, resources: &[String], scopes: &[String]) -> Result<String, OAuthError> {
        let now = unix_now();
        let user = &grant.user;
        let mut claims = json!({
            "iss": self.settings.issuer,
            "sub": user.subject,
            "aud": resources,
            "client_id": grant.client_id,
            "scope": scopes.join(" "),
            "iat": now,
            "nbf": now,
            "exp": now + self.settings.access_ttl.as_secs(),
            // The grant's id leads the token id: the authenticator asks
            // whether the grant stands by the token id alone.
            "jti": format!("{}.{}", grant.id, random(12).ok_or_else(|| OAuthError::server_error("no randomness"))?),
            "sid": grant.id,
            "idp": user.idp,
        });
        let extra = [
            ("email", user.email.clone().map(Value::String)),
            ("team", user.team.clone().map(Value::String)),
            ("cost_center", user.cost_center.clone().map(Value::String)),
            ("groups", (!user.groups.is_empty()).then(|| json!(user.groups))),
        ];
        for (name, value) in extra {
            if let (Some(v), Some(obj)) = (value, claims.as_object_mut()) {
                obj.insert(name.into(), v);
            }
        }
        self.keys
            .sign(&claims, AT_JWT)
            .map_err(|e| OAuthError::server_error(e.to_string()))
    }

    /// The authenticator's view of this issuer: its keys and revocations.
    pub fn local_issuer(self: &std::sync::Arc<Self>) -> tollgate_auth::LocalIssuer {
        tollgate_auth::LocalIssuer {
            issuer: self.settings.issuer.clone(),
            jwks: self.keys.jwks(),
            revocations: self.clone(),
        }
    }

    /// The grant and client of an access token we signed.
    pub(crate) fn grant_of_access_token(&self, token: &str) -> Option<(String, String)> {
        let claims = self.keys.verify(token, AT_JWT)?;
        let sid = claims.get("sid")?.as_str()?.to_owned();
        let client = claims.get("client_id")?.as_str()?.to_owned();
        Some((sid, client))
    }
}

#[async_trait::async_trait]
impl tollgate_auth::Revocations for Issuer {
    async fn is_revoked(&self, token_id: &str) -> Result<bool, String> {
        let Some((grant, _)) = token_id.split_once('.') else {
            return Ok(true);
        };
        self.grant_is_live(grant)
            .await
            .map(|live| !live)
            .map_err(|e| e.to_string())
    }
}
