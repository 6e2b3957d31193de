//! The token endpoint's workings: the client authenticates
//! (`client_secret_basic` or `client_secret_post`), then redeems a code
//! (with its PKCE verifier) or a refresh token, which is rotated: each
//! refresh token works once and its answer carries the next one.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{Access, AuthServer, Caller, parse_scopes, random, s256, same, sweep, valid_pkce};

/// A token request's form (RFC 6749 §4.1.3, §6; RFC 7636 §4.5; RFC 8707).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct TokenForm {
    pub(crate) grant_type: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) code_verifier: Option<String>,
    pub(crate) refresh_token: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
}

/// How the client presented itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientAuth {
    /// HTTP Basic: the id and secret, already form-decoded.
    Basic(String, String),
    /// No `Authorization` header: `client_id` and `client_secret` in the form.
    Form,
}

/// A token endpoint's refusal (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenError {
    /// The error code, e.g. `invalid_grant`.
    pub(crate) error: &'static str,
    /// What went wrong, for the client's developer.
    pub(crate) description: String,
}

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TokenSet {
    pub(crate) access_token: String,
    pub(crate) token_type: &'static str,
    pub(crate) expires_in: u64,
    pub(crate) refresh_token: String,
    pub(crate) scope: String,
}

fn refused(error: &'static str, description: impl Into<String>) -> TokenError {
    TokenError {
        error,
        description: description.into(),
    }
}

// === impl AuthServer ===

impl AuthServer {
    /// Answers a token request from a client presenting itself by `auth`.
    ///
    /// # Errors
    ///
    /// `invalid_client` for a wrong client, `invalid_grant` for a code or
    /// refresh token that is unknown, used, expired or not bound to what is
    /// presented, and the other RFC 6749 codes for malformed requests.
    pub(crate) fn token(&self, auth: &ClientAuth, form: &TokenForm) -> Result<TokenSet, TokenError> {
        self.authenticate(auth, form)?;
        if form.resource.as_deref().is_some_and(|r| r != self.settings.resource) {
            return Err(refused("invalid_target", "Notes protects only its MCP endpoint"));
        }
        match form.grant_type.as_deref() {
            Some("authorization_code") => self.redeem_code(form),
            Some("refresh_token") => self.redeem_refresh(form),
            Some(_) => Err(refused("unsupported_grant_type", "authorization_code or refresh_token")),
            None => Err(refused("invalid_request", "grant_type is required")),
        }
    }

    /// Checks the client: one method, the registered id, its secret.
    fn authenticate(&self, auth: &ClientAuth, form: &TokenForm) -> Result<(), TokenError> {
        let (id, secret) = match auth {
            ClientAuth::Basic(..) if form.client_secret.is_some() => {
                return Err(refused("invalid_request", "one client authentication method at a time"));
            }
            ClientAuth::Basic(id, secret) => (Some(id.as_str()), Some(secret.as_str())),
            ClientAuth::Form => (form.client_id.as_deref(), form.client_secret.as_deref()),
        };
        let s = &self.settings;
        let good = id == Some(s.client_id.as_str())
            && secret.is_some_and(|secret| same(secret.as_bytes(), &s.client_secret))
            && form.client_id.as_deref().is_none_or(|i| i == s.client_id);
        if good {
            Ok(())
        } else {
            Err(refused("invalid_client", "unknown client or wrong secret"))
        }
    }

    /// `authorization_code`: the code, once, with the verifier of its challenge.
    fn redeem_code(&self, form: &TokenForm) -> Result<TokenSet, TokenError> {
        let (Some(code), Some(verifier)) = (form.code.as_deref(), form.code_verifier.as_deref()) else {
            return Err(refused("invalid_request", "code and code_verifier are required"));
        };
        if form
            .redirect_uri
            .as_deref()
            .is_some_and(|r| r != self.settings.redirect_uri)
        {
            return Err(refused(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        // Removed whatever follows: a code is good for one try only.
        let (_, code) = self
            .codes
            .remove(code)
            .ok_or_else(|| refused("invalid_grant", "unknown, used or expired code"))?;
        if code.expires <= SystemTime::now() {
            return Err(refused("invalid_grant", "unknown, used or expired code"));
        }
        if !valid_pkce(verifier) || !same(s256(verifier).as_bytes(), code.challenge.as_bytes()) {
            return Err(refused(
                "invalid_grant",
                "the code_verifier does not match the code_challenge",
            ));
        }
        self.issue(code.caller)
    }

    /// `refresh_token`: the token, once; its answer carries the next one.
    fn redeem_refresh(&self, form: &TokenForm) -> Result<TokenSet, TokenError> {
        let token = form
            .refresh_token
            .as_deref()
            .ok_or_else(|| refused("invalid_request", "refresh_token is required"))?;
        let unknown = || refused("invalid_grant", "unknown or used refresh token");
        let granted = self.refresh.get(token).ok_or_else(unknown)?.scopes.clone();
        let scopes = match form.scope.as_deref() {
            None => granted,
            Some(scope) => parse_scopes(Some(scope))
                .filter(|asked| asked.iter().all(|s| granted.contains(s)))
                .ok_or_else(|| refused("invalid_scope", "more than the grant holds"))?,
        };
        // Removed before the next is issued: a refresh token works once.
        let (_, caller) = self.refresh.remove(token).ok_or_else(unknown)?;
        self.issue(Caller { scopes, ..caller })
    }

    /// A fresh access token and refresh token for `caller`.
    fn issue(&self, caller: Caller) -> Result<TokenSet, TokenError> {
        let no_random = || refused("server_error", "no randomness");
        let (access, refresh) = (random().ok_or_else(no_random)?, random().ok_or_else(no_random)?);
        let ttl = self.settings.token_ttl;
        tracing::info!(user = %caller.user, scopes = %caller.scopes.join(" "), "notes: tokens issued");
        let set = TokenSet {
            access_token: access.clone(),
            token_type: "Bearer",
            expires_in: ttl.as_secs(),
            refresh_token: refresh.clone(),
            scope: caller.scopes.join(" "),
        };
        sweep(&self.access, |a| a.expires);
        self.access.insert(
            access,
            Access {
                caller: caller.clone(),
                expires: SystemTime::now() + ttl,
            },
        );
        self.refresh.insert(refresh, caller);
        Ok(set)
    }
}
