//! Clients: RFC 7591 dynamic registration at `/register`, clients known by
//! a Client ID Metadata Document (their `client_id` is its URL), and the
//! lookup every endpoint does — a disabled or unknown client is refused.
//! Both kinds pass the registration policy's redirect URI rules.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::cimd::is_metadata_url;
use crate::error::OAuthError;
use crate::records::{ClientKind, ClientRecord, ns};
use crate::state::Issuer;
use crate::time::{random, sha256, unix_now};

/// How long a registration is kept: registrations do not expire on their
/// own (an administrator deletes them).
const FOREVER: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// An RFC 7591 registration request (the members Tollgate reads).
#[derive(Debug, Deserialize)]
pub(crate) struct Registration {
    #[serde(default)]
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
    application_type: Option<String>,
    scope: Option<String>,
}

fn bad_metadata(e: impl Into<String>) -> OAuthError {
    OAuthError::invalid_client_metadata(e)
}

impl Issuer {
    /// Register a client (RFC 7591 §3.1); the registration response.
    pub(crate) async fn register(&self, body: &[u8]) -> Result<Value, OAuthError> {
        if !self.settings.registration.dynamic {
            return Err(OAuthError::access_denied(
                "dynamic client registration is turned off here",
            ));
        }
        self.count_registration()?;
        let reg: Registration =
            serde_json::from_slice(body).map_err(|e| bad_metadata(format!("not a registration request: {e}")))?;
        let policy = &self.settings.registration;
        let application_type = policy
            .check_client(&reg.redirect_uris, reg.application_type.as_deref())
            .map_err(|e| {
                if e.starts_with("redirect_uris") || e.contains("://") {
                    OAuthError::invalid_redirect_uri(e)
                } else {
                    bad_metadata(e)
                }
            })?;
        let method = reg
            .token_endpoint_auth_method
            .as_deref()
            .unwrap_or("client_secret_basic");
        if !matches!(method, "none" | "client_secret_basic" | "client_secret_post") {
            return Err(bad_metadata(format!(
                "token_endpoint_auth_method {method:?}: use none, client_secret_basic or client_secret_post"
            )));
        }
        let grants = reg
            .grant_types
            .clone()
            .unwrap_or_else(|| vec!["authorization_code".into()]);
        if let Some(g) = grants
            .iter()
            .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
        {
            return Err(bad_metadata(format!(
                "grant_types: {g:?} is not offered to registered clients"
            )));
        }
        let responses = reg.response_types.clone().unwrap_or_else(|| vec!["code".into()]);
        if responses.iter().any(|r| r != "code") {
            return Err(bad_metadata("response_types: only code"));
        }
        let fail = || OAuthError::server_error("no randomness");
        let client_id = format!("tgc_{}", random(18).ok_or_else(fail)?);
        let secret = match method {
            "none" => None,
            _ => Some(random(32).ok_or_else(fail)?),
        };
        let record = ClientRecord {
            client_id: client_id.clone(),
            kind: ClientKind::Registered,
            client_name: reg.client_name.clone(),
            redirect_uris: reg.redirect_uris.clone(),
            token_endpoint_auth_method: method.to_owned(),
            application_type: application_type.clone(),
            secret_hash: secret.as_deref().map(sha256),
            created: unix_now(),
            disabled: false,
        };
        self.store
            .put(ns::CLIENT, &client_id, &record, FOREVER)
            .await
            .map_err(unavailable)?;
        tracing::info!(client_id = %client_id, name = ?reg.client_name, redirect_uris = ?reg.redirect_uris, "client registered");
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": record.created,
            "client_name": reg.client_name,
            "redirect_uris": reg.redirect_uris,
            "token_endpoint_auth_method": method,
            "grant_types": grants,
            "response_types": responses,
            "application_type": application_type,
        });
        if let Some(scope) = reg.scope {
            answer["scope"] = Value::String(scope);
        }
        if let Some(secret) = secret {
            answer["client_secret"] = Value::String(secret);
            answer["client_secret_expires_at"] = json!(0);
        }
        Ok(answer)
    }

    /// Count a registration against `max_per_minute` (this replica).
    fn count_registration(&self) -> Result<(), OAuthError> {
        let minute = unix_now() / 60;
        let mut window = self
            .registrations
            .lock()
            .map_err(|_| OAuthError::server_error("registration counter poisoned"))?;
        if window.0 != minute {
            *window = (minute, 0);
        }
        if window.1 >= self.settings.registration.max_per_minute {
            tracing::warn!("client registrations refused: the per-minute limit is reached");
            return Err(OAuthError::slow_down(
                "too many client registrations: try again in a minute",
            ));
        }
        window.1 += 1;
        Ok(())
    }

    /// The client `client_id`: a registration, or a metadata document
    /// fetched (and remembered for the administrators' list). Refused
    /// when unknown, disabled, or outside the registration policy.
    pub(crate) async fn client(&self, client_id: &str) -> Result<ClientRecord, OAuthError> {
        let known: Option<ClientRecord> = self.store.get(ns::CLIENT, client_id).await.map_err(unavailable)?;
        if let Some(c) = &known
            && c.disabled
        {
            return Err(OAuthError::invalid_client(format!("client {client_id} is disabled")));
        }
        if !is_metadata_url(client_id) {
            return known
                .ok_or_else(|| OAuthError::invalid_client(format!("unknown client {client_id}: register first")));
        }
        if !self.settings.registration.metadata_documents {
            return Err(OAuthError::invalid_client(
                "client metadata documents are not accepted here",
            ));
        }
        let doc = self
            .cimd
            .fetch(client_id)
            .await
            .map_err(|e| OAuthError::invalid_client(e.to_string()))?;
        if doc.token_endpoint_auth_method != "none" {
            return Err(OAuthError::invalid_client(
                "a metadata-document client authenticates with none",
            ));
        }
        let application_type = self
            .settings
            .registration
            .check_client(&doc.redirect_uris, None)
            .map_err(OAuthError::invalid_client)?;
        let record = ClientRecord {
            client_id: client_id.to_owned(),
            kind: ClientKind::MetadataDocument,
            client_name: doc.client_name.clone(),
            redirect_uris: doc.redirect_uris.clone(),
            token_endpoint_auth_method: "none".into(),
            application_type,
            secret_hash: None,
            created: known.as_ref().map_or_else(unix_now, |k| k.created),
            disabled: false,
        };
        if known.as_ref() != Some(&record) {
            self.store
                .put(ns::CLIENT, client_id, &record, FOREVER)
                .await
                .map_err(unavailable)?;
        }
        Ok(record)
    }

    /// Authenticate the client at the token or revocation endpoint: its
    /// secret (HTTP Basic or form) for confidential clients, its id alone
    /// for public ones.
    pub(crate) async fn authenticate_client(
        &self,
        basic: Option<(String, String)>,
        form_id: Option<&str>,
        form_secret: Option<&str>,
    ) -> Result<ClientRecord, OAuthError> {
        let (id, secret) = match (&basic, form_id) {
            (Some((id, secret)), _) => (id.as_str(), Some(secret.as_str())),
            (None, Some(id)) => (id, form_secret),
            (None, None) => return Err(OAuthError::invalid_client("no client_id")),
        };
        let client = self.client(id).await?;
        match (&client.secret_hash, secret) {
            (None, _) => Ok(client),
            (Some(hash), Some(s)) if crate::time::same(hash, &sha256(s)) => Ok(client),
            (Some(_), _) => Err(OAuthError::invalid_client("client authentication failed")),
        }
    }

    /// Every known client, newest first (administration).
    pub async fn clients(&self) -> Result<Vec<ClientRecord>, crate::StoreError> {
        let mut all: Vec<ClientRecord> = self.store.list(ns::CLIENT).await?;
        all.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| a.client_id.cmp(&b.client_id)));
        Ok(all)
    }

    /// Disable or enable a client; whether it was known.
    pub async fn set_client_disabled(&self, client_id: &str, disabled: bool) -> Result<bool, crate::StoreError> {
        let Some(mut c) = self.store.get::<ClientRecord>(ns::CLIENT, client_id).await? else {
            return Ok(false);
        };
        c.disabled = disabled;
        self.store.put(ns::CLIENT, client_id, &c, FOREVER).await?;
        tracing::warn!(client_id, disabled, "client status changed");
        Ok(true)
    }

    /// Forget a client (a metadata-document client is fetched again on
    /// its next visit; disable it to keep it out); whether it was known.
    pub async fn delete_client(&self, client_id: &str) -> Result<bool, crate::StoreError> {
        let known = self.store.get::<ClientRecord>(ns::CLIENT, client_id).await?.is_some();
        self.store.delete(ns::CLIENT, client_id).await?;
        Ok(known)
    }
}

/// The store failed: the client may try again.
pub(crate) fn unavailable(e: crate::StoreError) -> OAuthError {
    tracing::error!(error = %e, "authorization server store");
    OAuthError::temporarily_unavailable("the authorization server's store is unavailable")
}
