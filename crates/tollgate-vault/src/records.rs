//! What the vault stores and answers: a grant's public facts
//! ([`GrantInfo`]) beside its sealed tokens, a connect request waiting for
//! its user, what a call gets ([`Access`]), and the event counts behind
//! the metrics. Store namespaces and keys are defined here.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub(crate) mod ns {
    pub(crate) const GRANT: &str = "vault";
    pub(crate) const CONNECT: &str = "vault_connect";
    pub(crate) const STATE: &str = "vault_state";
    pub(crate) const LOCK: &str = "vault_lock";
}

pub(crate) const KEEP: Duration = Duration::from_secs(365 * 24 * 3600);
pub(crate) const CONNECT_TTL: Duration = Duration::from_secs(900);
/// Refresh this long before expiry at most (a quarter of the lifetime for
/// short-lived tokens).
pub(crate) const EARLY: u64 = 30;

pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What is known of a grant without opening it (listing, audit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantInfo {
    /// Its id (in audit records).
    pub id: String,
    /// The route.
    pub server: String,
    /// The issuer of the caller's token.
    pub principal_issuer: String,
    /// The caller.
    pub subject: String,
    /// The upstream authorization server that issued it.
    pub upstream_issuer: String,
    /// The user at the upstream: the access token's `sub`, when it is a
    /// JWT (read, not verified: for the record only).
    #[serde(default)]
    pub upstream_subject: Option<String>,
    /// Its scopes, as the upstream granted them.
    pub scopes: Vec<String>,
    /// When it was made (Unix seconds).
    pub created: u64,
    /// When its access token expires (Unix seconds), when known.
    pub expires_at: Option<u64>,
    /// How long its access tokens live (`expires_in`), when known.
    #[serde(default)]
    pub lifetime: Option<u64>,
    /// The vault key it is sealed under.
    #[serde(default)]
    pub key_id: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub(crate) sealed: String,
    pub(crate) info: GrantInfo,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Secrets {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
}

/// A request to connect, waiting for the user at the connect page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Connect {
    pub(crate) principal_issuer: String,
    pub(crate) subject: String,
    pub(crate) server: String,
}

/// What the vault has for a call.
#[derive(Debug, Clone)]
pub enum Access {
    /// The user's access token at the upstream, and its grant.
    Token {
        /// The bearer token.
        bearer: String,
        /// The grant.
        grant: Box<GrantInfo>,
    },
    /// The user has to connect first: send them here.
    Connect {
        /// The connect page (Tollgate's).
        url: String,
        /// Its id (the elicitation id).
        id: String,
    },
}

/// What happened to users' upstream grants since start, per server:
/// `asked` (a call was answered with a connect link), `connected`,
/// `refused` (a connect that did not end in a grant), `refreshed`,
/// `refresh_failed`, `forgotten` (the upstream said `invalid_grant`),
/// `revoked` (by the user or an administrator).
#[derive(Debug, Default)]
pub(crate) struct Events(std::sync::Mutex<std::collections::BTreeMap<(String, &'static str), u64>>);

impl Events {
    /// Every count: (server, event, count).
    pub(crate) fn all(&self) -> Vec<(String, &'static str, u64)> {
        self.0
            .lock()
            .map(|m| m.iter().map(|((s, e), n)| (s.clone(), *e, *n)).collect())
            .unwrap_or_default()
    }

    pub(crate) fn count(&self, server: &str, event: &'static str) {
        if let Ok(mut m) = self.0.lock() {
            *m.entry((server.to_owned(), event)).or_default() += 1;
        }
    }
}

/// The `sub` of a JWT, unverified; `None` for an opaque token.
pub(crate) fn jwt_subject(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

pub(crate) fn grant_key(principal_issuer: &str, subject: &str, server: &str) -> String {
    format!("{principal_issuer}\u{1f}{subject}\u{1f}{server}")
}
