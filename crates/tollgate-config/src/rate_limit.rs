//! The rate-limit part of the configuration model: `[[limits.rules]]`.
//!
//! A rule names the calls it counts (routes, methods, tool or prompt name
//! patterns, principals, teams; every list empty means "any"), what it
//! counts them by (`per`: the verified principal, the team, the route, or
//! every caller together) and its rate: `rate` calls per `period`, with
//! bursts of up to `burst`. A principal is named by its subject, or by
//! issuer and subject ([`KeyName`]), here and in a budget's `keys`.
//! `tollgate-limit` applies the rules on the request path after
//! authorization; this module only describes them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// One rate-limit rule.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RateRule {
    /// Names the rule in refusals, audit records and metrics; unique.
    pub id: String,
    /// Server or virtual-server names the rule applies to; empty: every route.
    #[serde(default)]
    pub routes: Vec<String>,
    /// JSON-RPC methods it counts (`tools/call`, `prompts/get`, …); empty:
    /// every request.
    #[serde(default)]
    pub methods: Vec<String>,
    /// Tool or prompt name patterns (`*` matches any run of characters);
    /// empty: any name, and calls without one.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Principals it applies to: a subject (under every trusted issuer)
    /// or `{ issuer, subject }`; empty: everyone.
    #[serde(default)]
    pub principals: Vec<KeyName>,
    /// Teams it applies to; empty: every team, and callers without one.
    #[serde(default)]
    pub teams: Vec<String>,
    /// Cost centres it applies to (the token's cost-centre claim); empty:
    /// every one, and callers without one.
    #[serde(default)]
    pub cost_centers: Vec<String>,
    /// What the calls are counted by.
    #[serde(default)]
    pub per: RateKey,
    /// Calls allowed per `period`.
    pub rate: u32,
    /// The period `rate` is counted over, e.g. `"1m"`, `"1h"`, `"1d"`.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub period: Duration,
    /// Calls allowed at once after a quiet spell; default: `rate`.
    #[serde(default)]
    pub burst: Option<u32>,
    /// What the rule does while `[limits.redis]` cannot be reached.
    #[serde(default)]
    pub on_store_error: OnStoreError,
}

/// A principal, team or cost centre named in `[limits]`: a rule's
/// `principals`, a budget's `keys`.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(untagged, expecting = "a name, or a table with an issuer and a subject")]
pub enum KeyName {
    /// A team, a cost centre, or a principal's subject: the subject under
    /// every trusted issuer (unambiguous when only one is trusted).
    Plain(String),
    /// One issuer's subject.
    Principal(IssuedSubject),
}

/// A subject of one issuer: `{ issuer = "https://idp.corp.example", subject
/// = "alice" }`.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IssuedSubject {
    /// The issuer, as in `[[auth.issuers]] issuer` (the token's `iss`).
    pub issuer: String,
    /// The subject (`sub`, or the issuer's configured subject claim).
    pub subject: String,
}

impl From<&str> for KeyName {
    fn from(name: &str) -> KeyName {
        KeyName::Plain(name.to_owned())
    }
}

/// What a rule does while the shared store (`[limits.redis]`) cannot be
/// reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnStoreError {
    /// Count locally, at the rule's rate divided by `[limits.redis]
    /// replicas`, so that the replicas together keep about the rule's rate.
    #[default]
    Local,
    /// Let the call through uncounted.
    Allow,
    /// Refuse the call (429, as over the limit).
    Deny,
}

impl OnStoreError {
    /// A stable name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            OnStoreError::Local => "local",
            OnStoreError::Allow => "allow",
            OnStoreError::Deny => "deny",
        }
    }
}

/// `[limits.redis]`: a Redis server (7 or later) that holds the rules'
/// counters for every replica, so a limit holds across replicas.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RedisStore {
    /// `redis://host:port/db`, or `rediss://…` for TLS.
    pub url: String,
    /// The password (`AUTH`), from an environment variable or a file;
    /// overrides one in `url`.
    #[serde(default)]
    pub password: Option<crate::SecretSource>,
    /// How long one decision may wait for Redis before the rules' `on_store_error`
    /// applies.
    #[serde(default = "default_store_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// How many replicas share the store: `on_store_error = "local"`
    /// divides each rule's rate and burst by it.
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// Prefix of every key Tollgate writes.
    #[serde(default = "default_key_prefix")]
    pub key_prefix: String,
    /// TLS settings of a `rediss://` store: a private CA, a client
    /// certificate.
    #[serde(default)]
    pub tls: Option<StoreTls>,
}

/// `[limits.redis] tls`: how the gateway trusts and authenticates to a
/// `rediss://` store. Paths are relative to the configuration file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StoreTls {
    /// CA certificates (PEM) trusted for the store instead of the system's
    /// roots.
    #[serde(default)]
    pub ca: Option<std::path::PathBuf>,
    /// A client certificate chain (PEM) to present; with `key`.
    #[serde(default)]
    pub cert: Option<std::path::PathBuf>,
    /// Its private key (PEM); with `cert`.
    #[serde(default)]
    pub key: Option<std::path::PathBuf>,
}

fn default_store_timeout() -> Duration {
    Duration::from_millis(50)
}

fn default_replicas() -> u32 {
    1
}

fn default_key_prefix() -> String {
    "tollgate".into()
}

impl RateRule {
    /// The burst in force.
    pub fn burst(&self) -> u32 {
        self.burst.unwrap_or(self.rate)
    }
}

/// What a rule counts calls by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateKey {
    /// Each verified principal, by issuer and subject (anonymous callers
    /// share one count).
    #[default]
    Principal,
    /// Each team (callers without a team share one count).
    Team,
    /// Each route a call is on: the route it ends up on and the virtual
    /// server it came through, each the rule covers.
    Route,
    /// Every matching call together.
    Global,
}

impl RateKey {
    /// A stable name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RateKey::Principal => "principal",
            RateKey::Team => "team",
            RateKey::Route => "route",
            RateKey::Global => "global",
        }
    }
}
