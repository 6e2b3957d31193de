//! The browser's way through a sign-in after `authorize`: back from the
//! identity provider (`/oauth/callback`) or the development picker
//! (`/oauth/signin`), then the consent page (`/oauth/consent`), then a
//! code to the client. Each step needs the browser cookie set at
//! `authorize` (the sign-in ends in the browser it started in), and the
//! consent form its CSRF token. A consent given once for a client, scopes
//! and routes is remembered until the user revokes it.

use std::time::Duration;

use axum::response::Response;
use url::Url;

use crate::error::OAuthError;
use crate::pages;
use crate::records::{Code, Consent, Pending, SignedIn, User, consent_key, ns};
use crate::state::Issuer;
use crate::time::{random, same, sha256, unix_now};

/// How long a code may wait to be redeemed.
const CODE_TTL: Duration = Duration::from_secs(60);

/// How long a finished sign-in waits for the page that asked for it.
const SIGNED_IN_TTL: Duration = Duration::from_secs(300);

/// How long a remembered consent lasts without use.
const CONSENT_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// What a sign-in step answers.
pub(crate) enum Next {
    /// A page of ours.
    Page(Response),
    /// Back to the client.
    Client(Url),
}

impl Issuer {
    /// The sign-in `id` begun in the browser that holds `cookie`.
    async fn pending(&self, id: &str, cookie: Option<&str>) -> Result<Pending, OAuthError> {
        let pending: Pending = self
            .store
            .get(ns::PENDING, id)
            .await
            .map_err(crate::clients::unavailable)?
            .ok_or_else(|| {
                OAuthError::invalid_request("no such sign-in in progress (or it took too long): start again")
            })?;
        match cookie {
            Some(c) if same(&pending.browser, &sha256(c)) => Ok(pending),
            _ => Err(OAuthError::access_denied(
                "this sign-in was started in another browser (its cookie is missing)",
            )),
        }
    }

    /// Back from the identity provider with a code (or an error).
    pub(crate) async fn idp_callback(
        &self,
        state: &str,
        code: Option<&str>,
        error: Option<&str>,
        cookie: Option<&str>,
    ) -> Next {
        let pending = match self.pending(state, cookie).await {
            Ok(p) => p,
            Err(e) => return Next::Page(pages::error_page(&e)),
        };
        let user = match (code, error) {
            (_, Some(error)) => Err(OAuthError::access_denied(format!(
                "the identity provider answered {error}"
            ))),
            (None, None) => Err(OAuthError::invalid_request("the identity provider sent no code")),
            (Some(code), None) => {
                self.identity
                    .finish(&self.callback_url(), code, &pending.verifier, &pending.nonce)
                    .await
            }
        };
        match user {
            Ok((user, id_token)) => {
                self.keep_id_token(&user.subject, &id_token).await;
                self.signed_in(state, pending, user).await
            }
            Err(e) => self.finish_with(state, &pending, Err(e)).await,
        }
    }

    /// The development picker's answer.
    pub(crate) async fn dev_sign_in(&self, request: &str, login: &str, cookie: Option<&str>) -> Next {
        let pending = match self.pending(request, cookie).await {
            Ok(p) => p,
            Err(e) => return Next::Page(pages::error_page(&e)),
        };
        match self.identity.dev_user(login, &self.settings.issuer) {
            Some(user) => self.signed_in(request, pending, user).await,
            None => Next::Page(pages::picker(request, &self.identity.dev_logins())),
        }
    }

    /// The development picker for sign-in `request`.
    pub(crate) async fn picker(&self, request: &str, cookie: Option<&str>) -> Response {
        match self.pending(request, cookie).await {
            Ok(_) => pages::picker(request, &self.identity.dev_logins()),
            Err(e) => pages::error_page(&e),
        }
    }

    /// The user is known: on to the page that asked for the sign-in; for
    /// an authorization, a code at once when they consented before, else
    /// the consent page.
    async fn signed_in(&self, id: &str, mut pending: Pending, user: User) -> Next {
        if let Some(then) = pending.then.take() {
            return self.continue_to(id, &then, pending.browser, user).await;
        }
        let req = &pending.request;
        let key = consent_key(&user, &req.client_id);
        let remembered: Option<Consent> = self.store.get(ns::CONSENT, &key).await.ok().flatten();
        let covered = remembered.is_some_and(|c| {
            req.scopes.iter().all(|s| c.scopes.contains(s)) && req.resources.iter().all(|r| c.resources.contains(r))
        });
        if covered {
            pending.user = Some(user);
            return self.finish_with(id, &pending, Ok(())).await;
        }
        let host = Url::parse(&self.settings.issuer)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let page = pages::consent(id, &pending.csrf, &pending.request, &user, &host);
        pending.user = Some(user);
        match self
            .store
            .put(ns::PENDING, id, &pending, self.settings.sign_in_ttl)
            .await
        {
            Ok(()) => Next::Page(page),
            Err(e) => Next::Page(pages::error_page(&crate::clients::unavailable(e))),
        }
    }

