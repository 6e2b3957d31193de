//! Identity assertions toward upstreams (Enterprise-Managed
//! Authorization, the MCP `ext-auth` extension, from the client side):
//! the ID token of a user's latest sign-in at the company identity
//! provider is kept until it expires, and exchanged there (RFC 8693
//! token exchange, `requested_token_type` ID-JAG) for an Identity
//! Assertion JWT naming an upstream's authorization server. The vault
//! redeems it there for the user's upstream token, with no consent click.
//!
//! Not on the request path of a call that has a fresh upstream token.

use std::time::Duration;

use serde::Deserialize;

use crate::error::OAuthError;
use crate::identity::KeptIdToken;
use crate::records::ns;
use crate::state::Issuer;
use crate::time::unix_now;

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
/// An ID token this close to its expiry is not exchanged.
const MARGIN: u64 = 10;

#[derive(Debug, Deserialize)]
struct ExchangeAnswer {
    access_token: String,
    issued_token_type: String,
}

fn failed(what: impl std::fmt::Display) -> OAuthError {
    OAuthError::temporarily_unavailable(format!("identity assertion from the identity provider failed: {what}"))
}

impl Issuer {
    /// Keep `subject`'s ID token from a sign-in, until it expires.
    pub(crate) async fn keep_id_token(&self, subject: &str, kept: &KeptIdToken) {
        let left = kept.expires_at.saturating_sub(unix_now());
        if left == 0 {
            return;
        }
        if let Err(e) = self
            .store
            .put(ns::ID_TOKEN, subject, kept, Duration::from_secs(left))
            .await
        {
            tracing::warn!(error = %e, "the ID token of a sign-in could not be kept");
        }
    }

    /// An Identity Assertion JWT for `subject`, for the authorization
    /// server `audience`, the `resource` and `scopes`: the identity
    /// provider's answer to exchanging the user's kept ID token. `None`
    /// when there is none (or it is about to expire): the user must sign
    /// in again.
    ///
    /// # Errors
    ///
    /// No identity provider is configured, the store is unreachable, or
    /// the identity provider refused or failed the exchange.
    pub async fn identity_assertion(
        &self,
        subject: &str,
        audience: &str,
        resource: &str,
        scopes: &[String],
    ) -> Result<Option<String>, OAuthError> {
        let (_, remote) = self
            .identity
            .provider()
            .ok_or_else(|| OAuthError::invalid_request("identity assertions need an identity provider"))?;
        let kept: Option<KeptIdToken> = self.store.get(ns::ID_TOKEN, subject).await.map_err(failed)?;
        let Some(kept) = kept.filter(|k| k.expires_at > unix_now() + MARGIN) else {
            return Ok(None);
        };
        let doc = remote.discovery().await.map_err(failed)?;
        let endpoint = doc.token_endpoint.clone().ok_or_else(|| failed("no token_endpoint"))?;
        let scope = scopes.join(" ");
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("subject_token", kept.id_token.as_str()),
            ("subject_token_type", ID_TOKEN),
            ("audience", audience),
            ("resource", resource),
        ];
        if !scope.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        let body = self.identity.token_request(&endpoint, &form).await.map_err(failed)?;
        let answer: ExchangeAnswer = serde_json::from_str(&body).map_err(failed)?;
        if answer.issued_token_type != ID_JAG {
            return Err(failed(format!("it issued a {}", answer.issued_token_type)));
        }
        Ok(Some(answer.access_token))
    }
}
