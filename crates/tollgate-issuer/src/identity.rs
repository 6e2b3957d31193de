//! Where users sign in: the company identity provider through OpenID
//! Connect (Tollgate a confidential client: code + PKCE S256, `nonce`, the
//! ID token verified), or — in development — a pick of the development
//! issuer's users. Either way the result is a [`User`] with the claims
//! mapped to Tollgate's principal.

use serde::Deserialize;
use tollgate_config::{DevUser, UserClaims};
use url::Url;

use crate::error::OAuthError;
use crate::records::User;
use crate::remote::{EXCHANGE_TIMEOUT, RemoteIssuer, claim_list, claim_str};

/// The company identity provider, as Tollgate's OIDC client.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// Its issuer.
    pub issuer: String,
    /// Tollgate's client id there.
    pub client_id: String,
    /// Tollgate's client secret there.
    pub client_secret: Vec<u8>,
    /// Scopes requested.
    pub scopes: Vec<String>,
    /// Which claims make up the user.
    pub claims: UserClaims,
    /// Allow an `http://` issuer on a loopback host (development).
    pub allow_http: bool,
}

/// Where users sign in.
#[derive(Debug, Clone)]
pub enum IdentitySettings {
    /// The company identity provider.
    Oidc(OidcSettings),
    /// Development: pick one of these users, no password.
    Development(Vec<DevUser>),
}

/// How a sign-in starts.
pub(crate) enum Start {
    /// Send the browser here.
    Redirect(Url),
    /// Show the development user picker.
    Pick,
}

#[derive(Debug)]
pub(crate) struct Identity {
    settings: IdentitySettings,
    remote: Option<RemoteIssuer>,
    http: reqwest::Client,
}

/// A user's ID token from their latest sign-in at the identity provider.
#[derive(Debug, Clone, serde::Serialize, Deserialize)]
pub(crate) struct KeptIdToken {
    pub(crate) id_token: String,
    /// Its `exp` (Unix seconds).
    pub(crate) expires_at: u64,
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
}

fn failed(what: impl std::fmt::Display) -> OAuthError {
    OAuthError::temporarily_unavailable(format!("sign-in at the identity provider failed: {what}"))
}

impl Identity {
    pub(crate) fn new(settings: IdentitySettings, http: reqwest::Client) -> Identity {
        let remote = match &settings {
            IdentitySettings::Oidc(o) => Some(RemoteIssuer::new(&o.issuer, None, o.allow_http, http.clone())),
            IdentitySettings::Development(_) => None,
        };
        Identity { settings, remote, http }
    }

