//! The identity part of the configuration model: `[auth]` (token issuers
//! and the public base URL), each server's `auth` and `credential` tables,
//! and `[dev_issuer]`.
//!
//! The server maps them, with the secrets they reference (resolved at load
//! into [`crate::AuthSecrets`]), to the settings `tollgate-auth` builds the
//! authenticator (request path step 5) and the upstream credential broker
//! (step 10) from; issuers and credentials pass as they are.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::SecretSource;

/// `[auth]`: who may issue tokens, and where the gateway is reachable.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Auth {
    /// The canonical base URL of the public listener as clients reach it
    /// (e.g. behind a load balancer). A route's resource URL is this plus
    /// `/mcp/{name}`. Default: `http://` + `listen.public`, unless that is
    /// an unspecified address (`0.0.0.0`, `[::]`).
    #[schemars(with = "Option<String>")]
    pub public_base_url: Option<Url>,
    /// The trusted token issuers.
    pub issuers: Vec<Issuer>,
    /// Most verified tokens kept in memory (per replica).
    pub token_cache_entries: usize,
}

impl Default for Auth {
    fn default() -> Auth {
        Auth {
            public_base_url: None,
            issuers: Vec::new(),
            token_cache_entries: 10_000,
        }
    }
}

/// A JWS algorithm a token may be signed with. HMAC and `none` are not
/// accepted: a resource server holds no shared secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
#[schemars(with = "String")]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA P-256 with SHA-256.
    ES256,
    /// ECDSA P-384 with SHA-384.
    ES384,
    /// Ed25519.
    EdDSA,
}

impl SigningAlgorithm {
    /// Every accepted algorithm, by its JWS name.
    pub const ALL: [(&'static str, SigningAlgorithm); 9] = [
        ("RS256", SigningAlgorithm::RS256),
        ("RS384", SigningAlgorithm::RS384),
        ("RS512", SigningAlgorithm::RS512),
        ("PS256", SigningAlgorithm::PS256),
        ("PS384", SigningAlgorithm::PS384),
        ("PS512", SigningAlgorithm::PS512),
        ("ES256", SigningAlgorithm::ES256),
        ("ES384", SigningAlgorithm::ES384),
        ("EdDSA", SigningAlgorithm::EdDSA),
    ];

    /// The JWS `alg` name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, a)| *a == self).map_or("?", |(name, _)| name)
    }
}

impl TryFrom<String> for SigningAlgorithm {
    type Error = String;
    fn try_from(s: String) -> Result<SigningAlgorithm, String> {
        if let Some((_, alg)) = Self::ALL.iter().find(|(name, _)| *name == s) {
            return Ok(*alg);
        }
        let why = if s.eq_ignore_ascii_case("none") {
            "unsigned tokens are never accepted".to_owned()
        } else if s.to_ascii_uppercase().starts_with("HS") {
            "HMAC algorithms are not accepted (a resource server holds no shared secret)".to_owned()
        } else {
            let names: Vec<_> = Self::ALL.iter().map(|(n, _)| *n).collect();
            format!("use one of {}", names.join(", "))
        };
        Err(format!("algorithm {s:?}: {why}"))
    }
}

/// `[[auth.issuers]]`: one OAuth authorization server / OIDC provider.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Issuer {
    /// The issuer identifier, compared exactly with the token's `iss`.
    pub issuer: String,
    /// Where the signing keys are. Default: the `jwks_uri` of the issuer's
    /// OpenID Connect discovery document.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub jwks_uri: Option<Url>,
    /// Accepted signature algorithms.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<SigningAlgorithm>,
    /// Audiences accepted besides the route's resource URL, for issuers
    /// that do not implement RFC 8707 resource indicators.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// Clock skew tolerated on `exp` and `nbf`.
    #[serde(default = "default_leeway", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub leeway: Duration,
    /// Required JOSE `typ` header (e.g. `at+jwt`, RFC 9068). Unset: any.
    #[serde(default)]
    pub require_typ: Option<String>,
    /// Which claims feed the principal.
    #[serde(default)]
    pub claims: ClaimMapping,
    /// RFC 7662 introspection, for opaque (non-JWT) tokens.
    #[serde(default)]
    pub introspection: Option<Introspection>,
    /// How often the signing keys are fetched again.
    #[serde(default = "default_refresh", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub refresh_interval: Duration,
    /// Shortest time between two fetches triggered by an unknown key id.
    #[serde(default = "default_min_refresh", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub min_refresh_interval: Duration,
    /// Allow `http://` issuer URLs; only for a loopback host in development.
    #[serde(default)]
    pub allow_insecure_http: bool,
}

