//! `POST /token`: the authorization code grant (PKCE verified, the code
//! single use — a replayed code revokes the grant it produced), the
//! refresh token grant (rotated on every use; a reused refresh token
//! revokes its grant), and the JWT bearer grant with an identity assertion
//! (ID-JAG, [`crate::jag`]). Every grant answers a route token from
//! [`crate::mint`].

use serde_json::Value;

use crate::error::OAuthError;
use crate::records::{Code, Grant, Refresh, ns};
use crate::state::Issuer;
use crate::time::{random, same, sha256, unix_now};

/// `grant_type` of RFC 7523's JWT bearer grant (ID-JAG redemption).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A token request's form; `resource` may repeat.
#[derive(Debug, Default)]
pub(crate) struct TokenForm {
    pub(crate) grant_type: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) code_verifier: Option<String>,
    pub(crate) refresh_token: Option<String>,
    pub(crate) assertion: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) token: Option<String>,
    pub(crate) resources: Vec<String>,
}

impl TokenForm {
    pub(crate) fn parse(body: &[u8]) -> TokenForm {
        let mut f = TokenForm::default();
        for (k, v) in url::form_urlencoded::parse(body) {
            let v = Some(v.into_owned());
            match &*k {
                "grant_type" => f.grant_type = v,
                "code" => f.code = v,
                "redirect_uri" => f.redirect_uri = v,
                "code_verifier" => f.code_verifier = v,
                "refresh_token" => f.refresh_token = v,
                "assertion" => f.assertion = v,
                "scope" => f.scope = v,
                "client_id" => f.client_id = v,
                "client_secret" => f.client_secret = v,
                "token" => f.token = v,
                "resource" => f.resources.extend(v),
                _ => {}
            }
        }
        f
    }
}

fn required<'a>(v: &'a Option<String>, name: &str) -> Result<&'a str, OAuthError> {
    v.as_deref()
        .ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

/// `narrow` ⊆ `granted`, or all of `granted` when `narrow` is empty.
fn narrowed(granted: &[String], narrow: &[String], what: &str) -> Result<Vec<String>, OAuthError> {
    if narrow.is_empty() {
        return Ok(granted.to_vec());
    }
    match narrow
        .iter()
        .find(|n| !granted.contains(&n.trim_end_matches('/').to_owned()))
    {
        Some(n) if what == "resource" => Err(OAuthError::invalid_target(format!("{n} was not granted"))),
        Some(n) => Err(OAuthError::invalid_scope(format!("{n} was not granted"))),
        None => Ok(narrow.iter().map(|n| n.trim_end_matches('/').to_owned()).collect()),
    }
}

