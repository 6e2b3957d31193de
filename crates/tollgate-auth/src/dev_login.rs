//! The development issuer's sign-in: the OAuth 2.1 authorization code
//! grant with PKCE (S256), so that the console's real sign-in flow runs
//! under `make run` and in tests without an external identity provider.
//! It serves one client, the console, and issues tokens for one resource,
//! the console's URL: never for an MCP route.
//!
//! Stateless: an authorization code is a short-lived JWT signed with the
//! development key (JOSE `typ` `dev-code`), carrying the user, the client,
//! the redirect URI, the PKCE challenge and the resource. A code can be
//! redeemed more than once within its minute — a development shortcut that
//! a real identity provider does not take. Which users exist comes from
//! `[[dev_issuer.users]]`; the HTTP endpoints are the server's.

use std::time::Duration;

use aws_lc_rs::digest;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_config::DevUser;

use crate::dev::DevIssuer;
use crate::fetch::unix_now;

const CODE_TYP: &str = "dev-code";
const CODE_TTL: u64 = 60;
const TOKEN_TTL: Duration = Duration::from_secs(3600);

/// The one client the development issuer signs in: the console.
#[derive(Debug, Clone)]
pub struct DevClient<'a> {
    /// Its client id.
    pub client_id: &'a str,
    /// Its secret, when it is a confidential client.
    pub secret: Option<&'a [u8]>,
    /// The only redirect URI codes are sent to.
    pub redirect_uri: &'a str,
    /// The only resource (RFC 8707) tokens are issued for: the console's
    /// URL.
    pub resource: &'a str,
}

/// An authorization request's parameters (RFC 6749 §4.1.1, RFC 7636).
#[derive(Debug, Default, Deserialize)]
pub struct AuthorizeParams {
    /// Must be `code`.
    pub response_type: Option<String>,
    /// The client.
    pub client_id: Option<String>,
    /// Where to send the code.
    pub redirect_uri: Option<String>,
    /// BASE64URL(SHA-256(verifier)).
    pub code_challenge: Option<String>,
    /// Must be `S256`.
    pub code_challenge_method: Option<String>,
    /// The RFC 8707 resource the token is for.
    pub resource: Option<String>,
    /// Which user signs in (a `[[dev_issuer.users]]` subject).
    pub login_hint: Option<String>,
    /// Returned unchanged with the code.
    pub state: Option<String>,
}

/// A token request's parameters (authorization code grant).
#[derive(Debug, Default, Deserialize)]
pub struct TokenParams {
    /// Must be `authorization_code`.
    pub grant_type: Option<String>,
    /// The code.
    pub code: Option<String>,
    /// As in the authorization request.
    pub redirect_uri: Option<String>,
    /// The PKCE verifier.
    pub code_verifier: Option<String>,
    /// The client, when not authenticated with HTTP Basic.
    pub client_id: Option<String>,
    /// Its secret (`client_secret_post`).
    pub client_secret: Option<String>,
}

/// Why a sign-in step was refused: an OAuth error code and a description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct DevLoginError {
    /// The RFC 6749 error code (`invalid_request`, `invalid_grant`, ...).
    pub code: &'static str,
    /// What was wrong.
    pub description: String,
}

fn refuse(code: &'static str, description: impl Into<String>) -> DevLoginError {
    DevLoginError {
        code,
        description: description.into(),
    }
}

#[derive(Debug, Deserialize)]
struct Code {
    sub: String,
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
}

