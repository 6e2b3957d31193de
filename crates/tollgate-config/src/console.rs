//! `[console]`: the web console on the admin listener — who may sign in,
//! through which identity provider, and which groups hold which role.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::SecretSource;

/// `[console]`: the web console (off by default).
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Console {
    /// Serve the console under `/console` on the admin listener.
    pub enabled: bool,
    /// The console's public URL, ending in `/console`: the base of its
    /// sign-in redirect (`{url}/callback`) and the audience (RFC 8707
    /// resource) of the tokens it accepts. Default: `http://` +
    /// `listen.admin` + `/console`.
    #[schemars(with = "Option<String>")]
    pub url: Option<Url>,
    /// The identity provider users sign in with: the `issuer` of one of
    /// `[[auth.issuers]]`. Default: the development issuer, when enabled.
    pub issuer: Option<String>,
    /// Audiences a console token may name instead of `url`, for identity
    /// providers that cannot put a resource indicator (RFC 8707) into
    /// `aud`. Only the console accepts them: unlike the issuer's own
    /// `audiences`, they admit no MCP route.
    pub audiences: Vec<String>,
    /// Its OAuth authorization endpoint. Default: from the issuer's OpenID
    /// Connect discovery document.
    #[schemars(with = "Option<String>")]
    pub authorization_endpoint: Option<Url>,
    /// Its token endpoint. Default: from the discovery document.
    #[schemars(with = "Option<String>")]
    pub token_endpoint: Option<Url>,
    /// The console's OAuth client id.
    pub client_id: String,
    /// The console's client secret (the console is a confidential client).
    /// Required unless the issuer is the development issuer.
    pub client_secret: Option<SecretSource>,
    /// Scopes requested at sign-in, besides what the issuer adds.
    pub scopes: Vec<String>,
    /// How long a console sign-in lasts.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub session_ttl: Duration,
    /// Which groups (the issuer's `groups` claim) hold which role.
    pub roles: ConsoleRoles,
}

impl Default for Console {
    fn default() -> Console {
        Console {
            enabled: false,
            url: None,
            issuer: None,
            audiences: Vec::new(),
            authorization_endpoint: None,
            token_endpoint: None,
            client_id: "tollgate-console".into(),
            client_secret: None,
            scopes: vec!["openid".into()],
            session_ttl: Duration::from_secs(8 * 3600),
            roles: ConsoleRoles::default(),
        }
    }
}

/// `[console.roles]`: per role, the groups that hold it; `"*"` is every
/// signed-in user. `admin` holds every role.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleRoles {
    /// Sees traffic, spend, the catalog, policies and audit records
    /// without captured payloads.
    pub viewer: Vec<String>,
    /// Also sees captured arguments and results.
    pub auditor: Vec<String>,
    /// Also approves catalog definitions.
    pub approver: Vec<String>,
    /// Every role.
    pub admin: Vec<String>,
}

/// A user of the development issuer's sign-in page (`[[dev_issuer.users]]`).
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DevUser {
    /// The subject (`sub`), also what `login_hint` names.
    pub subject: String,
    /// The `team` claim.
    #[serde(default)]
    pub team: Option<String>,
    /// The `cost_center` claim.
    #[serde(default)]
    pub cost_center: Option<String>,
    /// The `groups` claim.
    #[serde(default)]
    pub groups: Vec<String>,
}