fn scopes_of(scope: Option<&str>) -> Vec<String> {
    scope
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

impl Issuer {
    /// Answer a token request from the client authenticated by `basic` or
    /// the form.
    pub(crate) async fn token(&self, form: TokenForm, basic: Option<(String, String)>) -> Result<Value, OAuthError> {
        let client = self
            .authenticate_client(basic, form.client_id.as_deref(), form.client_secret.as_deref())
            .await?;
        match form.grant_type.as_deref() {
            Some("authorization_code") => self.redeem_code(&form, &client.client_id).await,
            Some("refresh_token") => self.refresh(&form, &client.client_id).await,
            Some(JWT_BEARER) => self.redeem_assertion(&form, &client.client_id).await,
            Some(other) => Err(OAuthError::unsupported_grant_type(format!(
                "grant_type {other} is not supported"
            ))),
            None => Err(OAuthError::invalid_request("grant_type is required")),
        }
    }

    async fn redeem_code(&self, form: &TokenForm, client_id: &str) -> Result<Value, OAuthError> {
        let hash = sha256(required(&form.code, "code")?);
        let Some(code) = self
            .store
            .take::<Code>(ns::CODE, &hash)
            .await
            .map_err(crate::clients::unavailable)?
        else {
            if let Ok(Some(grant)) = self.store.get::<String>(ns::CODE_USED, &hash).await {
                self.revoke_grant(&grant).await.map_err(crate::clients::unavailable)?;
                tracing::warn!(client_id, grant = %grant, "authorization code replayed: its grant is revoked");
            }
            return Err(OAuthError::invalid_grant("the code is unknown, used or expired"));
        };
        let req = &code.request;
        if req.client_id != client_id {
            return Err(OAuthError::invalid_grant("the code was issued to another client"));
        }
        if form.redirect_uri.as_deref().is_some_and(|r| r != req.redirect_uri) {
            return Err(OAuthError::invalid_grant(
                "redirect_uri differs from the authorization request's",
            ));
        }
        let verifier = required(&form.code_verifier, "code_verifier")?;
        if !(43..=128).contains(&verifier.len()) || !same(&sha256(verifier), &req.challenge) {
            return Err(OAuthError::invalid_grant(
                "the PKCE code_verifier does not match the code_challenge",
            ));
        }
        let resources = narrowed(&req.resources, &form.resources, "resource")?;
        let grant = Grant {
            id: random(18).ok_or_else(|| OAuthError::server_error("no randomness"))?,
            client_id: client_id.to_owned(),
            user: code.user,
            scopes: req.scopes.clone(),
            resources: req.resources.clone(),
            created: unix_now(),
            via: "authorization_code".into(),
        };
        self.store
            .put(ns::CODE_USED, &hash, &grant.id, self.settings.refresh_ttl)
            .await
            .map_err(crate::clients::unavailable)?;
        self.put_grant(&grant).await?;
        self.answer(&grant, &resources, &grant.scopes, true).await
    }

    async fn refresh(&self, form: &TokenForm, client_id: &str) -> Result<Value, OAuthError> {
        let hash = sha256(required(&form.refresh_token, "refresh_token")?);
        let taken: Option<Refresh> = self
            .store
            .take(ns::REFRESH, &hash)
            .await
            .map_err(crate::clients::unavailable)?;
        let Some(refresh) = taken else {
            if let Ok(Some(grant)) = self.store.get::<String>(ns::REFRESH_USED, &hash).await {
                self.revoke_grant(&grant).await.map_err(crate::clients::unavailable)?;
                tracing::warn!(client_id, grant = %grant, "refresh token reused: its grant is revoked");
                return Err(OAuthError::invalid_grant(
                    "the refresh token was used before: the grant is revoked",
                ));
            }
            return Err(OAuthError::invalid_grant("the refresh token is unknown or expired"));
        };
        if refresh.client_id != client_id {
            return Err(OAuthError::invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        let grant: Grant = self
            .store
            .get(ns::GRANT, &refresh.grant)
            .await
            .map_err(crate::clients::unavailable)?
            .ok_or_else(|| OAuthError::invalid_grant("the grant was revoked"))?;
        self.store
            .put(ns::REFRESH_USED, &hash, &grant.id, self.settings.refresh_ttl)
            .await
            .map_err(crate::clients::unavailable)?;
        let resources = narrowed(&grant.resources, &form.resources, "resource")?;
        let scopes = narrowed(&grant.scopes, &scopes_of(form.scope.as_deref()), "scope")?;
        self.put_grant(&grant).await?;
        self.answer(&grant, &resources, &scopes, true).await
    }

    /// Keep `grant` for another refresh token lifetime.
    pub(crate) async fn put_grant(&self, grant: &Grant) -> Result<(), OAuthError> {
        self.store
            .put(ns::GRANT, &grant.id, grant, self.settings.refresh_ttl)
            .await
            .map_err(crate::clients::unavailable)
    }

    /// The token response: an access token for `resources` and `scopes`,
    /// and a new refresh token when `with_refresh`.
    pub(crate) async fn answer(
        &self,
        grant: &Grant,
        resources: &[String],
        scopes: &[String],
        with_refresh: bool,
    ) -> Result<Value, OAuthError> {
        let access = self.mint(grant, resources, scopes)?;
        let mut body = serde_json::json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.settings.access_ttl.as_secs(),
            "scope": scopes.join(" "),
        });
        if with_refresh {
            let token = random(32).ok_or_else(|| OAuthError::server_error("no randomness"))?;
            let record = Refresh {
                grant: grant.id.clone(),
                client_id: grant.client_id.clone(),
            };
            self.store
                .put(ns::REFRESH, &sha256(&token), &record, self.settings.refresh_ttl)
                .await
                .map_err(crate::clients::unavailable)?;
            body["refresh_token"] = Value::String(token);
        }
        Ok(body)
    }

    /// Revoke a grant: its refresh tokens stop working at once, its access
    /// tokens at their next use, and the user's consent to its client is
    /// forgotten (the next sign-in asks again).
    pub async fn revoke_grant(&self, grant: &str) -> Result<(), crate::StoreError> {
        if let Some(g) = self.store.take::<Grant>(ns::GRANT, grant).await? {
            self.store
                .delete(ns::CONSENT, &crate::records::consent_key(&g.user, &g.client_id))
                .await?;
        }
        Ok(())
    }

    /// RFC 7009 revocation: a refresh token or an access token of ours
    /// revokes its grant. Unknown tokens are not an error.
    pub(crate) async fn revoke(&self, form: TokenForm, basic: Option<(String, String)>) -> Result<(), OAuthError> {
        let client = self
            .authenticate_client(basic, form.client_id.as_deref(), form.client_secret.as_deref())
            .await?;
        let token = required(&form.token, "token")?;
        let grant = match self
            .store
            .get::<Refresh>(ns::REFRESH, &sha256(token))
            .await
            .map_err(crate::clients::unavailable)?
        {
            Some(r) if r.client_id == client.client_id => Some(r.grant),
            Some(_) => None,
            None => self
                .grant_of_access_token(token)
                .filter(|(_, c)| *c == client.client_id)
                .map(|(g, _)| g),
        };
        if let Some(grant) = grant {
            self.revoke_grant(&grant).await.map_err(crate::clients::unavailable)?;
            tracing::info!(client_id = %client.client_id, grant = %grant, "grant revoked by its client");
        }
        Ok(())
    }

    /// Every live grant, newest first (administration).
    pub async fn grants(&self) -> Result<Vec<Grant>, crate::StoreError> {
        let mut all: Vec<Grant> = self.store.list(ns::GRANT).await?;
        all.sort_by_key(|g| std::cmp::Reverse(g.created));
        Ok(all)
    }

    /// Whether the grant `sid` still stands (the authenticator asks for
    /// tokens of this issuer).
    pub async fn grant_is_live(&self, sid: &str) -> Result<bool, crate::StoreError> {
        Ok(self.store.get::<Grant>(ns::GRANT, sid).await?.is_some())
    }
}
