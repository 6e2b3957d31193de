//! Tollgate's configuration: typed TOML, validated at load.
//!
//! This crate is the only one that reads files or the environment. It turns a
//! TOML file into a [`Config`] or into a list of [`ConfigError`]s, each naming
//! the file, line, column and key path. `tollgate validate` and `tollgate
//! serve` share [`load`], so what validates is exactly what serves.

mod admin;
mod audit;
mod auth;
mod authorization_server;
mod budget;
mod catalog;
mod console;
mod error;
mod keyfile;
mod load;
mod locate;
mod model;
mod policy;
mod policy_files;
mod rate_limit;
mod redact;
mod reload;
mod resilience;
mod secret;
mod store;
mod tls;
mod tracing;
mod virtual_server;

pub use admin::Admin;
pub use audit::{Audit, AuditOtlp, DEFAULT_REDACT_KEYS, Durability, ServerAudit};
pub use auth::{
    Auth, ClaimMapping, ClientAuthMethod, Credential, DevIssuer, Introspection, Issuer, OAuthClient, ServerAuth,
    SigningAlgorithm, StaticCredential, UserOAuth, Vault, VaultKey,
};
pub use authorization_server::{AssertionIssuer, AuthorizationServer, IdentityProvider, Registration, UserClaims};
pub use budget::{Budget, BudgetKey, BudgetPeriod, Price};
pub use catalog::{Catalog, CatalogMode, lock_is_read_only, read_lock_text, write_lock_text};
pub use console::{Console, ConsoleRoles, DevUser};
pub use error::{ConfigError, ConfigErrors};
pub use keyfile::read_or_create_file;
pub use load::{
    AuthSecrets, AuthorizationServerSettings, CheckpointSettings, DevIssuerSettings, Environment, Loaded,
    PostgresSettings, ProcessEnvironment, VaultSettings, load, load_str, schema,
};
pub use model::{
    Config, HeaderTrust, Limits, Listen, Runtime, Security, Server, ServerName, Sessions, Shutdown, TimeoutOverrides,
    Timeouts, UpstreamHttp,
};
pub use policy::{Policy, PolicyMode, ServerPolicy, UtcOffset};
pub use policy_files::{PolicyFile, PolicyFiles, SCHEMA_FILE, read_policy_dir, read_policy_tests};
pub use rate_limit::{IssuedSubject, KeyName, OnStoreError, RateKey, RateRule, RedisStore, StoreTls};
pub use redact::{REDACTED, redact_url};
pub use reload::{file_stamp, restart_required};
pub use resilience::{Breaker, Resilience};
pub use secret::{Secret, SecretSource};
pub use store::{PostgresStore, Store};
pub use tls::{ListenerTls, UpstreamTls};
pub use tracing::Tracing;
pub use virtual_server::{Expose, FIND_TOOLS, Member, VirtualServer, is_valid_tool_name};
