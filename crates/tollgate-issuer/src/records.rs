//! What the authorization server stores, by namespace: a sign-in in
//! progress ([`Pending`]), an issued code ([`Code`]), a grant and its
//! current refresh token, a registered client, a user's consent.

use serde::{Deserialize, Serialize};

/// Namespaces of the store.
pub(crate) mod ns {
    pub(crate) const PENDING: &str = "pending";
    pub(crate) const CODE: &str = "code";
    pub(crate) const CODE_USED: &str = "code_used";
    pub(crate) const GRANT: &str = "grant";
    pub(crate) const REFRESH: &str = "refresh";
    pub(crate) const REFRESH_USED: &str = "refresh_used";
    pub(crate) const CLIENT: &str = "client";
    pub(crate) const CONSENT: &str = "consent";
    pub(crate) const JTI: &str = "jti";
    pub(crate) const SIGNED_IN: &str = "signed_in";
    pub(crate) const ID_TOKEN: &str = "id_token";
}

/// A signed-in user, as the identity provider described them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Who vouched for them (the identity provider's issuer).
    pub idp: String,
    /// The subject route tokens carry.
    pub subject: String,
    /// Their e-mail address.
    pub email: Option<String>,
    /// Their team.
    pub team: Option<String>,
    /// Their cost centre.
    pub cost_center: Option<String>,
    /// Their groups.
    pub groups: Vec<String>,
}

/// What a client asked for at `authorize`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uri: String,
    pub(crate) state: Option<String>,
    pub(crate) challenge: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) resources: Vec<String>,
}

/// A sign-in in progress, from `authorize` to the code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) request: Request,
    /// SHA-256 of the browser cookie that started it: the sign-in ends in
    /// the browser it started in.
    pub(crate) browser: String,
    /// The identity provider's `nonce` and PKCE verifier.
    pub(crate) nonce: String,
    pub(crate) verifier: String,
    /// The consent form's CSRF token.
    pub(crate) csrf: String,
    /// Who signed in, once they have.
    pub(crate) user: Option<User>,
    /// A sign-in for another page of Tollgate's (the connect page): where
    /// the browser goes once the user is known, instead of a consent.
    #[serde(default)]
    pub(crate) then: Option<String>,
}

/// A finished sign-in waiting for the page that asked for it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SignedIn {
    pub(crate) user: User,
    pub(crate) browser: String,
}

/// An authorization code (stored under its hash).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Code {
    pub(crate) request: Request,
    pub(crate) user: User,
}

/// A grant: a user's authorization of a client for scopes on routes. Its
/// refresh tokens and access tokens live and die with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Its id (`sid` in access tokens).
    pub id: String,
    /// The client.
    pub client_id: String,
    /// The user.
    pub user: User,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Routes (resource URLs) the grant's tokens may name.
    pub resources: Vec<String>,
    /// When it was granted (Unix seconds).
    pub created: u64,
    /// How it was granted: `authorization_code` or `jwt-bearer`.
    pub via: String,
}

/// A refresh token's record (stored under its hash).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Refresh {
    pub(crate) grant: String,
    pub(crate) client_id: String,
}

/// How a client came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    /// RFC 7591 dynamic registration.
    Registered,
    /// A Client ID Metadata Document (its `client_id` is its URL).
    MetadataDocument,
}

/// A client Tollgate knows: registered, or seen by its metadata document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// The client id.
    pub client_id: String,
    /// How it became known.
    pub kind: ClientKind,
    /// Its name, as it says.
    pub client_name: Option<String>,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub token_endpoint_auth_method: String,
    /// `native` or `web`.
    pub application_type: String,
    /// SHA-256 of its secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<String>,
    /// When it registered or was first seen (Unix seconds).
    pub created: u64,
    /// Refused at `authorize` and `token` while set.
    pub disabled: bool,
}

/// A user's consent to a client, remembered until revoked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Consent {
    pub(crate) scopes: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) granted: u64,
}

/// The consent store's key for a user and a client.
pub(crate) fn consent_key(user: &User, client_id: &str) -> String {
    format!("{}\u{1f}{}\u{1f}{client_id}", user.idp, user.subject)
}