    /// Where the browser goes to sign in; the IdP sends it back to
    /// `callback` with `state`.
    pub(crate) async fn start(
        &self,
        callback: &str,
        state: &str,
        nonce: &str,
        verifier: &str,
    ) -> Result<Start, OAuthError> {
        let (IdentitySettings::Oidc(o), Some(remote)) = (&self.settings, &self.remote) else {
            return Ok(Start::Pick);
        };
        let doc = remote.discovery().await.map_err(failed)?;
        let mut url = doc
            .authorization_endpoint
            .clone()
            .ok_or_else(|| failed("its discovery document names no authorization_endpoint"))?;
        let challenge = crate::time::sha256(verifier);
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &o.client_id)
            .append_pair("redirect_uri", callback)
            .append_pair("scope", &o.scopes.join(" "))
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        Ok(Start::Redirect(url))
    }

    /// Redeem the IdP's `code`, verify the ID token (issuer, audience =
    /// Tollgate's client id, expiry, `nonce`) and map its claims; the user
    /// and the ID token (kept for identity assertions toward upstreams).
    pub(crate) async fn finish(
        &self,
        callback: &str,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<(User, KeptIdToken), OAuthError> {
        let (IdentitySettings::Oidc(o), Some(remote)) = (&self.settings, &self.remote) else {
            return Err(OAuthError::invalid_request("no identity provider is configured"));
        };
        let doc = remote.discovery().await.map_err(failed)?;
        let endpoint = doc
            .token_endpoint
            .clone()
            .ok_or_else(|| failed("its discovery document names no token_endpoint"))?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", callback),
            ("code_verifier", verifier),
        ];
        let body = self.token_request(&endpoint, &form).await.map_err(failed)?;
        let answer: TokenAnswer = serde_json::from_str(&body).map_err(failed)?;
        let id_token = answer.id_token.ok_or_else(|| failed("no ID token in its answer"))?;
        let claims = remote
            .verify(&id_token, &o.client_id, None)
            .await
            .map_err(|e| failed(format!("ID token: {e}")))?;
        if claim_str(&claims, "nonce").as_deref() != Some(nonce) {
            return Err(failed("the ID token's nonce does not match this sign-in"));
        }
        if let Some(azp) = claim_str(&claims, "azp")
            && azp != o.client_id
        {
            return Err(failed("the ID token was issued to another client (azp)"));
        }
        let user =
            user_from(&remote.issuer, &claims, &o.claims).ok_or_else(|| failed("the ID token names no subject"))?;
        let kept = KeptIdToken {
            id_token,
            expires_at: claims["exp"].as_u64().unwrap_or_default(),
        };
        Ok((user, kept))
    }

    /// The company identity provider's settings and discovery, when users
    /// sign in there.
    pub(crate) fn provider(&self) -> Option<(&OidcSettings, &RemoteIssuer)> {
        match (&self.settings, &self.remote) {
            (IdentitySettings::Oidc(o), Some(remote)) => Some((o, remote)),
            _ => None,
        }
    }

    /// POST `form` to the identity provider's token endpoint as
    /// Tollgate's client (`client_secret_basic`, form-encoded per RFC 6749
    /// §2.3.1): the answer's body, or why there is none.
    pub(crate) async fn token_request(&self, endpoint: &Url, form: &[(&str, &str)]) -> Result<String, String> {
        let Some((o, _)) = self.provider() else {
            return Err("no identity provider is configured".into());
        };
        let secret = String::from_utf8_lossy(&o.client_secret);
        let res = self
            .http
            .post(endpoint.as_str())
            .basic_auth(form_encode(&o.client_id), Some(form_encode(&secret)))
            .form(form)
            .timeout(EXCHANGE_TIMEOUT)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = res.status();
        let body = res.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("its token endpoint answered {status}: {body}"));
        }
        Ok(body)
    }

    /// The development user `login`, when development sign-in is on.
    pub(crate) fn dev_user(&self, login: &str, issuer: &str) -> Option<User> {
        let IdentitySettings::Development(users) = &self.settings else {
            return None;
        };
        let u = users.iter().find(|u| u.subject == login)?;
        Some(User {
            idp: issuer.to_owned(),
            subject: u.subject.clone(),
            email: None,
            team: u.team.clone(),
            cost_center: u.cost_center.clone(),
            groups: u.groups.clone(),
        })
    }

    /// The development users' subjects (for the picker).
    pub(crate) fn dev_logins(&self) -> Vec<String> {
        match &self.settings {
            IdentitySettings::Development(users) => users.iter().map(|u| u.subject.clone()).collect(),
            IdentitySettings::Oidc(_) => Vec::new(),
        }
    }
}

/// A user from verified claims and the claim names to read.
pub(crate) fn user_from(idp: &str, claims: &serde_json::Value, names: &UserClaims) -> Option<User> {
    Some(User {
        idp: idp.to_owned(),
        subject: claim_str(claims, &names.subject).filter(|s| !s.is_empty())?,
        email: claim_str(claims, &names.email),
        team: claim_str(claims, &names.team),
        cost_center: claim_str(claims, &names.cost_center),
        groups: claim_list(claims, &names.groups),
    })
}

/// RFC 6749 §2.3.1: client id and secret are form-encoded before HTTP
/// Basic encoding (the vault's upstream client uses it too).
pub fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
