//! `GET /authorize`: an authorization request (code + PKCE S256 only).
//! The client and its redirect URI are checked first — until they are, an
//! error is shown here, never sent to an unchecked URI; then every other
//! error goes back to the client with `state` and `iss` (RFC 9207). A
//! valid request becomes a sign-in in progress, bound to the browser by a
//! cookie, and the browser goes to the identity provider.

use url::Url;

use crate::error::OAuthError;
use crate::records::{Pending, Request, ns};
use crate::state::Issuer;
use crate::time::{random, sha256};

/// The query of an authorization request; `resource` may repeat.
#[derive(Debug, Default)]
pub(crate) struct AuthorizeQuery {
    pub(crate) response_type: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) code_challenge: Option<String>,
    pub(crate) code_challenge_method: Option<String>,
    pub(crate) resources: Vec<String>,
}

impl AuthorizeQuery {
    pub(crate) fn parse(query: &str) -> AuthorizeQuery {
        let mut q = AuthorizeQuery::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let v = v.into_owned();
            match &*k {
                "response_type" => q.response_type = Some(v),
                "client_id" => q.client_id = Some(v),
                "redirect_uri" => q.redirect_uri = Some(v),
                "state" => q.state = Some(v),
                "scope" => q.scope = Some(v),
                "code_challenge" => q.code_challenge = Some(v),
                "code_challenge_method" => q.code_challenge_method = Some(v),
                "resource" => q.resources.push(v),
                _ => {}
            }
        }
        q
    }
}

/// What `authorize` answers.
pub(crate) enum Authorized {
    /// An error shown here: the redirect URI could not be trusted.
    Page(OAuthError),
    /// Back to the client (with an error, or a code).
    Client(Url),
    /// On to sign-in: the browser cookie to set and where to go.
    SignIn { cookie: String, to: SignInTarget },
}

/// Where the browser signs in.
pub(crate) enum SignInTarget {
    Idp(Url),
    Picker(String),
}

impl Issuer {
    /// Handle an authorization request.
    pub(crate) async fn authorize(&self, q: AuthorizeQuery) -> Authorized {
        let Some(client_id) = q.client_id.clone() else {
            return Authorized::Page(OAuthError::invalid_request("client_id is required"));
        };
        let client = match self.client(&client_id).await {
            Ok(c) => c,
            Err(e) => return Authorized::Page(e),
        };
        let redirect_uri = match (&q.redirect_uri, client.redirect_uris.as_slice()) {
            (Some(r), registered) if registered.contains(r) => r.clone(),
            (None, [only]) => only.clone(),
            (Some(r), _) => {
                return Authorized::Page(OAuthError::invalid_request(format!(
                    "redirect_uri {r} is not registered for client {client_id} (exact match required)"
                )));
            }
            (None, _) => return Authorized::Page(OAuthError::invalid_request("redirect_uri is required")),
        };
        let back = |e: OAuthError| match self.to_client(&redirect_uri, q.state.as_deref(), Err(&e)) {
            Ok(url) => Authorized::Client(url),
            Err(bad) => Authorized::Page(bad),
        };
        let request = match self.check_request(&q, &client_id, client.client_name.clone(), &redirect_uri) {
            Ok(r) => r,
            Err(e) => return back(e),
        };
        match self.begin_sign_in(request).await {
            Ok(a) => a,
            Err(e) => back(e),
        }
    }

    /// The request's response type, PKCE, resources and scopes.
    fn check_request(
        &self,
        q: &AuthorizeQuery,
        client_id: &str,
        client_name: Option<String>,
        redirect_uri: &str,
    ) -> Result<Request, OAuthError> {
        if q.response_type.as_deref() != Some("code") {
            return Err(OAuthError::unsupported_response_type("response_type must be code"));
        }
        let challenge = q
            .code_challenge
            .clone()
            .filter(|c| (43..=128).contains(&c.len()))
            .ok_or_else(|| OAuthError::invalid_request("code_challenge (PKCE, S256) is required"))?;
        if q.code_challenge_method.as_deref() != Some("S256") {
            return Err(OAuthError::invalid_request("code_challenge_method must be S256"));
        }
        let (resources, scopes) = self.check_resources(&q.resources, q.scope.as_deref())?;
        Ok(Request {
            client_id: client_id.to_owned(),
            client_name,
            redirect_uri: redirect_uri.to_owned(),
            state: q.state.clone(),
            challenge,
            scopes,
            resources,
        })
    }