impl DevIssuer {
    /// An authorization code for `params`, signing in the user named by
    /// `login_hint` (else the first of `users`). The caller redirects to
    /// `redirect_uri` with it.
    ///
    /// # Errors
    ///
    /// A parameter is missing or wrong (`invalid_target` for any resource
    /// but the client's), or the user is unknown.
    pub fn authorize(
        &self,
        params: &AuthorizeParams,
        client: &DevClient<'_>,
        users: &[DevUser],
    ) -> Result<String, DevLoginError> {
        if params.response_type.as_deref() != Some("code") {
            return Err(refuse("unsupported_response_type", "response_type must be code"));
        }
        if params.client_id.as_deref() != Some(client.client_id) {
            return Err(refuse("unauthorized_client", "unknown client_id"));
        }
        if params.redirect_uri.as_deref() != Some(client.redirect_uri) {
            return Err(refuse("invalid_request", "redirect_uri is not the client's"));
        }
        let (Some(challenge), Some("S256")) = (&params.code_challenge, params.code_challenge_method.as_deref()) else {
            return Err(refuse("invalid_request", "PKCE with S256 is required"));
        };
        match params.resource.as_deref() {
            Some(r) if r == client.resource => {}
            Some(_) => {
                return Err(refuse(
                    "invalid_target",
                    "this issuer signs in to the console only: resource must be the console's URL",
                ));
            }
            None => return Err(refuse("invalid_target", "resource is required")),
        }
        let user = match &params.login_hint {
            Some(hint) => users.iter().find(|u| &u.subject == hint),
            None => users.first(),
        }
        .ok_or_else(|| refuse("access_denied", "no such [[dev_issuer.users]] user"))?;
        let claims = json!({
            "iss": self.issuer(),
            "sub": user.subject,
            "client_id": client.client_id,
            "redirect_uri": client.redirect_uri,
            "challenge": challenge,
            "resource": client.resource,
            "exp": unix_now() + CODE_TTL,
        });
        self.sign(&claims, CODE_TYP).map_err(|e| refuse("server_error", e.0))
    }

    /// Redeem a code from [`DevIssuer::authorize`] for an access token for
    /// the client's resource, carrying the user's claims. `basic` is the
    /// client id and secret of an HTTP Basic `Authorization` header.
    ///
    /// # Errors
    ///
    /// The client fails authentication, or the code, redirect URI or PKCE
    /// verifier does not match.
    pub fn redeem(
        &self,
        params: &TokenParams,
        basic: Option<(String, String)>,
        client: &DevClient<'_>,
        users: &[DevUser],
    ) -> Result<Value, DevLoginError> {
        if params.grant_type.as_deref() != Some("authorization_code") {
            return Err(refuse(
                "unsupported_grant_type",
                "grant_type must be authorization_code",
            ));
        }
        let (id, secret) = match basic {
            Some((id, secret)) => (Some(id), Some(secret)),
            None => (params.client_id.clone(), params.client_secret.clone()),
        };
        let secret_ok = match client.secret {
            Some(expected) => secret.is_some_and(|s| constant_eq(s.as_bytes(), expected)),
            None => true,
        };
        if id.as_deref() != Some(client.client_id) || !secret_ok {
            return Err(refuse("invalid_client", "client authentication failed"));
        }
        let code = self.read_code(params.code.as_deref().unwrap_or_default())?;
        if code.client_id != client.client_id
            || code.resource != client.resource
            || params.redirect_uri.as_deref() != Some(code.redirect_uri.as_str())
        {
            return Err(refuse(
                "invalid_grant",
                "the code was issued to another client, redirect URI or resource",
            ));
        }
        let verifier = params.code_verifier.as_deref().unwrap_or_default();
        if URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, verifier.as_bytes())) != code.challenge {
            return Err(refuse("invalid_grant", "the PKCE verifier does not match"));
        }
        let user = users
            .iter()
            .find(|u| u.subject == code.sub)
            .ok_or_else(|| refuse("invalid_grant", "the user is gone"))?;
        let mut extra = serde_json::Map::new();
        extra.insert("client_id".into(), json!(client.client_id));
        extra.insert("groups".into(), json!(user.groups));
        if let Some(team) = &user.team {
            extra.insert("team".into(), json!(team));
        }
        if let Some(cc) = &user.cost_center {
            extra.insert("cost_center".into(), json!(cc));
        }
        let token = self
            .mint_with(
                &user.subject,
                extra,
                &["openid".to_owned()],
                TOKEN_TTL,
                &[code.resource],
            )
            .map_err(|e| refuse("server_error", e.0))?;
        Ok(json!({"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_TTL.as_secs()}))
    }

    fn read_code(&self, code: &str) -> Result<Code, DevLoginError> {
        let bad = || refuse("invalid_grant", "the code is not valid or has expired");
        let header = jsonwebtoken::decode_header(code).map_err(|_| bad())?;
        if header.typ.as_deref() != Some(CODE_TYP) {
            return Err(bad());
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[self.issuer()]);
        validation.validate_aud = false;
        validation.leeway = 0;
        jsonwebtoken::decode::<Code>(code, &self.verify_key, &validation)
            .map(|d| d.claims)
            .map_err(|_| bad())
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

#[cfg(test)]
mod tests;