    /// The consent form's answer.
    pub(crate) async fn consent(&self, request: &str, csrf: &str, allow: bool, cookie: Option<&str>) -> Next {
        let pending = match self.pending(request, cookie).await {
            Ok(p) => p,
            Err(e) => return Next::Page(pages::error_page(&e)),
        };
        let Some(user) = pending.user.clone() else {
            return Next::Page(pages::error_page(&OAuthError::invalid_request("not signed in yet")));
        };
        if !same(&pending.csrf, csrf) {
            return Next::Page(pages::error_page(&OAuthError::access_denied(
                "the consent form's token does not match this sign-in",
            )));
        }
        if !allow {
            return self
                .finish_with(
                    request,
                    &pending,
                    Err(OAuthError::access_denied("the user denied the request")),
                )
                .await;
        }
        let req = &pending.request;
        let consent = Consent {
            scopes: req.scopes.clone(),
            resources: req.resources.clone(),
            granted: unix_now(),
        };
        let key = consent_key(&user, &req.client_id);
        if let Err(e) = self.store.put(ns::CONSENT, &key, &consent, CONSENT_TTL).await {
            return Next::Page(pages::error_page(&crate::clients::unavailable(e)));
        }
        tracing::info!(subject = %user.subject, client_id = %req.client_id, scopes = ?req.scopes, "consent given");
        self.finish_with(request, &pending, Ok(())).await
    }

    /// End sign-in `id`: a code (when `outcome` is `Ok` and a user is
    /// known) or the error, to the client.
    async fn finish_with(&self, id: &str, pending: &Pending, outcome: Result<(), OAuthError>) -> Next {
        let _ = self.store.delete(ns::PENDING, id).await;
        let req = &pending.request;
        let code = match (outcome, &pending.user) {
            (Ok(()), Some(user)) => self.issue_code(pending, user.clone()).await,
            (Ok(()), None) => Err(OAuthError::access_denied("nobody signed in")),
            (Err(e), _) => Err(e),
        };
        let answer = match &code {
            Ok(code) => self.to_client(&req.redirect_uri, req.state.as_deref(), Ok(code)),
            Err(e) => self.to_client(&req.redirect_uri, req.state.as_deref(), Err(e)),
        };
        match answer {
            Ok(url) => Next::Client(url),
            Err(e) => Next::Page(pages::error_page(&e)),
        }
    }

    /// End sign-in `id` for another page: keep who signed in, in which
    /// browser, for a few minutes, and send the browser to `then`.
    async fn continue_to(&self, id: &str, then: &str, browser: String, user: User) -> Next {
        let _ = self.store.delete(ns::PENDING, id).await;
        let Some(key) = random(24) else {
            return Next::Page(pages::error_page(&OAuthError::server_error("no randomness")));
        };
        let record = SignedIn { user, browser };
        if let Err(e) = self.store.put(ns::SIGNED_IN, &key, &record, SIGNED_IN_TTL).await {
            return Next::Page(pages::error_page(&crate::clients::unavailable(e)));
        }
        let sep = if then.contains('?') { '&' } else { '?' };
        match Url::parse(&format!("{}{then}{sep}signin={key}", self.settings.issuer)) {
            Ok(url) => Next::Client(url),
            Err(e) => Next::Page(pages::error_page(&OAuthError::server_error(e.to_string()))),
        }
    }

    /// Who signed in for sign-in `id` begun by [`Issuer::sign_in_then`],
    /// in the browser whose cookie is `cookie`; single use.
    ///
    /// # Errors
    ///
    /// Unknown, used or expired, another browser's, or the store failed.
    pub async fn signed_in_user(&self, id: &str, cookie: Option<&str>) -> Result<User, OAuthError> {
        let record: SignedIn = self
            .store
            .take(ns::SIGNED_IN, id)
            .await
            .map_err(crate::clients::unavailable)?
            .ok_or_else(|| OAuthError::invalid_request("this sign-in is unknown, used or expired: start again"))?;
        match cookie {
            Some(c) if same(&record.browser, &sha256(c)) => Ok(record.user),
            _ => Err(OAuthError::access_denied("this sign-in was made in another browser")),
        }
    }

    async fn issue_code(&self, pending: &Pending, user: User) -> Result<String, OAuthError> {
        let code = random(32).ok_or_else(|| OAuthError::server_error("no randomness"))?;
        let record = Code {
            request: pending.request.clone(),
            user,
        };
        self.store
            .put(ns::CODE, &sha256(&code), &record, CODE_TTL)
            .await
            .map_err(crate::clients::unavailable)?;
        Ok(code)
    }
}