fn default_algorithms() -> Vec<SigningAlgorithm> {
    vec![SigningAlgorithm::RS256, SigningAlgorithm::ES256]
}

fn default_leeway() -> Duration {
    Duration::from_secs(30)
}

fn default_refresh() -> Duration {
    Duration::from_secs(600)
}

fn default_min_refresh() -> Duration {
    Duration::from_secs(10)
}

/// Names of the claims that make up the principal. A name is looked up as
/// a top-level claim first, then as a dotted path (`realm_access.roles`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimMapping {
    /// The subject.
    pub subject: String,
    /// The client id; `azp` is used when this claim is absent.
    pub client_id: String,
    /// Groups or roles: an array of strings, or one space-separated string.
    pub groups: String,
    /// The team, for attribution.
    pub team: String,
    /// The cost centre.
    pub cost_center: String,
    /// Scopes: a space-separated string or an array; `scp` is used when
    /// this claim is absent.
    pub scopes: String,
}

impl Default for ClaimMapping {
    fn default() -> ClaimMapping {
        ClaimMapping {
            subject: "sub".into(),
            client_id: "client_id".into(),
            groups: "groups".into(),
            team: "team".into(),
            cost_center: "cost_center".into(),
            scopes: "scope".into(),
        }
    }
}

/// RFC 7662 token introspection for opaque tokens.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Introspection {
    /// The introspection endpoint.
    #[schemars(with = "String")]
    pub endpoint: Url,
    /// The gateway's client id at the issuer.
    pub client_id: String,
    /// Its client secret (sent with HTTP Basic authentication).
    pub client_secret: SecretSource,
    /// How long an active answer is reused (never past the token's `exp`).
    #[serde(default = "default_introspection_ttl", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub cache_ttl: Duration,
}

fn default_introspection_ttl() -> Duration {
    Duration::from_secs(60)
}

/// A server's `auth` table: what a caller needs to use the route.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ServerAuth {
    /// Whether a token is required. Default: yes when any issuer (or the
    /// development issuer) is configured.
    pub required: Option<bool>,
    /// Scopes every call on this route needs.
    pub scopes: Vec<String>,
    /// Scopes advertised in the route's resource metadata. Default: `scopes`.
    pub scopes_supported: Vec<String>,
}

/// How the gateway authenticates to an upstream. The client's token is
/// never forwarded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Credential {
    /// No credential.
    #[default]
    None,
    /// A fixed header value read from a secret source.
    Static(StaticCredential),
    /// An OAuth client credentials grant, as the gateway itself.
    ClientCredentials(OAuthClient),
    /// RFC 8693 token exchange on behalf of the caller.
    TokenExchange(OAuthClient),
    /// Each user's own OAuth grant at the upstream's authorization server,
    /// asked for on the first call that needs it and kept in the vault.
    UserOauth(UserOAuth),
    /// Each user's own token at the upstream, obtained without a consent
    /// click: an identity assertion (ID-JAG) from the company identity
    /// provider, redeemed at the upstream's authorization server.
    IdJag(UserOAuth),
}

impl Credential {
    /// A stable name for logs and audit records.
    pub fn as_str(&self) -> &'static str {
        match self {
            Credential::None => "none",
            Credential::Static(_) => "static",
            Credential::ClientCredentials(_) => "client_credentials",
            Credential::TokenExchange(_) => "token_exchange",
            Credential::UserOauth(_) => "user_oauth",
            Credential::IdJag(_) => "id_jag",
        }
    }

    /// The table of a credential kept per user in the vault
    /// (`user_oauth`, `id_jag`).
    pub fn per_user(&self) -> Option<&UserOAuth> {
        match self {
            Credential::UserOauth(u) | Credential::IdJag(u) => Some(u),
            _ => None,
        }
    }
}

