//! `[authorization_server]`: Tollgate as the OAuth 2.1 authorization server
//! of its own routes (the front door) — where users sign in, which clients
//! may register, how long tokens live, and which enterprise identity
//! providers may vouch for a user with an identity assertion (ID-JAG).
//!
//! `tollgate-issuer` serves it; this module only says what each key means.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::SecretSource;

/// `[authorization_server]` (off by default).
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthorizationServer {
    /// Serve the authorization server on the public listener; every
    /// route's resource metadata then names it first.
    pub enabled: bool,
    /// Where the current signing key (P-256, PKCS#8 PEM) is kept, created
    /// on first use; relative to the configuration file.
    pub key_file: PathBuf,
    /// Keys still published in the key set while clients may hold tokens
    /// they signed (rotation: move the old `key_file` here, start a new one).
    pub previous_key_files: Vec<PathBuf>,
    /// Lifetime of an access token.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub access_token_ttl: Duration,
    /// Lifetime of a grant's refresh tokens (each use rotates the token;
    /// the grant ends this long after the last use).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub refresh_token_ttl: Duration,
    /// How long a sign-in may take, from `authorize` to the code.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub sign_in_ttl: Duration,
    /// Development mode: client metadata documents over `http://` and at
    /// loopback or private addresses, cookies without `Secure`. Only with
    /// loopback listeners.
    pub development: bool,
    /// The company identity provider users sign in at. Without it, the
    /// development issuer's users (`[[dev_issuer.users]]`) are offered.
    pub identity_provider: Option<IdentityProvider>,
    /// Which clients may register, and how.
    pub registration: Registration,
    /// Identity providers whose identity assertions (ID-JAG, the MCP
    /// enterprise-managed authorization extension) are redeemed for route
    /// tokens without a browser.
    pub trusted_assertion_issuers: Vec<AssertionIssuer>,
}

impl Default for AuthorizationServer {
    fn default() -> AuthorizationServer {
        AuthorizationServer {
            enabled: false,
            key_file: PathBuf::from("tollgate-as-key.pem"),
            previous_key_files: Vec::new(),
            access_token_ttl: Duration::from_secs(600),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            sign_in_ttl: Duration::from_secs(600),
            development: false,
            identity_provider: None,
            registration: Registration::default(),
            trusted_assertion_issuers: Vec::new(),
        }
    }
}

/// `[authorization_server.identity_provider]`: the company IdP, as an
/// OpenID Connect provider of which Tollgate is a confidential client.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IdentityProvider {
    /// The issuer; its discovery document is read from
    /// `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// Tollgate's client id at the IdP.
    pub client_id: String,
    /// Tollgate's client secret at the IdP (HTTP Basic at its token
    /// endpoint).
    pub client_secret: SecretSource,
    /// Scopes requested at sign-in.
    #[serde(default = "default_idp_scopes")]
    pub scopes: Vec<String>,
    /// Which ID token claims make up the user.
    #[serde(default)]
    pub claims: UserClaims,
    /// Allow an `http://` issuer on a loopback host (development).
    #[serde(default)]
    pub allow_insecure_http: bool,
}

fn default_idp_scopes() -> Vec<String> {
    vec!["openid".into(), "email".into(), "profile".into()]
}

/// Names of the identity provider's claims that make up a user. A name is
/// a top-level claim or a dotted path (`realm_access.roles`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UserClaims {
    /// The subject written into route tokens.
    pub subject: String,
    /// The e-mail address.
    pub email: String,
    /// The team, for attribution and policy.
    pub team: String,
    /// The cost centre.
    pub cost_center: String,
    /// Groups: an array of strings or one space-separated string.
    pub groups: String,
}

impl Default for UserClaims {
    fn default() -> UserClaims {
        UserClaims {
            subject: "sub".into(),
            email: "email".into(),
            team: "team".into(),
            cost_center: "cost_center".into(),
            groups: "groups".into(),
        }
    }
}

/// `[authorization_server.registration]`: the client registration policy.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Registration {
    /// Accept RFC 7591 dynamic client registration at `/register`.
    pub dynamic: bool,
    /// Accept `https` client ids that name a Client ID Metadata Document.
    pub metadata_documents: bool,
    /// Hosts a metadata document may be fetched from (`example.com`,
    /// `*.example.com`). Empty: any public host.
    pub metadata_hosts: Vec<String>,
    /// Extra CA certificates (PEM) trusted when fetching metadata documents.
    pub metadata_ca_file: Option<PathBuf>,
    /// Allow loopback redirect URIs (`http://127.0.0.1:PORT/...`,
    /// `http://localhost:PORT/...`, `http://[::1]:PORT/...`) for native
    /// clients, on any port.
    pub loopback_redirects: bool,
    /// Private-use URI schemes native clients may redirect to
    /// (`cursor`, `vscode`).
    pub redirect_schemes: Vec<String>,
    /// `https` origins web clients may redirect to (`https://claude.ai`).
    pub web_origins: Vec<String>,
    /// Most dynamic registrations accepted per minute by each replica
    /// (more get `429`), so that nobody fills the store with clients.
    pub max_registrations_per_minute: u32,
}

impl Default for Registration {
    fn default() -> Registration {
        Registration {
            dynamic: true,
            metadata_documents: true,
            metadata_hosts: Vec::new(),
            metadata_ca_file: None,
            loopback_redirects: true,
            redirect_schemes: Vec::new(),
            web_origins: Vec::new(),
            max_registrations_per_minute: 60,
        }
    }
}

/// `[[authorization_server.trusted_assertion_issuers]]`: an enterprise IdP
/// whose identity assertions (ID-JAG) Tollgate redeems.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AssertionIssuer {
    /// The issuer, compared exactly with the assertion's `iss`.
    pub issuer: String,
    /// Its signing keys. Default: the `jwks_uri` of its discovery document.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub jwks_uri: Option<Url>,
    /// Which claims make up the user.
    #[serde(default)]
    pub claims: UserClaims,
    /// Allow an `http://` issuer on a loopback host (development).
    #[serde(default)]
    pub allow_insecure_http: bool,
}
