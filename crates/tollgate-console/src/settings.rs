//! The console's settings, mapped by the server from the loaded
//! configuration once per start: its URL, the one issuer and the audiences
//! its tokens must come from and name, the identity provider's endpoints
//! and the client.

use tollgate_config::ConsoleRoles;
use url::Url;

/// Where and how the console signs users in.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The console's public URL, without a trailing slash.
    pub url: String,
    /// The identity provider's issuer: the only one whose tokens the
    /// console accepts.
    pub issuer: String,
    /// The audiences a console token may name: the console's URL and
    /// `[console] audiences`.
    pub audiences: Vec<String>,
    /// Its authorization endpoint; `None`: from discovery.
    pub authorization_endpoint: Option<Url>,
    /// Its token endpoint; `None`: from discovery.
    pub token_endpoint: Option<Url>,
    /// The console's client id.
    pub client_id: String,
    /// Its secret, for a confidential client.
    pub client_secret: Option<Vec<u8>>,
    /// Scopes requested at sign-in.
    pub scopes: Vec<String>,
    /// How long a sign-in lasts, seconds.
    pub session_ttl: u64,
    /// Groups per role.
    pub roles: ConsoleRoles,
    /// The key cookies are sealed under (the gateway's session key).
    pub cookie_key: Option<Vec<u8>>,
}

impl Settings {
    /// The sign-in redirect URI.
    pub fn redirect_uri(&self) -> String {
        format!("{}/callback", self.url)
    }

    /// Whether the console is served over TLS (cookies get `Secure`).
    pub fn secure(&self) -> bool {
        self.url.starts_with("https://")
    }
}