/// A static upstream credential.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaticCredential {
    /// The header to set.
    #[serde(default = "default_header")]
    pub header: String,
    /// Written before the secret with one space, e.g. `Bearer`.
    #[serde(default)]
    pub scheme: Option<String>,
    /// Where the value is read from.
    pub value: SecretSource,
}

fn default_header() -> String {
    "authorization".into()
}

/// A server's `credential = { kind = "user_oauth" | "id_jag", ... }`:
/// Tollgate as a client of the upstream's authorization server, holding
/// each user's own grant there (for `id_jag`, `client_id` is required: the
/// identity provider names it in the assertions it issues).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserOAuth {
    /// The upstream authorization server's issuer. Default: the first of
    /// the upstream's RFC 9728 `authorization_servers` (read from its 401
    /// challenge).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub authorization_server: Option<Url>,
    /// Tollgate's client id there. Unset: Tollgate registers itself there
    /// (RFC 7591) on first use.
    #[serde(default)]
    pub client_id: Option<String>,
    /// Tollgate's client secret there (with `client_id`).
    #[serde(default)]
    pub client_secret: Option<SecretSource>,
    /// Scopes asked for.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The RFC 8707 resource asked for. Default: the server's `url`.
    #[serde(default)]
    pub resource: Option<String>,
    /// Allow `http://` authorization servers on a loopback host (tests).
    #[serde(default)]
    pub allow_insecure_http: bool,
}

/// `[vault]`: where each user's upstream grants are kept, encrypted.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Vault {
    /// Encryption keys (AES-256-GCM, 32 bytes base64), the current first:
    /// grants sealed with an older key are sealed again with the current
    /// one when next read. Remove an old key once `tollgate grants keys`
    /// no longer lists it.
    pub keys: Vec<VaultKey>,
    /// Without `[limits.redis]`: the file grants are kept in (one
    /// replica), relative to the configuration file.
    pub file: Option<PathBuf>,
}

/// One vault key: its id (kept in each sealed grant) and where it is read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultKey {
    /// A short stable name (`2026-12`).
    pub id: String,
    /// The 32-byte key, base64.
    pub key: SecretSource,
}

/// How the gateway authenticates at a token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuthMethod {
    /// HTTP Basic with the form-encoded client id and secret.
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
}

/// An OAuth client of the gateway at a token endpoint (client credentials
/// or token exchange).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthClient {
    /// The token endpoint.
    #[schemars(with = "String")]
    pub token_endpoint: Url,
    /// The gateway's client id.
    pub client_id: String,
    /// The gateway's client secret.
    pub client_secret: SecretSource,
    /// How the client authenticates.
    #[serde(default)]
    pub auth_method: ClientAuthMethod,
    /// `scope` to request, space-separated.
    #[serde(default)]
    pub scope: Option<String>,
    /// `audience` to request (logical name of the upstream).
    #[serde(default)]
    pub audience: Option<String>,
    /// `resource` to request (RFC 8707 URL of the upstream). For token
    /// exchange without `audience` or `resource`, the server's `url`.
    #[serde(default)]
    pub resource: Option<String>,
}

/// `[dev_issuer]`: a local token issuer for development.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DevIssuer {
    /// Turn it on.
    pub enabled: bool,
    /// Where its private key is kept (created on first use), relative to
    /// the configuration file.
    pub key_file: PathBuf,
    /// Its issuer URL. Default: `http://` + `listen.admin` + `/dev-issuer`.
    pub issuer: Option<String>,
    /// Allow it while a listener is not on loopback.
    pub allow_non_loopback: bool,
    /// Who can sign in to the console through it (its authorization
    /// endpoint signs in `login_hint`, else the first user).
    pub users: Vec<crate::DevUser>,
}

impl Default for DevIssuer {
    fn default() -> DevIssuer {
        DevIssuer {
            enabled: false,
            key_file: PathBuf::from("tollgate-dev-key.pem"),
            issuer: None,
            allow_non_loopback: false,
            users: Vec::new(),
        }
    }
}