    /// Every requested resource must be a route served here (RFC 8707
    /// `invalid_target`); the scopes granted are those requested that the
    /// routes offer (all they offer when none are requested).
    pub(crate) fn check_resources(
        &self,
        resources: &[String],
        scope: Option<&str>,
    ) -> Result<(Vec<String>, Vec<String>), OAuthError> {
        if resources.is_empty() {
            return Err(OAuthError::invalid_target(
                "name the MCP route the token is for with resource (RFC 8707)",
            ));
        }
        let served = self.resources.load();
        let mut offered: Vec<String> = Vec::new();
        let mut named: Vec<String> = Vec::new();
        for r in resources {
            let canonical = r.trim_end_matches('/');
            let Some(scopes) = served.get(canonical) else {
                return Err(OAuthError::invalid_target(format!(
                    "{r} is not a route this authorization server serves"
                )));
            };
            offered.extend(scopes.iter().cloned());
            if !named.iter().any(|n| n == canonical) {
                named.push(canonical.to_owned());
            }
        }
        let scopes = match scope {
            Some(s) => s
                .split_whitespace()
                .filter(|s| offered.iter().any(|o| o == s))
                .map(str::to_owned)
                .collect(),
            None => offered,
        };
        let mut scopes: Vec<String> = scopes;
        scopes.sort();
        scopes.dedup();
        Ok((named, scopes))
    }

    /// Store the sign-in in progress and send the browser to sign in.
    async fn begin_sign_in(&self, request: Request) -> Result<Authorized, OAuthError> {
        self.begin(request, None).await
    }

    /// Sign the browser's user in for another page of Tollgate's: once
    /// they are known, the browser goes to `then` (a path on the public
    /// listener) with `signin=ID` appended, which [`Issuer::signed_in_user`]
    /// turns into the user. The `Set-Cookie` value and where to send the
    /// browser now.
    ///
    /// # Errors
    ///
    /// The identity provider cannot be reached, or the store.
    pub async fn sign_in_then(&self, then: &str) -> Result<(String, String), OAuthError> {
        match self.begin(Request::default(), Some(then.to_owned())).await? {
            Authorized::SignIn { cookie, to } => {
                let to = match to {
                    SignInTarget::Idp(url) => url.to_string(),
                    SignInTarget::Picker(path) => path,
                };
                Ok((self.set_cookie(&cookie), to))
            }
            Authorized::Page(e) => Err(e),
            Authorized::Client(_) => Err(OAuthError::server_error("unexpected sign-in answer")),
        }
    }

    async fn begin(&self, request: Request, then: Option<String>) -> Result<Authorized, OAuthError> {
        let fail = || OAuthError::server_error("no randomness");
        let (id, cookie) = (random(24).ok_or_else(fail)?, random(24).ok_or_else(fail)?);
        let pending = Pending {
            request,
            browser: sha256(&cookie),
            nonce: random(24).ok_or_else(fail)?,
            verifier: random(48).ok_or_else(fail)?,
            csrf: random(24).ok_or_else(fail)?,
            user: None,
            then,
        };
        let to = match self
            .identity
            .start(&self.callback_url(), &id, &pending.nonce, &pending.verifier)
            .await?
        {
            crate::identity::Start::Redirect(url) => SignInTarget::Idp(url),
            crate::identity::Start::Pick => SignInTarget::Picker(format!("/oauth/signin?request={id}")),
        };
        self.store
            .put(ns::PENDING, &id, &pending, self.settings.sign_in_ttl)
            .await
            .map_err(crate::clients::unavailable)?;
        Ok(Authorized::SignIn { cookie, to })
    }

    /// Where the identity provider sends the browser back.
    pub(crate) fn callback_url(&self) -> String {
        format!("{}/oauth/callback", self.settings.issuer)
    }

    /// The client's redirect URI with a code or an error, `state` and
    /// `iss` (RFC 9207: the client can tell which server answered).
    pub(crate) fn to_client(
        &self,
        redirect_uri: &str,
        state: Option<&str>,
        answer: Result<&str, &OAuthError>,
    ) -> Result<Url, OAuthError> {
        let mut url = Url::parse(redirect_uri)
            .map_err(|e| OAuthError::invalid_request(format!("redirect_uri {redirect_uri}: {e}")))?;
        {
            let mut q = url.query_pairs_mut();
            match answer {
                Ok(code) => {
                    q.append_pair("code", code);
                }
                Err(e) => {
                    q.append_pair("error", e.code)
                        .append_pair("error_description", &e.description);
                }
            }
            if let Some(state) = state {
                q.append_pair("state", state);
            }
            q.append_pair("iss", &self.settings.issuer);
        }
        Ok(url)
    }
}
